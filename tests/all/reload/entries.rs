//! What a reload does entry by entry: kept, swapped, rebuilt, added, removed; what it refuses
//! (nothing changes then); metric and log entries.

use lens::config::{ExporterSpec, SignalConfig, WasmExporterSpec};
use lens::opentelemetry::trace::{Span as _, Tracer as _};
use lens::{LensConfig, Signal};
use lens_test_support::pipeline::T;
use lens_test_support::wasm::{RECORDER, recorder_at};

use super::{install, recorded, recorder_variant, sha256, span_stats, traces_config, vendor};

fn named(dir: &std::path::Path, name: &str) -> ExporterSpec {
    ExporterSpec::Wasm(recorder_at(
        dir,
        name,
        &format!("{name}.jsonl"),
        "typed",
        &[],
    ))
}

fn end_spans(handle: &lens::TelemetryHandle, from: u64, to: u64) {
    let tracer = handle.tracer("t");
    for n in from..to {
        tracer.start(format!("s{n}")).end();
    }
    handle.force_flush(T).unwrap();
}

fn pairs(names: &[&str]) -> Vec<(Signal, String)> {
    names
        .iter()
        .map(|n| (Signal::Traces, n.to_string()))
        .collect()
}

#[test]
fn entries_are_kept_rebuilt_added_and_removed_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let first = traces_config(vec![
        named(out, "keep"),
        named(out, "gone"),
        named(out, "resized"),
    ]);
    let handle = install(first.clone());
    end_spans(&handle, 0, 10);

    let mut resized = recorder_at(out, "resized", "resized-2.jsonl", "typed", &[]);
    resized.batch.max_export_batch_size = Some(3);
    let mut second = traces_config(vec![
        named(out, "keep"),
        ExporterSpec::Wasm(resized),
        named(out, "new"),
    ]);
    second.service_name = "renamed".into();
    second.metric_export_interval_ms = 500;
    let report = handle.reload_exporters(&second).unwrap();
    assert_eq!(report.kept, pairs(&["keep"]));
    assert_eq!(report.replaced, pairs(&["resized"]));
    assert_eq!(report.added, pairs(&["new"]));
    assert_eq!(report.removed, pairs(&["gone"]));
    assert!(report.reloaded.is_empty());
    assert_eq!(
        report.not_applied,
        vec!["metric_export_interval_ms", "service_name"]
    );
    end_spans(&handle, 10, 20);
    // The same config again changes nothing (no instance restarted).
    let again = handle.reload_exporters(&second).unwrap();
    assert!(!again.changed_anything(), "{again:?}");
    assert_eq!(again.kept.len(), 3);
    handle.shutdown(T).unwrap();

    let spans = |file: &str| recorded(&out.join(file)).spans;
    assert_eq!(spans("keep.jsonl"), (0..20).collect::<Vec<_>>());
    assert_eq!(spans("gone.jsonl"), (0..10).collect::<Vec<_>>());
    assert_eq!(spans("resized.jsonl"), (0..10).collect::<Vec<_>>());
    assert_eq!(spans("resized-2.jsonl"), (10..20).collect::<Vec<_>>());
    assert_eq!(spans("new.jsonl"), (10..20).collect::<Vec<_>>());
    // Counters carry across the rebuild; the removed entry's stay listed.
    let stats = |n| span_stats(&handle, n);
    assert_eq!((stats("keep").received, stats("keep").exported), (20, 20));
    assert_eq!(
        (stats("resized").received, stats("resized").exported),
        (20, 20)
    );
    assert_eq!((stats("gone").received, stats("gone").exported), (10, 10));
    assert_eq!((stats("new").received, stats("new").exported), (10, 10));
    assert_eq!(handle.stats().exporters.len(), 4);
}

