//! Typed batches reach the recorder guest as the SDK made them, with whichever lowering this
//! build has (`.ci/run` runs these without `hand-lowering` too: the fallback a wasmtime upgrade
//! relies on); and the hand lowering's other path: strings lowered by wasmtime (as for a
//! non-UTF-8 guest) give the same batch as the direct copies.

#[cfg(feature = "hand-lowering")]
use std::sync::atomic::Ordering;

use opentelemetry::trace::{Link, Span, SpanKind, Status, Tracer, TracerProvider};
use opentelemetry::{Array, KeyValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData, SpanExporter};

use crate::config::{WasmExporterSpec, WasmPreopen};
#[cfg(feature = "hand-lowering")]
use crate::encoding::typed::image::test_hooks::{GENERIC_LOWERED, GENERIC_STRINGS};
use crate::wasm::WasmSpanExporter;

fn spans() -> Vec<SpanData> {
    let sink = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(sink.clone())
        .build();
    let tracer = provider.tracer("scope ✓");
    let mut step = tracer.start("step ünïcødé");
    step.set_attribute(KeyValue::new("phase", "train 🚀"));
    step.set_attribute(KeyValue::new("ok", true));
    step.set_attribute(KeyValue::new("i", i64::MIN));
    step.set_attribute(KeyValue::new("loss", 0.25));
    step.set_attribute(KeyValue::new(
        "tags",
        Value::Array(Array::String(vec!["a".into(), "".into()])),
    ));
    step.set_attribute(KeyValue::new("ids", Value::Array(Array::I64(vec![1, -2]))));
    step.add_event("spike", vec![KeyValue::new("loss", "9.5")]);
    step.set_status(Status::error("nan loss"));
    let parent = step.span_context().clone();
    step.end();
    tracer
        .span_builder("save")
        .with_kind(SpanKind::Producer)
        .with_links(vec![Link::with_context(parent)])
        .start(&tracer)
        .end();
    sink.get_finished_spans().unwrap()
}

/// Held by every export in these tests: the lowering switch is process-wide, so one test's
/// export must not run while another's has it set (or reset it mid-export).
static LOWERING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// What the recorder guest wrote for `batch`, strings lowered by wasmtime if `generic`.
fn recorded(batch: &[SpanData], generic: bool) -> String {
    let _switch = LOWERING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let spec = WasmExporterSpec {
        path: lens_test_guests::RECORDER.into(),
        settings: [("out", "/out/r.jsonl"), ("encoding", "typed")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into(),
        preopens: vec![WasmPreopen {
            host: dir.path().to_path_buf(),
            guest: "/out".into(),
            read_only: false,
        }],
        ..Default::default()
    };
    let resource = Resource::builder_empty().build();
    let (exporter, _) = WasmSpanExporter::from_config("r", &spec, &resource).unwrap();
    #[cfg(feature = "hand-lowering")]
    GENERIC_STRINGS.store(generic, Ordering::SeqCst);
    #[cfg(not(feature = "hand-lowering"))]
    assert!(!generic, "wasmtime lowers everything without hand-lowering");
    let exported = futures_executor::block_on(exporter.export(batch.to_vec()));
    #[cfg(feature = "hand-lowering")]
    GENERIC_STRINGS.store(false, Ordering::SeqCst);
    exported.unwrap();
    exporter.shutdown().unwrap();
    std::fs::read_to_string(dir.path().join("r.jsonl")).unwrap()
}

/// A typed attribute value as the recorder writes it.
fn typed(v: &Value) -> serde_json::Value {
    use serde_json::json;
    match v {
        Value::Bool(b) => json!({"bool": b}),
        Value::I64(i) => json!({"s64": i}),
        Value::F64(f) => json!({"f64": f}),
        Value::String(s) => json!({"string": s.as_str()}),
        Value::Array(Array::I64(a)) => json!({"s64-array": a}),
        Value::Array(Array::String(a)) => {
            json!({"string-array": a.iter().map(|s| s.as_str()).collect::<Vec<_>>()})
        }
        other => panic!("not in the test batch: {other:?}"),
    }
}

#[test]
fn typed_batches_reach_the_guest_as_the_sdk_made_them() {
    let batch = spans();
    let line: serde_json::Value = recorded(&batch, false)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|l| l["typed"].is_array())
        .expect("a typed batch");
    let got = line["typed"].as_array().unwrap();
    assert_eq!(got.len(), batch.len());
    for (g, span) in got.iter().zip(&batch) {
        assert_eq!(g["name"], span.name.as_ref());
        assert_eq!(g["scope"], span.instrumentation_scope.name());
        assert_eq!(g["span_id"], span.span_context.span_id().to_string());
        assert_eq!(g["trace_id"], span.span_context.trace_id().to_string());
        let attributes: serde_json::Map<String, serde_json::Value> = span
            .attributes
            .iter()
            .map(|kv| (kv.key.to_string(), typed(&kv.value)))
            .collect();
        assert_eq!(g["attributes"], serde_json::Value::Object(attributes));
        assert_eq!(g["events"].as_array().unwrap().len(), span.events.len());
        assert_eq!(g["links"].as_array().unwrap().len(), span.links.len());
    }
    assert_eq!(got[0]["status"], serde_json::json!({"error": "nan loss"}));
    assert_eq!(got[0]["events"][0]["name"], "spike");
    assert_eq!(got[1]["kind"], "producer");
    assert_eq!(got[1]["links"][0]["span_id"], got[0]["span_id"]);
}

#[cfg(feature = "hand-lowering")]
#[test]
fn strings_lowered_by_wasmtime_give_the_same_batch() {
    let batch = spans();
    let direct = recorded(&batch, false);
    let before = GENERIC_LOWERED.load(Ordering::SeqCst);
    let generic = recorded(&batch, true);
    // Names, trace states (empty), keys, string values, the status message.
    assert!(GENERIC_LOWERED.load(Ordering::SeqCst) - before >= 10);
    assert_eq!(direct, generic);
    for text in [
        "step ünïcødé",
        "train 🚀",
        "nan loss",
        "\"producer\"",
        "\"spike\"",
    ] {
        assert!(direct.contains(text), "{text} in {direct}");
    }
}
