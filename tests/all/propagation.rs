//! Propagation: the global W3C TraceContext + Baggage propagator an exporting setup installs,
//! `inject_context`/`extract_context`, and a launcher's `TRACEPARENT` as the parent of every
//! root span; the trace flags of what is exported. (The test installing the global propagator
//! runs in a process of its own.)

use std::collections::HashMap;

use lens::opentelemetry::baggage::BaggageExt;
use lens::opentelemetry::trace::{Span, TraceContextExt, TraceId, Tracer};
use lens::opentelemetry::{Context, KeyValue};
use lens::opentelemetry_sdk::trace::InMemorySpanExporter;
use lens::{Telemetry, TelemetryHandle};
use lens_test_support::pipeline::{LocalInstall, T, config, no_env};

const LAUNCHER_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const LAUNCHER_SPAN: &str = "b7ad6b7169203331";

fn traceparent() -> String {
    format!("00-{LAUNCHER_TRACE}-{LAUNCHER_SPAN}-01")
}

#[test]
fn an_exporting_setup_installs_the_w3c_propagator_and_the_helpers_round_trip() {
    // Process-wide state: its own process.
    lens_test_support::isolated(|| {
        let spans = InMemorySpanExporter::default();
        let handle = Telemetry::builder(config("none"))
            .span_exporter(spans.clone())
            .env(no_env())
            .install()
            .unwrap();
        let tracer = handle.tracer("t");
        let mut carrier = HashMap::new();
        let cx = Context::current_with_baggage([KeyValue::new("team", "pretrain")]);
        let _guard = cx.attach();
        let sent = tracer.in_span("send", |cx| {
            lens::propagation::inject_context(&mut carrier);
            cx.span().span_context().clone()
        });
        // Sampled, and a random trace id (W3C level 2), as NeMo Lens's spans carry; no empty
        // `tracestate` (NeMo Lens writes none).
        let expected = format!("00-{}-{}-03", sent.trace_id(), sent.span_id());
        assert_eq!(carrier.get("traceparent"), Some(&expected));
        assert!(!carrier.contains_key("tracestate"), "{carrier:?}");
        assert_eq!(
            carrier.get("baggage").map(String::as_str),
            Some("team=pretrain")
        );

        let received = lens::propagation::extract_context(&carrier);
        assert_eq!(received.span().span_context().trace_id(), sent.trace_id());
        assert!(received.span().span_context().is_remote());
        assert_eq!(
            received.baggage().get("team").map(|v| v.to_string()),
            Some("pretrain".to_string())
        );
        let mut child = tracer.start_with_context("receive", &received);
        child.end();
        // No valid context: an empty one.
        let empty = lens::propagation::extract_context(&HashMap::new());
        assert!(!empty.has_active_span());
        handle.force_flush(T).unwrap();
        let finished = spans.get_finished_spans().unwrap();
        let receive = finished.iter().find(|s| s.name == "receive").unwrap();
        assert_eq!(receive.parent_span_id, sent.span_id());
        assert_eq!(receive.span_context.trace_id(), sent.trace_id());
        handle.shutdown(T).unwrap();
    });
}

/// An exporting rank reading `env`, not installed globally, its spans kept in memory.
fn local_rank_with(env: HashMap<String, String>) -> (TelemetryHandle, InMemorySpanExporter) {
    let spans = InMemorySpanExporter::default();
    let handle = Telemetry::builder(config("none"))
        .span_exporter(spans.clone())
        .env(env)
        .install_global(false)
        .install()
        .unwrap();
    (handle, spans)
}

