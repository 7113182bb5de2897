//! Compact JSON renderings of spans and metrics (the console exporter's line format, shared with
//! the JSON-lines guest so native and wasm outputs compare one to one), and of log records in
//! OpenTelemetry-Python's `LogRecord.to_json` shape (NeMo Lens's console output).

use opentelemetry::logs::AnyValue;
use opentelemetry::trace::{SpanKind, Status};
use opentelemetry::{Array, KeyValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::SdkLogRecord;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
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

/// One JSON object per metric of a collection.
pub fn metrics_json(rm: &ResourceMetrics) -> Vec<Json> {
    let mut out = Vec::new();
    for scope in rm.scope_metrics() {
        for m in scope.metrics() {
            let points = match m.data() {
                AggregatedMetrics::F64(d) => points_json(d),
                AggregatedMetrics::U64(d) => points_json(d),
                AggregatedMetrics::I64(d) => points_json(d),
            };
            out.push(json!({
                "metric": m.name(),
                "unit": m.unit(),
                "scope": scope.scope().name(),
                "points": points,
            }));
        }
    }
    out
}

fn points_json<T: Copy + serde::Serialize>(data: &MetricData<T>) -> Json {
    let points: Vec<Json> = match data {
        MetricData::Gauge(g) => g
            .data_points()
            .map(|p| json!({"attributes": attributes_json(p.attributes()), "value": p.value()}))
            .collect(),
        MetricData::Sum(s) => s
            .data_points()
            .map(|p| json!({"attributes": attributes_json(p.attributes()), "value": p.value()}))
            .collect(),
        MetricData::Histogram(h) => h
            .data_points()
            .map(|p| {
                json!({"attributes": attributes_json(p.attributes()), "count": p.count(), "sum": p.sum()})
            })
            .collect(),
        MetricData::ExponentialHistogram(h) => h
            .data_points()
            .map(|p| json!({"attributes": attributes_json(p.attributes()), "count": p.count()}))
            .collect(),
    };
    Json::Array(points)
}

/// A log body or attribute value as JSON (bytes as a list of numbers, as Python's `json` would
/// refuse them otherwise; maps with their keys sorted).
pub fn any_value_json(v: &AnyValue) -> Json {
    match v {
        AnyValue::Int(i) => json!(i),
        AnyValue::Double(f) => json!(f),
        AnyValue::String(s) => json!(s.as_str()),
        AnyValue::Boolean(b) => json!(b),
        AnyValue::Bytes(b) => json!(b.as_slice()),
        AnyValue::ListAny(items) => Json::Array(items.iter().map(any_value_json).collect()),
        AnyValue::Map(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
            Json::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.as_str().to_string(), any_value_json(v)))
                    .collect(),
            )
        }
        other => json!(format!("{other:?}")),
    }
}

/// A resource as OpenTelemetry-Python's `Resource.to_json` writes it.
pub fn resource_json(resource: &Resource) -> Json {
    let mut attributes = Map::new();
    for (k, v) in resource.iter() {
        attributes.insert(k.as_str().to_string(), value_json(v));
    }
    json!({
        "attributes": attributes,
        "schema_url": resource.schema_url().unwrap_or(""),
    })
}

/// A time as OpenTelemetry-Python's `ns_to_iso_str`: UTC, microseconds, from the nanoseconds
/// as a float, rounded half to even as `datetime.fromtimestamp` rounds.
pub fn iso_time(nanos: u64) -> String {
    let t = nanos as f64 / 1e9;
    let mut seconds = t.floor();
    let mut micros = ((t - seconds) * 1e6).round_ties_even();
    if micros >= 1e6 {
        seconds += 1.0;
        micros -= 1e6;
    }
    let at = jiff::Timestamp::from_second(seconds as i64).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    format!("{}.{:06}Z", at.strftime("%Y-%m-%dT%H:%M:%S"), micros as u32)
}

/// One log record in OpenTelemetry-Python's `LogRecord.to_json` shape, on one line.
pub fn log_record_json(record: &SdkLogRecord, resource: &Resource) -> Json {
    let attributes: Map<String, Json> = record
        .attributes_iter()
        .map(|(k, v)| (k.as_str().to_string(), any_value_json(v)))
        .collect();
    let cx = record.trace_context();
    json!({
        "body": record.body().map_or(Json::Null, any_value_json),
        "severity_number": record.severity_number().map(|s| s as i32),
        "severity_text": record.severity_text(),
        "attributes": if attributes.is_empty() { Json::Null } else { Json::Object(attributes) },
        "dropped_attributes": 0,
        "timestamp": record.timestamp().map(|t| iso_time(unix_nanos(t))),
        "observed_timestamp": record.observed_timestamp().map(|t| iso_time(unix_nanos(t))),
        "trace_id": format!("0x{}", cx.map_or(opentelemetry::trace::TraceId::INVALID, |c| c.trace_id)),
        "span_id": format!("0x{}", cx.map_or(opentelemetry::trace::SpanId::INVALID, |c| c.span_id)),
        "trace_flags": cx.and_then(|c| c.trace_flags).map_or(0, |f| f.to_u8()),
        "resource": resource_json(resource),
        "event_name": record.event_name().unwrap_or(""),
    })
}
