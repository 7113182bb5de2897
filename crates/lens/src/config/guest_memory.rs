//! What a configuration's guests may make the rank hold, at worst: each sandboxed entry runs
//! some lanes (instances), and each instance may hold its memory limit and hand the host one
//! answer of at most its answer limit at a time. `max_guest_memory_mib` bounds the sum.

use serde::Serialize;

use super::{ExporterSpec, LensConfig, ProcessorSpec, WasmExporterSpec};
use crate::signal::Signal;

/// Default of `max_answer_mib`: the most a guest may hand the host in one call (a processor's
/// answer, an exporter's result, the bytes of one host call). A legitimate answer is the size
/// of a batch, not of a memory.
pub const DEFAULT_MAX_ANSWER_MIB: u64 = 16;

/// Default of `memory_limit_mib` (repeated from the sandbox, which config may not import).
const DEFAULT_MEMORY_LIMIT_MIB: u64 = 256;

/// Default of `max_guest_memory_mib`: the worst case one rank's guests may add up to. A
/// training node runs 8 ranks on 1–2 TiB: 8 GiB each is a small share, and 16 entries at the
/// default limits (256 + 16 MiB, one lane) fit in it twice.
pub const DEFAULT_MAX_GUEST_MEMORY_MIB: u64 = 8192;

/// One sandboxed entry's worst case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GuestMemory {
    /// `traces.exporters[0]` & co.: where the entry is.
    pub key: String,
    /// Its display name.
    pub name: String,
    /// How many instances it runs at once.
    pub lanes: usize,
    /// Each instance's memory limit, MiB.
    pub memory_mib: u64,
    /// Each call's answer limit, MiB.
    pub answer_mib: u64,
}

impl GuestMemory {
    /// `lanes × (memory + answer)`, MiB.
    pub fn worst_mib(&self) -> u64 {
        (self.lanes as u64).saturating_mul(self.memory_mib.saturating_add(self.answer_mib))
    }

    /// `name: 2 lanes × (256 + 16 MiB) = 544 MiB`.
    pub fn describe(&self) -> String {
        format!(
            "`{}`: {} lane{} × ({} + {} MiB) = {} MiB",
            self.name,
            self.lanes,
            if self.lanes == 1 { "" } else { "s" },
            self.memory_mib,
            self.answer_mib,
            self.worst_mib()
        )
    }
}

impl WasmExporterSpec {
    /// Its memory limit, MiB.
    pub fn memory_mib(&self) -> u64 {
        self.memory_limit_mib.unwrap_or(DEFAULT_MEMORY_LIMIT_MIB)
    }

    /// Its answer limit, MiB: `max_answer_mib`, never more than the memory limit.
    pub fn answer_mib(&self) -> u64 {
        self.max_answer_mib
            .unwrap_or(DEFAULT_MAX_ANSWER_MIB)
            .min(self.memory_mib())
    }
}

/// How many instances a processor runs: one per batch that may be exported at once through
/// it (the `max_concurrent_exports` of each exporter of `exporters` it applies to; one per
/// metric exporter), at least 1 and at most [`super::MAX_CONCURRENT_EXPORTS`].
pub fn processor_lanes(
    signal: Signal,
    processor: &ProcessorSpec,
    exporters: &[ExporterSpec],
    defaults: &super::BatchConfig,
) -> usize {
    let lanes: usize = exporters
        .iter()
        .filter(|e| processor.applies_to(&e.display_name()))
        .map(|e| match signal {
            Signal::Metrics => 1,
            _ => e.batch_config(defaults).max_concurrent_exports,
        })
        .sum();
    lanes.clamp(1, super::MAX_CONCURRENT_EXPORTS)
}

/// How many instances a `.wasm` exporter of `signal` runs.
pub fn exporter_lanes(signal: Signal, spec: &ExporterSpec, defaults: &super::BatchConfig) -> usize {
    match signal {
        Signal::Metrics => 1,
        _ => spec.batch_config(defaults).max_concurrent_exports,
    }
}

impl LensConfig {
    /// Every sandboxed entry's worst case (exporters of the three signals, then processors).
    pub fn guest_memory(&self) -> Vec<GuestMemory> {
        let mut all = Vec::new();
        for (signal, i, spec) in self.exporter_entries() {
            if let ExporterSpec::Wasm(w) = spec {
                all.push(GuestMemory {
                    key: format!("{signal}.exporters[{i}]"),
                    name: spec.display_name(),
                    lanes: exporter_lanes(signal, spec, self.batch_for(signal)),
                    memory_mib: w.memory_mib(),
                    answer_mib: w.answer_mib(),
                });
            }
        }
        for signal in Signal::ALL {
            let exporters = self.exporters_of(signal);
            for (i, p) in self.signal(signal).processors.iter().enumerate() {
                let w = p.component();
                all.push(GuestMemory {
                    key: format!("{signal}.processors[{i}]"),
                    name: p.display_name(),
                    lanes: processor_lanes(signal, p, &exporters, self.batch_for(signal)),
                    memory_mib: w.memory_mib(),
                    answer_mib: w.answer_mib(),
                });
            }
        }
        all
    }

    /// Why the guests' worst case is over `max_guest_memory_mib`, naming the sum and each entry.
    pub(crate) fn check_guest_memory(&self) -> Result<(), String> {
        let entries = self.guest_memory();
        let sum: u64 = entries.iter().map(GuestMemory::worst_mib).sum();
        if sum <= self.max_guest_memory_mib {
            return Ok(());
        }
        let named: Vec<String> = entries.iter().map(GuestMemory::describe).collect();
        Err(format!(
            "the sandboxed entries may hold {sum} MiB at worst, over {} MiB: {}. Lower their \
             `memory_limit_mib`, `max_answer_mib` or lanes (`max_concurrent_exports`), or raise \
             `max_guest_memory_mib`",
            self.max_guest_memory_mib,
            named.join("; ")
        ))
    }
}