#[test]
fn the_launchers_traceparent_is_the_parent_of_every_root_span() {
    let env: HashMap<String, String> = [
        ("TRACEPARENT".to_string(), traceparent()),
        ("TRACESTATE".to_string(), "vendor=abc".to_string()),
    ]
    .into();
    let (handle, spans) = local_rank_with(env);
    let tracer = handle.tracer("t");
    tracer.in_span("job", |_| tracer.start("step").end());
    tracer.start("another-root").end();
    handle.force_flush(T).unwrap();
    let finished = spans.get_finished_spans().unwrap();
    let launcher = TraceId::from_hex(LAUNCHER_TRACE).unwrap();
    assert_eq!(finished.len(), 3);
    for s in &finished {
        assert_eq!(s.span_context.trace_id(), launcher, "{}", s.name);
        assert_eq!(
            s.span_context.trace_state().header(),
            "vendor=abc",
            "{}",
            s.name
        );
    }
    let job = finished.iter().find(|s| s.name == "job").unwrap();
    let step = finished.iter().find(|s| s.name == "step").unwrap();
    let other = finished.iter().find(|s| s.name == "another-root").unwrap();
    assert_eq!(format!("{}", job.parent_span_id), LAUNCHER_SPAN);
    assert_eq!(format!("{}", other.parent_span_id), LAUNCHER_SPAN);
    assert!(job.parent_span_is_remote);
    assert_eq!(step.parent_span_id, job.span_context.span_id());
    // The launcher's `01` (no random bit) is what the children carry, as in Python.
    for s in &finished {
        assert_eq!(s.span_context.trace_flags().to_u8(), 0x01, "{}", s.name);
    }
    handle.shutdown(T).unwrap();
}

/// The flags a root span starts with are on the span exported too, and on its children's: the
/// W3C level 2 random-trace-id bit with the sampled one, as OpenTelemetry-Python sets them.
#[test]
fn exported_spans_carry_the_flags_of_their_live_spans() {
    let (handle, spans) = local_rank_with(HashMap::new());
    let tracer = handle.tracer("t");
    let live = tracer.in_span("root", |cx| {
        let child = tracer.start("child");
        let flags = (
            cx.span().span_context().trace_flags().to_u8(),
            child.span_context().trace_flags().to_u8(),
        );
        drop(child);
        flags
    });
    assert_eq!(live, (0x03, 0x03));
    handle.force_flush(T).unwrap();
    for s in spans.get_finished_spans().unwrap() {
        assert_eq!(s.span_context.trace_flags().to_u8(), 0x03, "{}", s.name);
    }
    handle.shutdown(T).unwrap();
}

#[test]
fn an_invalid_traceparent_is_ignored_and_each_rank_starts_its_own_trace() {
    for bad in [
        "",
        "garbage",
        "00-00000000000000000000000000000000-b7ad6b7169203331-01",
    ] {
        let env: HashMap<String, String> = [("TRACEPARENT".to_string(), bad.to_string())].into();
        let (handle, spans) = local_rank_with(env);
        handle.tracer("t").start("root").end();
        handle.force_flush(T).unwrap();
        let finished = spans.get_finished_spans().unwrap();
        assert_eq!(finished.len(), 1, "{bad:?}");
        assert_eq!(
            finished[0].parent_span_id,
            lens::opentelemetry::trace::SpanId::INVALID,
            "{bad:?}"
        );
        handle.shutdown(T).unwrap();
    }
}

#[test]
fn environment_carrier_round_trips_through_launcher_context() {
    let env: HashMap<String, String> = [
        ("TRACEPARENT".to_string(), traceparent()),
        ("BAGGAGE".to_string(), "run=7".to_string()),
    ]
    .into();
    let cx = lens::propagation::launcher_context(&env).unwrap();
    let vars = lens::propagation::environment_carrier(&cx);
    assert_eq!(
        vars,
        [
            ("TRACEPARENT".to_string(), traceparent()),
            ("BAGGAGE".to_string(), "run=7".to_string())
        ]
    );
    // A rank with no exporting decision still reads nothing wrong: a local, disabled setup.
    let mut off = config("none");
    off.enabled = false;
    let handle = Telemetry::builder(off).local();
    assert!(!handle.tracer("t").start("x").is_recording());
}
