//! Wasm exporters for metrics and logs: one component serving all three signals from a config,
//! each signal with its own instance and accounting; what the guest receives equals what the
//! SDK produced; a component without the signal's interface is refused with the reason.

use std::collections::HashMap;

use lens::config::{ExporterSpec, SetupFailurePolicy, SignalConfig};
use lens::opentelemetry::trace::Tracer;
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::logs::{LogBatch, LogExporter};
use lens::opentelemetry_sdk::metrics::Temporality;
use lens::opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use lens::testing::{every_log_body, every_metric_kind};
use lens::wasm::{WasmLogExporter, WasmMetricExporter};
use lens::{LensConfig, LensError, Telemetry, TelemetryHandle};
use lens_test_support::pipeline::{T, exporting};
use lens_test_support::wasm::{HOSTILE, lines, recorder_at, spec};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use prost::Message;
use serde_json::Value as Json;

/// Rank 0 of 1 with `traces`, `metrics` and `logs` as the three signals' exporters.
fn install(
    traces: Vec<ExporterSpec>,
    metrics: Vec<ExporterSpec>,
    logs: Vec<ExporterSpec>,
) -> Result<TelemetryHandle, LensError> {
    let config = LensConfig {
        run_id: "signals".into(),
        // A signal without entries gets no exporter (the shorthand would be OTLP).
        exporter: "none".into(),
        logs_enabled: true,
        traces: SignalConfig {
            exporters: traces,
            ..Default::default()
        },
        metrics: SignalConfig {
            exporters: metrics,
            ..Default::default()
        },
        logs: SignalConfig {
            exporters: logs,
            ..Default::default()
        },
        ..exporting()
    };
    Telemetry::builder(config)
        .env(HashMap::<String, String>::new())
        .install_global(false)
        .install()
}

/// Sends `text` at `level` with `target` through a log bridge.
fn say(bridge: &impl log::Log, target: &str, level: log::Level, text: &str) {
    bridge.log(
        &log::Record::builder()
            .level(level)
            .target(target)
            .args(format_args!("{text}"))
            .build(),
    );
}

/// The batches of a recorder file, without its `init` line.
fn batches(path: &std::path::Path) -> Vec<Json> {
    lines(path)
        .into_iter()
        .filter(|l| l.get("init").is_none())
        .collect()
}

#[test]
fn one_component_serves_three_signals_each_with_its_own_instance_and_counts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let handle = install(
        vec![ExporterSpec::Wasm(recorder_at(
            d,
            "spans",
            "spans.jsonl",
            "typed",
            &[],
        ))],
        vec![ExporterSpec::Wasm(recorder_at(
            d,
            "metrics",
            "metrics.jsonl",
            "typed",
            &[],
        ))],
        vec![ExporterSpec::Wasm(recorder_at(
            d,
            "logs",
            "logs.jsonl",
            "typed",
            &[],
        ))],
    )
    .unwrap();
    let tracer = handle.tracer("train");
    for _ in 0..4 {
        tracer.in_span("step", |_| {});
    }
    let tokens = handle.meter("train").u64_counter("tokens").build();
    for _ in 0..5 {
        tokens.add(10, &[]);
    }
    let bridge = handle.log_bridge(log::LevelFilter::Info, "train");
    for i in 0..3 {
        say(
            &bridge,
            "train",
            log::Level::Warn,
            &format!("checkpoint {i}"),
        );
    }
    handle.shutdown(T).unwrap();
    let stats = handle.stats();
    let (spans, metrics, logs) = (
        stats.exporter("spans").unwrap(),
        stats.metric_exporter("metrics").unwrap(),
        stats.log_exporter("logs").unwrap(),
    );
    assert_eq!((spans.exported, spans.dropped()), (4, 0));
    assert_eq!((logs.exported, logs.dropped()), (3, 0));
    assert_eq!(metrics.dropped(), 0);
    assert_eq!(metrics.received, metrics.exported);

    let span_names: Vec<Json> = batches(&d.join("spans.jsonl"))
        .iter()
        .flat_map(|b| b["typed"].as_array().unwrap().clone())
        .map(|s| s["name"].clone())
        .collect();
    assert_eq!(span_names, ["step"; 4]);
    let records: Vec<Json> = batches(&d.join("logs.jsonl"))
        .iter()
        .flat_map(|b| b["logs"].as_array().unwrap().clone())
        .collect();
    let bodies: Vec<&Json> = records.iter().map(|r| &r["body"]["string"]).collect();
    assert_eq!(bodies, ["checkpoint 0", "checkpoint 1", "checkpoint 2"]);
    assert!(records.iter().all(|r| r["severity_text"] == "WARN"));
    // Every data point the reader collected reached the guest; the counter's last value is 50.
    let collections = batches(&d.join("metrics.jsonl"));
    let points: u64 = collections
        .iter()
        .flat_map(|b| b["metrics"].as_array().unwrap().clone())
        .map(|m| m["points"].as_array().unwrap().len() as u64)
        .sum();
    assert_eq!(points, metrics.exported);
    let last_tokens = collections
        .iter()
        .flat_map(|b| b["metrics"].as_array().unwrap().clone())
        .rfind(|m| m["name"] == "tokens")
        .unwrap();
    assert_eq!(last_tokens["kind"], "sum");
    assert_eq!(
        last_tokens["points"][0]["value"],
        serde_json::json!({"u64": 50})
    );
    assert_eq!(
        last_tokens["points"][0]["temporality"],
        "Temporality::Cumulative"
    );
    // Lens's own health metrics name each signal's exporter.
    let health: Vec<&Json> = collections.last().unwrap()["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"] == "lens.exporter.log_records")
        .collect();
    assert_eq!(health.len(), 1, "{collections:?}");
}

