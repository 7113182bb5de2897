//! [`MetricProcessCore`]: the native half of `lens.ProcessingMetricExporter`, sandboxed metric
//! processors run on each collection before a Python metric exporter.
//!
//! The collection is read under the GIL into an OTLP request (as for `lens.WasmMetricExporter`),
//! the processors run without it, each on what the previous one left, and each metric's fate
//! goes back to Python: dropped, unchanged, or its new name and the new attributes of each of
//! its data points (processors never reorder metrics or points, nor change their values, times
//! or exemplars), which Python applies to its own objects.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use lens::Signal;
use lens::opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use lens::opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use lens::opentelemetry_proto::tonic::common::v1::{AnyValue as OtlpAnyValue, KeyValue};
use lens::opentelemetry_proto::tonic::metrics::v1::Metric;
use lens::opentelemetry_proto::tonic::metrics::v1::metric::Data;
use lens::opentelemetry_sdk::Resource;
use lens::trace::{ExporterStats, ProcessorCounts};
use lens::wasm::metric_exporter::otlp_data_points;
use lens::wasm::processor::run_metric_processors;
use lens::wasm::{GuestOutputCopy, WasmProcessor};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyTuple};

use crate::convert;
use crate::core::{load_error, processors_of, stats_json};

/// Sandboxed metric processors before a Python metric exporter.
#[pyclass(module = "lens._lens", frozen)]
pub struct MetricProcessCore {
    processors: Vec<Arc<WasmProcessor>>,
    /// Data points in, passed on, and what each processor dropped or met a fault on.
    stats: Arc<ExporterStats>,
    shut_down: AtomicBool,
}

#[pymethods]
impl MetricProcessCore {
    /// The processors of `processors_json` (a list of `[[metrics.processors]]` entries),
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
                let none = GuestOutputCopy::None;
                py.detach(|| {
                    WasmProcessor::from_config_with_output(
                        &name,
                        spec,
                        Signal::Metrics,
                        &empty,
                        none,
                    )
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

    /// Each metric's fate, in order across resources and scopes: `None` (dropped), `True`
    /// (unchanged), or `(name, [attributes of each data point])` of its edited form.
    fn process<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let original = convert::metrics::collection(data)?.request;
        let mut request = original.clone();
        let kept: Vec<usize> = if self.shut_down.load(Ordering::Acquire) {
            (0..metrics(&original).len()).collect()
        } else {
            py.detach(|| self.run(&mut request))
        };
        let before = metrics(&original);
        let mut fates: Vec<Bound<'py, PyAny>> =
            before.iter().map(|_| py.None().into_bound(py)).collect();
        for (&i, after) in kept.iter().zip(metrics(&request)) {
            fates[i] = if after == before[i] {
                PyBool::new(py, true).to_owned().into_any()
            } else {
                edited(py, after)?
            };
        }
        Ok(fates)
    }

    /// The counters as JSON (`received`, `exported` = passed on, `dropped_processor`,
    /// `processor_faults`, `processors`), in data points.
    fn stats_json(&self) -> String {
        stats_json(&self.stats, "processors")
    }

    /// Shuts the processors down (each `shutdown` within `timeout_millis`); later collections
    /// pass unprocessed. Idempotent.
    #[pyo3(signature = (timeout_millis=None))]
    fn shutdown(&self, py: Python<'_>, timeout_millis: Option<u64>) {
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return;
        }
        let timeout = Duration::from_millis(timeout_millis.unwrap_or(10_000));
        py.detach(|| self.processors.iter().for_each(|p| p.shutdown(timeout)));
    }
}

impl MetricProcessCore {
    /// The processors in order on `request`, counted: where the metrics left came from.
    fn run(&self, request: &mut ExportMetricsServiceRequest) -> Vec<usize> {
        let points = otlp_data_points(request);
        let done = run_metric_processors(&self.processors, request);
        let total = ProcessorCounts {
            dropped: points - otlp_data_points(request),
            faults: 0,
        };
        self.stats.record_processor_batch(points, total);
        self.stats.record_processed_by(&done.by);
        done.kept
    }
}

fn metrics(r: &ExportMetricsServiceRequest) -> Vec<&Metric> {
    r.resource_metrics
        .iter()
        .flat_map(|r| &r.scope_metrics)
        .flat_map(|s| &s.metrics)
        .collect()
}

/// `(name, [attributes of each data point])` of an edited metric.
fn edited<'py>(py: Python<'py>, m: &Metric) -> PyResult<Bound<'py, PyAny>> {
    let lists: Vec<&[KeyValue]> = match &m.data {
        Some(Data::Gauge(g)) => g.data_points.iter().map(|p| &p.attributes[..]).collect(),
        Some(Data::Sum(s)) => s.data_points.iter().map(|p| &p.attributes[..]).collect(),
        Some(Data::Histogram(h)) => h.data_points.iter().map(|p| &p.attributes[..]).collect(),
        Some(Data::ExponentialHistogram(h)) => {
            h.data_points.iter().map(|p| &p.attributes[..]).collect()
        }
        Some(Data::Summary(s)) => s.data_points.iter().map(|p| &p.attributes[..]).collect(),
        None => Vec::new(),
    };
    let points = PyList::empty(py);
    for attributes in lists {
        let dict = PyDict::new(py);
        for kv in attributes {
            dict.set_item(&kv.key, value_to_py(py, kv.value.as_ref())?)?;
        }
        points.append(dict)?;
    }
    Ok(PyTuple::new(
        py,
        [
            m.name.as_str().into_pyobject(py)?.into_any(),
            points.into_any(),
        ],
    )?
    .into_any())
}

/// An OTLP attribute value as the Python SDK holds it (arrays as tuples).
fn value_to_py<'py>(py: Python<'py>, v: Option<&OtlpAnyValue>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v.and_then(|v| v.value.as_ref()) {
        None => py.None().into_bound(py),
        Some(AnyValue::StringValue(s)) => s.into_pyobject(py)?.into_any(),
        Some(AnyValue::BoolValue(b)) => PyBool::new(py, *b).to_owned().into_any(),
        Some(AnyValue::IntValue(i)) => i.into_pyobject(py)?.into_any(),
        Some(AnyValue::DoubleValue(f)) => f.into_pyobject(py)?.into_any(),
        Some(AnyValue::BytesValue(b)) => pyo3::types::PyBytes::new(py, b).into_any(),
        Some(AnyValue::ArrayValue(a)) => {
            let items = a
                .values
                .iter()
                .map(|v| value_to_py(py, Some(v)))
                .collect::<PyResult<Vec<_>>>()?;
            PyTuple::new(py, items)?.into_any()
        }
        Some(other) => format!("{other:?}").into_pyobject(py)?.into_any(),
    })
}
