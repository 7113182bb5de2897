//! The identity of a span: trace and span ids (with their hex forms) and the span context.

use std::fmt;

use crate::bindings::spans::lens::exporter::types;

/// A 128-bit trace id; displays as 32 lowercase hex digits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TraceId(pub u128);

impl TraceId {
    /// The 32 lowercase hex digits, without formatting machinery (ids are written per span).
    pub fn to_hex(&self) -> HexId<32> {
        HexId::new(self.0)
    }
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.to_hex().as_str())
    }
}

/// The WIT form, `(high, low)`.
impl From<(u64, u64)> for TraceId {
    fn from((high, low): (u64, u64)) -> Self {
        TraceId((u128::from(high) << 64) | u128::from(low))
    }
}

/// A 64-bit span id; displays as 16 lowercase hex digits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SpanId(pub u64);

impl SpanId {
    /// The 16 lowercase hex digits.
    pub fn to_hex(&self) -> HexId<16> {
        HexId::new(u128::from(self.0))
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.to_hex().as_str())
    }
}

/// An id's hex digits, on the stack.
#[derive(Clone, Copy)]
pub struct HexId<const N: usize>([u8; N]);

impl<const N: usize> HexId<N> {
    fn new(mut id: u128) -> Self {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [b'0'; N];
        for digit in out.iter_mut().rev() {
            *digit = DIGITS[(id & 0xf) as usize];
            id >>= 4;
        }
        HexId(out)
    }

    /// The digits.
    pub fn as_str(&self) -> &str {
        // Only ASCII hex digits were written.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

/// The identity of a span, as propagated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanContext<'a> {
    /// Trace id.
    pub trace_id: TraceId,
    /// Span id.
    pub span_id: SpanId,
    /// W3C trace flags (bit 0: sampled).
    pub trace_flags: u8,
    /// Whether the context came from another process.
    pub is_remote: bool,
    /// W3C `tracestate` ("" when empty).
    pub trace_state: &'a str,
}

impl<'a> SpanContext<'a> {
    /// All zeros, filled in as a message is read.
    pub(crate) const EMPTY: Self = SpanContext {
        trace_id: TraceId(0),
        span_id: SpanId(0),
        trace_flags: 0,
        is_remote: false,
        trace_state: "",
    };

    pub(crate) fn typed(cx: &'a types::SpanContext) -> Self {
        SpanContext {
            trace_id: TraceId::from(cx.trace_id),
            span_id: SpanId(cx.span_id),
            trace_flags: cx.trace_flags,
            is_remote: cx.is_remote,
            trace_state: &cx.trace_state,
        }
    }

    /// Whether the sampled flag is set.
    pub fn is_sampled(&self) -> bool {
        self.trace_flags & 1 == 1
    }
}

/// OTLP `SpanFlags`: whether the context is remote is known (0x100) and true (0x200).
pub(crate) fn remote(flags: u32) -> bool {
    flags & 0x300 == 0x300
}
