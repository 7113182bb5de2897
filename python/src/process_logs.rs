//! The log records' side of `lens.ProcessingLogExporter` (`ProcessCore::process_logs`, see
//! `process`): sandboxed log processors run on each batch before a Python log exporter.
//!
//! The records are read under the GIL as for `lens.WasmLogExporter`; a record's fate is what a
//! processor changed of it: its event name, its body, its attributes (processors never reorder
//! records, nor change their times, severity or trace context).

use lens::opentelemetry::logs::AnyValue;
use lens::opentelemetry_sdk::logs::SdkLogRecord;
use lens::wasm::processors::run_log_processors;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict};

use crate::convert;
use crate::process::ProcessorSet;

/// Each record's fate, in order: `None` (dropped), `True` (unchanged), or a dict of what
/// changed: `event_name`, `body`, `attributes` (the whole new set).
pub fn fates<'py>(
    py: Python<'py>,
    set: &ProcessorSet,
    batch: &Bound<'py, PyAny>,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let originals = convert::logs::records(batch)?.records;
    let n = originals.len();
    let (out, kept) = if set.is_shut_down() {
        (originals.clone(), (0..n).collect())
    } else {
        py.detach(|| {
            let (out, done) = run_log_processors(&set.processors, originals.clone());
            set.count(n as u64, out.len() as u64, &done.by);
            (out, done.kept)
        })
    };
    let mut fates: Vec<Bound<'py, PyAny>> = (0..n).map(|_| py.None().into_bound(py)).collect();
    for (&i, (after, _)) in kept.iter().zip(&out) {
        let before = &originals[i].0;
        fates[i] = match changes(py, before, after)? {
            None => PyBool::new(py, true).to_owned().into_any(),
            Some(changed) => changed.into_any(),
        };
    }
    Ok(fates)
}

/// What differs between `before` and `after` (`None`: nothing).
fn changes<'py>(
    py: Python<'py>,
    before: &SdkLogRecord,
    after: &SdkLogRecord,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let changed = PyDict::new(py);
    if after.event_name() != before.event_name() {
        changed.set_item("event_name", after.event_name())?;
    }
    if after.body() != before.body() {
        let body = match after.body() {
            Some(body) => convert::to_py::log_value(py, body)?,
            None => py.None().into_bound(py),
        };
        changed.set_item("body", body)?;
    }
    let attributes = |r: &SdkLogRecord| -> Vec<(String, AnyValue)> {
        r.attributes_iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    };
    let now = attributes(after);
    if now != attributes(before) {
        let dict = PyDict::new(py);
        for (k, v) in &now {
            dict.set_item(k, convert::to_py::log_value(py, v)?)?;
        }
        changed.set_item("attributes", dict)?;
    }
    Ok((!changed.is_empty()).then_some(changed))
}
