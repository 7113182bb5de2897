//! The batch encodings of `lens:exporter`: how a batch of spans, metrics or log records
//! reaches a guest.
//!
//! A leaf of the crate: it reads spans and writes bytes, strings or WIT records, and imports
//! nothing from the host or the exporters.
//!
//! - [`typed`]: WIT records grouped by scope, lowered borrowing from the spans
//!   ([`typed::borrowed`], with the hand-written [`typed::image`] lowering of the two hot records
//!   behind the `hand-lowering` feature), or built as owned records ([`typed::owned`]: the
//!   resource, and values of a kind newer than this host);
//! - [`otlp_bytes`]: an OTLP `ExportTraceServiceRequest` as protobuf bytes;
//! - [`otlp_json`]: the same request as OTLP/JSON text;
//! - [`metrics`] and `logs`: the same three encodings of a metric collection and of a log
//!   batch (records built here, OTLP messages by `opentelemetry-proto`);
//! - here: what they share (grouping by scope, OTLP's enum numbers and flags, timestamps) and
//!   [`BatchEncoder`], one instance's choice with its resource rendered once.

pub(crate) mod logs;
pub(crate) mod metrics;
pub(crate) mod metrics_otlp;
pub(crate) mod otlp_bytes;
pub(crate) mod otlp_json;
pub(crate) mod typed;

#[cfg(test)]
mod tests;

use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry::InstrumentationScope;
use opentelemetry::trace::{SpanContext, SpanKind};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SpanData;

use crate::bindings::types::{Encoding, ScopeSpans};

/// Nanoseconds since the Unix epoch (0 before it).
pub fn unix_nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// OTLP's `Span.SpanKind` number of `kind`.
pub(crate) fn otlp_span_kind(kind: &SpanKind) -> u32 {
    match kind {
        SpanKind::Internal => 1,
        SpanKind::Server => 2,
        SpanKind::Client => 3,
        SpanKind::Producer => 4,
        SpanKind::Consumer => 5,
    }
}

/// `SpanFlags` bits of OTLP: the remote state of a context is known, and it is remote.
const CONTEXT_HAS_IS_REMOTE: u32 = 0x100;
const CONTEXT_IS_REMOTE: u32 = 0x200;

/// OTLP `SpanFlags`: the W3C trace flags, and whether the context (or the parent's) is remote.
pub(crate) fn otlp_span_flags(cx: &SpanContext, remote: bool) -> u32 {
    u32::from(cx.trace_flags().to_u8())
        | CONTEXT_HAS_IS_REMOTE
        | if remote { CONTEXT_IS_REMOTE } else { 0 }
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

/// The encoding one instance asked for in `init`, with what it renders once per instance
/// (the resource, for the OTLP encodings).
pub(crate) enum BatchEncoder {
    /// WIT records.
    Typed,
    /// OTLP protobuf bytes.
    OtlpProtobuf(otlp_bytes::EncodedResource),
    /// OTLP/JSON text.
    OtlpJson(otlp_json::JsonResource),
}

/// One batch, encoded for the guest.
pub(crate) enum EncodedBatch<'a> {
    /// Records borrowing from the spans.
    Typed(typed::TypedBatchRef<'a>),
    /// Owned records: some value has a kind newer than this host (rendered as a string).
    TypedOwned(Vec<ScopeSpans>),
    /// `ExportTraceServiceRequest` bytes.
    OtlpProtobuf(Vec<u8>),
    /// `ExportTraceServiceRequest` as OTLP/JSON.
    OtlpJson(String),
}

impl BatchEncoder {
    /// The encoder of `encoding` for an instance whose spans carry `resource`.
    pub(crate) fn new(encoding: Encoding, resource: &Resource) -> Self {
        match encoding {
            Encoding::Typed => Self::Typed,
            Encoding::OtlpProtobuf => {
                Self::OtlpProtobuf(otlp_bytes::EncodedResource::new(resource))
            }
            Encoding::OtlpJson => Self::OtlpJson(otlp_json::JsonResource::new(resource)),
        }
    }

    /// Encodes `batch`.
    pub(crate) fn encode<'a>(&self, batch: &'a [SpanData]) -> EncodedBatch<'a> {
        match self {
            Self::Typed => match typed::borrowed::typed_batch(batch) {
                Some(typed) => EncodedBatch::Typed(typed),
                None => EncodedBatch::TypedOwned(typed::owned::typed_batch(batch)),
            },
            Self::OtlpProtobuf(resource) => {
                EncodedBatch::OtlpProtobuf(otlp_bytes::encode(batch, resource))
            }
            Self::OtlpJson(resource) => EncodedBatch::OtlpJson(otlp_json::encode(batch, resource)),
        }
    }
}

/// The name of an encoding, as `init` returns it in the WIT.
pub(crate) fn encoding_name(e: Encoding) -> &'static str {
    match e {
        Encoding::Typed => "typed",
        Encoding::OtlpProtobuf => "otlp-protobuf",
        Encoding::OtlpJson => "otlp-json",
    }
}
