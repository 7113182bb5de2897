//! The two batch encodings of `lens:exporter`: typed records grouped by scope, and OTLP
//! protobuf bytes (`ExportTraceServiceRequest`, written by [`super::otlp_bytes`]), each built
//! once per batch.

use opentelemetry::trace::{SpanKind, Status};
use opentelemetry::{Array, InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SpanData;

use super::bindings::types as wit;
use crate::exporter::json::unix_nanos;

/// An attribute value as the WIT variant.
pub fn value(v: &Value) -> wit::Value {
    match v {
        Value::Bool(b) => wit::Value::Bool(*b),
        Value::I64(i) => wit::Value::S64(*i),
        Value::F64(f) => wit::Value::F64(*f),
        Value::String(s) => wit::Value::String(s.as_str().to_string()),
        Value::Array(Array::Bool(a)) => wit::Value::BoolArray(a.clone()),
        Value::Array(Array::I64(a)) => wit::Value::S64Array(a.clone()),
        Value::Array(Array::F64(a)) => wit::Value::F64Array(a.clone()),
        Value::Array(Array::String(a)) => {
            wit::Value::StringArray(a.iter().map(|s| s.as_str().to_string()).collect())
        }
        // Future value kinds reach the guest as their string form rather than being lost.
        other => wit::Value::String(other.to_string()),
    }
}

/// Attributes as WIT key-values.
pub fn attributes<'a>(attrs: impl IntoIterator<Item = &'a KeyValue>) -> Vec<wit::KeyValue> {
    attrs
        .into_iter()
        .map(|kv| wit::KeyValue {
            key: kv.key.as_str().to_string(),
            value: value(&kv.value),
        })
        .collect()
}

/// The resource, handed to the guest's `init`.
pub fn resource(r: &Resource) -> wit::Resource {
    wit::Resource {
        attributes: r
            .iter()
            .map(|(k, v)| wit::KeyValue {
                key: k.as_str().to_string(),
                value: value(v),
            })
            .collect(),
        schema_url: r.schema_url().map(str::to_string),
    }
}

fn span_context(cx: &opentelemetry::trace::SpanContext) -> wit::SpanContext {
    let id = u128::from_be_bytes(cx.trace_id().to_bytes());
    wit::SpanContext {
        trace_id: ((id >> 64) as u64, id as u64),
        span_id: u64::from_be_bytes(cx.span_id().to_bytes()),
        trace_flags: cx.trace_flags().to_u8(),
        is_remote: cx.is_remote(),
        trace_state: cx.trace_state().header(),
    }
}

pub(crate) fn span_kind(kind: &SpanKind) -> wit::SpanKind {
    match kind {
        SpanKind::Client => wit::SpanKind::Client,
        SpanKind::Server => wit::SpanKind::Server,
        SpanKind::Producer => wit::SpanKind::Producer,
        SpanKind::Consumer => wit::SpanKind::Consumer,
        SpanKind::Internal => wit::SpanKind::Internal,
    }
}

fn span(s: &SpanData) -> wit::SpanData {
    let parent = u64::from_be_bytes(s.parent_span_id.to_bytes());
    wit::SpanData {
        span_context: span_context(&s.span_context),
        parent_span_id: (parent != 0).then_some(parent),
        span_kind: span_kind(&s.span_kind),
        name: s.name.to_string(),
        start_time: unix_nanos(s.start_time),
        end_time: unix_nanos(s.end_time),
        attributes: attributes(s.attributes.iter()),
        events: s
            .events
            .iter()
            .map(|e| wit::Event {
                name: e.name.to_string(),
                time: unix_nanos(e.timestamp),
                attributes: attributes(e.attributes.iter()),
                dropped_attributes: e.dropped_attributes_count,
            })
            .collect(),
        links: s
            .links
            .iter()
            .map(|l| wit::Link {
                span_context: span_context(&l.span_context),
                attributes: attributes(l.attributes.iter()),
                dropped_attributes: l.dropped_attributes_count,
            })
            .collect(),
        status: match &s.status {
            Status::Unset => wit::Status::Unset,
            Status::Ok => wit::Status::Ok,
            Status::Error { description } => wit::Status::Error(description.to_string()),
        },
        dropped_attributes: s.dropped_attributes_count,
        dropped_events: s.events.dropped_count,
        dropped_links: s.links.dropped_count,
    }
}

fn scope(s: &InstrumentationScope) -> wit::InstrumentationScope {
    wit::InstrumentationScope {
        name: s.name().to_string(),
        version: s.version().map(str::to_string),
        schema_url: s.schema_url().map(str::to_string),
        attributes: attributes(s.attributes()),
    }
}

/// The spans of a batch grouped by instrumentation scope, in order of first appearance, span
/// order kept within each scope: the grouping every encoding uses. Scopes per batch are few
/// (usually one), so a linear search beats hashing each span's scope.
pub(crate) fn by_scope(batch: &[SpanData]) -> Vec<(&InstrumentationScope, Vec<&SpanData>)> {
    let mut groups: Vec<(&InstrumentationScope, Vec<&SpanData>)> = Vec::new();
    for s in batch {
        match groups
            .iter_mut()
            .find(|(scope, _)| **scope == s.instrumentation_scope)
        {
            Some((_, spans)) => spans.push(s),
            None => groups.push((&s.instrumentation_scope, vec![s])),
        }
    }
    groups
}

/// Typed records grouped by instrumentation scope (`by_scope`).
pub fn typed_batch(batch: &[SpanData]) -> Vec<wit::ScopeSpans> {
    by_scope(batch)
        .into_iter()
        .map(|(s, spans)| wit::ScopeSpans {
            scope: scope(s),
            spans: spans.into_iter().map(span).collect(),
        })
        .collect()
}

/// The batch as an OTLP `ExportTraceServiceRequest` in protobuf bytes. (An exporter instance
/// encodes its resource once, with [`super::otlp_bytes::EncodedResource`].)
pub fn otlp_batch(batch: &[SpanData], resource: &Resource) -> Vec<u8> {
    super::otlp_bytes::encode(batch, &super::otlp_bytes::EncodedResource::new(resource))
}

/// The batch as the guest sees it in the `otlp-json` encoding (resource rendered each call).
pub fn otlp_json_batch(batch: &[SpanData], resource: &Resource) -> String {
    super::otlp_json::encode(batch, &super::otlp_json::JsonResource::new(resource))
}
