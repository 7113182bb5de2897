//! The sandboxed wasm exporter host, driven with guests built from source (tests/guests).

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lens::config::{EnvGrant, ExporterSpec, SignalConfig, WasmExporterSpec, WasmPreopen};
use lens::opentelemetry::trace::{
    Link, Span, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId,
    TraceState, Tracer, TracerProvider,
};
use lens::opentelemetry::{Array, Context, InstrumentationScope, KeyValue, Value};
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::error::OTelSdkResult;
use lens::opentelemetry_sdk::trace::{SpanData, SpanExporter};
use lens::wasm::WasmSpanExporter;
use lens::{LensConfig, LensError, Telemetry, TelemetryHandle};
use lens_test_guests::{HOSTILE, RECORDER};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use serde_json::Value as Json;

const T: Duration = Duration::from_secs(10);

/// Collects every span (the oracle; unlike the SDK's in-memory exporter it survives shutdown).
#[derive(Debug, Clone, Default)]
struct Oracle(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Oracle {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

fn spec(path: &str, settings: &[(&str, &str)]) -> WasmExporterSpec {
    WasmExporterSpec {
        path: PathBuf::from(path),
        settings: settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        call_timeout_ms: Some(1000),
        ..Default::default()
    }
}

fn recorder_spec(dir: &Path, encoding: &str) -> WasmExporterSpec {
    let mut s = spec(
        RECORDER,
        &[("out", "/out/batches.jsonl"), ("encoding", encoding)],
    );
    s.name = Some("recorder".into());
    s.preopens = vec![WasmPreopen {
        host: dir.to_path_buf(),
        guest: "/out".into(),
        read_only: false,
    }];
    s
}

fn install(specs: Vec<WasmExporterSpec>, batch: usize) -> (TelemetryHandle, Oracle) {
    let mut config = LensConfig {
        run_id: "wasm".into(),
        metrics_enabled: false,
        ..Default::default()
    };
    config.batch.max_export_batch_size = batch;
    config.traces = SignalConfig {
        exporters: specs.into_iter().map(ExporterSpec::Wasm).collect(),
    };
    let handle = Telemetry::builder(config)
        .rank(2)
        .world_size(4)
        .env(HashMap::<String, String>::new())
        .install_global(false)
        .install()
        .unwrap();
    let oracle = Oracle::default();
    handle.add_span_exporter("oracle", oracle.clone());
    (handle, oracle)
}

/// Every value type, events, links, status, unicode, two scopes; then `bulk` plain spans.
fn produce(handle: &TelemetryHandle, bulk: usize) {
    let tracer = handle.tracer("trainer");
    let other = handle.tracer_provider().tracer_with_scope(
        InstrumentationScope::builder("checkpointer")
            .with_version("2.1")
            .build(),
    );
    tracer.in_span("step ✓ 步骤 🚀", |cx| {
        let span = cx.span();
        let parent = span.span_context().clone();
        common::set_every_value_type(&span);
        span.add_event("loss-spike", vec![KeyValue::new("loss", 9.5)]);
        span.set_status(Status::error("nan loss"));
        let mut save = other
            .span_builder("save")
            .with_kind(SpanKind::Producer)
            .with_links(vec![Link::with_context(parent)])
            .start(&other);
        save.set_status(Status::Ok);
        save.end();
    });
    // A remote parent with a trace state, and more attributes than the span limit (128).
    let remote = SpanContext::new(
        TraceId::from(0x5b8e_0000_0000_0000_0000_0000_0000_0001),
        SpanId::from(0x00f0_67aa_0ba9_02b7),
        TraceFlags::SAMPLED,
        true,
        TraceState::from_key_value([("vendor", "a1"), ("lens", "b2")]).unwrap(),
    );
    let mut limited =
        tracer.start_with_context("limited", &Context::new().with_remote_span_context(remote));
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

fn lines(path: &Path) -> Vec<Json> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
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
    let _ = env_logger::builder().is_test(true).try_init();
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
    let expected = oracle.0.lock().unwrap().clone();
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
    let step = got.iter().find(|s| s["name"] == "step ✓ 步骤 🚀").unwrap();
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
            assert_eq!(common::otlp_resource_int(rs, "dl.rank"), Some(2));
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
    let expected = oracle.0.lock().unwrap().clone();
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
        .0
        .lock()
        .unwrap()
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

fn direct(
    mode: &str,
    extra: &[(&str, &str)],
) -> (WasmSpanExporter, Arc<lens::trace::ExporterStats>) {
    let mut settings = vec![("mode", mode)];
    settings.extend_from_slice(extra);
    let mut s = spec(HOSTILE, &settings);
    s.name = Some(format!("hostile-{mode}"));
    s.call_timeout_ms = Some(300);
    s.memory_limit_mib = Some(32);
    WasmSpanExporter::from_config(
        &format!("hostile-{mode}"),
        &s,
        &Resource::builder_empty().build(),
    )
    .unwrap()
}

fn spans(names: &[&'static str]) -> Vec<SpanData> {
    let oracle = Oracle::default();
    let provider = lens::opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_simple_exporter(oracle.clone())
        .build();
    let tracer = provider.tracer("t");
    for n in names {
        tracer.start(*n).end();
    }
    oracle.0.lock().unwrap().clone()
}

fn export(e: &WasmSpanExporter, names: &[&'static str]) -> Result<(), String> {
    futures_executor::block_on(e.export(spans(names))).map_err(|e| e.to_string())
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

#[test]
fn infinite_loop_hits_the_deadline_and_the_instance_is_rebuilt() {
    let (e, stats) = direct("loop", &[]);
    let started = Instant::now();
    let err = export(&e, &["a"]).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(
        err.contains("wasm exporter `hostile-loop`: deadline"),
        "{err}"
    );
    // The next batch gets a fresh instance (which loops again): a restart, then backoff.
    assert!(export(&e, &["b"]).unwrap_err().contains("deadline"));
    let s = stats.snapshot();
    assert_eq!(s.traps.get("deadline"), Some(&2));
    assert_eq!(s.restarts, 1);
    let backing_off = export(&e, &["c"]).unwrap_err();
    assert!(backing_off.contains("backing off"), "{backing_off}");
}

#[test]
fn memory_bomb_hits_the_memory_limit() {
    let (e, stats) = direct("memory-bomb", &[]);
    let err = export(&e, &["a"]).unwrap_err();
    assert!(err.contains("memory limit"), "{err}");
    let s = stats.snapshot();
    assert_eq!(s.traps.get("memory limit"), Some(&1));
    assert!(s.peak_memory_bytes <= 32 << 20, "{}", s.peak_memory_bytes);
}

#[test]
fn panic_on_a_span_named_boom_fails_that_batch_only() {
    let (e, stats) = direct("panic-on-boom", &[]);
    export(&e, &["ok"]).unwrap();
    let err = export(&e, &["x", "boom"]).unwrap_err();
    assert!(err.contains("unreachable"), "{err}");
    export(&e, &["fine"]).unwrap(); // a fresh instance, no backoff after one fault
    let s = stats.snapshot();
    assert_eq!((s.restarts, s.traps.get("unreachable")), (1, Some(&1)));
}

#[test]
fn huge_error_strings_are_truncated_and_the_instance_kept() {
    let (e, stats) = direct("huge-error", &[]);
    let err = export(&e, &["a"]).unwrap_err();
    assert!(err.len() < 1200, "{} bytes", err.len());
    assert!(
        err.ends_with(&format!("… [{} more bytes]", (10 << 20) - 1024)),
        "{}",
        &err[err.len() - 40..]
    );
    export(&e, &["b"]).unwrap_err();
    let s = stats.snapshot();
    assert_eq!((s.guest_errors, s.restarts), (2, 0));
    assert!(s.traps.is_empty());
}

#[test]
fn a_guest_blocked_in_a_host_call_is_abandoned_at_the_deadline() {
    let (e, stats) = direct("slow", &[("sleep_ms", "5000")]);
    let started = Instant::now();
    let err = export(&e, &["a"]).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(err.contains("blocked in a host call"), "{err}");
    assert_eq!(stats.snapshot().traps.get("deadline"), Some(&1));
}

#[test]
fn reading_a_host_file_is_denied() {
    let err = export(&direct("read-file", &[]).0, &["a"]).unwrap_err();
    assert!(err.contains("probe read /etc/passwd: Err("), "{err}");
}

#[test]
fn the_host_environment_is_invisible_except_granted_variables() {
    let mut s = spec(HOSTILE, &[("mode", "read-env")]);
    s.env = BTreeMap::from([
        ("DATASET".to_string(), EnvGrant::Value("pretraining".into())),
        (
            "FROM_HOST".to_string(),
            EnvGrant::FromHost {
                from_host: "PATH".into(),
            },
        ),
    ]);
    let (e, _) =
        WasmSpanExporter::from_config("env", &s, &Resource::builder_empty().build()).unwrap();
    let err = export(&e, &["a"]).unwrap_err();
    let path = std::env::var("PATH").unwrap();
    assert!(
        err.ends_with(&format!(
            "probe env: [(\"DATASET\", \"pretraining\"), (\"FROM_HOST\", \"{path}\")]"
        )),
        "{err}"
    );
    s.env = BTreeMap::from([(
        "KEY".to_string(),
        EnvGrant::FromHost {
            from_host: "LENS_SURELY_UNSET_VAR".into(),
        },
    )]);
    let missing =
        WasmSpanExporter::from_config("env", &s, &Resource::builder_empty().build()).unwrap_err();
    assert!(
        missing
            .to_string()
            .ends_with("`env.KEY` takes host variable `LENS_SURELY_UNSET_VAR`, which is not set"),
        "{missing}"
    );
}

#[test]
fn sockets_are_denied() {
    let err = export(&direct("socket", &[]).0, &["a"]).unwrap_err();
    assert!(err.contains("probe socket: Err("), "{err}");
}

#[test]
fn http_to_a_host_not_allowed_is_denied() {
    let err = export(&direct("http", &[]).0, &["a"]).unwrap_err();
    assert!(
        err.contains("probe http error: ErrorCode::HttpRequestDenied"),
        "{err}"
    );
}

#[test]
fn an_exporter_refusing_to_start_fails_setup_with_its_message() {
    let err = WasmSpanExporter::from_config(
        "picky",
        &spec(HOSTILE, &[("mode", "refuse-init")]),
        &Resource::builder_empty().build(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "wasm exporter `picky` ({HOSTILE}): init failed: init: this exporter refuses to start"
        )
    );
}

/// Ten spans through `handle`, one named `boom` if asked, then a flush (a failed batch fails
/// the flush, never the application).
fn ten_spans(handle: &TelemetryHandle, boom: bool) {
    let tracer = handle.tracer("t");
    for i in 0..10 {
        tracer
            .start(if boom && i == 3 { "boom" } else { "fine" })
            .end();
    }
    let _ = handle.force_flush(T);
}

/// A `panic-on-boom` guest named `hostile` with `lanes` instances, and the oracle.
fn panic_on_boom(lanes: usize) -> (TelemetryHandle, Oracle) {
    let mut hostile = spec(HOSTILE, &[("mode", "panic-on-boom")]);
    hostile.name = Some("hostile".into());
    hostile.batch.max_concurrent_exports = Some(lanes);
    install(vec![hostile], 10)
}

/// After shutdown: (exported, failed, dropped, traps, restarts) of `hostile`.
fn hostile_counts(handle: &TelemetryHandle) -> (u64, u64, u64, u64, u64) {
    handle.shutdown(T).unwrap();
    let stats = handle.stats();
    let w = stats.exporter("hostile").unwrap();
    assert_eq!(w.received, w.exported + w.dropped(), "{w:?}");
    let traps = w.traps.get("unreachable").copied().unwrap_or(0);
    (
        w.exported,
        w.dropped_export_failed,
        w.dropped(),
        traps,
        w.restarts,
    )
}

#[test]
fn traps_never_reach_training_and_the_counts_add_up() {
    let (handle, oracle) = panic_on_boom(1);
    ten_spans(&handle, false); // exported
    ten_spans(&handle, true); // trap: dropped, instance discarded
    ten_spans(&handle, false); // fresh instance: exported (restart 1)
    ten_spans(&handle, true); // second trap within 10 s: dropped, backoff 1 s starts
    ten_spans(&handle, false); // dropped: backing off
    std::thread::sleep(Duration::from_millis(1100));
    ten_spans(&handle, false); // backoff over: fresh instance, exported (restart 2)
    assert_eq!(hostile_counts(&handle), (30, 30, 30, 2, 2));
    assert_eq!(
        oracle.0.lock().unwrap().len(),
        60,
        "the other exporter got every span"
    );
}

#[test]
fn with_two_instances_batches_avoid_the_one_backing_off() {
    let (handle, _) = panic_on_boom(2);
    ten_spans(&handle, true); // instance 0 traps
    ten_spans(&handle, true); // instance 1 traps
    ten_spans(&handle, true); // instance 0 rebuilt, traps again: backs off for 1 s
    ten_spans(&handle, false); // instance 1 rebuilt: exported
    ten_spans(&handle, false); // instance 0's turn, but it is backing off: instance 1 exports
    ten_spans(&handle, false); // instance 1 again
    assert_eq!(hostile_counts(&handle), (30, 30, 30, 3, 2));
}

#[test]
fn guest_health_is_reported_as_lens_metrics() {
    let reader = lens::InMemoryMetricReader::new();
    let mut hostile = spec(HOSTILE, &[("mode", "panic-on-boom")]);
    hostile.name = Some("hostile".into());
    let config = LensConfig {
        run_id: "m".into(),
        traces: SignalConfig {
            exporters: vec![ExporterSpec::Wasm(hostile)],
        },
        ..Default::default()
    };
    let handle = Telemetry::builder(config)
        .metric_reader(reader.clone())
        .env(HashMap::<String, String>::new())
        .install_global(false)
        .install()
        .unwrap();
    let tracer = handle.tracer("t");
    tracer.start("boom").end();
    let _ = handle.force_flush(T);
    tracer.start("fine").end();
    let _ = handle.force_flush(T);
    let data = reader.get_metrics_data().unwrap();
    let find = |name: &str| -> Vec<String> {
        use lens::opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
        let mut out = Vec::new();
        for m in data
            .scope_metrics()
            .flat_map(|s| s.metrics())
            .filter(|m| m.name() == name)
        {
            match m.data() {
                AggregatedMetrics::U64(MetricData::Sum(s)) => {
                    out.extend(s.data_points().map(|p| {
                        format!(
                            "{:?}={}",
                            p.attributes()
                                .map(|kv| kv.value.to_string())
                                .collect::<Vec<_>>(),
                            p.value()
                        )
                    }))
                }
                AggregatedMetrics::U64(MetricData::Gauge(g)) => {
                    out.extend(g.data_points().map(|p| {
                        format!(
                            "{:?}={}",
                            p.attributes()
                                .map(|kv| kv.value.to_string())
                                .collect::<Vec<_>>(),
                            p.value()
                        )
                    }))
                }
                _ => {}
            }
        }
        out
    };
    assert_eq!(
        find("lens.exporter.traps"),
        [r#"["hostile", "unreachable"]=1"#]
    );
    assert_eq!(find("lens.exporter.restarts"), [r#"["hostile"]=1"#]);
    let memory = find("lens.exporter.memory.peak");
    assert_eq!(memory.len(), 1);
    let bytes: u64 = memory[0].rsplit('=').next().unwrap().parse().unwrap();
    assert!(bytes >= 64 * 1024, "{memory:?}");
    handle.shutdown(T).unwrap();
}

fn load_error(path: &Path, pin: Option<&str>) -> String {
    let mut s = spec(path.to_str().unwrap(), &[]);
    s.sha256 = pin.map(String::from);
    match WasmSpanExporter::from_config("bad", &s, &Resource::builder_empty().build()) {
        Err(LensError::WasmLoad { message, .. }) => message,
        Err(other) => panic!("unexpected error {other}"),
        Ok(_) => panic!("{} loaded", path.display()),
    }
}

#[test]
fn bad_wasm_inputs_each_get_their_message() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    assert_eq!(
        load_error(&dir.path().join("missing.wasm"), None),
        "file not found"
    );
    assert_eq!(
        load_error(dir.path(), None),
        "is a directory, not a .wasm component file"
    );
    assert_eq!(
        load_error(&p("text.wasm", b"hello, world"), None),
        "not a WebAssembly file (no `\\0asm` header)"
    );
    let core = wat::parse_str("(module (func (export \"f\")))").unwrap();
    assert_eq!(
        load_error(&p("core.wasm", &core), None),
        "is a core WebAssembly module, not a component: build it for wasm32-wasip2, or wrap it with `wasm-tools component new`"
    );
    let empty = wat::parse_str("(component)").unwrap();
    assert_eq!(
        load_error(&p("empty.wasm", &empty), None),
        "does not export `lens:exporter/span-exporter@0.2.0` (it exports nothing); is it built for the `lens:exporter/exporter` world?"
    );
    let imports = wat::parse_str(
        r#"(component
             (import "vendor:telemetry/sink@1.0.0" (instance (export "send" (func))))
             (import "wasi:cli/environment@0.2.0" (instance))
           )"#,
    )
    .unwrap();
    assert_eq!(
        load_error(&p("imports.wasm", &imports), None),
        "imports the host does not provide: `vendor:telemetry/sink@1.0.0` (the host offers WASI 0.2 and wasi:http only)"
    );
    // A component exporting a `shutdown` function under `interface`.
    let exporting = |interface: &str| {
        wat::parse_str(format!(
            r#"(component
                 (core module $m (func (export "f")))
                 (core instance $i (instantiate $m))
                 (func $f (canon lift (core func $i "f")))
                 (instance $e (export "shutdown" (func $f)))
                 (export "{interface}" (instance $e))
               )"#
        ))
        .unwrap()
    };
    assert_eq!(
        load_error(
            &p("v1.wasm", &exporting("lens:exporter/span-exporter@0.1.0")),
            None
        ),
        "targets `lens:exporter/span-exporter@0.1.0`, but this host supports `lens:exporter/span-exporter@0.2.0`; rebuild it against this host's `wit/exporter.wit` (the 0.1.0 records are unchanged)"
    );
    assert_eq!(
        load_error(
            &p("v3.wasm", &exporting("lens:exporter/span-exporter@0.3.0")),
            None
        ),
        "targets `lens:exporter/span-exporter@0.3.0`, but this host supports `lens:exporter/span-exporter@0.2.0`"
    );
    let truncated = &std::fs::read(RECORDER).unwrap()[..4096];
    assert!(load_error(&p("truncated.wasm", truncated), None).starts_with("invalid component: "));
    let pin = "0".repeat(64);
    let digest = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(std::fs::read(RECORDER).unwrap()))
    };
    assert_eq!(
        load_error(Path::new(RECORDER), Some(&pin)),
        format!("sha256 is {digest}, but the config pins {pin}: refusing to load it")
    );
}

#[test]
fn a_correct_sha256_pin_loads() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = recorder_spec(dir.path(), "typed");
    use sha2::Digest;
    s.sha256 =
        Some(hex::encode(sha2::Sha256::digest(std::fs::read(RECORDER).unwrap())).to_uppercase());
    WasmSpanExporter::from_config("pinned", &s, &Resource::builder_empty().build()).unwrap();
}

#[test]
fn fuel_budget_stops_a_loop_deterministically() {
    let mut s = spec(HOSTILE, &[("mode", "loop")]);
    s.fuel_per_call = Some(5_000_000);
    s.call_timeout_ms = Some(30_000); // the fuel, not the deadline, must stop it
    let (e, stats) =
        WasmSpanExporter::from_config("fuel", &s, &Resource::builder_empty().build()).unwrap();
    let err = export(&e, &["a"]).unwrap_err();
    assert!(err.contains("wasm exporter `fuel`: fuel"), "{err}");
    assert_eq!(stats.snapshot().traps.get("fuel"), Some(&1));
}

#[test]
fn guest_stdout_and_stderr_reach_the_log_prefixed_and_truncated() {
    let capture = common::capture_log();
    let (e, _) = WasmSpanExporter::from_config(
        "print",
        &spec(HOSTILE, &[("mode", "print")]),
        &Resource::builder_empty().build(),
    )
    .unwrap();
    export(&e, &["a"]).unwrap();
    drop(e); // the instance (and its streams) go away: a pending partial line is flushed
    std::thread::sleep(Duration::from_millis(200));
    let logs = capture.matching("`print`");
    assert!(
        logs.contains(&"[wasm exporter `print` rank 0 stdout] hello from the guest".to_string()),
        "{logs:?}"
    );
    let long = logs
        .iter()
        .find(|l| l.contains("stderr] xxx"))
        .expect("the long stderr line");
    assert!(
        long.ends_with(&format!("{}… [4000 more bytes]", "x".repeat(10))),
        "{}",
        &long[long.len() - 40..]
    );
    assert!(long.len() < 1100);
    assert!(
        logs.contains(&"[wasm exporter `print` rank 0 stdout] no newline at the end".to_string()),
        "{logs:?}"
    );
}

#[test]
fn http_to_an_allowed_host_goes_through() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        use std::io::{Read, Write};
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4096];
        let n = conn.read(&mut buf).unwrap();
        let request = String::from_utf8_lossy(&buf[..n]).to_string();
        conn.write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .unwrap();
        request
    });
    let authority = format!("127.0.0.1:{port}");
    let mut s = spec(HOSTILE, &[("mode", "http"), ("authority", &authority)]);
    s.allowed_hosts = vec![authority.clone()];
    let (e, _) =
        WasmSpanExporter::from_config("http-ok", &s, &Resource::builder_empty().build()).unwrap();
    let err = export(&e, &["a"]).unwrap_err();
    assert!(err.ends_with("probe http status 202"), "{err}");
    let request = server.join().unwrap();
    assert!(
        request.starts_with("POST /v1/traces HTTP/1.1")
            || request.starts_with("GET /v1/traces HTTP/1.1"),
        "{request}"
    );
}

