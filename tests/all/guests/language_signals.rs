//! The example exporters of every language that export metrics and logs (Rust, Python,
//! JavaScript; C is spans-only) write the same line for every data point and log record,
//! and the Rust one's lines hold the SDK's values.

use std::path::Path;

use lens::config::WasmPreopen;
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::logs::{LogBatch, LogExporter};
use lens::opentelemetry_sdk::metrics::Temporality;
use lens::opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use lens::testing::{every_log_body, every_metric_kind};
use lens::wasm::{GuestOutputBuffer, GuestOutputCopy, WasmLogExporter, WasmMetricExporter};
use lens_test_support::dist;
use lens_test_support::wasm::spec;
use serde_json::Value as Json;

#[derive(Clone, Copy)]
enum Signal {
    Metrics,
    Logs,
}

/// The lines `wasm` writes for every metric kind or every log body, sorted. `file`: it writes
/// into `/out/out.jsonl`; else to stdout, copied as written ([`GuestOutputBuffer`]).
fn lines_of(name: &str, wasm: &Path, file: bool, signal: Signal) -> Vec<Json> {
    let printed = std::sync::Arc::new(GuestOutputBuffer::default());
    let copy = || GuestOutputCopy::Sink(printed.clone());
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(wasm.to_str().unwrap(), &[]);
    s.call_timeout_ms = Some(30_000);
    if file {
        s.settings.insert("path".into(), "/out/out.jsonl".into());
        s.preopens = vec![WasmPreopen {
            host: dir.path().into(),
            guest: "/out".into(),
            read_only: false,
        }];
    }
    let resource = Resource::builder_empty().build();
    match signal {
        Signal::Metrics => {
            let (e, _) =
                WasmMetricExporter::from_config_with_output(name, &s, &resource, copy()).unwrap();
            let rm = every_metric_kind(Temporality::Cumulative);
            futures_executor::block_on(e.export(&rm)).unwrap();
            e.shutdown().unwrap();
        }
        Signal::Logs => {
            let (e, _) =
                WasmLogExporter::from_config_with_output(name, &s, &resource, copy()).unwrap();
            let records = every_log_body();
            let refs: Vec<_> = records.iter().map(|(r, s)| (r, s)).collect();
            futures_executor::block_on(e.export(LogBatch::new(&refs))).unwrap();
            e.shutdown().unwrap();
        }
    }
    let text: Vec<String> = if file {
        std::fs::read_to_string(dir.path().join("out.jsonl"))
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    } else {
        let [stdout, _] = printed.take();
        assert_eq!(stdout.cut, 0);
        String::from_utf8(stdout.bytes)
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    };
    let mut v: Vec<Json> = text
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    // Time stamps differ between runs; the rest must not.
    for line in &mut v {
        let o = line.as_object_mut().unwrap();
        for key in [
            "time_unix_nano",
            "start_unix_nano",
            "observed_unix_nano",
            "trace_id",
            "span_id",
        ] {
            if let Some(t) = o.get_mut(key) {
                *t = Json::Bool(!t.is_null());
            }
        }
    }
    // By content, whatever order each language writes its keys in.
    v.sort_by_key(sorted_keys);
    v
}

/// `value` as JSON text with every object's keys sorted.
fn sorted_keys(value: &Json) -> String {
    match value {
        Json::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by_key(|(k, _)| k.as_str());
            let inner: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{}:{}", Json::from(k.as_str()), sorted_keys(v)))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Json::Array(items) => {
            let inner: Vec<String> = items.iter().map(sorted_keys).collect();
            format!("[{}]", inner.join(","))
        }
        other => other.to_string(),
    }
}

#[test]
fn the_rust_guest_s_metric_lines_hold_the_sdk_s_values() {
    let wasm = crate::builtin_jsonl();
    let lines = lines_of("rust", &wasm, true, Signal::Metrics);
    assert_eq!(lines.len(), 10);
    let tokens: Vec<&Json> = lines
        .iter()
        .filter(|l| l["name"] == "check.tokens")
        .collect();
    let values: Vec<&Json> = tokens.iter().map(|l| &l["value"]).collect();
    assert_eq!(values, [200, 100]);
    assert!(
        tokens
            .iter()
            .all(|l| l["kind"] == "sum" && l["monotonic"] == true)
    );
    let hist = lines
        .iter()
        .find(|l| l["name"] == "check.step_time" && l["attributes"]["phase"] == "train")
        .unwrap();
    assert_eq!(hist["bucket_counts"], serde_json::json!([1, 1, 1, 1]));
    assert_eq!(hist["bounds"], serde_json::json!([0.1, 0.5, 1.0]));
    assert_eq!(hist["count"], 4);
    let exp = lines
        .iter()
        .find(|l| l["kind"] == "exponential_histogram")
        .unwrap();
    assert_eq!(exp["count"], 4);
}

#[test]
fn python_and_javascript_write_the_rust_guest_s_metric_lines() {
    let wasm = crate::builtin_jsonl();
    let rust = lines_of("rust", &wasm, true, Signal::Metrics);
    let python = lines_of("python", &dist("python-jsonl.wasm"), true, Signal::Metrics);
    assert_eq!(python, rust);
    let js = lines_of("js", &dist("js-jsonl.wasm"), false, Signal::Metrics);
    assert_eq!(js, rust);
}

#[test]
fn python_and_javascript_write_the_rust_guest_s_log_lines() {
    let wasm = crate::builtin_jsonl();
    let rust = lines_of("rust-logs", &wasm, true, Signal::Logs);
    assert_eq!(rust.len(), 8);
    let python = lines_of(
        "python-logs",
        &dist("python-jsonl.wasm"),
        true,
        Signal::Logs,
    );
    assert_eq!(python, rust);
    let js = lines_of("js-logs", &dist("js-jsonl.wasm"), false, Signal::Logs);
    assert_eq!(js, rust);
}
