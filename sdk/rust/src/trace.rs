//! The span exporter trait and the batch it receives.

use crate::bindings::spans::lens::exporter::types;
use crate::export::{Config, Encoding, ExportResult};
use crate::span::{Scope, Span};
use crate::wire::Fields;

/// A span exporter: OpenTelemetry's `SpanExporter`, as a Lens guest. One value per instance,
/// built by [`SpanExporter::new`] when the host calls `init`; `export` is never called again
/// after `shutdown` (the SDK answers `rejected` itself).
pub trait SpanExporter: Sized + 'static {
    /// Builds the exporter from its config entry's settings and the rank's resource. An error
    /// disables the exporter; the host logs it with the exporter's name.
    fn new(config: Config) -> Result<Self, String>;

    /// The encoding to receive batches in; the views read either, at about the same cost for
    /// an exporter reading every field (`docs/benchmarks.md`). [`Encoding::OtlpProtobuf`] is
    /// read in place, and is the one to ask for to forward the bytes
    /// ([`SpanBatch::otlp_protobuf`]); [`Encoding::Typed`] is the default.
    fn encoding(&self) -> Encoding {
        Encoding::Typed
    }

    /// Exports one batch.
    fn export(&mut self, batch: SpanBatch<'_>) -> ExportResult;

    /// Completes buffered work.
    fn force_flush(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// Releases everything. The exporter is dropped afterwards.
    fn shutdown(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// One batch of spans, borrowed: iterate with [`SpanBatch::spans`], or forward the OTLP bytes.
#[derive(Clone, Copy, Debug)]
pub struct SpanBatch<'a>(Repr<'a>);

#[derive(Clone, Copy, Debug)]
enum Repr<'a> {
    Typed(&'a [types::ScopeSpans]),
    Proto(&'a [u8]),
}

impl<'a> SpanBatch<'a> {
    /// A typed batch (scope groups as the host sends them).
    pub fn from_typed(groups: &'a [types::ScopeSpans]) -> Self {
        SpanBatch(Repr::Typed(groups))
    }

    /// An OTLP `ExportTraceServiceRequest`, read lazily.
    pub fn from_otlp_protobuf(bytes: &'a [u8]) -> Self {
        SpanBatch(Repr::Proto(bytes))
    }

    /// Every span, scope by scope, in the batch's order.
    pub fn spans(&self) -> impl Iterator<Item = Span<'a>> + use<'a> {
        let (typed, proto) = match self.0 {
            Repr::Typed(groups) => (groups.iter(), None),
            Repr::Proto(bytes) => ([].iter(), Some(proto_spans(bytes))),
        };
        typed
            .flat_map(|g| {
                let scope = Scope::typed(&g.scope);
                g.spans.iter().map(move |s| Span::typed(s, scope))
            })
            .chain(proto.into_iter().flatten())
    }

    /// How many spans the batch holds.
    pub fn len(&self) -> usize {
        match self.0 {
            Repr::Typed(groups) => groups.iter().map(|g| g.spans.len()).sum(),
            // Counted without reading the spans' fields.
            Repr::Proto(bytes) => scope_spans(bytes)
                .map(|group| Fields::new(group).repeated(2).count())
                .sum(),
        }
    }

    /// Whether the batch holds no span.
    pub fn is_empty(&self) -> bool {
        self.spans().next().is_none()
    }

    /// The OTLP protobuf bytes, when the exporter asked for them: ready to send to an OTLP
    /// endpoint unchanged.
    pub fn otlp_protobuf(&self) -> Option<&'a [u8]> {
        match self.0 {
            Repr::Proto(bytes) => Some(bytes),
            Repr::Typed(_) => None,
        }
    }
}

/// The `ScopeSpans` messages of a request: `resource_spans` (1) → `scope_spans` (2).
fn scope_spans(request: &[u8]) -> impl Iterator<Item = &[u8]> {
    Fields::new(request)
        .repeated(1)
        .flat_map(|resource_spans| Fields::new(resource_spans).repeated(2))
}

/// Each `ScopeSpans`'s `scope` (1) and `spans` (2), as views.
fn proto_spans(request: &[u8]) -> impl Iterator<Item = Span<'_>> {
    scope_spans(request).flat_map(|scope_spans| {
        let scope = Fields::new(scope_spans)
            .find(|(n, _)| *n == 1)
            .map_or(Scope::proto(&[]), |(_, f)| Scope::proto(f.bytes()));
        Fields::new(scope_spans)
            .repeated(2)
            .map(move |span| Span::proto(span, scope))
    })
}
