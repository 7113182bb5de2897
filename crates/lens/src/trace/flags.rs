//! W3C Trace Context level 2's random-trace-id flag, as OpenTelemetry-Python (and so NeMo Lens)
//! sets it and the Rust SDK does not: a span's flags are its sampled bit and the random bit of
//! its parent, or, for a root span, the random bit itself (the SDK draws trace ids at random).
//! A sampled root span of NeMo Lens carries `03`; the Rust SDK's would carry `01`.
//!
//! [`LensTracer`](super::LensTracer) gives the live span these flags (what children inherit, what
//! the propagator injects, what log records carry) and the fan-out sets them on the exported
//! data of root spans, which the SDK built with its own.

use opentelemetry::trace::{SpanContext, SpanId, TraceFlags};
use opentelemetry_sdk::trace::SpanData;

/// `0x02`: the trace id was drawn at random (W3C Trace Context level 2).
pub const RANDOM_TRACE_ID: TraceFlags = TraceFlags::new(0x02);

/// The flags Python gives a span whose SDK context is `span` and whose parent is `parent`
/// (`None`: a root); `None` when the SDK's are already those.
pub(crate) fn w3c_context(span: &SpanContext, parent: Option<&SpanContext>) -> Option<SpanContext> {
    if !span.is_valid() {
        return None;
    }
    let random = match parent {
        Some(p) => p.trace_flags() & RANDOM_TRACE_ID,
        None => RANDOM_TRACE_ID,
    };
    let flags = span.trace_flags() | random;
    (flags != span.trace_flags()).then(|| with_flags(span, flags))
}

/// The exported data of a root span with the random bit its live span had.
pub(crate) fn mark_root(span: &mut SpanData) {
    if span.parent_span_id == SpanId::INVALID
        && (span.span_context.trace_flags() & RANDOM_TRACE_ID) != RANDOM_TRACE_ID
    {
        let flags = span.span_context.trace_flags() | RANDOM_TRACE_ID;
        span.span_context = with_flags(&span.span_context, flags);
    }
}

fn with_flags(cx: &SpanContext, flags: TraceFlags) -> SpanContext {
    SpanContext::new(
        cx.trace_id(),
        cx.span_id(),
        flags,
        cx.is_remote(),
        cx.trace_state().clone(),
    )
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::{TraceId, TraceState};

    use super::*;

    fn cx(flags: u8) -> SpanContext {
        SpanContext::new(
            TraceId::from(7),
            SpanId::from(9),
            TraceFlags::new(flags),
            false,
            TraceState::NONE,
        )
    }

    #[test]
    fn flags_are_python_s() {
        // A sampled root: 03; a dropped root: 02 (the SDK writes 00 for both bits off).
        assert_eq!(
            w3c_context(&cx(0x01), None).unwrap().trace_flags().to_u8(),
            0x03
        );
        assert_eq!(
            w3c_context(&cx(0x00), None).unwrap().trace_flags().to_u8(),
            0x02
        );
        // A child of a 03 parent inherits the bit; of a launcher's 01, none.
        assert!(w3c_context(&cx(0x03), Some(&cx(0x03))).is_none());
        assert_eq!(
            w3c_context(&cx(0x00), Some(&cx(0x03)))
                .unwrap()
                .trace_flags()
                .to_u8(),
            0x02
        );
        assert!(w3c_context(&cx(0x01), Some(&cx(0x01))).is_none());
        assert!(w3c_context(&SpanContext::empty_context(), None).is_none());
    }
}
