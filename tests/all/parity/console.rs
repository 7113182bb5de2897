//! `exporter = "console"`: what Lens prints for a span tree, a few metrics and a bridged log
//! record, against what NeMo Lens 0.2.0 prints for the same scenario, line by line and byte by
//! byte. Each line must be exactly Python's `json.dumps` of what it holds (checked against NeMo
//! Lens's own lines too, which proves the check); then both sides' documents, with what no two
//! processes share checked for shape and masked in place, must print the same text, key order
//! included.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lens::exporter::ConsoleOut;
use lens::exporter::python_dumps::dumps;
use lens::opentelemetry::metrics::MeterProvider as _;
use lens::opentelemetry::trace::{
    Link, Span as _, SpanKind, Status, TraceContextExt as _, Tracer as _, TracerProvider as _,
};
use lens::opentelemetry::{InstrumentationScope, KeyValue};
use lens::{LensConfig, Telemetry};
use serde_json::{Value, json};

use super::oracle::ask;

/// Resource keys whose values cannot agree (another process, another SDK).
const MASKED_RESOURCE: [&str; 3] = [
    "process.pid",
    "telemetry.sdk.language",
    "telemetry.sdk.version",
];
/// Lens's documented extra resource keys.
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

/// A scenario: the environment both sides see and the caller's resource attributes.
struct Scenario {
    env: Vec<(&'static str, &'static str)>,
    caller: Vec<(&'static str, &'static str)>,
}

impl Scenario {
    /// Its environment, the metric readers' period long enough that only shutdown collects.
    fn env(&self) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
        self.env
            .iter()
            .copied()
            .chain([("OTEL_METRIC_EXPORT_INTERVAL", "600000")])
    }
}

/// The scenario through Lens, its console exporters built from the config: the lines printed.
fn lens_lines(scenario: &Scenario) -> Vec<String> {
    let buffer = Buffer::default();
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
    let env: HashMap<String, String> = scenario
        .env()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let handle = Telemetry::builder(config)
        .rank(0)
        .world_size(1)
        .env(env)
        .resource_attributes(scenario.caller.iter().map(|(k, v)| KeyValue::new(*k, *v)))
        .console_out(ConsoleOut::Writer(Arc::new(Mutex::new(buffer.clone()))))
        .install_global(false)
        .install()
        .unwrap();
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
    text.lines().map(String::from).collect()
}

/// The same scenario through NeMo Lens 0.2.0's console format.
fn nemo_lines(scenario: &Scenario) -> Vec<String> {
    let env: HashMap<&str, &str> = scenario.env().collect();
    let caller: HashMap<&str, &str> = scenario.caller.iter().copied().collect();
    let answer = ask(&json!({"mode": "console", "case": {
        "env": env,
        "config": {"enabled": true, "exporter": "console", "logs_enabled": true,
                   "export_strategy": "all_ranks", "run_id": "console-parity",
                   "service_name": "parity-svc"},
        "resource_attributes": caller,
    }}));
    answer
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect()
}

/// Each line parsed; each must be exactly `json.dumps` of what it holds.
fn documents(lines: &[String], side: &str) -> Vec<Value> {
    lines
        .iter()
        .map(|line| {
            let doc: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{side}: not one JSON document per line ({e}): {line}"));
            assert_eq!(&dumps(&doc), line, "{side}: not json.dumps's text");
            doc
        })
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

/// Checks the shape of what cannot be equal and replaces it in place by a marker; removes
/// Lens's extra resource keys (keeping the order of the rest).
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
                    // Where each side's log call is (the keys and their order are compared).
                    "code.file.path" | "code.function.name" | "code.line.number" => {}
                    "resource" => {
                        let attrs = value["attributes"].as_object_mut().unwrap();
                        for k in MASKED_RESOURCE {
                            assert!(attrs.contains_key(k), "resource lacks {k}");
                            attrs.insert(k.into(), json!("<differs>"));
                        }
                        if lens {
                            for k in LENS_EXTRAS {
                                assert!(attrs.shift_remove(k).is_some(), "Lens's {k}");
                            }
                        }
                        continue;
                    }
                    _ => {
                        mask(value, lens);
                        continue;
                    }
                }
                if !value.is_null() {
                    *value = json!("<masked>");
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| mask(v, lens)),
        _ => {}
    }
}

/// The documents by kind, masked, as text: the spans by name, the first metrics collection
/// (without Lens's own health metrics, scope `lens`), the log records.
fn by_kind(docs: &[Value], lens: bool) -> (Vec<String>, String, Vec<String>) {
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
        rm["scope_metrics"]
            .as_array_mut()
            .unwrap()
            .retain(|s| s["scope"]["name"] != "lens");
    }
    let mut logs: Vec<Value> = docs
        .iter()
        .filter(|d| d.get("body").is_some())
        .cloned()
        .collect();
    for d in spans.iter_mut().chain(logs.iter_mut()) {
        mask(d, lens);
    }
    mask(&mut metrics, lens);
    let text = |docs: Vec<Value>| docs.iter().map(dumps).collect::<Vec<_>>();
    (text(spans), dumps(&metrics), text(logs))
}

fn same_output(scenario: Scenario) {
    let nemo = documents(&nemo_lines(&scenario), "NeMo Lens");
    let lens = documents(&lens_lines(&scenario), "Lens");
    // The same ids in the same places: the child's parent, the link and the log are the root.
    let root = |docs: &[Value]| {
        let root = docs.iter().find(|d| d["name"] == "train_step").unwrap();
        let child = docs.iter().find(|d| d["name"] == "optimizer").unwrap();
        let log = docs.iter().find(|d| d.get("body").is_some()).unwrap();
        assert_eq!(child["parent_id"], root["context"]["span_id"]);
        assert_eq!(child["links"][0]["context"], root["context"]);
        assert_eq!(log["span_id"], root["context"]["span_id"]);
        assert_eq!(log["trace_id"], root["context"]["trace_id"]);
        // W3C level 2: sampled, and a random trace id.
        assert_eq!(log["trace_flags"], 3);
    };
    root(&nemo);
    root(&lens);
    let (nemo_spans, nemo_metrics, nemo_logs) = by_kind(&nemo, false);
    let (lens_spans, lens_metrics, lens_logs) = by_kind(&lens, true);
    assert_eq!(lens_spans, nemo_spans);
    assert_eq!(lens_metrics, nemo_metrics);
    assert_eq!(lens_logs, nemo_logs);
}

#[test]
fn console_output_is_nemo_lens_console_output() {
    same_output(Scenario {
        env: Vec::new(),
        caller: Vec::new(),
    });
}

/// The resource's keys come from everywhere NeMo Lens takes them, in Python's merge order.
#[test]
fn console_resource_keys_are_in_nemo_lens_order() {
    same_output(Scenario {
        env: vec![
            ("OTEL_RESOURCE_ATTRIBUTES", "team=env,dl.rank=9,zone=z1"),
            ("OTEL_SERVICE_NAME", "otel-name"),
            ("DEPLOYMENT_ENV", "prod"),
            ("SLURM_JOB_ID", "777"),
            ("SLURM_JOB_NAME", "llama"),
            ("KUBERNETES_SERVICE_HOST", "10.0.0.1"),
            ("K8S_NAMESPACE", "ml"),
            ("CUDA_VISIBLE_DEVICES", "0,1"),
        ],
        caller: vec![("team", "caller"), ("owner", "ml-infra")],
    });
}
