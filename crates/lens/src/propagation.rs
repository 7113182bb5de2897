//! W3C TraceContext + Baggage propagation, as NeMo Lens sets it up.
//!
//! - An exporting, enabled setup installs the composite TraceContext + Baggage propagator as the
//!   process's global text-map propagator (NeMo Lens's `_set_propagator`).
//! - [`inject_context`] and [`extract_context`] carry the current context across a process
//!   boundary in a string map (HTTP headers, gRPC metadata, a message), as NeMo Lens's helpers of
//!   the same names do.
//! - **A launcher hands one trace to every rank** through the environment, following the
//!   OpenTelemetry environment-carrier convention: the keys upper-cased (`TRACEPARENT`,
//!   `TRACESTATE`, `BAGGAGE`). [`environment_carrier`] gives a launcher the variables to set;
//!   [`launcher_context`] reads them on the rank, and the rank's root spans get that context as
//!   their parent (see [`LensTracer`](crate::trace::LensTracer)).

use std::collections::HashMap;

use std::str::FromStr;
use std::sync::OnceLock;

use opentelemetry::propagation::text_map_propagator::FieldIter;
use opentelemetry::propagation::{
    Extractor, Injector, TextMapCompositePropagator, TextMapPropagator,
};
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry::{Context, global};
use opentelemetry_sdk::propagation::BaggagePropagator;

use crate::config::env::EnvSource;

/// The environment variables of the launcher's trace, in the order they are read.
pub const ENVIRONMENT_KEYS: [&str; 3] = ["TRACEPARENT", "TRACESTATE", "BAGGAGE"];

/// W3C Trace Context as OpenTelemetry-Python's propagator, which NeMo Lens installs, reads and
/// writes it: the whole flags byte is kept and written (the SDK's keeps only the sampled bit,
/// so a NeMo Lens rank's `03` would cross as `01`), and `tracestate` is written only when there
/// is one (the SDK's writes an empty header).
///
/// ```
/// use opentelemetry::propagation::TextMapPropagator;
/// use opentelemetry::trace::TraceContextExt;
/// let mut carrier = std::collections::HashMap::new();
/// carrier.insert(
///     "traceparent".to_string(),
///     "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-03".to_string(),
/// );
/// let propagator = lens::propagation::TraceContextPropagator::default();
/// let cx = propagator.extract(&carrier);
/// assert_eq!(cx.span().span_context().trace_flags().to_u8(), 0x03);
/// let mut out = std::collections::HashMap::new();
/// propagator.inject_context(&cx, &mut out);
/// assert_eq!(out, carrier); // no empty `tracestate`
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct TraceContextPropagator;

const TRACEPARENT: &str = "traceparent";
const TRACESTATE: &str = "tracestate";
/// Python's bounds on the two headers, past which it ignores them.
const MAX_TRACEPARENT: usize = 512;
const MAX_TRACESTATE: usize = 512;

impl TraceContextPropagator {
    /// The span context `traceparent` (and `tracestate`) carry, under Python's rules:
    /// `^[ \t]*([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:(-.*)|[ \t]*)$`,
    /// version `ff` and a version `00` with more fields refused, all-zero ids refused.
    fn span_context(extractor: &dyn Extractor) -> Option<SpanContext> {
        let header = extractor.get(TRACEPARENT)?;
        if header.len() > MAX_TRACEPARENT {
            log::warn!(
                "traceparent header exceeded the maximum length of {MAX_TRACEPARENT} characters"
            );
            return None;
        }
        let s = header.trim_start_matches([' ', '\t']);
        let b = s.as_bytes();
        let hex = |r: &[u8]| {
            r.iter()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
        };
        if b.len() < 55 || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        let (version, trace, span, flags) = (&b[0..2], &b[3..35], &b[36..52], &b[53..55]);
        if !(hex(version) && hex(trace) && hex(span) && hex(flags)) {
            return None;
        }
        // What follows: more fields (`-…`) or blanks; `$` also matches before a final newline.
        let rest = &s[55..];
        let rest = rest.strip_suffix('\n').unwrap_or(rest);
        let more = rest.starts_with('-');
        let ends = if more {
            !rest.contains('\n')
        } else {
            rest.bytes().all(|c| c == b' ' || c == b'\t')
        };
        if !ends {
            return None;
        }
        if (version == b"00" && more) || version == b"ff" {
            return None;
        }
        // ASCII hex digits: these parse.
        let trace_id = TraceId::from_hex(&s[3..35]).ok()?;
        let span_id = SpanId::from_hex(&s[36..52]).ok()?;
        let flags = u8::from_str_radix(&s[53..55], 16).ok()?;
        if trace_id == TraceId::INVALID || span_id == SpanId::INVALID {
            return None;
        }
        let trace_state = extractor
            .get(TRACESTATE)
            .filter(|h| h.len() <= MAX_TRACESTATE)
            .and_then(|h| TraceState::from_str(h).ok())
            .unwrap_or_default();
        Some(SpanContext::new(
            trace_id,
            span_id,
            TraceFlags::new(flags),
            true,
            trace_state,
        ))
    }
}

