//! The typed encoding as the bindings' owned records: the resource handed to `init`, and the
//! fallback for a batch holding a value kind newer than this host (rendered as a string).

use opentelemetry::trace::Status;
use opentelemetry::{Array, InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SpanData;

use super::{span_kind, trace_id_pair};
use crate::bindings::types as wit;
use crate::encoding::{by_scope, unix_nanos};

/// An attribute value as the WIT variant.
pub(crate) fn value(v: &Value) -> wit::Value {
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
pub(crate) fn attributes<'a>(attrs: impl IntoIterator<Item = &'a KeyValue>) -> Vec<wit::KeyValue> {
    attrs
        .into_iter()
        .map(|kv| wit::KeyValue {
            key: kv.key.as_str().to_string(),
            value: value(&kv.value),
        })
        .collect()
}

/// The resource, handed to the guest's `init`.
pub(crate) fn resource(r: &Resource) -> wit::Resource {
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
    wit::SpanContext {
        trace_id: trace_id_pair(cx.trace_id()),
        span_id: u64::from_be_bytes(cx.span_id().to_bytes()),
        trace_flags: cx.trace_flags().to_u8(),
        is_remote: cx.is_remote(),
        trace_state: cx.trace_state().header(),
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

pub(crate) fn scope(s: &InstrumentationScope) -> wit::InstrumentationScope {
    wit::InstrumentationScope {
        name: s.name().to_string(),
        version: s.version().map(str::to_string),
        schema_url: s.schema_url().map(str::to_string),
        attributes: attributes(s.attributes()),
    }
}

/// Typed records grouped by instrumentation scope (`by_scope`).
pub(crate) fn typed_batch(batch: &[SpanData]) -> Vec<wit::ScopeSpans> {
    by_scope(batch)
        .into_iter()
        .map(|(s, spans)| wit::ScopeSpans {
            scope: scope(s),
            spans: spans.into_iter().map(span).collect(),
        })
        .collect()
}
