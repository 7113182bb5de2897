//! The Python guest SDK: OpenTelemetry Python SDK exporters run in the sandbox and receive
//! `ReadableSpan`s holding exactly what the host's in-memory exporter (the oracle) received.
//! Guests built by `guest-examples/build.sh` (`python-seed`: the NeMo Lens page's
//! `MyBackendExporter`; `python-sdk-fields`: records every field, `sdk/python/tests/guest`).

use std::path::Path;

use lens::config::WasmPreopen;
use lens::exporter::json::attributes_json;
use lens::opentelemetry::trace::{Span, SpanContext, SpanId, SpanKind, Status, Tracer};
use lens::opentelemetry::{Array, KeyValue, Value};
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::trace::SpanData;
use lens::opentelemetry_sdk::trace::SpanExporter;
use lens::testing::{end_rich_trace, spans};
use lens::wasm::WasmSpanExporter;
use lens_test_support::dist;
use lens_test_support::pipeline::T;
use lens_test_support::wasm::{install, lines, remote_parent, spec};
use serde_json::{Value as Json, json};

/// The Python guest `wasm` writing `/out/<file>` into `dir`, with `extra` settings.
fn guest(
    wasm: &str,
    dir: &Path,
    file: &str,
    extra: &[(&str, &str)],
) -> lens::config::WasmExporterSpec {
    let path = format!("/out/{file}");
    let mut settings = vec![("path", path.as_str())];
    settings.extend_from_slice(extra);
    let mut s = spec(dist(wasm).to_str().unwrap(), &settings);
    s.name = Some(wasm.trim_end_matches(".wasm").into());
    s.preopens = vec![WasmPreopen {
        host: dir.to_path_buf(),
        guest: "/out".into(),
        read_only: false,
    }];
    s.call_timeout_ms = Some(30_000);
    s
}

/// The rich trace (every value type, events, links, statuses, two scopes), a span under a remote
/// parent with a trace state, a server span with array attributes, and `bulk` plain spans.
fn produce(handle: &lens::TelemetryHandle, bulk: usize) {
    end_rich_trace(handle.tracer_provider());
    let tracer = handle.tracer("trainer");
    let mut child = tracer.start_with_context("remote-child", &remote_parent());
    child.set_attribute(KeyValue::new(
        "dims",
        Value::Array(Array::I64(vec![8, -4096])),
    ));
    child.end();
    let mut server = tracer
        .span_builder("serve")
        .with_kind(SpanKind::Server)
        .start(&tracer);
    server.set_status(Status::Ok);
    server.end();
    for i in 0..bulk {
        let mut s = tracer.start("bulk");
        s.set_attribute(KeyValue::new("i", i as i64));
        s.end();
    }
}

fn nanos(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
}

fn context(cx: &SpanContext) -> Json {
    json!({
        "trace_id": cx.trace_id().to_string(),
        "span_id": cx.span_id().to_string(),
        "trace_flags": cx.trace_flags().to_u8(),
        "trace_state": cx.trace_state().header(),
        "is_remote": cx.is_remote(),
    })
}

/// What the Python guest must record for `s`: the `ReadableSpan` the OpenTelemetry Python SDK
/// would have built for the same span.
fn expected(s: &SpanData) -> Json {
    let cx = &s.span_context;
    let parent = (s.parent_span_id != SpanId::INVALID).then(|| {
        json!({
            "trace_id": cx.trace_id().to_string(),
            "span_id": s.parent_span_id.to_string(),
            "trace_flags": cx.trace_flags().to_u8(),
            "trace_state": cx.trace_state().header(),
            "is_remote": s.parent_span_is_remote,
        })
    });
    let (code, description) = match &s.status {
        Status::Unset => ("UNSET", Json::Null),
        Status::Ok => ("OK", Json::Null),
        Status::Error { description } => ("ERROR", json!(description)),
    };
    let scope = &s.instrumentation_scope;
    json!({
        "name": s.name,
        // The span's own context: local, whatever its parent was.
        "context": context(&SpanContext::new(
            cx.trace_id(), cx.span_id(), cx.trace_flags(), false, cx.trace_state().clone(),
        )),
        "parent": parent,
        "kind": format!("{:?}", s.span_kind).to_uppercase(),
        "start_time": nanos(s.start_time),
        "end_time": nanos(s.end_time),
        "attributes": attributes_json(&s.attributes),
        "events": s.events.iter().map(|e| json!({
            "name": e.name, "timestamp": nanos(e.timestamp), "attributes": attributes_json(&e.attributes),
        })).collect::<Vec<_>>(),
        "links": s.links.iter().map(|l| json!({
            "context": context(&l.span_context), "attributes": attributes_json(&l.attributes),
        })).collect::<Vec<_>>(),
        "status": {"code": code, "description": description},
        "scope": {"name": scope.name(), "version": scope.version(), "attributes": attributes_json(scope.attributes())},
    })
}

