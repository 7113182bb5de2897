//! OpenTelemetry-Python's JSON shapes, which NeMo Lens's console exporters print and its users
//! turn into Perfetto traces: `ReadableSpan.to_json`, `MetricsData.to_json` and
//! `LogRecord.to_json`, keys in Python's order, written on one line by
//! [`python_dumps`](super::python_dumps) as NeMo Lens 0.2 writes them (`to_json(indent=None)`).
//! Compared byte for byte with NeMo Lens's own console output (`tests/all/parity`).
//!
//! Where Rust's SDK has nothing to say the value Python writes for "nothing" is written:
//! exemplars are an empty list, a log record's dropped attributes 0.

use opentelemetry::logs::AnyValue;
use opentelemetry::trace::{SpanContext, SpanId, Status, TraceId, TraceState};
use std::sync::Arc;

use opentelemetry::{InstrumentationScope, Key, KeyValue};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::SdkLogRecord;
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::trace::SpanData;
use serde_json::{Map, Value as Json, json};

use super::json::{attributes_json, value_json};
use crate::encoding::unix_nanos;

/// A log body or attribute value as JSON (bytes as a list of numbers; maps with their keys
/// sorted).
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

/// The order of a resource's keys as Python's merges leave them (its `dict` keeps insertion
/// order; the Rust SDK's resource keeps none): [`crate::resource::resource_attributes`] gives it
/// for a rank's resource. Keys it does not list come after, sorted.
#[derive(Debug, Clone, Default)]
pub struct ResourceOrder(Arc<[Key]>);

impl ResourceOrder {
    /// The order of these keys.
    pub fn new(keys: impl IntoIterator<Item = Key>) -> Self {
        Self(keys.into_iter().collect())
    }
}

/// A resource as `Resource.to_json` writes it, its keys in `order`.
pub fn resource_json(resource: &Resource, order: &ResourceOrder) -> Json {
    let mut attributes = Map::new();
    for k in order.0.iter() {
        if let Some(v) = resource.get(k) {
            attributes.insert(k.as_str().to_string(), value_json(&v));
        }
    }
    let mut rest: Vec<_> = resource
        .iter()
        .filter(|(k, _)| !order.0.contains(k))
        .collect();
    rest.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
    for (k, v) in rest {
        attributes.insert(k.as_str().to_string(), value_json(v));
    }
    json!({
        "attributes": attributes,
        "schema_url": resource.schema_url().unwrap_or(""),
    })
}

/// A time as `ns_to_iso_str`: UTC with microseconds, from the nanoseconds as a float, rounded
/// half to even as `datetime.fromtimestamp` rounds.
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

