//! `exporter = "console"`: what Lens prints for a span tree, a few metrics and a bridged log
//! record, against what NeMo Lens prints for the same scenario, document by document and field
//! by field. Ids, times and the values no two processes share are checked for shape and then
//! masked; everything else must be equal.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lens::exporter::{ConsoleLogExporter, ConsoleMetricExporter, ConsoleOut, ConsoleSpanExporter};
use lens::opentelemetry::metrics::MeterProvider as _;
use lens::opentelemetry::trace::{
    Link, Span as _, SpanKind, Status, TraceContextExt as _, Tracer as _, TracerProvider as _,
};
use lens::opentelemetry::{InstrumentationScope, KeyValue};
use lens::opentelemetry_sdk::metrics::PeriodicReader;
use lens::{LensConfig, Telemetry};
use lens_test_support::pipeline::LocalInstall;
use serde_json::{Value, json};

use super::oracle::ask;

/// Resource keys whose values cannot agree (another process, another SDK), and Lens's extras.
const MASKED_RESOURCE: [&str; 3] = [
    "process.pid",
    "telemetry.sdk.language",
    "telemetry.sdk.version",
];
const LENS_EXTRAS: [&str; 2] = ["dl.local_rank", "lens.version"];

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The scenario through Lens: the documents its console exporters print.
fn lens_documents() -> Vec<Value> {
    let buffer = Buffer::default();
    let out = ConsoleOut::Writer(Arc::new(Mutex::new(buffer.clone())));
    let config = LensConfig {
        enabled: true,
        exporter: "console".into(),
        logs_enabled: true,
        export_strategy: "all_ranks".into(),
        run_id: "console-parity".into(),
        service_name: "parity-svc".into(),
        service_version: "0.1.0".into(),
        ..Default::default()
    };
    let handle = Telemetry::builder(config)
        .rank(0)
        .world_size(1)
        .span_exporter(ConsoleSpanExporter::new(out.clone()))
        .log_exporter(ConsoleLogExporter::new(out.clone()))
        .metric_reader(
            PeriodicReader::builder(ConsoleMetricExporter::new(out))
                .with_interval(Duration::from_secs(600))
                .build(),
        )
        .local();
    let bridge = handle.log_bridge(log::LevelFilter::Info, "parity");
    let tracer = handle.tracer_provider().tracer_with_scope(
        InstrumentationScope::builder("parity.tracer")
            .with_version("1.2.3")
            .build(),
    );
    let mut root = tracer
        .span_builder("train_step")
        .with_kind(SpanKind::Server)
        .start(&tracer);
    root.set_attribute(KeyValue::new("step", 7));
    root.set_attribute(KeyValue::new("loss", 0.5));
    root.set_attribute(KeyValue::new("phase", "train"));
    root.set_attribute(KeyValue::new("ok", true));
    root.set_attribute(KeyValue::new(
        "dims",
        lens::opentelemetry::Value::Array(vec![1_i64, 2, 3].into()),
    ));
    root.add_event("checkpoint", vec![KeyValue::new("path", "/ckpt/7")]);
    let root_cx = lens::opentelemetry::Context::current_with_span(root);
    {
        let _active = root_cx.clone().attach();
        log::Log::log(
            &bridge,
            &log::Record::builder()
                .level(log::Level::Info)
                .target("parity")
                .module_path(Some("parity::console"))
                .file(Some("tests/all/parity/console.rs"))
                .line(Some(90))
                .args(format_args!("checkpoint saved at step {}", 7))
                .build(),
        );
        let link = Link::with_context(root_cx.span().span_context().clone());
        let mut child = tracer
            .span_builder("optimizer")
            .with_links(vec![Link::new(
                link.span_context,
                vec![KeyValue::new("why", "lr")],
                0,
            )])
            .start(&tracer);
        child.set_status(Status::error("nan in gradients"));
        child.end();
    }
    root_cx.span().end();
    let meter = handle.meter_provider().meter("parity.meter");
    meter
        .u64_counter("tokens")
        .with_unit("{token}")
        .with_description("Tokens seen.")
        .build()
        .add(4096, &[KeyValue::new("split", "train")]);
    meter
        .f64_histogram("step_time")
        .with_unit("ms")
        .with_description("Step time.")
        .build()
        .record(12.5, &[]);
    meter
        .f64_gauge("lr")
        .with_description("Learning rate.")
        .build()
        .record(0.0003, &[]);
    handle.shutdown(Duration::from_secs(10)).unwrap();
    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).expect("one JSON document per line"))
        .collect()
}

fn is_hex_id(v: &Value, digits: usize) -> bool {
    v.as_str()
        .and_then(|s| s.strip_prefix("0x"))
        .is_some_and(|h| h.len() == digits && h.chars().all(|c| c.is_ascii_hexdigit()))
}

