//! What a spool record holds: a batch as the OTLP request an OTLP exporter would send for it
//! (`ExportTraceServiceRequest`, `ExportLogsServiceRequest`, `ExportMetricsServiceRequest`,
//! protobuf), and the batch read back from one.
//!
//! The bytes come from disk, so reading them back trusts nothing: prost bounds the nesting
//! of values, every id of the wrong length makes an invalid (zero) id, and the two strings the
//! SDK wants `'static` (a log record's severity text and event name) are interned in a table
//! of at most [`MAX_INTERNED`] names, past which they are dropped. The resource of a record
//! is not read back: a replayed batch is exported under the resource of the process replaying
//! it (the same service, rank and host; a new `process.pid` after a restart).

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, LoggerProvider as _, Severity};
use opentelemetry::trace::{
    Event, Link, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{Array, InstrumentationScope, Key, KeyValue, StringValue, Value};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1 as otlp;
use opentelemetry_proto::tonic::common::v1::any_value::Value as V;
use opentelemetry_proto::tonic::trace::v1 as otlp_trace;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::{LogBatch, SdkLogRecord, SdkLogger, SdkLoggerProvider};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use prost::Message;

pub(crate) use crate::encoding::otlp_bytes::EncodedResource;
use crate::logs::Queued;

/// The most distinct severity texts and event names read back from spools in one process.
pub const MAX_INTERNED: usize = 1024;

/// Reading a record back failed: it is not the request it should be.
#[derive(Debug, thiserror::Error)]
#[error("not an OTLP {what}: {source}")]
pub struct DecodeError {
    what: &'static str,
    #[source]
    source: prost::DecodeError,
}

/// `batch` as the request a spool record holds, under `resource`.
pub(crate) fn encode_spans(batch: &[SpanData], resource: &EncodedResource) -> Vec<u8> {
    crate::encoding::otlp_bytes::encode(batch, resource)
}

/// `batch` as the request a spool record holds, under `resource`.
pub(crate) fn encode_logs(batch: &[Queued], resource: &Resource) -> Vec<u8> {
    let refs: Vec<(&SdkLogRecord, &InstrumentationScope)> =
        batch.iter().map(|(r, s)| (r, s)).collect();
    crate::encoding::logs::request(&LogBatch::new(&refs), resource).encode_to_vec()
}

/// The spans of a spooled `ExportTraceServiceRequest`, in order.
pub fn decode_spans(bytes: &[u8]) -> Result<Vec<SpanData>, DecodeError> {
    let request = ExportTraceServiceRequest::decode(bytes).map_err(|source| DecodeError {
        what: "ExportTraceServiceRequest",
        source,
    })?;
    let mut spans = Vec::new();
    for resource in request.resource_spans {
        for group in resource.scope_spans {
            let scope = scope(group.scope, group.schema_url);
            spans.extend(group.spans.into_iter().map(|s| span(s, &scope)));
        }
    }
    Ok(spans)
}

/// A spooled `ExportMetricsServiceRequest`, checked to hold the `items` data points its
/// record says (a record that says otherwise was not written by this exporter's spool). A
/// metric record is sent as it was collected, under the resource it was collected with (a
/// cumulative series belongs to the process that started it).
pub fn decode_metrics(
    bytes: &[u8],
    items: u64,
) -> Result<ExportMetricsServiceRequest, MetricDecodeError> {
    let request = ExportMetricsServiceRequest::decode(bytes).map_err(|source| DecodeError {
        what: "ExportMetricsServiceRequest",
        source,
    })?;
    let found = crate::encoding::metrics_otlp::otlp_data_points(&request);
    if found != items {
        return Err(MetricDecodeError::Count { found, items });
    }
    Ok(request)
}

/// Reading a metric record back failed.
#[derive(Debug, thiserror::Error)]
pub enum MetricDecodeError {
    /// Not a request.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// A request of another size than its record says.
    #[error("it holds {found} data point(s) where its record says {items}")]
    Count {
        /// Data points in the request.
        found: u64,
        /// Data points the record says.
        items: u64,
    },
}

/// The log records of a spooled `ExportLogsServiceRequest`, in order, each with its scope.
pub fn decode_logs(bytes: &[u8]) -> Result<Vec<Queued>, DecodeError> {
    let request = ExportLogsServiceRequest::decode(bytes).map_err(|source| DecodeError {
        what: "ExportLogsServiceRequest",
        source,
    })?;
    let mut records = Vec::new();
    for resource in request.resource_logs {
        for group in resource.scope_logs {
            let scope = scope(group.scope, group.schema_url);
            records.extend(
                group
                    .log_records
                    .into_iter()
                    .map(|r| (log_record(r), scope.clone())),
            );
        }
    }
    Ok(records)
}

fn scope(scope: Option<otlp::InstrumentationScope>, schema_url: String) -> InstrumentationScope {
    let scope = scope.unwrap_or_default();
    let mut builder = InstrumentationScope::builder(scope.name)
        .with_attributes(scope.attributes.into_iter().map(key_value));
    if !scope.version.is_empty() {
        builder = builder.with_version(scope.version);
    }
    if !schema_url.is_empty() {
        builder = builder.with_schema_url(schema_url);
    }
    builder.build()
}

fn span(s: otlp_trace::Span, scope: &InstrumentationScope) -> SpanData {
    let state = TraceState::from_key_value(std::iter::empty::<(&str, &str)>()).unwrap_or_default();
    let trace_state = if s.trace_state.is_empty() {
        state
    } else {
        s.trace_state.parse().unwrap_or(state)
    };
    let context = SpanContext::new(
        trace_id(&s.trace_id),
        span_id(&s.span_id),
        TraceFlags::new(s.flags as u8),
        false,
        trace_state,
    );
    let status = match s.status {
        Some(st) if st.code == otlp_trace::status::StatusCode::Error as i32 => {
            Status::error(st.message)
        }
        Some(st) if st.code == otlp_trace::status::StatusCode::Ok as i32 => Status::Ok,
        _ => Status::Unset,
    };
    let kind = match otlp_trace::span::SpanKind::try_from(s.kind) {
        Ok(otlp_trace::span::SpanKind::Server) => SpanKind::Server,
        Ok(otlp_trace::span::SpanKind::Client) => SpanKind::Client,
        Ok(otlp_trace::span::SpanKind::Producer) => SpanKind::Producer,
        Ok(otlp_trace::span::SpanKind::Consumer) => SpanKind::Consumer,
        _ => SpanKind::Internal,
    };
    let events = s
        .events
        .into_iter()
        .map(|e| {
            Event::new(
                e.name,
                time(e.time_unix_nano),
                e.attributes.into_iter().map(key_value).collect(),
                e.dropped_attributes_count,
            )
        })
        .collect();
    let links = s
        .links
        .into_iter()
        .map(|l| {
            let cx = SpanContext::new(
                trace_id(&l.trace_id),
                span_id(&l.span_id),
                TraceFlags::new(l.flags as u8),
                l.flags & 0x200 != 0,
                l.trace_state.parse().unwrap_or_default(),
            );
            let mut link = Link::with_context(cx);
            link.attributes = l.attributes.into_iter().map(key_value).collect();
            link.dropped_attributes_count = l.dropped_attributes_count;
            link
        })
        .collect();
    SpanData {
        span_context: context,
        parent_span_id: span_id(&s.parent_span_id),
        // OTLP's span flags: bit 8 says whether bit 9 (the parent is remote) is known.
        parent_span_is_remote: s.flags & 0x300 == 0x300,
        span_kind: kind,
        name: Cow::Owned(s.name),
        start_time: time(s.start_time_unix_nano),
        end_time: time(s.end_time_unix_nano),
        attributes: s.attributes.into_iter().map(key_value).collect(),
        dropped_attributes_count: s.dropped_attributes_count,
        events: spans_events(events, s.dropped_events_count),
        links: span_links(links, s.dropped_links_count),
        status,
        instrumentation_scope: scope.clone(),
    }
}

#[allow(
    clippy::field_reassign_with_default,
    reason = "SpanEvents is non-exhaustive"
)]
fn spans_events(events: Vec<Event>, dropped_count: u32) -> SpanEvents {
    let mut e = SpanEvents::default();
    e.events = events;
    e.dropped_count = dropped_count;
    e
}