impl TextMapPropagator for TraceContextPropagator {
    fn inject_context(&self, cx: &Context, injector: &mut dyn Injector) {
        let span = cx.span();
        let sc = span.span_context();
        if !sc.is_valid() {
            return;
        }
        injector.set(
            TRACEPARENT,
            format!(
                "00-{}-{}-{:02x}",
                sc.trace_id(),
                sc.span_id(),
                sc.trace_flags()
            ),
        );
        let state = sc.trace_state().header();
        if !state.is_empty() {
            injector.set(TRACESTATE, state);
        }
    }

    fn extract_with_context(&self, cx: &Context, extractor: &dyn Extractor) -> Context {
        match Self::span_context(extractor) {
            Some(sc) => cx.with_remote_span_context(sc),
            None => cx.clone(),
        }
    }

    fn fields(&self) -> FieldIter<'_> {
        static FIELDS: OnceLock<[String; 2]> = OnceLock::new();
        FieldIter::new(FIELDS.get_or_init(|| [TRACEPARENT.to_string(), TRACESTATE.to_string()]))
    }
}

/// NeMo Lens's propagator: W3C TraceContext, then W3C Baggage.
pub fn propagator() -> TextMapCompositePropagator {
    TextMapCompositePropagator::new(vec![
        Box::new(TraceContextPropagator),
        Box::new(BaggagePropagator::new()),
    ])
}

/// Installs [`propagator`] as the global text-map propagator.
pub(crate) fn install_global_propagator() {
    global::set_text_map_propagator(propagator());
}

/// Writes the current context (`traceparent`, and `tracestate`/`baggage` when there are any)
/// into `carrier` with the global propagator.
///
/// ```
/// use opentelemetry::trace::{Tracer, TracerProvider, TraceContextExt};
/// let config = lens::LensConfig {
///     enabled: true,
///     exporter: "none".into(),
///     allow_reinit: true,
///     ..Default::default()
/// };
/// let handle = lens::setup_telemetry(config, Some(0), Some(1), Vec::new()).unwrap();
/// let tracer = handle.tracer("doc");
/// let mut carrier = std::collections::HashMap::new();
/// tracer.in_span("step", |_| lens::propagation::inject_context(&mut carrier));
/// let remote = lens::propagation::extract_context(&carrier);
/// assert!(remote.span().span_context().is_remote());
/// ```
pub fn inject_context(carrier: &mut HashMap<String, String>) {
    inject_context_into(&Context::current(), carrier);
}

/// Writes `cx` into any [`Injector`] with the global propagator.
pub fn inject_context_into(cx: &Context, carrier: &mut dyn Injector) {
    global::get_text_map_propagator(|p| p.inject_context(cx, carrier));
}

/// The context carried by `carrier` (the global propagator reads it); an empty context when it
/// holds no valid trace context.
pub fn extract_context(carrier: &HashMap<String, String>) -> Context {
    extract_context_from(carrier)
}

/// Like [`extract_context`], from any [`Extractor`].
pub fn extract_context_from(carrier: &dyn Extractor) -> Context {
    global::get_text_map_propagator(|p| p.extract(carrier))
}

/// The environment variables a launcher sets so that its ranks join the trace of `cx`
/// (`TRACEPARENT`, and `TRACESTATE`/`BAGGAGE` when there are any). Empty when `cx` has no valid
/// span context.
///
/// ```
/// use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
/// let sc = SpanContext::new(
///     TraceId::from(0x0af7651916cd43dd8448eb211c80319c),
///     SpanId::from(0xb7ad6b7169203331),
///     TraceFlags::SAMPLED,
///     false,
///     TraceState::default(),
/// );
/// let cx = opentelemetry::Context::new().with_remote_span_context(sc);
/// let vars = lens::propagation::environment_carrier(&cx);
/// assert_eq!(vars, [(
///     "TRACEPARENT".to_string(),
///     "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".to_string(),
/// )]);
/// ```
pub fn environment_carrier(cx: &Context) -> Vec<(String, String)> {
    let mut carrier = HashMap::new();
    propagator().inject_context(cx, &mut carrier);
    let mut vars: Vec<(String, String)> = carrier
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k.to_ascii_uppercase(), v))
        .collect();
    vars.sort_by_key(|(k, _)| ENVIRONMENT_KEYS.iter().position(|e| *e == k.as_str()));
    vars
}

/// The launcher's context from `TRACEPARENT`/`TRACESTATE`/`BAGGAGE` in `env`, when
/// `TRACEPARENT` holds a valid W3C trace parent. An invalid one is ignored with a warning (the
/// rank then starts its own traces, as without a launcher).
pub fn launcher_context(env: &dyn EnvSource) -> Option<Context> {
    let raw = env.get("TRACEPARENT")?;
    // The environment read as a carrier: each header looked up under its upper-cased name.
    let carrier: HashMap<String, String> = ENVIRONMENT_KEYS
        .iter()
        .filter_map(|k| Some((k.to_ascii_lowercase(), env.get(k)?)))
        .collect();
    let cx = propagator().extract(&carrier);
    if cx.span().span_context().is_valid() {
        Some(cx)
    } else {
        log::warn!(
            "TRACEPARENT={raw:?} is not a W3C traceparent (version-traceid-spanid-flags): ignored, this rank starts its own traces"
        );
        None
    }
}