#[test]
fn every_readable_span_field_matches_the_oracle() {
    let dir = tempfile::tempdir().unwrap();
    let (handle, oracle) = install(
        vec![guest(
            "python-sdk-fields.wasm",
            dir.path(),
            "fields.jsonl",
            &[],
        )],
        512,
    );
    produce(&handle, 600);
    handle.shutdown(T).unwrap();
    let stats = handle
        .stats()
        .exporter("python-sdk-fields")
        .unwrap()
        .clone();
    let spans = oracle.spans();
    assert_eq!(
        (stats.exported, stats.dropped()),
        (spans.len() as u64, 0),
        "{stats:?}"
    );
    let recorded = lines(&dir.path().join("fields.jsonl"));
    assert_eq!(recorded.len(), spans.len());
    for (r, s) in recorded.iter().zip(&spans) {
        let mut r = r.clone();
        let resource = r.as_object_mut().unwrap().remove("resource").unwrap();
        assert_eq!(resource["dl.rank"], json!(2), "{resource}");
        assert_eq!(resource["service.instance.id"], json!("wasm-rank2"));
        // The factory's settings carry the resource too.
        assert_eq!(
            r.as_object_mut().unwrap().remove("settings_rank"),
            Some(json!(2))
        );
        assert_eq!(r, expected(s));
    }
    // The fields that matter most were not vacuous.
    let names: Vec<&str> = recorded
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    for name in [
        lens::testing::RICH_ROOT,
        "save",
        "remote-child",
        "serve",
        "bulk",
    ] {
        assert!(names.contains(&name), "{name} missing");
    }
    let remote = recorded
        .iter()
        .find(|r| r["name"] == "remote-child")
        .unwrap();
    assert_eq!(remote["parent"]["is_remote"], json!(true));
    assert_eq!(remote["context"]["trace_state"], json!("vendor=a1,lens=b2"));
}

#[test]
fn the_seed_s_my_backend_exporter_sends_what_the_oracle_received() {
    let dir = tempfile::tempdir().unwrap();
    let (handle, oracle) = install(
        vec![guest("python-seed.wasm", dir.path(), "seed.jsonl", &[])],
        512,
    );
    produce(&handle, 100);
    handle.shutdown(T).unwrap();
    let sent = lines(&dir.path().join("seed.jsonl"));
    let spans = oracle.spans();
    assert_eq!(sent.len(), spans.len());
    for (line, s) in sent.iter().zip(&spans) {
        assert_eq!(
            line,
            &json!({
                "name": s.name,
                "trace_id": s.span_context.trace_id().to_string(),
                "attributes": attributes_json(&s.attributes),
            })
        );
    }
}

/// One export of 3 spans to the fields guest answering `fail`: the error and the statistics.
fn failing(fail: &str) -> (String, lens::ExporterSnapshot) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = guest(
        "python-sdk-fields.wasm",
        dir.path(),
        "f.jsonl",
        &[("fail", fail)],
    );
    s.batch.export_timeout_ms = Some(1000);
    let (exporter, stats) =
        WasmSpanExporter::from_config("py", &s, &Resource::builder_empty().build()).unwrap();
    let err = futures_executor::block_on(exporter.export(spans::many(3))).unwrap_err();
    exporter.shutdown().unwrap();
    (err.to_string(), stats.snapshot())
}

#[test]
fn failure_and_exceptions_reject_the_batch_with_the_reason() {
    let (error, stats) = failing("failure");
    assert_eq!(
        error,
        "Operation failed: wasm exporter `py`: Recorder.export returned FAILURE"
    );
    assert_eq!(
        (stats.retries, stats.guest_errors, stats.restarts),
        (0, 1, 0)
    );
    let (error, _) = failing("raise");
    assert_eq!(
        error,
        "Operation failed: wasm exporter `py`: export raised ConnectionError: backend unreachable"
    );
}

#[test]
fn retryable_export_error_is_retried_by_the_host() {
    let (error, stats) = failing("retry");
    assert!(
        error.starts_with("Operation failed: wasm exporter `py`: export failed after ")
            && error.ends_with(" attempts: backend busy"),
        "{error}"
    );
    assert!(stats.retries >= 2, "{stats:?}");
    assert_eq!(stats.retries_exhausted, 1, "{stats:?}");
}