#[allow(
    clippy::field_reassign_with_default,
    reason = "SpanLinks is non-exhaustive"
)]
fn span_links(links: Vec<Link>, dropped_count: u32) -> SpanLinks {
    let mut l = SpanLinks::default();
    l.links = links;
    l.dropped_count = dropped_count;
    l
}

/// The process-wide logger whose records a spool's are read into (the SDK makes records
/// only through a logger; this one has no processor and never emits).
static READER: LazyLock<SdkLogger> =
    LazyLock::new(|| SdkLoggerProvider::builder().build().logger("lens.spool"));

fn log_record(r: opentelemetry_proto::tonic::logs::v1::LogRecord) -> SdkLogRecord {
    let mut record = READER.create_log_record();
    if r.time_unix_nano != 0 {
        record.set_timestamp(time(r.time_unix_nano));
    }
    if r.observed_time_unix_nano != 0 {
        record.set_observed_timestamp(time(r.observed_time_unix_nano));
    }
    if let Some(severity) = severity(r.severity_number) {
        record.set_severity_number(severity);
    }
    if let Some(text) = interned(&r.severity_text) {
        record.set_severity_text(text);
    }
    if let Some(name) = interned(&r.event_name) {
        record.set_event_name(name);
    }
    if let Some(body) = r.body.and_then(|b| b.value) {
        record.set_body(any_value(body));
    }
    for kv in r.attributes {
        if let Some(v) = kv.value.and_then(|v| v.value) {
            record.add_attribute(Key::new(kv.key), any_value(v));
        }
    }
    let (trace, span) = (trace_id(&r.trace_id), span_id(&r.span_id));
    if span != SpanId::INVALID {
        record.set_trace_context(trace, span, Some(TraceFlags::new(r.flags as u8)));
    }
    record
}