#[test]
fn a_refused_reload_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let handle = install(traces_config(vec![named(out, "keep")]));
    // An added span entry that builds, and a metric entry a running installation cannot add.
    let mut config = traces_config(vec![named(out, "keep"), named(out, "extra")]);
    config.metrics_enabled = true;
    config.metrics = SignalConfig {
        exporters: vec![named(out, "meter")],
        processors: Vec::new(),
    };
    // Metrics were off at setup: the new metric entry is a key applied at the next start.
    let report = handle.reload_exporters(&config).unwrap();
    assert_eq!(report.added, pairs(&["extra"]));
    assert_eq!(report.not_applied, vec!["metrics_enabled"]);

    // With metrics built from the config, adding one is refused, and the span entry with it.
    let mut with_metrics = traces_config(vec![named(out, "keep")]);
    with_metrics.metrics_enabled = true;
    with_metrics.metrics.exporters = vec![ExporterSpec::from_shorthand("none").unwrap()];
    let handle = install(with_metrics.clone());
    let mut more = with_metrics.clone();
    more.traces.exporters.push(named(out, "extra2"));
    more.metrics.exporters = vec![named(out, "meter")];
    let error = handle.reload_exporters(&more).unwrap_err().to_string();
    assert_eq!(
        error,
        "reload refused for exporter `meter`: a metric entry cannot be added in a running \
         installation: the SDK fixes a meter provider's readers when it is built; restart the \
         rank to apply it (a wasm metric entry can change its file and settings in place); \
         nothing was changed"
    );
    assert!(handle.stats().exporters.iter().all(|e| e.name != "extra2"));
    assert!(!out.join("extra2.jsonl").exists());
    // Two entries by one name cannot be told apart.
    let twice = traces_config(vec![named(out, "keep"), named(out, "keep")]);
    let error = handle.reload_exporters(&twice).unwrap_err().to_string();
    assert!(
        error.contains("two [[traces.exporters]] entries are named `keep`"),
        "{error}"
    );
    handle.shutdown(T).unwrap();
    // After the shutdown, nothing reloads.
    let error = handle
        .reload_exporters(&with_metrics)
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "invalid config reload: the installation is shut down"
    );
}

#[test]
fn a_file_rebuilt_in_place_is_reloaded_and_an_unchanged_one_kept() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let path = out.join("vendor.wasm");
    std::fs::copy(RECORDER, &path).unwrap();
    let config = traces_config(vec![ExporterSpec::Wasm(vendor(out, &path, "a.jsonl"))]);
    let handle = install(config.clone());
    let report = handle.reload_exporters(&config).unwrap();
    assert_eq!(report.kept, pairs(&["vendor"]));
    let variant = recorder_variant(out, "rebuilt");
    std::fs::copy(&variant, &path).unwrap();
    let report = handle.reload_exporters(&config).unwrap();
    assert_eq!(report.reloaded.len(), 1);
    assert_eq!(report.reloaded[0].sha256, sha256(&variant));
    let stats = span_stats(&handle, "vendor");
    assert_eq!(
        (stats.reloads, stats.component_sha256),
        (1, Some(sha256(&variant)))
    );
    handle.shutdown(T).unwrap();
}

/// A metric entry of the recorder named `meter` writing `file`, with `extra` settings.
fn meter(out: &std::path::Path, file: &str, extra: &[(&str, &str)]) -> WasmExporterSpec {
    recorder_at(out, "meter", file, "typed", extra)
}

#[test]
fn a_metric_exporter_reloads_in_place_keeping_its_temporality() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let config = |spec: WasmExporterSpec| LensConfig {
        traces_enabled: false,
        metrics: SignalConfig {
            exporters: vec![ExporterSpec::Wasm(spec)],
            processors: Vec::new(),
        },
        metrics_enabled: true,
        metric_export_interval_ms: 3_600_000,
        ..traces_config(Vec::new())
    };
    let handle = install(config(meter(out, "m1.jsonl", &[])));
    let counter = handle.meter("app").u64_counter("steps").build();
    counter.add(1, &[]);
    handle.force_flush(T).unwrap();
    let delta = meter(out, "m2.jsonl", &[("temporality", "delta")]);
    let error = handle
        .reload_exporters(&config(delta))
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        format!(
            "reload of wasm exporter `meter` refused at preferences ({RECORDER}): its init asks \
             for Delta temporality; the reader aggregates Cumulative since setup; the running \
             component stays"
        )
    );
    let report = handle
        .reload_exporters(&config(meter(out, "m3.jsonl", &[])))
        .unwrap();
    assert_eq!(report.reloaded.len(), 1);
    counter.add(1, &[]);
    handle.force_flush(T).unwrap();
    handle.shutdown(T).unwrap();
    let metrics = |file: &str| {
        lens_test_support::wasm::lines(&out.join(file))
            .iter()
            .filter(|l| l.get("init").is_none())
            .count()
    };
    assert!(metrics("m1.jsonl") >= 1);
    assert!(metrics("m3.jsonl") >= 1);
    // The refused component was started (its init decides the temporality), never fed.
    assert_eq!(metrics("m2.jsonl"), 0);
    let stats = &handle.stats().metric_exporters[0];
    assert_eq!(stats.reloads, 1);
    assert_eq!(stats.received, stats.exported + stats.dropped());
}

