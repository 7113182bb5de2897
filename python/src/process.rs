//! [`ProcessCore`]: the native half of `lens.ProcessingSpanExporter`, sandboxed span processors
//! run on each batch before a Python exporter.
//!
//! The batch is read under the GIL into Lens's span data, the processors run without it (each
//! on the spans the previous one left, as in a Rust rank), and each span's fate goes back to
//! Python: dropped, unchanged, or its new name, attributes and status (ids, times, events and
//! links are never a processor's to change). Processors cannot change a span's identity, and
//! keep the batch's order, so the spans that come out line up with those that went in.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use lens::opentelemetry::trace::Status;
use lens::opentelemetry::{Array, KeyValue, Value};
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::trace::SpanData;
use lens::trace::{ExportStage, ExporterStats, ProcessorCounts, run_stages};
use lens::wasm::WasmProcessor;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyTuple};

use crate::convert;
use crate::core::{load_error, processors_of, stats_json};

/// Sandboxed span processors before a Python exporter.
#[pyclass(module = "lens._lens", frozen)]
pub struct ProcessCore {
    processors: Vec<Arc<dyn ExportStage<SpanData>>>,
    /// Spans in, spans passed on, and what each processor dropped or met a fault on.
    stats: Arc<ExporterStats>,
    shut_down: AtomicBool,
}

#[pymethods]
impl ProcessCore {
    /// The processors of `processors_json` (a list of `[[traces.processors]]` entries),
    /// started; `name` is the exporter they run before (in messages and statistics).
    #[new]
    fn new(py: Python<'_>, processors_json: &str, name: String) -> PyResult<Self> {
        let value = serde_json::from_str(processors_json)
            .map_err(|e| load_error(format!("invalid processors: {e}")))?;
        let specs = processors_of(value, &name)?;
        let empty = Resource::builder_empty().build();
        let processors = specs
            .iter()
            .map(|spec| {
                let name = spec.display_name();
                py.detach(|| WasmProcessor::from_config(&name, spec, &empty))
                    .map(|(p, _)| Arc::new(p) as Arc<dyn ExportStage<SpanData>>)
                    .map_err(load_error)
            })
            .collect::<PyResult<Vec<_>>>()?;
        // This core is their only user: its shutdown (`release`) shuts them down.
        processors.iter().for_each(|p| p.retain());
        Ok(Self {
            processors,
            stats: Arc::new(ExporterStats::new(name)),
            shut_down: AtomicBool::new(false),
        })
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
        let out = if self.shut_down.load(Ordering::Acquire) {
            originals.clone()
        } else {
            py.detach(|| self.run(originals.clone()))
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
    /// on, `dropped_processor`, `processor_faults`, `processors`).
    fn stats_json(&self) -> String {
        stats_json(&self.stats, "processors")
    }

    /// Shuts the processors down (each `shutdown` within `timeout_millis`); later batches pass
    /// unprocessed. Idempotent.
    #[pyo3(signature = (timeout_millis=None))]
    fn shutdown(&self, py: Python<'_>, timeout_millis: Option<u64>) {
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return;
        }
        let timeout = Duration::from_millis(timeout_millis.unwrap_or(10_000));
        py.detach(|| self.processors.iter().for_each(|p| p.release(timeout)));
    }
}

impl ProcessCore {
    /// The processors in order on `spans`, counted.
    fn run(&self, spans: Vec<SpanData>) -> Vec<SpanData> {
        let items = spans.len() as u64;
        let (spans, processed) = run_stages(&self.processors, spans);
        let total = ProcessorCounts {
            dropped: items - spans.len() as u64,
            faults: 0,
        };
        self.stats.record_processor_batch(items, total);
        self.stats.record_processed_by(&processed);
        spans
    }
}

fn unchanged(s: &SpanData, original: &SpanData) -> bool {
    s.name == original.name && s.attributes == original.attributes && s.status == original.status
}

/// `(name, attributes, (code, description))` of an edited span.
fn edited<'py>(py: Python<'py>, s: &SpanData) -> PyResult<Bound<'py, PyAny>> {
    let attributes = pyo3::types::PyDict::new(py);
    for KeyValue { key, value, .. } in &s.attributes {
        attributes.set_item(key.as_str(), value_to_py(py, value)?)?;
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

/// An attribute value as the Python SDK holds it (arrays as tuples).
fn value_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::I64(i) => i.into_pyobject(py)?.into_any(),
        Value::F64(f) => f.into_pyobject(py)?.into_any(),
        Value::String(s) => s.as_str().into_pyobject(py)?.into_any(),
        Value::Array(Array::Bool(a)) => PyTuple::new(py, a)?.into_any(),
        Value::Array(Array::I64(a)) => PyTuple::new(py, a)?.into_any(),
        Value::Array(Array::F64(a)) => PyTuple::new(py, a)?.into_any(),
        Value::Array(Array::String(a)) => {
            PyTuple::new(py, a.iter().map(|s| s.as_str()))?.into_any()
        }
        other => other.to_string().into_pyobject(py)?.into_any(),
    })
}
