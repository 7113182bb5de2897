//! Lens's compact JSON renderings of spans and metrics: the line format of the JSON-lines guests
//! (so native and wasm outputs compare one to one) and of `lens demo`'s files. The console
//! exporters write OpenTelemetry-Python's shapes instead ([`super::python_json`]).

use opentelemetry::trace::{SpanKind, Status};
use opentelemetry::{Array, KeyValue, Value};
use opentelemetry_sdk::trace::SpanData;
use serde_json::{Map, Value as Json, json};

use crate::encoding::unix_nanos;

/// An attribute value as JSON (arrays stay arrays, numbers stay numbers).
pub fn value_json(v: &Value) -> Json {
    match v {
        Value::Bool(b) => json!(b),
        Value::I64(i) => json!(i),
        Value::F64(f) => json!(f),
        Value::String(s) => json!(s.as_str()),
        Value::Array(Array::Bool(a)) => json!(a),
        Value::Array(Array::I64(a)) => json!(a),
        Value::Array(Array::F64(a)) => json!(a),
        Value::Array(Array::String(a)) => {
            Json::Array(a.iter().map(|s| json!(s.as_str())).collect())
        }
        other => json!(other.to_string()),
    }
}

/// Attributes as a JSON object.
pub fn attributes_json<'a>(attrs: impl IntoIterator<Item = &'a KeyValue>) -> Json {
    let mut map = Map::new();
    for kv in attrs {
        map.insert(kv.key.as_str().to_string(), value_json(&kv.value));
    }
    Json::Object(map)
}

/// The lowercase OTLP name of a span kind.
pub fn kind_name(kind: &SpanKind) -> &'static str {
    match kind {
        SpanKind::Client => "client",
        SpanKind::Server => "server",
        SpanKind::Producer => "producer",
        SpanKind::Consumer => "consumer",
        SpanKind::Internal => "internal",
    }
}

/// One span as a compact JSON object.
pub fn span_json(span: &SpanData) -> Json {
    let cx = &span.span_context;
    let status = match &span.status {
        Status::Unset => json!({"code": "unset"}),
        Status::Ok => json!({"code": "ok"}),
        Status::Error { description } => json!({"code": "error", "message": description}),
    };
    let start = unix_nanos(span.start_time);
    let end = unix_nanos(span.end_time);
    json!({
        "name": span.name,
        "trace_id": cx.trace_id().to_string(),
        "span_id": cx.span_id().to_string(),
        "parent_span_id": span.parent_span_id.to_string(),
        "kind": kind_name(&span.span_kind),
        "start_unix_nano": start,
        "end_unix_nano": end,
        "duration_ns": end.saturating_sub(start),
        "status": status,
        "attributes": attributes_json(span.attributes.iter()),
        "events": span.events.iter().map(|e| json!({
            "name": e.name,
            "time_unix_nano": unix_nanos(e.timestamp),
            "attributes": attributes_json(e.attributes.iter()),
        })).collect::<Vec<_>>(),
        "links": span.links.iter().map(|l| json!({
            "trace_id": l.span_context.trace_id().to_string(),
            "span_id": l.span_context.span_id().to_string(),
            "attributes": attributes_json(l.attributes.iter()),
        })).collect::<Vec<_>>(),
        "scope": span.instrumentation_scope.name(),
    })
}