#[test]
fn log_entries_are_added_swapped_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let config = |specs: Vec<ExporterSpec>| LensConfig {
        logs_enabled: true,
        logs: SignalConfig {
            exporters: specs,
            ..Default::default()
        },
        ..traces_config(Vec::new())
    };
    let logs =
        |name: &str, file: &str| ExporterSpec::Wasm(recorder_at(out, name, file, "typed", &[]));
    let handle = install(config(vec![logs("first", "l1.jsonl")]));
    let emit = |n: usize| {
        use lens::opentelemetry::logs::{LogRecord as _, Logger as _, LoggerProvider as _};
        let logger = handle.logger_provider().logger("app");
        for i in 0..n {
            let mut record = logger.create_log_record();
            record.set_body(format!("r{i}").into());
            logger.emit(record);
        }
        handle.force_flush(T).unwrap();
    };
    emit(3);
    let report = handle
        .reload_exporters(&config(vec![
            logs("first", "l2.jsonl"),
            logs("second", "l3.jsonl"),
        ]))
        .unwrap();
    assert_eq!(report.reloaded.len(), 1);
    assert_eq!(report.added, vec![(Signal::Logs, "second".to_string())]);
    emit(2);
    let report = handle
        .reload_exporters(&config(vec![logs("second", "l3.jsonl")]))
        .unwrap();
    assert_eq!(report.removed, vec![(Signal::Logs, "first".to_string())]);
    emit(1);
    handle.shutdown(T).unwrap();
    let stats = handle.stats().log_exporters;
    let by = |n: &str| stats.iter().find(|s| s.name == n).unwrap().clone();
    assert_eq!((by("first").received, by("first").exported), (5, 5));
    assert_eq!((by("second").received, by("second").exported), (3, 3));
    assert_eq!(by("first").reloads, 1);
}

#[test]
fn the_health_metrics_show_reloads_and_the_running_component() {
    use lens::opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let reader = lens::InMemoryMetricReader::new();
    let config = |path: &std::path::Path, file| {
        let mut c = traces_config(vec![ExporterSpec::Wasm(vendor(out, path, file))]);
        c.metrics_enabled = true;
        c
    };
    let handle = lens::Telemetry::builder(config(RECORDER.as_ref(), "a.jsonl"))
        .env(lens_test_support::pipeline::no_env())
        .install_global(false)
        .metric_reader(reader.clone())
        .install()
        .unwrap();
    let variant = recorder_variant(out, "metrics");
    handle
        .reload_exporters(&config(&variant, "b.jsonl"))
        .unwrap();
    let data = reader.get_metrics_data().unwrap();
    let metric = |name: &str| lens_test_support::pipeline::metric(&data, name);
    let AggregatedMetrics::U64(MetricData::Sum(reloads)) = metric("lens.exporter.reloads") else {
        panic!("lens.exporter.reloads is a u64 sum")
    };
    assert_eq!(reloads.data_points().next().unwrap().value(), 1);
    let AggregatedMetrics::U64(MetricData::Gauge(component)) = metric("lens.exporter.component")
    else {
        panic!("lens.exporter.component is a u64 gauge")
    };
    let points: Vec<_> = component.data_points().collect();
    assert_eq!(points.len(), 1);
    let sha = points[0]
        .attributes()
        .find(|kv| kv.key.as_str() == "sha256")
        .map(|kv| kv.value.to_string());
    assert_eq!(sha, Some(sha256(&variant)));
    handle.shutdown(T).unwrap();
}
