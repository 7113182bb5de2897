//! One line per log record: times, severity, body, attributes and the span it was emitted in.

use serde_json::{Value as Json, json};

use lens_exporter_sdk::logs::AnyValue;
use lens_exporter_sdk::{
    Attributes, Config, Encoding, ExportResult, LogBatch, LogExporter, TraceId,
};

use crate::Output;

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

pub struct LogLines {
    output: Output,
}

impl LogExporter for LogLines {
    fn new(config: Config) -> Result<Self, String> {
        Ok(LogLines {
            output: Output::open(&config)?,
        })
    }

    fn encoding(&self) -> Encoding {
        Encoding::Typed
    }

    fn export(&mut self, batch: LogBatch<'_>) -> ExportResult {
        let LogBatch::Scopes(scopes) = batch else {
            return Err("this exporter asked for typed batches".into());
        };
        self.output.write(|lines| {
            for scope in scopes {
                for r in &scope.records {
                    lines.serialize(&json!({
                        "time_unix_nano": r.timestamp,
                        "observed_unix_nano": r.observed_timestamp,
                        "severity_text": r.severity_text,
                        "severity_number": r.severity_number,
                        "body": body(&r.body),
                        "attributes": crate::attributes(Attributes::from_wit(&r.attributes)),
                        "event_name": r.event_name,
                        "trace_id": r.trace_id.map(|id| TraceId::from(id).to_string()),
                        "span_id": r.span_id.map(|s| format!("{s:016x}")),
                        "scope": scope.scope.name,
                    }))?;
                }
            }
            Ok(())
        })
    }

    fn force_flush(&mut self) -> Result<(), String> {
        self.output.flush()
    }

    fn shutdown(&mut self) -> Result<(), String> {
        self.output.flush()
    }
}
