//! The native halves of `lens.ProcessingSpanExporter`, `ProcessingMetricExporter` and
//! `ProcessingLogExporter`: sandboxed processors run on each batch (collection) before a Python
//! exporter.
//!
//! The batch is read under the GIL into Lens's own items, the processors run without it (each
//! on what the previous one left, as in a Rust rank), and each item's fate goes back to Python:
//! dropped, unchanged, or what a processor changed. Processors cannot change an item's identity
//! or reorder a batch, so what comes out lines up with what went in, and Python applies the
//! changes to its own objects. This module holds the one core of the three (`ProcessCore`, of
//! one signal), its processors ([`ProcessorSet`]) and the spans' fates; `process_metrics` and
//! `process_logs` the others'.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use lens::Signal;
use lens::opentelemetry::KeyValue;
use lens::opentelemetry::trace::Status;
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::trace::SpanData;
use lens::trace::{ExportStage, ExporterStats, Processed, ProcessorCounts, run_stages};
use lens::wasm::{GuestOutputCopy, WasmProcessor};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyTuple};

use crate::convert;
use crate::core::{load_error, processors_of, stats_json};

/// The processors of one `Processing*Exporter`, started, with their counts.
pub struct ProcessorSet {
    pub processors: Vec<Arc<WasmProcessor>>,
    /// Items in, passed on, and what each processor dropped or met a fault on.
    stats: Arc<ExporterStats>,
    shut_down: AtomicBool,
}

impl ProcessorSet {
    /// The processors of `processors_json` (a list of `signal`'s processor entries), started
    /// (one instance each); `name` is the exporter they run before (in messages and
    /// statistics).
    pub fn start(
        py: Python<'_>,
        processors_json: &str,
        name: String,
        signal: Signal,
    ) -> PyResult<Self> {
        let value = serde_json::from_str(processors_json)
            .map_err(|e| load_error(format!("invalid processors: {e}")))?;
        let specs = processors_of(value, &name)?;
        let empty = Resource::builder_empty().build();
        let processors = specs
            .iter()
            .map(|spec| {
                let name = spec.display_name();
                let none = GuestOutputCopy::None;
                py.detach(|| {
                    WasmProcessor::from_config_with_output(&name, spec, signal, &empty, none)
                })
                .map(|(p, _)| Arc::new(p))
                .map_err(load_error)
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(Self {
            processors,
            stats: Arc::new(ExporterStats::new(name)),
            shut_down: AtomicBool::new(false),
        })
    }

    /// Whether [`shutdown`](Self::shutdown) ran: batches then pass unprocessed, uncounted.
    pub fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Acquire)
    }

    /// One batch counted: `items` in, `left` passed on, `by` what each processor did.
    pub fn count(&self, items: u64, left: u64, by: &Processed) {
        let total = ProcessorCounts {
            dropped: items - left,
            faults: 0,
        };
        self.stats.record_processor_batch(items, total);
        self.stats.record_processed_by(by);
    }

    /// The counters as JSON (`received`, `exported` = passed on, `dropped_processor`,
    /// `processor_faults`, `processors`).
    pub fn stats_json(&self) -> String {
        stats_json(&self.stats, "processors")
    }

    /// Shuts the processors down (each `shutdown` within `timeout_millis`). Idempotent.
    pub fn shutdown(&self, py: Python<'_>, timeout_millis: Option<u64>) {
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return;
        }
        let timeout = Duration::from_millis(timeout_millis.unwrap_or(10_000));
        py.detach(|| self.processors.iter().for_each(|p| p.shutdown(timeout)));
    }
}

/// Sandboxed processors of one signal before a Python exporter of that signal.
#[pyclass(module = "lens._lens", frozen)]
pub struct ProcessCore {
    set: ProcessorSet,
    /// The processors as the stages `run_stages` takes (spans).
    stages: Vec<Arc<dyn ExportStage<SpanData>>>,
}