#[test]
fn a_metric_guest_gets_the_collection_in_every_encoding_as_the_sdk_made_it() {
    let dir = tempfile::tempdir().unwrap();
    let rm = every_metric_kind(Temporality::Cumulative);
    let expected = ExportMetricsServiceRequest::from(&rm);
    for encoding in ["otlp", "otlp-json", "typed"] {
        let file = format!("{encoding}.jsonl");
        let s = recorder_at(dir.path(), "m", &file, encoding, &[]);
        let resource = Resource::builder_empty().build();
        let (exporter, stats) = WasmMetricExporter::from_config("m", &s, &resource).unwrap();
        futures_executor::block_on(exporter.export(&rm)).unwrap();
        exporter.shutdown().unwrap();
        let got = batches(&dir.path().join(&file)).remove(0);
        match encoding {
            "otlp" => {
                let bytes: Vec<u8> = serde_json::from_value(got["otlp"].clone()).unwrap();
                let decoded = ExportMetricsServiceRequest::decode(bytes.as_slice()).unwrap();
                assert_eq!(decoded, expected);
            }
            "otlp-json" => {
                let decoded: ExportMetricsServiceRequest =
                    serde_json::from_str(got["otlp_json"].as_str().unwrap()).unwrap();
                assert_eq!(decoded, expected);
            }
            _ => {
                let kinds: Vec<(String, String, usize)> = got["metrics"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| {
                        let points = m["points"].as_array().unwrap().len();
                        (m["name"].to_string(), m["kind"].to_string(), points)
                    })
                    .collect();
                assert_eq!(kinds.len(), 5, "{kinds:?}");
                assert!(kinds.iter().all(|(_, _, n)| *n == 2), "{kinds:?}");
            }
        }
        let snap = stats.snapshot();
        assert_eq!((snap.received, snap.exported), (10, 10), "{encoding}");
    }
}

#[test]
fn a_log_guest_gets_every_body_type_in_every_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let records = every_log_body();
    let refs: Vec<_> = records.iter().map(|(r, s)| (r, s)).collect();
    let resource = Resource::builder_empty().build();
    for encoding in ["otlp", "otlp-json", "typed"] {
        let file = format!("{encoding}.jsonl");
        let s = recorder_at(dir.path(), "l", &file, encoding, &[]);
        let (exporter, _) = WasmLogExporter::from_config("l", &s, &resource).unwrap();
        futures_executor::block_on(exporter.export(LogBatch::new(&refs))).unwrap();
        exporter.shutdown().unwrap();
        let got = batches(&dir.path().join(&file)).remove(0);
        let count = match encoding {
            "otlp" => {
                let bytes: Vec<u8> = serde_json::from_value(got["otlp"].clone()).unwrap();
                let decoded = ExportLogsServiceRequest::decode(bytes.as_slice()).unwrap();
                decoded.resource_logs[0].scope_logs[0].log_records.len()
            }
            "otlp-json" => {
                let decoded: ExportLogsServiceRequest =
                    serde_json::from_str(got["otlp_json"].as_str().unwrap()).unwrap();
                decoded.resource_logs[0].scope_logs[0].log_records.len()
            }
            _ => {
                let bodies: Vec<Json> = got["logs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["body"].clone())
                    .collect();
                assert_eq!(bodies[0], "empty");
                assert_eq!(bodies[1], serde_json::json!({"string": "checkpoint saved"}));
                assert_eq!(bodies[3], serde_json::json!({"s64": -42}));
                assert_eq!(bodies[5], serde_json::json!({"bytes": [0, 1, 254, 255]}));
                assert!(bodies[7]["kvlist"].as_str().unwrap().contains("\"step\""));
                let last = &got["logs"][7];
                let cx = records[7].0.trace_context().unwrap();
                assert_eq!(last["trace_id"], cx.trace_id.to_string());
                assert_eq!(last["span_id"], cx.span_id.to_string());
                bodies.len()
            }
        };
        assert_eq!(count, 8, "{encoding}");
    }
}

