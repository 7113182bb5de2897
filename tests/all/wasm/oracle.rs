//! The wasm host against the oracle: what the recorder guest receives, in every encoding and
//! with concurrent instances, equals what the SDK produced, span by span.

use std::collections::HashMap;

use lens::TelemetryHandle;
use lens::opentelemetry::trace::{Span, Tracer};
use lens::opentelemetry::{Array, KeyValue, Value};
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::trace::SpanExporter;
use lens::testing::RICH_ROOT;
use lens::wasm::WasmSpanExporter;
use lens_test_support::otlp_resource_int;
use lens_test_support::pipeline::T;
use lens_test_support::wasm::{install, lines, recorder_spec, remote_parent};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use serde_json::Value as Json;

/// Every value type, events, links, status, unicode, two scopes; then `bulk` plain spans.
fn produce(handle: &TelemetryHandle, bulk: usize) {
    lens::testing::end_rich_trace(handle.tracer_provider());
    let tracer = handle.tracer("trainer");
    // A remote parent with a trace state, and more attributes than the span limit (128).
    let mut limited = tracer.start_with_context("limited", &remote_parent());
    for i in 0..130 {
        limited.set_attribute(KeyValue::new(format!("k{i}"), i));
    }
    limited.end();
    for i in 0..bulk {
        let mut s = tracer.start("bulk");
        s.set_attribute(KeyValue::new("i", i as i64));
        s.end();
    }
}

fn typed_value(v: &Value) -> Json {
    match v {
        Value::Bool(b) => serde_json::json!({"bool": b}),
        Value::I64(i) => serde_json::json!({"s64": i}),
        Value::F64(f) => serde_json::json!({"f64": f}),
        Value::String(s) => serde_json::json!({"string": s.as_str()}),
        Value::Array(Array::Bool(a)) => serde_json::json!({"bool-array": a}),
        Value::Array(Array::I64(a)) => serde_json::json!({"s64-array": a}),
        Value::Array(Array::F64(a)) => serde_json::json!({"f64-array": a}),
        Value::Array(Array::String(a)) => {
            serde_json::json!({"string-array": a.iter().map(|s| s.as_str()).collect::<Vec<_>>()})
        }
        other => panic!("unexpected value {other:?}"),
    }
}

fn nanos(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
}

#[test]
fn recorder_typed_encoding_matches_the_oracle_span_by_span() {
    let dir = tempfile::tempdir().unwrap();
    let (handle, oracle) = install(vec![recorder_spec(dir.path(), "typed")], 512);
    produce(&handle, 1500);
    handle.shutdown(T).unwrap();
    let recorded = lines(&dir.path().join("batches.jsonl"));
    let init = &recorded[0]["init"];
    assert_eq!(init["resource"]["dl.rank"], serde_json::json!({"s64": 2}));
    assert_eq!(
        init["resource"]["service.instance.id"],
        serde_json::json!({"string": "wasm-rank2"})
    );
    let batches: Vec<&Vec<Json>> = recorded[1..]
        .iter()
        .map(|l| l["typed"].as_array().unwrap())
        .collect();
    assert!(batches.len() >= 3, "1503 spans in batches of at most 512");
    assert!(batches.iter().all(|b| b.len() <= 512));
    let got: Vec<&Json> = batches.into_iter().flatten().collect();
    let expected = oracle.spans();
    assert_eq!(got.len(), expected.len());
    assert_eq!(got.len(), 1503);
    let limited = got.iter().find(|s| s["name"] == "limited").unwrap();
    assert_eq!(limited["trace_state"], "vendor=a1,lens=b2");
    assert_eq!(limited["dropped"][0], 2);
    assert_eq!(limited["parent_span_id"], "00f067aa0ba902b7");
    let by_id: HashMap<String, &Json> = got
        .iter()
        .map(|s| (s["span_id"].as_str().unwrap().to_string(), *s))
        .collect();
    for span in &expected {
        let g = by_id[&span.span_context.span_id().to_string()];
        assert_eq!(g["name"], span.name.as_ref());
        assert_eq!(g["scope"], span.instrumentation_scope.name());
        assert_eq!(g["trace_id"], span.span_context.trace_id().to_string());
        let parent = span.parent_span_id.to_string();
        assert_eq!(
            g["parent_span_id"],
            if parent == "0000000000000000" {
                Json::Null
            } else {
                Json::from(parent)
            }
        );
        let cx = &span.span_context;
        assert_eq!(g["flags"], cx.trace_flags().to_u8());
        assert_eq!(g["remote"], cx.is_remote());
        assert_eq!(g["trace_state"], cx.trace_state().header());
        assert_eq!(
            g["dropped"],
            serde_json::json!([
                span.dropped_attributes_count,
                span.events.dropped_count,
                span.links.dropped_count
            ])
        );
        assert_eq!(g["start"], nanos(span.start_time));
        assert_eq!(g["end"], nanos(span.end_time));
        let attrs: serde_json::Map<String, Json> = span
            .attributes
            .iter()
            .map(|kv| (kv.key.to_string(), typed_value(&kv.value)))
            .collect();
        assert_eq!(g["attributes"], Json::Object(attrs), "{}", span.name);
        assert_eq!(g["events"].as_array().unwrap().len(), span.events.len());
        assert_eq!(g["links"].as_array().unwrap().len(), span.links.len());
    }
    let step = got.iter().find(|s| s["name"] == RICH_ROOT).unwrap();
    assert_eq!(step["status"], serde_json::json!({"error": "nan loss"}));
    assert_eq!(step["events"][0]["name"], "loss-spike");
    assert_eq!(
        step["events"][0]["attributes"]["loss"],
        serde_json::json!({"f64": 9.5})
    );
    let save = got.iter().find(|s| s["name"] == "save").unwrap();
    assert_eq!(
        (save["kind"].as_str(), save["status"].as_str()),
        (Some("producer"), Some("ok"))
    );
    assert_eq!(save["scope_version"], "2.1");
    assert_eq!(save["links"][0]["span_id"], step["span_id"]);
    let e = handle.stats();
    let e = e.exporter("recorder").unwrap();
    assert_eq!((e.received, e.exported, e.dropped()), (1503, 1503, 0));
    assert_eq!(e.restarts, 0);
    assert!(e.peak_memory_bytes > 0);
}

