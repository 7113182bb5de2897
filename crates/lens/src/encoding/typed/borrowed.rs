//! The typed batch lowered straight from `SpanData`, borrowing every string.
//!
//! The bindings generated from the WIT take owned records: building them copies every key,
//! value and name into a fresh `String` and frees it after the call (the levers table of
//! `docs/benchmarks.md` has what that cost). These
//! mirror types have the same shape as `lens:exporter/types` (wasmtime checks it, field by
//! field, when the function is looked up) but hold `&str` and slices into the spans, so the
//! only copy is the canonical ABI's own copy into guest memory.
//!
//! The two records every span repeats, `span-data` and `key-value`, are lowered by hand
//! ([`image`](super::image), feature `hand-lowering`): each list of them is rendered into one
//! host buffer and copied in once, instead of one guest-memory lookup per field. Without the
//! feature they derive `Lower` like the others, so a wasmtime upgrade that changes its
//! internal lowering API still compiles.

use opentelemetry::trace::{SpanContext, Status};
use opentelemetry::{Array, InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::trace::SpanData;
use wasmtime::component::{ComponentType, Lower};

use super::{span_kind, trace_id_pair};
use crate::bindings::types::SpanKind;
use crate::encoding::{by_scope, unix_nanos};

#[derive(ComponentType, Lower)]
#[component(variant)]
pub(crate) enum ValueRef<'a> {
    #[component(name = "string")]
    String(&'a str),
    #[component(name = "bool")]
    Bool(bool),
    #[component(name = "s64")]
    S64(i64),
    #[component(name = "f64")]
    F64(f64),
    /// Never produced from `opentelemetry::Value`; part of the WIT variant all the same.
    #[allow(dead_code)]
    #[component(name = "bytes")]
    Bytes(&'a [u8]),
    #[component(name = "string-array")]
    StringArray(Vec<&'a str>),
    #[component(name = "bool-array")]
    BoolArray(&'a [bool]),
    #[component(name = "s64-array")]
    S64Array(&'a [i64]),
    #[component(name = "f64-array")]
    F64Array(&'a [f64]),
}

/// Lowered by hand with `hand-lowering` ([`image`](super::image)).
#[derive(ComponentType)]
#[cfg_attr(not(feature = "hand-lowering"), derive(Lower))]
#[component(record)]
pub(crate) struct KeyValueRef<'a> {
    pub(super) key: &'a str,
    pub(super) value: ValueRef<'a>,
}

#[derive(ComponentType, Lower)]
#[component(record)]
pub(crate) struct InstrumentationScopeRef<'a> {
    name: &'a str,
    version: Option<&'a str>,
    #[component(name = "schema-url")]
    schema_url: Option<&'a str>,
    attributes: Vec<KeyValueRef<'a>>,
}

#[derive(ComponentType, Lower)]
#[component(variant)]
pub(crate) enum StatusRef<'a> {
    #[component(name = "unset")]
    Unset,
    #[component(name = "ok")]
    Ok,
    #[component(name = "error")]
    Error(&'a str),
}

#[derive(ComponentType, Lower)]
#[component(record)]
pub(crate) struct SpanContextRef {
    #[component(name = "trace-id")]
    pub(super) trace_id: (u64, u64),
    #[component(name = "span-id")]
    pub(super) span_id: u64,
    #[component(name = "trace-flags")]
    pub(super) trace_flags: u8,
    #[component(name = "is-remote")]
    pub(super) is_remote: bool,
    /// Rendered by the SDK; empty (no allocation) in the common case.
    #[component(name = "trace-state")]
    pub(super) trace_state: String,
}

#[derive(ComponentType, Lower)]
#[component(record)]
pub(crate) struct EventRef<'a> {
    name: &'a str,
    time: u64,
    attributes: Vec<KeyValueRef<'a>>,
    #[component(name = "dropped-attributes")]
    dropped_attributes: u32,
}

#[derive(ComponentType, Lower)]
#[component(record)]
pub(crate) struct LinkRef<'a> {
    #[component(name = "span-context")]
    span_context: SpanContextRef,
    attributes: Vec<KeyValueRef<'a>>,
    #[component(name = "dropped-attributes")]
    dropped_attributes: u32,
}

/// Lowered by hand with `hand-lowering` ([`image`](super::image)).
#[derive(ComponentType)]
#[cfg_attr(not(feature = "hand-lowering"), derive(Lower))]
#[component(record)]
pub(crate) struct SpanDataRef<'a> {
    #[component(name = "span-context")]
    pub(super) span_context: SpanContextRef,
    #[component(name = "parent-span-id")]
    pub(super) parent_span_id: Option<u64>,
    #[component(name = "span-kind")]
    pub(super) span_kind: SpanKind,
    pub(super) name: &'a str,
    #[component(name = "start-time")]
    pub(super) start_time: u64,
    #[component(name = "end-time")]
    pub(super) end_time: u64,
    pub(super) attributes: Vec<KeyValueRef<'a>>,
    pub(super) events: Vec<EventRef<'a>>,
    pub(super) links: Vec<LinkRef<'a>>,
    pub(super) status: StatusRef<'a>,
    #[component(name = "dropped-attributes")]
    pub(super) dropped_attributes: u32,
    #[component(name = "dropped-events")]
    pub(super) dropped_events: u32,
    #[component(name = "dropped-links")]
    pub(super) dropped_links: u32,
}

#[derive(ComponentType, Lower)]
#[component(record)]
pub(crate) struct ScopeSpansRef<'a> {
    scope: InstrumentationScopeRef<'a>,
    spans: Vec<SpanDataRef<'a>>,
}