#[pymethods]
impl ProcessCore {
    /// The processors of `processors_json` (a list of `signal`'s processor entries:
    /// `traces`, `metrics` or `logs`), started; `name` is the exporter they run before (in
    /// messages and statistics).
    #[new]
    #[pyo3(signature = (processors_json, name, signal="traces"))]
    fn new(py: Python<'_>, processors_json: &str, name: String, signal: &str) -> PyResult<Self> {
        let signal = Signal::ALL
            .into_iter()
            .find(|s| s.as_str() == signal)
            .ok_or_else(|| load_error(format!("signal `{signal}`: traces, metrics or logs")))?;
        let set = ProcessorSet::start(py, processors_json, name, signal)?;
        let stages = set
            .processors
            .iter()
            .map(|p| p.clone() as Arc<dyn ExportStage<SpanData>>)
            .collect();
        Ok(Self { set, stages })
    }

    /// Each metric's fate (see `process_metrics`).
    fn process_metrics<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        crate::process_metrics::fates(py, &self.set, data)
    }

    /// Each log record's fate (see `process_logs`).
    fn process_logs<'py>(
        &self,
        py: Python<'py>,
        batch: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        crate::process_logs::fates(py, &self.set, batch)
    }

    /// Each span's fate, in order: `None` (dropped), `True` (unchanged), or `(name,
    /// attributes, (status code, description))` of its edited form.
    fn process<'py>(
        &self,
        py: Python<'py>,
        spans: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let originals = convert::batch(spans)?.spans;
        let n = originals.len() as u64;
        let out = if self.set.is_shut_down() {
            originals.clone()
        } else {
            py.detach(|| {
                let (out, processed) = run_stages(&self.stages, originals.clone());
                self.set.count(n, out.len() as u64, &processed);
                out
            })
        };
        let mut next = out.iter().peekable();
        let mut fates = Vec::with_capacity(originals.len());
        for original in &originals {
            let kept = next.next_if(|s| s.span_context == original.span_context);
            fates.push(match kept {
                None => py.None().into_bound(py),
                Some(s) if unchanged(s, original) => PyBool::new(py, true).to_owned().into_any(),
                Some(s) => edited(py, s)?,
            });
        }
        debug_assert!(next.next().is_none() && n >= out.len() as u64);
        Ok(fates)
    }

    /// The counters as JSON (`stats_json` of the exporters: `received`, `exported` = passed
    /// on, `dropped_processor`, `processor_faults`, `processors`; metrics in data points).
    fn stats_json(&self) -> String {
        self.set.stats_json()
    }

    /// Shuts the processors down (each `shutdown` within `timeout_millis`); later batches pass
    /// unprocessed. Idempotent.
    #[pyo3(signature = (timeout_millis=None))]
    fn shutdown(&self, py: Python<'_>, timeout_millis: Option<u64>) {
        self.set.shutdown(py, timeout_millis);
    }
}

fn unchanged(s: &SpanData, original: &SpanData) -> bool {
    s.name == original.name && s.attributes == original.attributes && s.status == original.status
}

/// `(name, attributes, (code, description))` of an edited span.
fn edited<'py>(py: Python<'py>, s: &SpanData) -> PyResult<Bound<'py, PyAny>> {
    let attributes = PyDict::new(py);
    for KeyValue { key, value, .. } in &s.attributes {
        attributes.set_item(key.as_str(), convert::to_py::value(py, value)?)?;
    }
    let status = match &s.status {
        Status::Unset => ("unset", String::new()),
        Status::Ok => ("ok", String::new()),
        Status::Error { description } => ("error", description.to_string()),
    };
    Ok(PyTuple::new(
        py,
        [
            s.name.as_ref().into_pyobject(py)?.into_any(),
            attributes.into_any(),
            status.into_pyobject(py)?.into_any(),
        ],
    )?
    .into_any())
}
