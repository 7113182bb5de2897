//! The hand lowering's other path: strings lowered by wasmtime (as for a non-UTF-8 guest) give
//! the recorder guest the same batch as the direct copies.

use std::sync::atomic::Ordering;

use opentelemetry::trace::{Link, Span, SpanKind, Status, Tracer, TracerProvider};
use opentelemetry::{Array, KeyValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData, SpanExporter};

use crate::config::{WasmExporterSpec, WasmPreopen};
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

/// What the recorder guest wrote for `batch`, strings lowered by wasmtime if `generic`.
fn recorded(batch: &[SpanData], generic: bool) -> String {
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
    GENERIC_STRINGS.store(generic, Ordering::SeqCst);
    let exported = futures_executor::block_on(exporter.export(batch.to_vec()));
    GENERIC_STRINGS.store(false, Ordering::SeqCst);
    exported.unwrap();
    exporter.shutdown().unwrap();
    std::fs::read_to_string(dir.path().join("r.jsonl")).unwrap()
}

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