/// `lens:exporter/types.batch`, typed case only (the bytes case goes through the bindings).
#[derive(ComponentType, Lower)]
#[component(variant)]
pub(crate) enum TypedBatchRef<'a> {
    #[component(name = "typed")]
    Typed(Vec<ScopeSpansRef<'a>>),
    /// Built by the bindings instead; the case must exist for the type check.
    #[allow(dead_code)]
    #[component(name = "otlp-protobuf")]
    OtlpProtobuf(&'a [u8]),
    /// Built by the bindings instead; the case must exist for the type check.
    #[allow(dead_code)]
    #[component(name = "otlp-json")]
    OtlpJson(&'a str),
}

/// `None` for a value kind this host version does not know (the caller then falls back to the
/// owned encoding, which renders it as a string).
fn value(v: &Value) -> Option<ValueRef<'_>> {
    Some(match v {
        Value::Bool(b) => ValueRef::Bool(*b),
        Value::I64(i) => ValueRef::S64(*i),
        Value::F64(f) => ValueRef::F64(*f),
        Value::String(s) => ValueRef::String(s.as_str()),
        Value::Array(Array::Bool(a)) => ValueRef::BoolArray(a),
        Value::Array(Array::I64(a)) => ValueRef::S64Array(a),
        Value::Array(Array::F64(a)) => ValueRef::F64Array(a),
        Value::Array(Array::String(a)) => {
            ValueRef::StringArray(a.iter().map(|s| s.as_str()).collect())
        }
        _ => return None,
    })
}

fn attributes<'a>(attrs: impl IntoIterator<Item = &'a KeyValue>) -> Option<Vec<KeyValueRef<'a>>> {
    attrs
        .into_iter()
        .map(|kv| {
            Some(KeyValueRef {
                key: kv.key.as_str(),
                value: value(&kv.value)?,
            })
        })
        .collect()
}

fn span_context(cx: &SpanContext) -> SpanContextRef {
    SpanContextRef {
        trace_id: trace_id_pair(cx.trace_id()),
        span_id: u64::from_be_bytes(cx.span_id().to_bytes()),
        trace_flags: cx.trace_flags().to_u8(),
        is_remote: cx.is_remote(),
        trace_state: cx.trace_state().header(),
    }
}

fn span(s: &SpanData) -> Option<SpanDataRef<'_>> {
    let parent = u64::from_be_bytes(s.parent_span_id.to_bytes());
    Some(SpanDataRef {
        span_context: span_context(&s.span_context),
        parent_span_id: (parent != 0).then_some(parent),
        span_kind: span_kind(&s.span_kind),
        name: &s.name,
        start_time: unix_nanos(s.start_time),
        end_time: unix_nanos(s.end_time),
        attributes: attributes(&s.attributes)?,
        events: s
            .events
            .iter()
            .map(|e| {
                Some(EventRef {
                    name: &e.name,
                    time: unix_nanos(e.timestamp),
                    attributes: attributes(&e.attributes)?,
                    dropped_attributes: e.dropped_attributes_count,
                })
            })
            .collect::<Option<_>>()?,
        links: s
            .links
            .iter()
            .map(|l| {
                Some(LinkRef {
                    span_context: span_context(&l.span_context),
                    attributes: attributes(&l.attributes)?,
                    dropped_attributes: l.dropped_attributes_count,
                })
            })
            .collect::<Option<_>>()?,
        status: match &s.status {
            Status::Unset => StatusRef::Unset,
            Status::Ok => StatusRef::Ok,
            Status::Error { description } => StatusRef::Error(description),
        },
        dropped_attributes: s.dropped_attributes_count,
        dropped_events: s.events.dropped_count,
        dropped_links: s.links.dropped_count,
    })
}

fn scope(s: &InstrumentationScope) -> Option<InstrumentationScopeRef<'_>> {
    Some(InstrumentationScopeRef {
        name: s.name(),
        version: s.version(),
        schema_url: s.schema_url(),
        attributes: attributes(s.attributes())?,
    })
}

/// The batch grouped by scope ([`by_scope`]), borrowing from `batch`; `None` if some
/// value has a kind this host does not know.
pub(crate) fn typed_batch(batch: &[SpanData]) -> Option<TypedBatchRef<'_>> {
    let groups = by_scope(batch)
        .into_iter()
        .map(|(s, spans)| {
            Some(ScopeSpansRef {
                scope: scope(s)?,
                spans: spans.into_iter().map(span).collect::<Option<_>>()?,
            })
        })
        .collect::<Option<_>>()?;
    Some(TypedBatchRef::Typed(groups))
}
