//! Metric processors (`[[metrics.processors]]`): their edits against native references on
//! collections the SDK made (metrics dropped with their data points, renamed, attributes set
//! and removed on every data point), the answers refused for metrics, and a rank's metric
//! exporters — console, wasm, OTLP to a real collector — counting what the processors dropped.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use lens::config::{ExporterSpec, OnFault, OtlpProtocol, ProcessorSpec, SignalConfig};
use lens::exporter::ConsoleOut;
use lens::opentelemetry::KeyValue as OtelKeyValue;
use lens::opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use lens::opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use lens::opentelemetry_proto::tonic::metrics::v1::Metric;
use lens::opentelemetry_proto::tonic::metrics::v1::metric::Data;
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::metrics::Temporality;
use lens::testing::every_metric_kind;
use lens::wasm::{GuestOutputCopy, Signal, WasmProcessor};
use lens::{LensConfig, Telemetry, TelemetryHandle};
use lens_test_support::collector::Collector;
use lens_test_support::pipeline::{exporting, no_env, otlp_spec};
use lens_test_support::wasm::{lines, recorder_at};
use serde_json::Value as Json;

use super::processor;

const T: Duration = Duration::from_secs(20);

fn build(mode: &str, extra: &[(&str, &str)], on_fault: OnFault) -> WasmProcessor {
    let spec = processor(mode, mode, extra, on_fault);
    let resource = Resource::builder_empty().build();
    let none = GuestOutputCopy::None;
    WasmProcessor::from_config_with_output(mode, &spec, Signal::Metrics, &resource, none)
        .unwrap()
        .0
}

/// Every metric kind (five instruments, two `phase` data points each), as OTLP.
fn request() -> ExportMetricsServiceRequest {
    ExportMetricsServiceRequest::from(&every_metric_kind(Temporality::Cumulative))
}

fn metrics(r: &mut ExportMetricsServiceRequest) -> Vec<&mut Metric> {
    r.resource_metrics
        .iter_mut()
        .flat_map(|r| &mut r.scope_metrics)
        .flat_map(|s| &mut s.metrics)
        .collect()
}

fn names(r: &ExportMetricsServiceRequest) -> Vec<String> {
    let metrics = lens::wasm::processors::metric_edit::metrics(r);
    metrics.iter().map(|m| m.name.clone()).collect()
}

/// The attribute lists of each data point of `m`.
fn points(m: &mut Metric) -> Vec<&mut Vec<KeyValue>> {
    match m.data.as_mut().unwrap() {
        Data::Gauge(g) => g
            .data_points
            .iter_mut()
            .map(|p| &mut p.attributes)
            .collect(),
        Data::Sum(s) => s
            .data_points
            .iter_mut()
            .map(|p| &mut p.attributes)
            .collect(),
        Data::Histogram(h) => h
            .data_points
            .iter_mut()
            .map(|p| &mut p.attributes)
            .collect(),
        Data::ExponentialHistogram(h) => h
            .data_points
            .iter_mut()
            .map(|p| &mut p.attributes)
            .collect(),
        Data::Summary(s) => s
            .data_points
            .iter_mut()
            .map(|p| &mut p.attributes)
            .collect(),
    }
}

fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

#[test]
fn redaction_a_filter_and_renames_match_native_references() {
    let original = request();
    assert_eq!(names(&original).len(), 5, "{:?}", names(&original));

    // Redaction of `phase`: gone from every data point, each point marked.
    let mut got = original.clone();
    let counts = build("redact", &[("keys", "phase")], OnFault::Drop).process_metrics(&mut got);
    assert_eq!((counts.dropped, counts.faults), (0, 0));
    assert_eq!(got, redacted(original.clone(), "phase"));

    // A filter by name: the metrics named dropped with their data points (two each).
    let mut got = original.clone();
    let names_dropped = "check.loss,check.tokens";
    let counts =
        build("filter", &[("names", names_dropped)], OnFault::Pass).process_metrics(&mut got);
    assert_eq!((counts.dropped, counts.faults), (4, 0));
    let mut expected = original.clone();
    for s in expected
        .resource_metrics
        .iter_mut()
        .flat_map(|r| &mut r.scope_metrics)
    {
        s.metrics
            .retain(|m| m.name != "check.loss" && m.name != "check.tokens");
    }
    assert_eq!(got, expected);

    // Renames and an attribute set on every data point, by index.
    let mut got = original.clone();
    build("rewrite", &[], OnFault::Pass).process_metrics(&mut got);
    let mut expected = original.clone();
    for (i, m) in metrics(&mut expected).into_iter().enumerate() {
        m.name = format!("{}.x", m.name);
        for attributes in points(m) {
            attributes.push(kv("index", any_value::Value::IntValue(i as i64)));
        }
    }
    assert_eq!(got, expected);
}