#[test]
fn a_guest_asking_for_delta_gets_delta_sums() {
    let dir = tempfile::tempdir().unwrap();
    let s = recorder_at(
        dir.path(),
        "m",
        "m.jsonl",
        "typed",
        &[("temporality", "delta")],
    );
    let (exporter, _) =
        WasmMetricExporter::from_config("m", &s, &Resource::builder_empty().build()).unwrap();
    assert_eq!(exporter.temporality(), Temporality::Delta);
    let handle = install(Vec::new(), vec![ExporterSpec::Wasm(s.clone())], Vec::new()).unwrap();
    handle.meter("m").u64_counter("c").build().add(3, &[]);
    handle.shutdown(T).unwrap();
    let sums: Vec<Json> = batches(&dir.path().join("m.jsonl"))
        .iter()
        .flat_map(|b| b["metrics"].as_array().unwrap().clone())
        .filter(|m| m["name"] == "c")
        .collect();
    assert_eq!(sums[0]["points"][0]["temporality"], "Temporality::Delta");
}

#[test]
fn a_span_only_component_under_metrics_or_logs_is_refused_naming_what_it_lacks() {
    for (metrics, logs, section, interface, world) in [
        (true, false, "metrics", "metric-exporter", "metrics"),
        (false, true, "logs", "log-exporter", "logs"),
    ] {
        let mut s = spec(HOSTILE, &[("mode", "noop")]);
        s.name = Some("vendor".into());
        // A problem with the file, not the guest: setup fails whatever the policy.
        s.on_setup_failure = Some(SetupFailurePolicy::Disable);
        let entry = || vec![ExporterSpec::Wasm(s.clone())];
        let pick = |on| if on { entry() } else { Vec::new() };
        let err = install(Vec::new(), pick(metrics), pick(logs)).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "wasm exporter `vendor` ({HOSTILE}): is configured under [{section}] but does not export `lens:exporter/{interface}@0.4.0` (it exports `lens:exporter/span-exporter@0.4.0`); build it for the `{world}` or `all-signals` world"
            )
        );
    }
}

#[test]
fn a_metric_or_log_guest_refusing_init_is_disabled_and_the_rank_trains() {
    let dir = tempfile::tempdir().unwrap();
    let bad = || {
        ExporterSpec::Wasm(recorder_at(
            dir.path(),
            "picky",
            "x.jsonl",
            "no-such-encoding",
            &[],
        ))
    };
    let handle = install(Vec::new(), vec![bad()], vec![bad()]).unwrap();
    handle.meter("m").u64_counter("c").build().add(1, &[]);
    let bridge = handle.log_bridge(log::LevelFilter::Info, "t");
    say(&bridge, "t", log::Level::Info, "hello");
    handle.tracer("t").in_span("s", |_| {});
    handle.shutdown(T).unwrap();
    let stats = handle.stats();
    let logs = stats.log_exporter("picky").unwrap();
    assert_eq!((logs.received, logs.dropped_disabled), (1, 1));
    // The reader still collects for a disabled metric exporter: its points count as dropped.
    let metrics = stats.metric_exporter("picky").unwrap();
    assert!(metrics.received >= 1, "{metrics:?}");
    assert_eq!(metrics.dropped_disabled, metrics.received, "{metrics:?}");
    assert_eq!(metrics.exported, 0);
    for e in [logs, stats.metric_exporter("picky").unwrap()] {
        assert!(
            e.disabled
                .as_deref()
                .unwrap()
                .contains("init failed: init: unknown encoding `no-such-encoding`"),
            "{e:?}"
        );
    }
}

