//! What the span, metric and log exporters of the package share: their entry (from keywords
//! or a Lens config file), the batch settings of their hand-off queue, the resource they
//! follow, and their counters as JSON.

use std::path::Path;

use lens::config::{
    BatchConfig, ExporterSpec, FileWatch, ProcessorSpec, ReloadConfig, WasmExporterSpec,
};
use std::sync::Arc;

use lens::opentelemetry_sdk::Resource;
use lens::trace::{ExportStage, ExporterStats};
use lens::wasm::WasmProcessor;
use lens::{LensConfig, LensError, Signal};
use pyo3::prelude::*;

use crate::ExporterLoadError;
use crate::convert;

/// One `kind = "wasm"` entry, the name it goes by and the batch settings of its queue.
pub struct Entry {
    pub name: String,
    pub spec: WasmExporterSpec,
    pub batch: BatchConfig,
    /// The config file it comes from (watched from the content it was read with), and that
    /// file's `[reload]` table.
    pub source: Option<(FileWatch, ReloadConfig)>,
    /// The sandboxed processors run before it (spans, log records): the file's
    /// `[[traces.processors]]` (`[[logs.processors]]`) that apply to it, or the `processors`
    /// keyword.
    pub processors: Vec<ProcessorSpec>,
    /// The signal it serves.
    pub signal: Signal,
}

pub fn load_error(e: impl std::fmt::Display) -> PyErr {
    ExporterLoadError::new_err(e.to_string())
}

impl Entry {
    /// The entry the keywords describe (the JSON of a wasm entry, without `kind`); its batch
    /// settings are the environment's (`LENS_*`) with the entry's own on top.
    pub fn from_json(spec_json: &str, signal: Signal) -> PyResult<Self> {
        let mut spec: serde_json::Value = serde_json::from_str(spec_json)
            .map_err(|e| load_error(format!("invalid exporter settings: {e}")))?;
        let processors = spec
            .as_object_mut()
            .and_then(|o| o.remove("processors"))
            .unwrap_or_else(|| serde_json::Value::Array(Vec::new()));
        let spec: WasmExporterSpec = serde_json::from_value(spec)
            .map_err(|e| load_error(format!("invalid exporter settings: {e}")))?;
        let config = LensConfig::from_env().map_err(load_error)?;
        let mut entry = Self::new(&config, spec, signal);
        entry.processors = processors_of(processors, &entry.name)?;
        Ok(entry)
    }

    fn new(config: &LensConfig, spec: WasmExporterSpec, signal: Signal) -> Self {
        let batch = config.batch_for(signal).with_overrides(&spec.batch);
        let name = ExporterSpec::Wasm(spec.clone()).display_name();
        Self {
            name,
            spec,
            batch,
            source: None,
            processors: Vec::new(),
            signal,
        }
    }

    /// The `kind = "wasm"` entry of `signal` in the Lens config file at `path` named `name`
    /// (its `name` key, else its file's stem); without a name, the only one.
    pub fn from_config(path: &Path, name: Option<&str>, signal: Signal) -> PyResult<Self> {
        Self::find(path, name, signal).map_err(load_error)
    }

    /// [`Self::from_config`], its error as text (for a thread without the GIL).
    pub fn find(path: &Path, name: Option<&str>, signal: Signal) -> Result<Self, String> {
        let config = LensConfig::from_file(path).map_err(|e| e.to_string())?;
        // Right after the read: a change made from now on is seen by `[reload] watch`.
        let watch = FileWatch::new(path);
        let mut entry = Self::in_config(&config, path, name, signal)?;
        entry.source = Some((watch, config.reload));
        Ok(entry)
    }