/// An example processor from `guest-examples/dist` with `settings`.
fn example(file: &str, settings: &[(&str, &str)]) -> WasmProcessor {
    let spec = ProcessorSpec::Wasm(lens::config::WasmProcessorSpec {
        component: lens::config::WasmExporterSpec {
            path: lens_test_support::dist(file),
            settings: settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        },
        ..Default::default()
    });
    let resource = Resource::builder_empty().build();
    let none = GuestOutputCopy::None;
    WasmProcessor::from_config_with_output(file, &spec, Signal::Metrics, &resource, none)
        .unwrap()
        .0
}

/// The native reference of a filter: `r` without the metric `name`.
fn without(r: &ExportMetricsServiceRequest, name: &str) -> ExportMetricsServiceRequest {
    let mut r = r.clone();
    for s in r
        .resource_metrics
        .iter_mut()
        .flat_map(|r| &mut r.scope_metrics)
    {
        s.metrics.retain(|m| m.name != name);
    }
    r
}

/// The native reference of a redaction of `key` on every metric of `r` holding it.
fn redacted(mut r: ExportMetricsServiceRequest, key: &str) -> ExportMetricsServiceRequest {
    for m in metrics(&mut r) {
        let holds = points(m).iter().any(|a| a.iter().any(|kv| kv.key == key));
        for attributes in points(m).into_iter().filter(|_| holds) {
            attributes.retain(|a| a.key != key);
            attributes.push(kv("lens.redacted", any_value::Value::BoolValue(true)));
        }
    }
    r
}

#[test]
fn the_example_processors_match_native_references_on_metrics() {
    let original = request();
    let without_loss = without(&original, "check.loss");
    for file in ["rust-filter.wasm", "js-filter.wasm"] {
        let mut got = original.clone();
        let counts = example(file, &[("names", "check.loss")]).process_metrics(&mut got);
        assert_eq!((counts.dropped, counts.faults), (2, 0), "{file}");
        assert_eq!(got, without_loss, "{file}");
    }
    for file in ["rust-redact.wasm", "python-redact.wasm"] {
        let mut got = original.clone();
        let counts = example(file, &[("keys", "phase")]).process_metrics(&mut got);
        assert_eq!((counts.dropped, counts.faults), (0, 0), "{file}");
        assert_eq!(got, redacted(original.clone(), "phase"), "{file}");
    }
}

#[test]
fn the_example_filter_downsamples_a_hot_metric() {
    let p = example(
        "rust-filter.wasm",
        &[("names", "check.loss"), ("keep_every", "3")],
    );
    let original = request();
    let without_loss = without(&original, "check.loss");
    // The first collection of every three keeps the gauge; the others drop its two points.
    for collection in 0..6 {
        let mut got = original.clone();
        let counts = p.process_metrics(&mut got);
        let kept = collection % 3 == 0;
        let expected = if kept { &original } else { &without_loss };
        assert_eq!(&got, expected, "collection {collection}");
        assert_eq!(
            counts.dropped,
            if kept { 0 } else { 2 },
            "collection {collection}"
        );
    }
}