fn is_iso_time(v: &Value) -> bool {
    // `2026-12-03T11:56:40.674123Z`
    v.as_str().is_some_and(|s| {
        s.len() == 27 && s.ends_with('Z') && s.as_bytes()[10] == b'T' && s.as_bytes()[19] == b'.'
    })
}

/// Checks the shape of what cannot be equal and replaces it by a marker.
fn mask(doc: &mut Value, lens: bool) {
    match doc {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match key.as_str() {
                    "trace_id" => assert!(is_hex_id(value, 32), "{key}: {value}"),
                    "span_id" | "parent_id" if !value.is_null() => {
                        assert!(is_hex_id(value, 16), "{key}: {value}")
                    }
                    "start_time" | "end_time" | "timestamp" | "observed_timestamp" => {
                        assert!(is_iso_time(value), "{key}: {value}")
                    }
                    "start_time_unix_nano" | "time_unix_nano" if !value.is_null() => {
                        assert!(value.is_u64(), "{key}: {value}")
                    }
                    "code.file.path" | "code.function.name" | "code.line.number" => {}
                    // Python's SDK also sets W3C level 2's random flag (0x2); both sample.
                    "trace_flags" => {
                        assert_eq!(value.as_u64().map(|f| f & 1), Some(1), "{key}: {value}")
                    }
                    "resource" => {
                        let attrs = value["attributes"].as_object_mut().unwrap();
                        for k in MASKED_RESOURCE {
                            assert!(attrs.contains_key(k), "resource lacks {k}");
                            attrs.insert(k.into(), json!("<differs>"));
                        }
                        if lens {
                            for k in LENS_EXTRAS {
                                attrs.remove(k);
                            }
                        }
                        continue;
                    }
                    _ => {
                        mask(value, lens);
                        continue;
                    }
                }
                *value = if value.is_null() {
                    Value::Null
                } else {
                    json!("<masked>")
                };
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| mask(v, lens)),
        _ => {}
    }
}

/// The documents by kind: spans by name, the first metrics collection (without Lens's own
/// health metrics, scope `lens`), the log records.
fn by_kind(docs: &[Value], lens: bool) -> (Vec<Value>, Value, Vec<Value>) {
    let mut spans: Vec<Value> = docs
        .iter()
        .filter(|d| d.get("kind").is_some())
        .cloned()
        .collect();
    spans.sort_by_key(|s| s["name"].to_string());
    let mut metrics = docs
        .iter()
        .find(|d| d.get("resource_metrics").is_some())
        .expect("a metrics collection")
        .clone();
    for rm in metrics["resource_metrics"].as_array_mut().unwrap() {
        let scopes = rm["scope_metrics"].as_array_mut().unwrap();
        scopes.retain(|s| s["scope"]["name"] != "lens");
        for s in scopes.iter_mut() {
            s["metrics"]
                .as_array_mut()
                .unwrap()
                .sort_by_key(|m| m["name"].to_string());
        }
    }
    let logs: Vec<Value> = docs
        .iter()
        .filter(|d| d.get("body").is_some())
        .cloned()
        .collect();
    let (mut spans, mut metrics, mut logs) = (spans, metrics, logs);
    for d in spans.iter_mut().chain(logs.iter_mut()) {
        mask(d, lens);
    }
    mask(&mut metrics, lens);
    (spans, metrics, logs)
}

#[test]
fn console_output_is_nemo_lens_console_output() {
    let nemo = ask(&json!({"mode": "console", "case": {
        "env": {"OTEL_METRIC_EXPORT_INTERVAL": "600000"},
        "config": {"enabled": true, "exporter": "console", "logs_enabled": true,
                   "export_strategy": "all_ranks", "run_id": "console-parity",
                   "service_name": "parity-svc"},
    }}));
    let nemo = nemo.as_array().unwrap().clone();
    let lens = lens_documents();
    // The same ids in the same places: the child's parent, the link and the log are the root.
    let root = |docs: &[Value]| {
        let root = docs.iter().find(|d| d["name"] == "train_step").unwrap();
        let child = docs.iter().find(|d| d["name"] == "optimizer").unwrap();
        let log = docs.iter().find(|d| d.get("body").is_some()).unwrap();
        assert_eq!(child["parent_id"], root["context"]["span_id"]);
        assert_eq!(child["links"][0]["context"], root["context"]);
        assert_eq!(log["span_id"], root["context"]["span_id"]);
        assert_eq!(log["trace_id"], root["context"]["trace_id"]);
    };
    root(&nemo);
    root(&lens);
    let (nemo_spans, nemo_metrics, nemo_logs) = by_kind(&nemo, false);
    let (lens_spans, lens_metrics, lens_logs) = by_kind(&lens, true);
    assert_eq!(lens_spans, nemo_spans);
    assert_eq!(lens_metrics, nemo_metrics);
    assert_eq!(lens_logs, nemo_logs);
}