fn severity(n: i32) -> Option<Severity> {
    use Severity::*;
    const ALL: [Severity; 24] = [
        Trace, Trace2, Trace3, Trace4, Debug, Debug2, Debug3, Debug4, Info, Info2, Info3, Info4,
        Warn, Warn2, Warn3, Warn4, Error, Error2, Error3, Error4, Fatal, Fatal2, Fatal3, Fatal4,
    ];
    usize::try_from(n)
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| ALL.get(i).copied())
}

/// `text` as a `'static` string from the process's table (empty: none); `None` once the
/// table is full and `text` is not in it.
fn interned(text: &str) -> Option<&'static str> {
    static TABLE: LazyLock<Mutex<HashSet<&'static str>>> = LazyLock::new(Mutex::default);
    if text.is_empty() {
        return None;
    }
    let mut table = TABLE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(known) = table.get(text) {
        return Some(known);
    }
    if table.len() >= MAX_INTERNED {
        return None;
    }
    let leaked: &'static str = Box::leak(text.to_owned().into_boxed_str());
    table.insert(leaked);
    Some(leaked)
}

fn time(nanos: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(nanos)
}

fn trace_id(bytes: &[u8]) -> TraceId {
    <[u8; 16]>::try_from(bytes).map_or(TraceId::INVALID, TraceId::from_bytes)
}

fn span_id(bytes: &[u8]) -> SpanId {
    <[u8; 8]>::try_from(bytes).map_or(SpanId::INVALID, SpanId::from_bytes)
}

fn key_value(kv: otlp::KeyValue) -> KeyValue {
    let value = kv
        .value
        .and_then(|v| v.value)
        .map_or_else(|| Value::String(StringValue::from("")), attribute_value);
    KeyValue::new(kv.key, value)
}

/// A span attribute: OTel's scalars and homogeneous arrays (what the encoder writes); any
/// other OTLP value (bytes, maps, mixed arrays) as its debug text.
fn attribute_value(v: V) -> Value {
    match v {
        V::StringValue(s) => Value::String(s.into()),
        V::BoolValue(b) => Value::Bool(b),
        V::IntValue(i) => Value::I64(i),
        V::DoubleValue(d) => Value::F64(d),
        V::ArrayValue(a) => array(a).unwrap_or_else(|a| Value::String(format!("{a:?}").into())),
        other => Value::String(format!("{other:?}").into()),
    }
}