#[test]
fn a_no_op_leaves_the_collection_as_it_is_in_every_encoding() {
    let original = request();
    for encoding in ["typed", "otlp-protobuf", "otlp-json"] {
        let mut got = original.clone();
        let p = build("noop", &[("encoding", encoding)], OnFault::Drop);
        let counts = p.process_metrics(&mut got);
        assert_eq!((counts.dropped, counts.faults), (0, 0), "{encoding}");
        assert_eq!(got, original, "{encoding}");
        assert_eq!(
            p.stats().snapshot().received,
            10,
            "{encoding}: data points seen"
        );
    }
}

#[test]
fn a_metric_processor_that_faults_passes_the_collection_on_or_drops_it() {
    let original = request();
    for mode in ["set-status", "set-body", "out-of-range", "trap", "error"] {
        for (on_fault, dropped) in [(OnFault::Pass, 0), (OnFault::Drop, 10)] {
            let p = build(mode, &[], on_fault);
            let mut got = original.clone();
            let counts = p.process_metrics(&mut got);
            assert_eq!((counts.dropped, counts.faults), (dropped, 10), "{mode}");
            if dropped == 0 {
                assert_eq!(got, original, "{mode}: passed on unprocessed");
            } else {
                assert!(names(&got).is_empty(), "{mode}");
            }
            let stats = p.stats().snapshot();
            assert_eq!(stats.received, stats.exported + stats.dropped(), "{mode}");
        }
    }
}

/// A filter of `train.noise` for every metric exporter, and a redaction of `user` for the
/// one called `vendor`.
fn processors() -> Vec<ProcessorSpec> {
    let mut redact = processor("private", "redact", &[("keys", "user")], OnFault::Drop);
    let ProcessorSpec::Wasm(w) = &mut redact else {
        unreachable!()
    };
    w.exporters = vec!["vendor".into()];
    vec![
        processor(
            "quiet",
            "filter",
            &[("names", "train.noise")],
            OnFault::Pass,
        ),
        redact,
    ]
}

fn metric_config(metrics: Vec<ExporterSpec>, processors: Vec<ProcessorSpec>) -> LensConfig {
    LensConfig {
        run_id: "metric-processors".into(),
        traces_enabled: false,
        metrics_enabled: true,
        metric_export_interval_ms: 3_600_000,
        metrics: SignalConfig {
            exporters: metrics,
            processors,
        },
        ..exporting()
    }
}

fn install(metrics: Vec<ExporterSpec>, console: Option<ConsoleOut>) -> TelemetryHandle {
    let config = metric_config(metrics, processors());
    let mut builder = Telemetry::builder(config)
        .env(no_env())
        .install_global(false);
    if let Some(out) = console {
        builder = builder.console_out(out);
    }
    builder.install().unwrap()
}

