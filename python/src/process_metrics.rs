//! The metrics' side of `lens.ProcessingMetricExporter` (`ProcessCore::process_metrics`, see
//! `process`): sandboxed metric processors run on each collection before a Python metric
//! exporter.
//!
//! The collection is read under the GIL into an OTLP request (as for `lens.WasmMetricExporter`);
//! a metric's fate is its new name and the new attributes of each of its data points
//! (processors never reorder metrics or points, nor change their values, times or exemplars).

use lens::opentelemetry_proto::tonic::metrics::v1::Metric;
use lens::wasm::exporters::metric::otlp_data_points;
use lens::wasm::processors::metric_edit::{data_point_attributes, metrics};
use lens::wasm::processors::run_metric_processors;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyTuple};

use crate::convert;
use crate::process::ProcessorSet;

/// Each metric's fate, in order across resources and scopes: `None` (dropped), `True`
/// (unchanged), or `(name, [attributes of each data point])` of its edited form.
pub fn fates<'py>(
    py: Python<'py>,
    set: &ProcessorSet,
    data: &Bound<'py, PyAny>,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let original = convert::metrics::collection(data)?.request;
    let mut request = original.clone();
    let before = metrics(&original);
    let kept: Vec<usize> = if set.is_shut_down() {
        (0..before.len()).collect()
    } else {
        py.detach(|| {
            let points = otlp_data_points(&request);
            let done = run_metric_processors(&set.processors, &mut request);
            set.count(points, otlp_data_points(&request), &done.by);
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

/// `(name, [attributes of each data point])` of an edited metric.
fn edited<'py>(py: Python<'py>, m: &Metric) -> PyResult<Bound<'py, PyAny>> {
    let points = PyList::empty(py);
    for attributes in data_point_attributes(m) {
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
