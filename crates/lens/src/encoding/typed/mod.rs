//! The `typed` encoding: the WIT records of `lens:exporter/types`, grouped by scope.
//!
//! - [`borrowed`]: the batch as records holding `&str` and slices into the spans, lowered
//!   into the guest without building owned copies (the export path);
//! - [`image`] (feature `hand-lowering`, on by default): the two records every span repeats,
//!   lowered by hand a list at a time; without the feature wasmtime's derived lowering does it;
//! - [`owned`]: the bindings' owned records, for the resource handed to `init` and for batches
//!   holding a value kind newer than this host.

pub(crate) mod borrowed;
#[cfg(feature = "hand-lowering")]
pub(crate) mod image;
pub(crate) mod owned;

use opentelemetry::trace::SpanKind;

pub(crate) use borrowed::TypedBatchRef;

use crate::bindings::types as wit;

/// The WIT `span-kind` of `kind`.
pub(crate) fn span_kind(kind: &SpanKind) -> wit::SpanKind {
    match kind {
        SpanKind::Client => wit::SpanKind::Client,
        SpanKind::Server => wit::SpanKind::Server,
        SpanKind::Producer => wit::SpanKind::Producer,
        SpanKind::Consumer => wit::SpanKind::Consumer,
        SpanKind::Internal => wit::SpanKind::Internal,
    }
}

/// A 128-bit trace id as the WIT's `(high, low)` pair.
pub(crate) fn trace_id_pair(id: opentelemetry::trace::TraceId) -> (u64, u64) {
    let id = u128::from_be_bytes(id.to_bytes());
    ((id >> 64) as u64, id as u64)
}
