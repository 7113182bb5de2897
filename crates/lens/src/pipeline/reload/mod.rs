//! A reload of a running installation's exporters: a new configuration's entries against the
//! running ones, matched by name signal by signal (`plan`), then applied all or nothing
//! (`apply`): everything new is built first while the running exporters keep exporting, and
//! only when every step succeeded does anything change.
//!
//! An entry whose file and settings did not change is kept as it is. A wasm entry with a new
//! file or new settings gets its new component swapped in place (`wasm::reload`): its queue
//! and counters stay. Any other change to an entry (its kind, its batch settings, the `[otlp]`
//! defaults of an OTLP entry, a wasm entry disabled at setup) rebuilds its processor with the
//! same counters; span and log entries can also be added and removed. The SDK fixes a meter
//! provider's readers when it is built, so a metric entry can only be swapped in place. A
//! processor entry (`[[traces.processors]]` & co.) with a new file or new settings gets its new
//! component swapped in place the same way; adding, removing, reordering or re-aiming
//! processors gives every exporter of the signal a new chain (`batch::Chain`), each batch
//! going through the old chain or the new one whole.
mod apply;
mod plan;

use std::sync::Arc;

use crate::batch::{ExporterStats, Spooling};
use crate::config::{BatchConfig, ExporterSpec, LensConfig};
use crate::pipeline::chains::ChainHandle;
use crate::signal::Signal;
use crate::wasm::reload::Reloadable;
use crate::wasm::{Reloaded, WasmProcessor};

pub(crate) use apply::{Fanouts, prepare};

/// One exporter entry an installation built from its configuration.
pub(crate) struct Running {
    pub signal: Signal,
    pub name: String,
    pub spec: ExporterSpec,
    /// The effective batch settings it was built with.
    pub batch: BatchConfig,
    pub stats: Arc<ExporterStats>,
    /// Its wasm exporter's instances (`None`: a native exporter, or one disabled at setup).
    pub wasm: Option<Arc<Reloadable>>,
    /// Its spool, if it has one: a rebuilt entry takes it on.
    pub spool: Option<Arc<Spooling>>,
    /// The processors before its exporter, which a reload changing them replaces.
    pub chain: Option<ChainHandle>,
}

impl Running {
    pub(crate) fn new(
        signal: Signal,
        spec: ExporterSpec,
        config: &LensConfig,
        stats: Arc<ExporterStats>,
        wasm: Option<Arc<Reloadable>>,
    ) -> Self {
        Self {
            signal,
            name: spec.display_name(),
            batch: spec.batch_config(config.batch_for(signal)),
            spec,
            stats,
            wasm,
            spool: None,
            chain: None,
        }
    }

    /// With its spool and its processor chain.
    pub(crate) fn with_parts(
        mut self,
        spool: Option<Arc<Spooling>>,
        chain: Option<ChainHandle>,
    ) -> Self {
        self.spool = spool;
        self.chain = chain;
        self
    }
}

/// One processor entry an installation built from its configuration.
pub(crate) struct RunningProcessor {
    pub signal: Signal,
    pub name: String,
    pub processor: Arc<WasmProcessor>,
}

/// The entries an installation built from its configuration, and that configuration.
pub(crate) struct Registry {
    pub config: LensConfig,
    pub entries: Vec<Running>,
    /// The processors of the signals in `signals`.
    pub processors: Vec<RunningProcessor>,
    /// The signals whose exporters come from the configuration (enabled, none injected in
    /// code): only theirs are reloaded.
    pub signals: Vec<Signal>,
}

/// What a reload did, entry by entry (`(signal, exporter name)` pairs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadReport {
    /// The signals whose processors were added, removed, reordered, renamed or re-aimed: every
    /// exporter of each got the new chain.
    pub processors: Vec<Signal>,
    /// Wasm exporters (and processors) now running a new component, swapped in place.
    pub reloaded: Vec<Reloaded>,
    /// Entries whose processor was rebuilt (same counters): kind, batch settings or `[otlp]`
    /// defaults changed, or a wasm entry disabled at setup tried again.
    pub replaced: Vec<(Signal, String)>,
    /// New entries.
    pub added: Vec<(Signal, String)>,
    /// Entries gone from the configuration: shut down (their counters stay in the statistics).
    pub removed: Vec<(Signal, String)>,
    /// Entries whose file and settings did not change: untouched.
    pub kept: Vec<(Signal, String)>,
    /// Top-level keys that changed but apply at the next start only (`service_name`,
    /// `metric_export_interval_ms`, …).
    pub not_applied: Vec<String>,
}

impl ReloadReport {
    /// Whether the reload changed any exporter.
    pub fn changed_anything(&self) -> bool {
        !(self.reloaded.is_empty()
            && self.processors.is_empty()
            && self.replaced.is_empty()
            && self.added.is_empty()
            && self.removed.is_empty())
    }
}
