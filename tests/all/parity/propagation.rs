//! What crosses a process boundary: the `traceparent` (and `tracestate`) the global propagator
//! writes for a root span, for a child of an extracted context and for an extracted context
//! passed on, against NeMo Lens's: the W3C level 2 random-trace-id flag included (`03` for a
//! sampled root), and no empty `tracestate`.

use std::collections::HashMap;

use lens::opentelemetry::Context;
use lens::opentelemetry::propagation::TextMapPropagator as _;
use lens::opentelemetry::trace::{TraceContextExt as _, Tracer as _};
use lens::opentelemetry_sdk::trace::InMemorySpanExporter;
use lens::{LensConfig, Telemetry};
use lens_test_support::pipeline::{LocalInstall, T};
use serde_json::{Value, json};

use super::oracle::ask;

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";

/// (the carrier a context is extracted from, or none for a root span; pass it on unchanged)
fn cases() -> Vec<(Option<HashMap<String, String>>, bool)> {
    let carrier = |flags: &str, state: Option<&str>| {
        let mut c = HashMap::from([(
            "traceparent".to_string(),
            format!("00-{TRACE}-b7ad6b7169203331-{flags}"),
        )]);
        if let Some(s) = state {
            c.insert("tracestate".to_string(), s.to_string());
        }
        Some(c)
    };
    vec![
        (None, false),
        (carrier("01", None), false),
        (carrier("03", Some("a=b,c=d")), false),
        (carrier("00", None), false),
        (carrier("02", Some("vendor=x")), false),
        (carrier("09", Some("a=b")), true),
        (carrier("03", None), true),
    ]
}

fn lens_carriers() -> Vec<HashMap<String, String>> {
    let config = LensConfig {
        enabled: true,
        export_strategy: "all_ranks".into(),
        run_id: "r".into(),
        metrics_enabled: false,
        ..Default::default()
    };
    let handle = Telemetry::builder(config)
        .span_exporter(InMemorySpanExporter::default())
        .local();
    let tracer = handle.tracer("parity");
    let propagator = lens::propagation::propagator();
    let out = cases()
        .into_iter()
        .map(|(carrier, passthrough)| {
            let parent = carrier
                .map(|c| propagator.extract(&c))
                .unwrap_or_else(Context::new);
            let mut out = HashMap::new();
            if passthrough {
                propagator.inject_context(&parent, &mut out);
            } else {
                let span = tracer.start_with_context("s", &parent);
                propagator.inject_context(&parent.with_span(span), &mut out);
            }
            out
        })
        .collect();
    handle.shutdown(T).unwrap();
    out
}

/// `00-<trace>-<span>-<flags>` with the span id masked (and the trace id, for a root span).
fn shape(carrier: &Value, root: bool) -> Value {
    let mut c = carrier.as_object().unwrap().clone();
    let parent = c["traceparent"].as_str().unwrap().to_string();
    let parts: Vec<&str> = parent.split('-').collect();
    assert_eq!(parts.len(), 4, "{parent}");
    assert!(
        parts[2].len() == 16 && parts[2] != "0000000000000000",
        "{parent}"
    );
    let trace = if root {
        assert_eq!(parts[1].len(), 32, "{parent}");
        "<random>"
    } else {
        parts[1]
    };
    c.insert(
        "traceparent".into(),
        json!(format!("{}-{trace}-<span>-{}", parts[0], parts[3])),
    );
    Value::Object(c)
}

#[test]
fn what_the_propagator_writes_is_nemo_lens_s() {
    let cases = cases();
    let nemo = ask(&json!({
        "mode": "propagation",
        "cases": cases.iter().map(|(c, passthrough)| json!({"carrier": c, "passthrough": passthrough})).collect::<Vec<_>>(),
    }));
    let lens = lens_carriers();
    for (i, ((carrier, _), nemo)) in cases.iter().zip(nemo.as_array().unwrap()).enumerate() {
        let root = carrier.is_none();
        let lens = serde_json::to_value(&lens[i]).unwrap();
        assert_eq!(
            shape(&lens, root),
            shape(nemo, root),
            "case {i}: {carrier:?}"
        );
    }
    // A sampled root span: `03`, as NeMo Lens's.
    assert!(nemo[0]["traceparent"].as_str().unwrap().ends_with("-03"));
}