#[test]
fn a_read_only_preopen_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = recorder_spec(dir.path(), "typed");
    s.preopens[0].read_only = true;
    let err = WasmSpanExporter::from_config("ro", &s, &Resource::builder_empty().build())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("init failed: init: cannot create /out/batches.jsonl"),
        "{err}"
    );
    assert!(!dir.path().join("batches.jsonl").exists());
}

/// For each hostile behaviour inside a real pipeline: the application never waits, the other
/// exporter gets every span, and the hostile exporter's counts add up.
fn hostile_in_a_pipeline(mode: &str, extra: &[(&str, &str)]) {
    let mut settings = vec![("mode", mode)];
    settings.extend_from_slice(extra);
    let mut hostile = spec(HOSTILE, &settings);
    hostile.name = Some("hostile".into());
    hostile.call_timeout_ms = Some(200);
    hostile.memory_limit_mib = Some(32);
    let (handle, oracle) = install(vec![hostile], 10);
    let tracer = handle.tracer("t");
    let started = Instant::now();
    for i in 0..50 {
        tracer.start(if i == 25 { "boom" } else { "step" }).end();
    }
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "ending spans waited: {:?}",
        started.elapsed()
    );
    let _ = handle.force_flush(T);
    let _ = handle.shutdown(T);
    let stats = handle.stats();
    let w = stats.exporter("hostile").unwrap();
    assert_eq!(
        oracle.0.lock().unwrap().len(),
        50,
        "{mode}: the other exporter got every span"
    );
    assert_eq!(w.received, 50, "{mode}");
    assert_eq!(w.exported + w.dropped(), 50, "{mode}: {w:?}");
}

macro_rules! hostile_pipeline_tests {
    ($($test:ident => $mode:expr $(, $k:expr => $v:expr)*;)*) => {$(
        #[test]
        fn $test() {
            hostile_in_a_pipeline($mode, &[$(($k, $v)),*]);
        }
    )*};
}

hostile_pipeline_tests! {
    pipeline_survives_an_infinite_loop => "loop";
    pipeline_survives_a_memory_bomb => "memory-bomb";
    pipeline_survives_a_panic_on_boom => "panic-on-boom";
    pipeline_survives_huge_errors => "huge-error";
    pipeline_survives_a_slow_exporter => "slow", "sleep_ms" => "1000";
    pipeline_survives_file_probes => "read-file";
    pipeline_survives_env_probes => "read-env";
    pipeline_survives_socket_probes => "socket";
    pipeline_survives_http_probes => "http";
    pipeline_survives_periodic_traps => "trap-every", "every" => "2";
}