/// Records a token count for `alice` and a noisy gauge.
fn record(handle: &TelemetryHandle) {
    let meter = handle.meter("trainer");
    meter
        .u64_counter("train.tokens")
        .build()
        .add(4096, &[OtelKeyValue::new("user", "alice")]);
    meter
        .f64_gauge("train.noise")
        .build()
        .record(0.5, &[OtelKeyValue::new("user", "alice")]);
}

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buffer {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_rank_s_metric_exporters_get_what_their_processors_left_and_count_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let buffer = Buffer::default();
    let console = ConsoleOut::Writer(Arc::new(Mutex::new(buffer.clone())));
    let handle = install(
        vec![
            ExporterSpec::Console(lens::config::ConsoleExporterSpec::default()),
            ExporterSpec::Wasm(recorder_at(dir.path(), "vendor", "m.jsonl", "typed", &[])),
        ],
        Some(console),
    );
    record(&handle);
    handle.force_flush(T).unwrap();

    // The console: no noise, the user kept (the redaction is the vendor's only).
    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    let written: Vec<Json> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let console_metrics: Vec<&Json> = written
        .iter()
        .flat_map(|c| {
            c["resource_metrics"][0]["scope_metrics"]
                .as_array()
                .unwrap()
        })
        .flat_map(|s| s["metrics"].as_array().unwrap())
        .collect();
    let tokens = console_metrics
        .iter()
        .find(|m| m["name"] == "train.tokens")
        .expect("train.tokens on the console");
    assert_eq!(
        tokens["data"]["data_points"][0]["attributes"]["user"],
        "alice"
    );
    assert!(
        console_metrics.iter().all(|m| m["name"] != "train.noise"),
        "{text}"
    );

    // The vendor: no noise, no user, each point marked.
    let recorded: Vec<Json> = lines(&dir.path().join("m.jsonl"))
        .into_iter()
        .filter(|l| l.get("init").is_none())
        .flat_map(|b| b["metrics"].as_array().unwrap().clone())
        .collect();
    let tokens = recorded
        .iter()
        .find(|m| m["name"] == "train.tokens")
        .expect("train.tokens at the vendor");
    let attributes = &tokens["points"][0]["attributes"];
    assert!(attributes.get("user").is_none(), "{tokens}");
    assert_eq!(
        attributes["lens.redacted"],
        serde_json::json!({"bool": true})
    );
    assert!(recorded.iter().all(|m| m["name"] != "train.noise"));

    handle.shutdown(T).unwrap();
    let stats = handle.stats();
    for name in ["console", "vendor"] {
        let e = stats.metric_exporter(name).unwrap();
        assert!(e.dropped_processor >= 1, "{name}: {e:?}");
        assert_eq!(e.processors["quiet"].dropped, e.dropped_processor, "{name}");
        assert_eq!(e.received, e.exported + e.dropped(), "{name}: {e:?}");
    }
    let quiet = stats.metric_processor("quiet").unwrap();
    assert_eq!(quiet.received, quiet.exported + quiet.dropped_processor);
    let private = stats.metric_processor("private").unwrap();
    assert_eq!(private.dropped_processor, 0);
    assert!(private.received >= 1);
}

fn otlp_after_processors(protocol: OtlpProtocol) {
    let collector = Collector::start();
    let mut otlp = otlp_spec(
        protocol,
        collector.endpoint(protocol, lens::Signal::Metrics),
    );
    otlp.name = Some("vendor".into());
    let handle = install(vec![ExporterSpec::Otlp(otlp)], None);
    record(&handle);
    handle.force_flush(T).unwrap();
    let out = collector.wait_for("train.tokens", |o| o.contains("Name: train.tokens"));
    assert!(!out.contains("alice"), "{out}");
    assert!(!out.contains("train.noise"), "{out}");
    assert!(out.contains("lens.redacted: Bool(true)"), "{out}");
    handle.shutdown(T).unwrap();
    let e = handle.stats().metric_exporter("vendor").unwrap().clone();
    assert!(e.dropped_processor >= 1, "{e:?}");
    assert_eq!(e.received, e.exported + e.dropped(), "{e:?}");
}

#[test]
fn no_filtered_metric_and_no_user_reach_a_real_collector_over_grpc() {
    otlp_after_processors(OtlpProtocol::Grpc);
}

#[test]
fn no_filtered_metric_and_no_user_reach_a_real_collector_over_http_protobuf() {
    otlp_after_processors(OtlpProtocol::HttpProtobuf);
}

#[test]
fn processors_in_a_row_say_which_metrics_are_left() {
    let original = request();
    let names = names(&original);
    let processors = [
        std::sync::Arc::new(build("filter", &[("names", "check.loss")], OnFault::Pass)),
        std::sync::Arc::new(build("filter", &[("names", "check.tokens")], OnFault::Pass)),
    ];
    let mut got = original.clone();
    let done = lens::wasm::processors::run_metric_processors(&processors, &mut got);
    let expected: Vec<usize> = (0..names.len())
        .filter(|&i| names[i] != "check.loss" && names[i] != "check.tokens")
        .collect();
    assert_eq!(done.kept, expected);
    let dropped: Vec<u64> = done.by.by.iter().map(|(_, c)| c.dropped).collect();
    assert_eq!(dropped, [2, 2]);
    let left: Vec<String> = expected.iter().map(|&i| names[i].clone()).collect();
    assert_eq!(self::names(&got), left);
}

