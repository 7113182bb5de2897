//! The way back: values a sandboxed processor set, as the Python SDK holds them (attribute
//! arrays as tuples, log bodies as lists and dicts), for the `Processing*Exporter`s that hand
//! edited items to a Python exporter.

use lens::opentelemetry::logs::AnyValue as LogValue;
use lens::opentelemetry::{Array, Value};
use lens::opentelemetry_proto::tonic::common::v1::AnyValue as OtlpValue;
use lens::opentelemetry_proto::tonic::common::v1::any_value::Value as Otlp;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PyTuple};

/// A span attribute value.
pub fn value<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
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

/// An OTLP attribute value (a metric data point's).
pub fn otlp_value<'py>(py: Python<'py>, v: Option<&OtlpValue>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v.and_then(|v| v.value.as_ref()) {
        None => py.None().into_bound(py),
        Some(Otlp::StringValue(s)) => s.into_pyobject(py)?.into_any(),
        Some(Otlp::BoolValue(b)) => PyBool::new(py, *b).to_owned().into_any(),
        Some(Otlp::IntValue(i)) => i.into_pyobject(py)?.into_any(),
        Some(Otlp::DoubleValue(f)) => f.into_pyobject(py)?.into_any(),
        Some(Otlp::BytesValue(b)) => PyBytes::new(py, b).into_any(),
        Some(Otlp::ArrayValue(a)) => {
            let items = a
                .values
                .iter()
                .map(|v| otlp_value(py, Some(v)))
                .collect::<PyResult<Vec<_>>>()?;
            PyTuple::new(py, items)?.into_any()
        }
        Some(Otlp::KvlistValue(kvs)) => {
            let dict = PyDict::new(py);
            for kv in &kvs.values {
                dict.set_item(&kv.key, otlp_value(py, kv.value.as_ref())?)?;
            }
            dict.into_any()
        }
        Some(Otlp::StringValueStrindex(i)) => i.into_pyobject(py)?.into_any(),
    })
}

/// A log record's body or attribute value (lists as lists, maps as dicts).
pub fn log_value<'py>(py: Python<'py>, v: &LogValue) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        LogValue::Int(i) => i.into_pyobject(py)?.into_any(),
        LogValue::Double(f) => f.into_pyobject(py)?.into_any(),
        LogValue::String(s) => s.as_str().into_pyobject(py)?.into_any(),
        LogValue::Boolean(b) => PyBool::new(py, *b).to_owned().into_any(),
        LogValue::Bytes(b) => PyBytes::new(py, b).into_any(),
        LogValue::ListAny(items) => {
            let list = PyList::empty(py);
            for item in items.iter() {
                list.append(log_value(py, item)?)?;
            }
            list.into_any()
        }
        LogValue::Map(map) => {
            let dict = PyDict::new(py);
            for (k, item) in map.iter() {
                dict.set_item(k.as_str(), log_value(py, item)?)?;
            }
            dict.into_any()
        }
        other => format!("{other:?}").into_pyobject(py)?.into_any(),
    })
}