    fn in_config(
        config: &LensConfig,
        path: &Path,
        name: Option<&str>,
        signal: Signal,
    ) -> Result<Self, String> {
        let table = format!("[[{}.exporters]]", signal.as_str());
        let entries: Vec<Entry> = signal_exporters(config, signal)
            .iter()
            .filter_map(|e| match e {
                ExporterSpec::Wasm(w) => Some(Self::new(config, w.clone(), signal)),
                _ => None,
            })
            .collect();
        let names = entries
            .iter()
            .map(|e| format!("`{}`", e.name))
            .collect::<Vec<_>>()
            .join(", ");
        let there = if entries.is_empty() { "none" } else { &names };
        let with_processors = |mut entry: Entry| {
            entry.processors = config
                .signal(signal)
                .processors
                .iter()
                .filter(|p| p.applies_to(&entry.name))
                .cloned()
                .collect();
            entry
        };
        let wanted = match (name, entries.len()) {
            (Some(wanted), _) => wanted,
            (None, 1) => {
                return Ok(with_processors(
                    entries.into_iter().next().expect("one entry"),
                ));
            }
            (None, 0) => {
                return Err(format!(
                    "{}: no `kind = \"wasm\"` entry in {table}",
                    path.display()
                ));
            }
            (None, _) => {
                return Err(format!(
                    "{}: several wasm exporters in {table} ({names}): pass name=",
                    path.display()
                ));
            }
        };
        let message = format!(
            "{}: no wasm exporter named `{wanted}` in {table} (there: {there})",
            path.display()
        );
        entries
            .into_iter()
            .find(|e| e.name == wanted)
            .map(with_processors)
            .ok_or(message)
    }
}

/// The `processors` keyword's entries (each a processor entry's keys), checked as in a file.
pub fn processors_of(value: serde_json::Value, exporter: &str) -> PyResult<Vec<ProcessorSpec>> {
    let processors: Vec<ProcessorSpec> = serde_json::from_value(value)
        .map_err(|e| load_error(format!("invalid processors: {e}")))?;
    let names = std::collections::BTreeSet::from([exporter.to_string()]);
    for (i, p) in processors.iter().enumerate() {
        p.validate(&names)
            .map_err(|m| load_error(format!("processors[{i}]: {m}")))?;
    }
    Ok(processors)
}

/// The entry's sandboxed processors as the stages of its hand-off queue (spans, log
/// records), before the exporter.
pub fn stages<T: 'static>(
    py: Python<'_>,
    entry: &Entry,
    blocking: bool,
) -> PyResult<Vec<Arc<dyn ExportStage<T>>>>
where
    WasmProcessor: ExportStage<T>,
{
    Ok(processors(py, entry, blocking)?
        .into_iter()
        .map(|p| p as Arc<dyn ExportStage<T>>)
        .collect())
}

/// The entry's sandboxed processors, started (each with one instance); they run in the
/// hand-off queue, before the exporter.
pub fn processors(
    py: Python<'_>,
    entry: &Entry,
    blocking: bool,
) -> PyResult<Vec<Arc<WasmProcessor>>> {
    if blocking && !entry.processors.is_empty() {
        return Err(load_error(format!(
            "wasm exporter `{}`: processors run in Lens's hand-off queue, before the exporter; \
             they cannot be used with blocking=True",
            entry.name
        )));
    }
    py.detach(|| build_processors(entry)).map_err(load_error)
}

/// The entry's sandboxed processors, started (each with one instance).
pub fn build_processors(entry: &Entry) -> Result<Vec<Arc<WasmProcessor>>, LensError> {
    let empty = Resource::builder_empty().build();
    entry
        .processors
        .iter()
        .map(|spec| {
            let name = spec.display_name();
            let none = lens::wasm::GuestOutputCopy::None;
            WasmProcessor::from_config_with_output(&name, spec, entry.signal, &empty, none)
                .map(|(p, _)| Arc::new(p))
        })
        .collect()
}

fn signal_exporters(config: &LensConfig, signal: Signal) -> &[ExporterSpec] {
    match signal {
        Signal::Traces => &config.traces.exporters,
        Signal::Metrics => &config.metrics.exporters,
        Signal::Logs => &config.logs.exporters,
    }
}