#[test]
fn a_reload_swaps_a_metric_processor_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let vendor = || ExporterSpec::Wasm(recorder_at(dir.path(), "vendor", "m.jsonl", "typed", &[]));
    let handle = install(vec![vendor()], None);
    record(&handle);
    handle.force_flush(T).unwrap();
    // `quiet` now drops the token counter instead of the noise.
    let mut now = processors();
    now[0] = processor(
        "quiet",
        "filter",
        &[("names", "train.tokens")],
        OnFault::Pass,
    );
    let report = handle
        .reload_exporters(&metric_config(vec![vendor()], now))
        .unwrap();
    let swapped: Vec<&str> = report
        .reloaded
        .iter()
        .map(|r| r.exporter.as_str())
        .collect();
    assert_eq!(swapped, ["quiet"], "{report:?}");
    record(&handle);
    handle.force_flush(T).unwrap();
    let collections: Vec<Vec<String>> = lines(&dir.path().join("m.jsonl"))
        .into_iter()
        .filter(|l| l.get("init").is_none())
        .map(|b| {
            b["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["name"].as_str().unwrap().to_string())
                .collect()
        })
        .collect();
    let (first, last) = (&collections[0], collections.last().unwrap());
    assert!(first.contains(&"train.tokens".to_string()), "{first:?}");
    assert!(!first.contains(&"train.noise".to_string()), "{first:?}");
    assert!(last.contains(&"train.noise".to_string()), "{last:?}");
    assert!(!last.contains(&"train.tokens".to_string()), "{last:?}");
    handle.shutdown(T).unwrap();
}

#[test]
fn a_reload_adds_and_removes_metric_processors() {
    let dir = tempfile::tempdir().unwrap();
    let vendor = || ExporterSpec::Wasm(recorder_at(dir.path(), "vendor", "m.jsonl", "typed", &[]));
    let handle = install(vec![vendor()], None);
    // The metrics of the collection exported now (none: no export), as names and as text.
    let collection = || {
        let exports = || {
            lines(&dir.path().join("m.jsonl"))
                .into_iter()
                .filter(|l| l.get("metrics").is_some())
                .collect::<Vec<_>>()
        };
        let before = exports().len();
        record(&handle);
        handle.force_flush(T).unwrap();
        let after = exports();
        let Some(last) = after.get(before) else {
            return (Vec::new(), String::new());
        };
        let metrics = last["metrics"].as_array().unwrap().clone();
        let names: Vec<String> = metrics
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_string())
            .collect();
        (names, serde_json::Value::Array(metrics).to_string())
    };
    let (names, _) = collection();
    assert_eq!(names, ["train.tokens"], "the noise filtered");
    // Added: the token counter dropped too (nothing left to export); the redaction stays.
    let mut more = processors();
    more.push(processor(
        "no-tokens",
        "filter",
        &[("names", "train.tokens")],
        OnFault::Pass,
    ));
    let report = handle
        .reload_exporters(&metric_config(vec![vendor()], more))
        .unwrap();
    assert_eq!(report.processors, [Signal::Metrics], "{report:?}");
    let (names, _) = collection();
    assert!(names.is_empty(), "{names:?}");
    let stats = handle.stats();
    let dropped = stats
        .metric_processor("no-tokens")
        .unwrap()
        .dropped_processor;
    assert_eq!(dropped, 1, "{:?}", stats.metric_processors);
    // Removed, all of them: the next collection is the SDK's as it is, `user` included.
    handle
        .reload_exporters(&metric_config(vec![vendor()], Vec::new()))
        .unwrap();
    let (names, text) = collection();
    assert_eq!(names, ["train.tokens", "train.noise"]);
    assert!(text.contains("alice"), "no redaction any more: {text}");
    handle.shutdown(T).unwrap();
    let stats = handle.stats();
    let v = stats.metric_exporter("vendor").unwrap();
    assert_eq!(v.received, v.exported + v.dropped(), "{v:?}");
}