fn array(a: otlp::ArrayValue) -> Result<Value, otlp::ArrayValue> {
    let values: Vec<V> = a.values.iter().filter_map(|v| v.value.clone()).collect();
    macro_rules! all {
        ($variant:ident, $array:ident, $map:expr) => {
            if values.iter().all(|v| matches!(v, V::$variant(_))) {
                let items = values
                    .into_iter()
                    .filter_map(|v| match v {
                        V::$variant(x) => Some($map(x)),
                        _ => None,
                    })
                    .collect();
                return Ok(Value::Array(Array::$array(items)));
            }
        };
    }
    all!(StringValue, String, StringValue::from);
    all!(BoolValue, Bool, |b| b);
    all!(IntValue, I64, |i| i);
    all!(DoubleValue, F64, |d| d);
    Err(a)
}

/// A log record's value, any shape.
fn any_value(v: V) -> AnyValue {
    match v {
        V::StringValue(s) => AnyValue::String(s.into()),
        V::BoolValue(b) => AnyValue::Boolean(b),
        V::IntValue(i) => AnyValue::Int(i),
        V::DoubleValue(d) => AnyValue::Double(d),
        V::BytesValue(b) => AnyValue::Bytes(Box::new(b)),
        V::ArrayValue(a) => AnyValue::ListAny(Box::new(
            a.values
                .into_iter()
                .filter_map(|v| v.value.map(any_value))
                .collect(),
        )),
        V::KvlistValue(kv) => AnyValue::Map(Box::new(
            kv.values
                .into_iter()
                .filter_map(|kv| Some((Key::new(kv.key), any_value(kv.value?.value?))))
                .collect(),
        )),
        other => AnyValue::String(format!("{other:?}").into()),
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry::KeyValue;

    use super::*;

    fn resource() -> Resource {
        Resource::builder_empty()
            .with_attributes([KeyValue::new("service.name", "spool")])
            .build()
    }

    #[test]
    fn spans_read_back_are_the_spans_written_every_field() {
        let spans = crate::testing::rich_trace_spans();
        let bytes = encode_spans(&spans, &EncodedResource::new(&resource()));
        let back = decode_spans(&bytes).unwrap();
        assert_eq!(back.len(), spans.len());
        for (b, s) in back.iter().zip(&spans) {
            // The live context's `is_remote` is not exported; the rest is.
            assert_eq!(b.span_context.trace_id(), s.span_context.trace_id());
            assert_eq!(b.span_context.span_id(), s.span_context.span_id());
            assert_eq!(b.span_context.trace_flags(), s.span_context.trace_flags());
            assert_eq!(
                (&b.name, b.parent_span_id, &b.span_kind, &b.status),
                (&s.name, s.parent_span_id, &s.span_kind, &s.status)
            );
            assert_eq!((b.start_time, b.end_time), (s.start_time, s.end_time));
            assert_eq!(b.attributes, s.attributes);
            assert_eq!(b.events.events, s.events.events);
            assert_eq!(b.links.links.len(), s.links.links.len());
            assert_eq!(b.instrumentation_scope, s.instrumentation_scope);
        }
        // Written again, byte for byte the same request.
        assert_eq!(
            encode_spans(&back, &EncodedResource::new(&resource())),
            bytes
        );
    }

    #[test]
    fn log_records_read_back_encode_to_the_same_request() {
        let records = crate::testing::every_log_body();
        let bytes = encode_logs(&records, &resource());
        let back = decode_logs(&bytes).unwrap();
        assert_eq!(back.len(), records.len());
        // The same request, map entries aside: a map body's order is its HashMap's.
        let request = |bytes: &[u8]| {
            let mut r = ExportLogsServiceRequest::decode(bytes).unwrap();
            for record in r.resource_logs.iter_mut().flat_map(|l| &mut l.scope_logs) {
                for log in &mut record.log_records {
                    if let Some(V::KvlistValue(kv)) =
                        log.body.as_mut().and_then(|b| b.value.as_mut())
                    {
                        kv.values.sort_by(|a, b| a.key.cmp(&b.key));
                    }
                }
            }
            r
        };
        assert_eq!(request(&encode_logs(&back, &resource())), request(&bytes));
    }

    #[test]
    fn bytes_that_are_no_request_are_an_error_and_names_are_interned_within_bounds() {
        assert!(decode_spans(&[0xff, 0xff, 0xff]).is_err());
        assert!(decode_logs(b"\x0a\x05abc").is_err());
        assert_eq!(interned("INFO"), interned("INFO"));
        assert!(std::ptr::eq(
            interned("WARN").unwrap(),
            interned("WARN").unwrap()
        ));
        assert_eq!(interned(""), None);
    }
}