/// The resource a guest was last initialised with, and the Python object it came from: the
/// Python SDK hands the same object with every batch of a provider, so a batch costs an
/// identity check.
pub struct ResourceFollower {
    object: Option<Py<PyAny>>,
    current: Resource,
}

impl ResourceFollower {
    pub fn new() -> Self {
        Self {
            object: None,
            current: Resource::builder_empty().build(),
        }
    }

    /// The resource `object` converts to, when it differs from the one the guest has.
    pub fn changed(&mut self, object: &Bound<'_, PyAny>) -> PyResult<Option<Resource>> {
        if self.object.as_ref().is_some_and(|o| o.is(object)) {
            return Ok(None);
        }
        let converted = convert::resource(object)?;
        self.object = Some(object.clone().unbind());
        if converted == self.current {
            return Ok(None);
        }
        self.current = converted.clone();
        Ok(Some(converted))
    }
}

/// The entry's spool (the `spool` keyword, or its file entry's), opened for this process: as a
/// rank's, named by `RANK` (0 when unset) and `OTEL_SERVICE_NAME` (else `python`). Only a
/// queued mode has one: a blocking export returns the guest's answer, and there is no queue to
/// keep what it refuses.
pub fn spool_of(
    entry: &Entry,
    queued: bool,
) -> PyResult<Option<(lens::spool::Spool, lens::spool::Opened)>> {
    let Some(spec) = &entry.spec.spool else {
        return Ok(None);
    };
    if !queued {
        return Err(load_error(format!(
            "wasm exporter `{}`: a spool keeps what Lens's hand-off queue could not deliver; \
             mode=\"blocking\" has no queue (use \"delivered\" or \"hand-off\")",
            entry.name
        )));
    }
    spec.validate()
        .map_err(|m| load_error(format!("wasm exporter `{}`: {m}", entry.name)))?;
    let rank = std::env::var("RANK")
        .ok()
        .and_then(|r| r.trim().parse().ok())
        .unwrap_or(0);
    let service = std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| "python".into());
    let env = lens::config::env::ProcessEnv;
    spec.open(&env, &service, rank, &entry.name, entry.signal)
        .map(Some)
        .map_err(|e| load_error(format!("wasm exporter `{}`: {e}", entry.name)))
}

/// An exporter's counters as JSON (the Python half returns them as a dict).
pub fn stats_json(stats: &ExporterStats, mode: &str) -> String {
    let s = stats.snapshot();
    serde_json::json!({
        "name": s.name,
        "mode": mode,
        "received": s.received,
        "exported": s.exported,
        "dropped": s.dropped(),
        "dropped_queue_full": s.dropped_queue_full,
        "dropped_export_failed": s.dropped_export_failed,
        "dropped_shutdown": s.dropped_shutdown,
        "dropped_rejected": s.dropped_rejected,
        "dropped_processor": s.dropped_processor,
        "processor_faults": s.processor_faults,
        "spooled": s.spooled,
        "replayed": s.replayed,
        "spool_found": s.spool_found,
        "in_spool": s.in_spool,
        "dropped_spool_full": s.dropped_spool_full,
        "dropped_spool_corrupt": s.dropped_spool_corrupt,
        "processors": s.processors,
        "pending": s.pending(),
        "retries": s.retries,
        "retries_exhausted": s.retries_exhausted,
        "batches_exported": s.batches_exported,
        "batches_failed": s.batches_failed,
        "guest_errors": s.guest_errors,
        "traps": s.traps.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect::<serde_json::Map<_, _>>(),
        "restarts": s.restarts,
        "reloads": s.reloads,
        "component_sha256": s.component_sha256,
        "latency_p50_ms": s.latency_p50.as_secs_f64() * 1000.0,
        "latency_p99_ms": s.latency_p99.as_secs_f64() * 1000.0,
        "peak_memory_bytes": s.peak_memory_bytes,
        "last_error": s.last_error,
    })
    .to_string()
}
