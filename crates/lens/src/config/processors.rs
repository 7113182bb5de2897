//! Processor entries of the config: `[[traces.processors]]`, sandboxed components that keep,
//! drop or edit spans before the exporters see them.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::BatchConfig;
use super::exporters::{ExporterSpec, WasmExporterSpec};

/// One processor, tagged by `kind` (`wasm`, the only kind).
///
/// ```toml
/// [[traces.processors]]
/// kind = "wasm"
/// name = "redact"
/// path = "processors/redact.wasm"
/// exporters = ["vendor"]
/// on_fault = "drop"
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[non_exhaustive]
pub enum ProcessorSpec {
    /// A sandboxed WebAssembly component implementing `lens:exporter/span-processor`.
    Wasm(WasmProcessorSpec),
}

/// What a processor that faults (traps, overruns its deadline, returns an error or an answer
/// the host refuses, or was disabled at setup) does with the batch it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum OnFault {
    /// Fail open (default): the batch goes on unprocessed, counted in `processor_faults`.
    #[default]
    Pass,
    /// Fail closed: the batch is dropped, counted in `dropped_processor` (and
    /// `processor_faults`). For processors whose work must never be skipped (redaction).
    Drop,
}

/// `kind = "wasm"` under `processors`: the sandbox keys of a `.wasm` exporter (`name`, `path`,
/// `sha256`, `allowed_hosts`, `env`, `preopens`, `settings`, `memory_limit_mib`,
/// `call_timeout_ms`, …: see [`WasmExporterSpec`]), without `batch` (a processor runs in the
/// batches of the exporters it applies to), and:
///
/// ```toml
/// [[traces.processors]]
/// kind = "wasm"
/// path = "processors/filter.wasm"
/// settings = { drop_names = "data_loader,prefetch" }
/// # The exporters it applies to, by name; empty (default): every exporter of the signal.
/// exporters = ["vendor", "otlp"]
/// # `pass` (default: fail open) or `drop` (fail closed).
/// on_fault = "pass"
/// # Deadline of one `process` call, ms. Default for processors: 1000.
/// call_timeout_ms = 500
/// ```
#[derive(Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(try_from = "toml::Table", into = "toml::Table")]
pub struct WasmProcessorSpec {
    /// The exporters of the signal it applies to, by name. Empty: all of them.
    pub exporters: Vec<String>,
    /// What a fault does with the batch. Default `pass`.
    pub on_fault: OnFault,
    /// The component and its sandbox, as for a `.wasm` exporter (its `batch` is unused and
    /// refused in a config file).
    pub component: WasmExporterSpec,
}

/// Default deadline of one `process` call: a processor holds the export of every batch it
/// sees, so it is much shorter than an export's.
pub const DEFAULT_PROCESSOR_CALL_TIMEOUT_MS: u64 = 1000;

/// The keys a processor entry has beyond a `.wasm` exporter's sandbox keys.
const OWN_KEYS: [&str; 2] = ["exporters", "on_fault"];

impl TryFrom<toml::Table> for WasmProcessorSpec {
    type Error = String;

    fn try_from(mut table: toml::Table) -> Result<Self, String> {
        if table.contains_key("batch") {
            return Err(
                "`batch` does not apply to a processor: it runs in the batches of the \
                        exporters it applies to (set their `batch`)"
                    .to_string(),
            );
        }
        let exporters = match table.remove("exporters") {
            None => Vec::new(),
            Some(v) => v
                .try_into()
                .map_err(|e| format!("`exporters`: {e} (expected a list of exporter names)"))?,
        };
        let on_fault = match table.remove("on_fault") {
            None => OnFault::default(),
            Some(v) => v.try_into().map_err(|e| format!("`on_fault`: {e}"))?,
        };
        // The sandbox keys are a `.wasm` exporter's; its message on an unknown key lists
        // them, with `batch` where a processor has its own keys.
        let component = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| {
                e.message().replace(
                    ", `batch`",
                    &format!(", `{}`, `{}`", OWN_KEYS[0], OWN_KEYS[1]),
                )
            })?;
        Ok(Self {
            exporters,
            on_fault,
            component,
        })
    }
}

impl From<WasmProcessorSpec> for toml::Table {
    fn from(spec: WasmProcessorSpec) -> toml::Table {
        let mut table = match toml::Value::try_from(&spec.component) {
            Ok(toml::Value::Table(t)) => t,
            _ => toml::Table::new(),
        };
        // An entry read from a file has no `batch`: leave the default out.
        if spec.component.batch == Default::default() {
            table.remove("batch");
        }
        let [exporters, on_fault] = OWN_KEYS;
        if !spec.exporters.is_empty() {
            table.insert(exporters.into(), spec.exporters.into());
        }
        if spec.on_fault != OnFault::default()
            && let Ok(value) = toml::Value::try_from(spec.on_fault)
        {
            table.insert(on_fault.into(), value);
        }
        table
    }
}

impl std::fmt::Debug for WasmProcessorSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmProcessorSpec")
            .field("exporters", &self.exporters)
            .field("on_fault", &self.on_fault)
            .field("component", &self.component)
            .finish()
    }
}

impl ProcessorSpec {
    /// The component entry (path and sandbox).
    pub fn component(&self) -> &WasmExporterSpec {
        match self {
            Self::Wasm(w) => &w.component,
        }
    }

    pub(crate) fn component_mut(&mut self) -> &mut WasmExporterSpec {
        match self {
            Self::Wasm(w) => &mut w.component,
        }
    }

    /// The name used in statistics and logs: `name`, else the file stem.
    pub fn display_name(&self) -> String {
        ExporterSpec::Wasm(self.component().clone()).display_name()
    }

    /// The exporters it applies to by name (empty: all).
    pub fn exporters(&self) -> &[String] {
        match self {
            Self::Wasm(w) => &w.exporters,
        }
    }

    /// What a fault does with the batch.
    pub fn on_fault(&self) -> OnFault {
        match self {
            Self::Wasm(w) => w.on_fault,
        }
    }

    /// Whether `other` is this entry with at most its component changed (file, settings,
    /// grants, limits): the same name, kind, exporters and fault policy. What a reload can swap
    /// in place.
    pub fn same_place_as(&self, other: &Self) -> bool {
        self.display_name() == other.display_name()
            && self.exporters() == other.exporters()
            && self.on_fault() == other.on_fault()
    }

    /// Whether it applies to the exporter called `exporter`.
    pub fn applies_to(&self, exporter: &str) -> bool {
        self.exporters().is_empty() || self.exporters().iter().any(|e| e == exporter)
    }

    /// This entry with its secrets `[REDACTED]`.
    pub fn redacted(&self) -> Self {
        let mut p = self.clone();
        *p.component_mut() = self.component().redacted();
        p
    }

    /// Checks the entry (its sandbox keys as a `.wasm` exporter's) against the names of the
    /// signal's `exporters`.
    pub fn validate(&self, exporters: &BTreeSet<String>) -> Result<(), String> {
        ExporterSpec::Wasm(self.component().clone()).validate(&BatchConfig::default())?;
        for name in self.exporters() {
            if !exporters.contains(name) {
                let known: Vec<&str> = exporters.iter().map(String::as_str).collect();
                return Err(format!(
                    "`exporters` names `{name}`, which is not an exporter of this signal (its \
                     exporters: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ));
            }
        }
        Ok(())
    }
}