/// A Python string's `repr` (single quotes unless the text holds one and no double quote).
fn py_repr(s: &str) -> String {
    if s.contains('\'') && !s.contains('"') {
        format!("\"{s}\"")
    } else {
        format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

/// `repr(TraceState)`: the list of its `{key=k, value=v}` strings.
fn trace_state_repr(state: &TraceState) -> String {
    let header = state.header();
    let pairs: Vec<String> = header
        .split(',')
        .filter(|p| !p.is_empty())
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| py_repr(&format!("{{key={k}, value={v}}}")))
        .collect();
    format!("[{}]", pairs.join(", "))
}

fn context_json(cx: &SpanContext) -> Json {
    json!({
        "trace_id": format!("0x{}", cx.trace_id()),
        "span_id": format!("0x{}", cx.span_id()),
        "trace_state": trace_state_repr(cx.trace_state()),
    })
}

/// One span as `ReadableSpan.to_json`, with the resource it was recorded under.
pub fn span_json(span: &SpanData, resource: &Resource, order: &ResourceOrder) -> Json {
    let mut status = Map::new();
    let (code, description) = match &span.status {
        Status::Unset => ("UNSET", ""),
        Status::Ok => ("OK", ""),
        Status::Error { description } => ("ERROR", description.as_ref()),
    };
    status.insert("status_code".into(), json!(code));
    if !description.is_empty() {
        status.insert("description".into(), json!(description));
    }
    let kind = match span.span_kind {
        opentelemetry::trace::SpanKind::Client => "SpanKind.CLIENT",
        opentelemetry::trace::SpanKind::Server => "SpanKind.SERVER",
        opentelemetry::trace::SpanKind::Producer => "SpanKind.PRODUCER",
        opentelemetry::trace::SpanKind::Consumer => "SpanKind.CONSUMER",
        opentelemetry::trace::SpanKind::Internal => "SpanKind.INTERNAL",
    };
    json!({
        "name": span.name,
        "context": context_json(&span.span_context),
        "kind": kind,
        "parent_id": (span.parent_span_id != SpanId::INVALID)
            .then(|| format!("0x{}", span.parent_span_id)),
        "start_time": iso_time(unix_nanos(span.start_time)),
        "end_time": iso_time(unix_nanos(span.end_time)),
        "status": status,
        "attributes": attributes_json(span.attributes.iter()),
        "events": span.events.iter().map(|e| json!({
            "name": e.name,
            "timestamp": iso_time(unix_nanos(e.timestamp)),
            "attributes": attributes_json(e.attributes.iter()),
        })).collect::<Vec<_>>(),
        "links": span.links.iter().map(|l| json!({
            "context": context_json(&l.span_context),
            "attributes": attributes_json(l.attributes.iter()),
        })).collect::<Vec<_>>(),
        "resource": resource_json(resource, order),
    })
}

fn scope_json(scope: &InstrumentationScope) -> Json {
    let attributes: Vec<&KeyValue> = scope.attributes().collect();
    json!({
        "name": scope.name(),
        "version": scope.version().unwrap_or(""),
        "schema_url": scope.schema_url().unwrap_or(""),
        "attributes": if attributes.is_empty() {
            Json::Null
        } else {
            attributes_json(attributes)
        },
    })
}

/// One collection as `MetricsData.to_json`.
pub fn metrics_data_json(rm: &ResourceMetrics, order: &ResourceOrder) -> Json {
    let scope_metrics: Vec<Json> = rm
        .scope_metrics()
        .map(|sm| {
            let metrics: Vec<Json> = sm
                .metrics()
                .map(|m| {
                    let data = match m.data() {
                        AggregatedMetrics::F64(d) => data_json(d),
                        AggregatedMetrics::U64(d) => data_json(d),
                        AggregatedMetrics::I64(d) => data_json(d),
                    };
                    json!({
                        "name": m.name(),
                        "description": m.description(),
                        "unit": m.unit(),
                        "data": data,
                    })
                })
                .collect();
            json!({
                "scope": scope_json(sm.scope()),
                "metrics": metrics,
                "schema_url": sm.scope().schema_url().unwrap_or(""),
            })
        })
        .collect();
    json!({
        "resource_metrics": [{
            "resource": resource_json(rm.resource(), order),
            "scope_metrics": scope_metrics,
            "schema_url": rm.resource().schema_url().unwrap_or(""),
        }],
    })
}

/// Python's `AggregationTemporality` values.
fn temporality(t: Temporality) -> u8 {
    match t {
        Temporality::Delta => 1,
        _ => 2,
    }
}

fn data_json<T: Copy + serde::Serialize>(data: &MetricData<T>) -> Json {
    let point = |attrs, start: Option<u64>, time: u64, value: T| {
        json!({
            "attributes": attrs,
            "start_time_unix_nano": start,
            "time_unix_nano": time,
            "value": value,
            "exemplars": [],
        })
    };
    match data {
        MetricData::Gauge(g) => {
            // Python's last-value aggregation has no start time.
            let start = None;
            let time = unix_nanos(g.time());
            json!({"data_points": g.data_points()
                .map(|p| point(attributes_json(p.attributes()), start, time, p.value()))
                .collect::<Vec<_>>()})
        }
        MetricData::Sum(s) => {
            let (start, time) = (unix_nanos(s.start_time()), unix_nanos(s.time()));
            json!({
                "data_points": s.data_points()
                    .map(|p| point(attributes_json(p.attributes()), Some(start), time, p.value()))
                    .collect::<Vec<_>>(),
                "aggregation_temporality": temporality(s.temporality()),
                "is_monotonic": s.is_monotonic(),
            })
        }
        MetricData::Histogram(h) => {
            let (start, time) = (unix_nanos(h.start_time()), unix_nanos(h.time()));
            json!({
                "data_points": h.data_points().map(|p| json!({
                    "attributes": attributes_json(p.attributes()),
                    "start_time_unix_nano": start,
                    "time_unix_nano": time,
                    "count": p.count(),
                    "sum": p.sum(),
                    "bucket_counts": p.bucket_counts().collect::<Vec<_>>(),
                    "explicit_bounds": p.bounds().collect::<Vec<_>>(),
                    "min": p.min(),
                    "max": p.max(),
                    "exemplars": [],
                })).collect::<Vec<_>>(),
                "aggregation_temporality": temporality(h.temporality()),
            })
        }
        MetricData::ExponentialHistogram(h) => {
            let (start, time) = (unix_nanos(h.start_time()), unix_nanos(h.time()));
            json!({
                "data_points": h.data_points().map(|p| json!({
                    "attributes": attributes_json(p.attributes()),
                    "start_time_unix_nano": start,
                    "time_unix_nano": time,
                    "count": p.count(),
                    "sum": p.sum(),
                    "scale": p.scale(),
                    "zero_count": p.zero_count(),
                    "positive": {"offset": p.positive_bucket().offset(),
                                 "bucket_counts": p.positive_bucket().counts().collect::<Vec<_>>()},
                    "negative": {"offset": p.negative_bucket().offset(),
                                 "bucket_counts": p.negative_bucket().counts().collect::<Vec<_>>()},
                    "flags": 0,
                    "min": p.min(),
                    "max": p.max(),
                    "exemplars": [],
                })).collect::<Vec<_>>(),
                "aggregation_temporality": temporality(h.temporality()),
            })
        }
    }
}

/// One log record as `LogRecord.to_json`.
pub fn log_record_json(record: &SdkLogRecord, resource: &Resource, order: &ResourceOrder) -> Json {
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
        "trace_id": format!("0x{}", cx.map_or(TraceId::INVALID, |c| c.trace_id)),
        "span_id": format!("0x{}", cx.map_or(SpanId::INVALID, |c| c.span_id)),
        "trace_flags": cx.and_then(|c| c.trace_flags).map_or(0, |f| f.to_u8()),
        "resource": resource_json(resource, order),
        "event_name": record.event_name().unwrap_or(""),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_as_python_writes_them() {
        // The right-hand sides are what `opentelemetry.sdk.util.ns_to_iso_str` printed.
        for (nanos, python) in [
            (0, "1970-01-01T00:00:00.000000Z"),
            (1_764_763_200_123_456_789, "2025-12-03T12:00:00.123457Z"),
            (1_764_763_200_999_999_600, "2025-12-03T12:00:01.000000Z"),
            (1_700_000_000_000_000_500, "2023-11-14T22:13:20.000000Z"),
        ] {
            assert_eq!(iso_time(nanos), python, "{nanos}");
        }
    }

    #[test]
    fn trace_states_are_written_as_their_python_repr() {
        let state: TraceState = "vendor=abc,lens=b2".parse().unwrap();
        assert_eq!(
            trace_state_repr(&state),
            "['{key=vendor, value=abc}', '{key=lens, value=b2}']"
        );
        assert_eq!(trace_state_repr(&TraceState::NONE), "[]");
    }
}