/// Runs the recorder with `encoding`, decodes each recorded batch with `decode` and checks
/// every span against the oracle (name, trace id, attribute count, resource).
fn recorder_otlp_matches_the_oracle(
    encoding: &str,
    decode: impl Fn(&serde_json::Value) -> ExportTraceServiceRequest,
) {
    let dir = tempfile::tempdir().unwrap();
    let (handle, oracle) = install(vec![recorder_spec(dir.path(), encoding)], 100);
    produce(&handle, 250);
    handle.shutdown(T).unwrap();
    let recorded = lines(&dir.path().join("batches.jsonl"));
    let mut got = HashMap::new();
    for line in &recorded[1..] {
        let request = decode(line);
        for rs in &request.resource_spans {
            assert_eq!(otlp_resource_int(rs, "dl.rank"), Some(2));
            for ss in &rs.scope_spans {
                for s in &ss.spans {
                    got.insert(
                        s.span_id.clone(),
                        (s.name.clone(), s.trace_id.clone(), s.attributes.len()),
                    );
                }
            }
        }
    }
    let expected = oracle.spans();
    assert_eq!(got.len(), expected.len());
    for span in &expected {
        let (name, trace, attrs) = &got[&span.span_context.span_id().to_bytes().to_vec()];
        assert_eq!(name, span.name.as_ref());
        assert_eq!(trace, &span.span_context.trace_id().to_bytes().to_vec());
        assert_eq!(*attrs, span.attributes.len());
    }
}

#[test]
fn concurrent_exports_run_one_instance_each_and_deliver_every_span_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = recorder_spec(dir.path(), "typed");
    s.settings
        .insert("out".into(), "/out/batches-{lens.instance}.jsonl".into());
    s.batch.max_concurrent_exports = Some(2);
    let (handle, oracle) = install(vec![s], 100);
    produce(&handle, 1500);
    handle.shutdown(T).unwrap();
    let mut got: Vec<String> = Vec::new();
    for n in 0..2 {
        let recorded = lines(&dir.path().join(format!("batches-{n}.jsonl")));
        assert!(
            recorded[0]["init"].is_object(),
            "instance {n} ran init first"
        );
        assert!(recorded.len() > 1, "instance {n} exported no batch");
        for line in &recorded[1..] {
            let batch = line["typed"].as_array().unwrap();
            got.extend(
                batch
                    .iter()
                    .map(|s| s["span_id"].as_str().unwrap().to_string()),
            );
        }
    }
    assert!(
        !dir.path().join("batches-2.jsonl").exists(),
        "two instances, not three"
    );
    let mut expected: Vec<String> = oracle
        .spans()
        .iter()
        .map(|s| s.span_context.span_id().to_string())
        .collect();
    got.sort();
    expected.sort();
    assert_eq!(
        got, expected,
        "every span exactly once, across both instances"
    );
    let e = handle.stats();
    let e = e.exporter("recorder").unwrap();
    assert_eq!((e.received, e.exported, e.dropped()), (1503, 1503, 0));
    assert_eq!(e.restarts, 0);
}

#[test]
fn recorder_otlp_encoding_decodes_to_the_oracle_spans() {
    recorder_otlp_matches_the_oracle("otlp", |line| {
        let bytes: Vec<u8> = serde_json::from_value(line["otlp"].clone()).unwrap();
        ExportTraceServiceRequest::decode(bytes.as_slice()).unwrap()
    });
}

#[test]
fn recorder_otlp_json_encoding_reads_back_as_the_oracle_spans() {
    recorder_otlp_matches_the_oracle("otlp-json", |line| {
        serde_json::from_str(line["otlp_json"].as_str().unwrap()).unwrap()
    });
}

#[test]
fn empty_batch_is_exported() {
    let dir = tempfile::tempdir().unwrap();
    let (e, stats) = WasmSpanExporter::from_config(
        "recorder",
        &recorder_spec(dir.path(), "typed"),
        &Resource::builder_empty().build(),
    )
    .unwrap();
    futures_executor::block_on(e.export(Vec::new())).unwrap();
    e.shutdown().unwrap();
    let recorded = lines(&dir.path().join("batches.jsonl"));
    assert_eq!(recorded[1], serde_json::json!({"typed": []}));
    assert_eq!(stats.snapshot().traps.len(), 0);
    // After shutdown, export fails cleanly.
    assert!(futures_executor::block_on(e.export(Vec::new())).is_err());
}
