//! One line per log record: times, severity, body, attributes and the span it was emitted in.

use serde_json::{Value as Json, json};

use crate::exports::lens::exporter::log_exporter::Guest;
use crate::lens::exporter::log_types::{AnyValue, LogBatch};
use crate::lens::exporter::types::{Encoding, ExportError, Resource};
use crate::{JsonLines, attributes, trace_hex};

/// An OTLP/JSON `AnyValue` as plain JSON: `{"intValue":"7"}` is `7`, an array a list, a
/// key-value list an object.
fn plain(v: &Json) -> Json {
    let Some((kind, inner)) = v.as_object().and_then(|o| o.iter().next()) else {
        return Json::Null;
    };
    let values = || inner["values"].as_array().cloned().unwrap_or_default();
    match kind.as_str() {
        "stringValue" | "boolValue" => inner.clone(),
        "intValue" => inner
            .as_str()
            .and_then(|s| s.parse::<i64>().ok())
            .map_or(inner.clone(), |i| json!(i)),
        "doubleValue" => json!(inner.as_f64()),
        "arrayValue" => values().iter().map(plain).collect(),
        "kvlistValue" => Json::Object(
            values()
                .iter()
                .map(|kv| {
                    (
                        kv["key"].as_str().unwrap_or("").to_string(),
                        plain(&kv["value"]),
                    )
                })
                .collect(),
        ),
        _ => inner.clone(),
    }
}

/// A body as JSON: scalars as themselves, lists and maps as plain JSON.
fn body(v: &AnyValue) -> Json {
    match v {
        AnyValue::Empty => Json::Null,
        AnyValue::String(s) => json!(s),
        AnyValue::Bool(b) => json!(b),
        AnyValue::S64(i) => json!(i),
        AnyValue::F64(f) => json!(f),
        AnyValue::Bytes(b) => json!(b),
        AnyValue::Array(text) | AnyValue::Kvlist(text) => serde_json::from_str(text)
            .map(|v| plain(&v))
            .unwrap_or_else(|_| json!(text)),
    }
}

impl Guest for JsonLines {
    fn init(settings: Vec<(String, String)>, resource: Resource) -> Result<Encoding, String> {
        crate::open(&settings, &resource)?;
        Ok(Encoding::Typed)
    }

    fn export(batch: LogBatch) -> Result<(), ExportError> {
        let LogBatch::Typed(scopes) = batch else {
            return Err(ExportError::Rejected(
                "this exporter asked for typed batches".into(),
            ));
        };
        crate::write_lines(|emit| {
            for scope in &scopes {
                for r in &scope.records {
                    emit(json!({
                        "time_unix_nano": r.timestamp,
                        "observed_unix_nano": r.observed_timestamp,
                        "severity_text": r.severity_text,
                        "severity_number": r.severity_number,
                        "body": body(&r.body),
                        "attributes": attributes(&r.attributes),
                        "event_name": r.event_name,
                        "trace_id": r.trace_id.map(trace_hex),
                        "span_id": r.span_id.map(|s| format!("{s:016x}")),
                        "scope": scope.scope.name,
                    }))?;
                }
            }
            Ok(())
        })
    }

    fn force_flush() -> Result<(), String> {
        crate::flush()
    }

    fn shutdown() -> Result<(), String> {
        crate::shutdown()
    }
}
