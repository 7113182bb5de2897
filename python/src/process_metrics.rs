//! [`MetricProcessCore`]: the native half of `lens.ProcessingMetricExporter`, sandboxed metric
//! processors run on each collection before a Python metric exporter (see `process`).
//!
//! The collection is read under the GIL into an OTLP request (as for `lens.WasmMetricExporter`);
//! a metric's fate is its new name and the new attributes of each of its data points
//! (processors never reorder metrics or points, nor change their values, times or exemplars).

use lens::Signal;
use lens::opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use lens::opentelemetry_proto::tonic::common::v1::KeyValue;
use lens::opentelemetry_proto::tonic::metrics::v1::Metric;
use lens::opentelemetry_proto::tonic::metrics::v1::metric::Data;
use lens::wasm::metric_exporter::otlp_data_points;
use lens::wasm::processor::run_metric_processors;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyTuple};

use crate::convert;
use crate::process::ProcessorSet;

/// Sandboxed metric processors before a Python metric exporter.
#[pyclass(module = "lens._lens", frozen)]
pub struct MetricProcessCore(ProcessorSet);

#[pymethods]
impl MetricProcessCore {
    /// The processors of `processors_json` (a list of `[[metrics.processors]]` entries),
    /// started; `name` is the exporter they run before (in messages and statistics).
    #[new]
    fn new(py: Python<'_>, processors_json: &str, name: String) -> PyResult<Self> {
        ProcessorSet::start(py, processors_json, name, Signal::Metrics).map(Self)
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
        let before = metrics(&original);
        let kept: Vec<usize> = if self.0.is_shut_down() {
            (0..before.len()).collect()
        } else {
            py.detach(|| {
                let points = otlp_data_points(&request);
                let done = run_metric_processors(&self.0.processors, &mut request);
                self.0.count(points, otlp_data_points(&request), &done.by);
                done.kept
            })
        };
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

    /// The counters as JSON (in data points; `received`, `exported` = passed on,
    /// `dropped_processor`, `processor_faults`, `processors`).
    fn stats_json(&self) -> String {
        self.0.stats_json()
    }

    /// Shuts the processors down (each `shutdown` within `timeout_millis`); later collections
    /// pass unprocessed. Idempotent.
    #[pyo3(signature = (timeout_millis=None))]
    fn shutdown(&self, py: Python<'_>, timeout_millis: Option<u64>) {
        self.0.shutdown(py, timeout_millis);
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
            dict.set_item(&kv.key, convert::to_py::otlp_value(py, kv.value.as_ref())?)?;
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