#[test]
fn a_metric_or_log_guest_that_traps_is_rebuilt_and_its_items_counted() {
    let dir = tempfile::tempdir().unwrap();
    let trapping = |name: &str, file: &str| {
        ExporterSpec::Wasm(recorder_at(
            dir.path(),
            name,
            file,
            "typed",
            &[("panic_on", "boom")],
        ))
    };
    let resource = Resource::builder_empty().build();
    // Metrics: a collection holding the instrument `boom` traps; the next one goes through a
    // fresh instance.
    let ExporterSpec::Wasm(m) = trapping("m", "m.jsonl") else {
        unreachable!()
    };
    let (metrics, stats) = WasmMetricExporter::from_config("m", &m, &resource).unwrap();
    let reader = lens::InMemoryMetricReader::new();
    let provider = lens::opentelemetry_sdk::metrics::SdkMeterProvider::builder()
        .with_reader(reader.clone())
        .build();
    use lens::opentelemetry::metrics::MeterProvider as _;
    provider.meter("t").u64_counter("boom").build().add(1, &[]);
    let with_boom = reader.get_metrics_data().unwrap();
    let err = futures_executor::block_on(metrics.export(&with_boom)).unwrap_err();
    assert!(err.to_string().contains("unreachable"), "{err}");
    let fine = every_metric_kind(Temporality::Cumulative);
    futures_executor::block_on(metrics.export(&fine)).unwrap();
    let s = stats.snapshot();
    assert_eq!(s.traps.values().sum::<u64>(), 1, "{s:?}");
    assert_eq!(s.restarts, 1);
    assert_eq!(
        (s.received, s.exported, s.dropped_export_failed),
        (11, 10, 1)
    );

    // Logs, in a pipeline: the record `boom` takes its batch down with it; the rank goes on.
    let handle = install(Vec::new(), Vec::new(), vec![trapping("l", "l.jsonl")]).unwrap();
    let bridge = handle.log_bridge(log::LevelFilter::Info, "t");
    for text in ["boom", "fine"] {
        say(&bridge, "t", log::Level::Info, text);
        handle.force_flush(T).unwrap_or(());
    }
    handle.shutdown(T).unwrap();
    let stats = handle.stats();
    let l = stats.log_exporter("l").unwrap();
    assert_eq!(
        (l.received, l.exported, l.dropped_export_failed),
        (2, 1, 1),
        "{l:?}"
    );
    assert_eq!(l.restarts, 1, "{l:?}");
}

/// A metric guest hung in `export` (blocked in a host call, its deadline far away) when the
/// installation shuts down: the reader stops waiting at the shutdown's timeout, and the
/// collection in flight ends as dropped at shutdown, not in no counter at all.
#[test]
fn a_metric_collection_in_flight_at_shutdown_is_counted_as_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let mut hung = recorder_at(dir.path(), "m", "m.jsonl", "typed", &[("hang", "true")]);
    hung.call_timeout_ms = Some(60_000);
    let handle = install(Vec::new(), vec![ExporterSpec::Wasm(hung)], Vec::new()).unwrap();
    use lens::opentelemetry::metrics::MeterProvider as _;
    let counter = handle.meter_provider().meter("t").u64_counter("c").build();
    for split in ["a", "b", "c"] {
        counter.add(1, &[lens::opentelemetry::KeyValue::new("split", split)]);
    }
    let started = std::time::Instant::now();
    // The shutdown's own collection is the one that hangs; it does not wait past its timeout.
    let _ = handle.shutdown(std::time::Duration::from_secs(1));
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let stats = handle.stats();
    let m = stats.metric_exporter("m").unwrap();
    assert!(m.received >= 3, "{m:?}");
    assert_eq!(m.exported, 0, "{m:?}");
    assert_eq!(m.received, m.dropped(), "{m:?}");
    assert_eq!(m.dropped_shutdown, m.received, "{m:?}");
}

/// The same for a log guest hung in `export` at shutdown: its batch in flight and the records
/// still queued end as dropped at shutdown, each in one counter.
#[test]
fn log_records_in_flight_at_shutdown_are_counted_as_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let mut hung = recorder_at(dir.path(), "l", "l.jsonl", "typed", &[("hang", "true")]);
    hung.call_timeout_ms = Some(60_000);
    let handle = install(Vec::new(), Vec::new(), vec![ExporterSpec::Wasm(hung)]).unwrap();
    let bridge = handle.log_bridge(log::LevelFilter::Info, "t");
    for i in 0..5 {
        say(&bridge, "t", log::Level::Info, &format!("record {i}"));
    }
    // The first batch reaches the guest, which never answers.
    let _ = handle.force_flush(std::time::Duration::from_millis(300));
    let started = std::time::Instant::now();
    let _ = handle.shutdown(std::time::Duration::from_secs(1));
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let stats = handle.stats();
    let l = stats.log_exporter("l").unwrap();
    assert_eq!(l.received, 5, "{l:?}");
    assert_eq!(l.exported, 0, "{l:?}");
    assert_eq!(l.dropped(), 5, "{l:?}");
    assert_eq!(l.pending(), 0, "{l:?}");
}
