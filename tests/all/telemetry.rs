//! Setting up telemetry for a rank: the seed's examples in Rust (injected exporters and
//! readers), processors added after setup, open spans at shutdown, non-exporting and sampled-out
//! ranks, the one-setup rule, `tracing` spans, and Lens's own health metrics.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lens::opentelemetry::trace::{Span, Status, TraceContextExt, Tracer};
use lens::opentelemetry::{KeyValue, Value};
use lens::opentelemetry_sdk::error::OTelSdkResult;
use lens::opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData, SpanExporter};
use lens::testing::RecordingSpanExporter;
use lens::{InMemoryMetricReader, LensError, Telemetry};
use lens_test_support::pipeline::{LocalInstall, SlowExporter, T, config, no_env};

#[test]
fn seed_in_memory_span_exporter_and_metric_reader() {
    let spans = InMemorySpanExporter::default();
    let reader = InMemoryMetricReader::new();
    let handle = Telemetry::builder(config("none"))
        .rank(3)
        .world_size(8)
        .resource_attributes([KeyValue::new("team", "pretrain")])
        .span_exporter(spans.clone())
        .metric_reader(reader.clone())
        .local();
    assert!(handle.is_exporting());
    let tracer = handle.tracer("train");
    tracer.in_span("step", |_| {
        let mut inner = tracer.start("forward_backward");
        inner.set_attribute(KeyValue::new("loss", 1.25));
        inner.end();
    });
    let steps = handle.meter("train").u64_counter("steps").build();
    steps.add(7, &[KeyValue::new("phase", "train")]);
    handle.force_flush(T).unwrap();

    let finished = spans.get_finished_spans().unwrap();
    let names: Vec<_> = finished.iter().map(|s| s.name.to_string()).collect();
    assert_eq!(names, ["forward_backward", "step"]);
    assert_eq!(
        finished[0].parent_span_id,
        finished[1].span_context.span_id()
    );
    assert_eq!(finished[0].attributes, vec![KeyValue::new("loss", 1.25)]);

    let data = reader.get_metrics_data().unwrap();
    let res = data.resource();
    assert_eq!(res.get(&"dl.rank".into()), Some(Value::I64(3)));
    assert_eq!(res.get(&"dl.world_size".into()), Some(Value::I64(8)));
    assert_eq!(
        res.get(&"service.instance.id".into()),
        Some(Value::from("run42-rank3"))
    );
    assert_eq!(res.get(&"team".into()), Some(Value::from("pretrain")));
    assert_eq!(res.get(&"service.name".into()), Some(Value::from("nemo")));
    assert_eq!(res.get(&"nemo.run.id".into()), Some(Value::from("run42")));
    assert!(res.get(&"host.name".into()).is_some());
    assert_eq!(
        res.get(&"process.pid".into()),
        Some(Value::I64(i64::from(std::process::id())))
    );
    let metric_names: Vec<String> = data
        .scope_metrics()
        .filter(|s| s.scope().name() == "train")
        .flat_map(|s| s.metrics().map(|m| m.name().to_string()))
        .collect();
    assert_eq!(metric_names, ["steps"]);
    // Lens's own health metrics travel in their own scope.
    assert!(data.scope_metrics().any(|s| s.scope().name() == "lens"));
    // The span exporter saw the same resource.
    assert_eq!(
        handle.resource().get(&"dl.rank".into()),
        Some(Value::I64(3))
    );

    let stats = handle.stats();
    assert_eq!(stats.spans_produced, 2);
    assert_eq!(stats.exporters.len(), 1);
    assert_eq!(stats.exporters[0].name, "custom");
    assert_eq!(stats.exporters[0].exported, 2);
    handle.shutdown(T).unwrap();
    handle.shutdown(T).unwrap(); // idempotent
}

fn exporter_names(handle: &lens::TelemetryHandle) -> Vec<String> {
    handle
        .stats()
        .exporters
        .into_iter()
        .map(|e| e.name)
        .collect()
}

#[test]
fn injected_exporter_replaces_only_its_own_signal() {
    // Traces from the injected exporter, metrics from the config's console exporter.
    let spans = InMemorySpanExporter::default();
    let mut cfg = config("none");
    cfg.traces.exporters = vec![lens::config::ExporterSpec::from_shorthand("console").unwrap()];
    let handle = Telemetry::builder(cfg.clone())
        .span_exporter(spans.clone())
        .local();
    let names = exporter_names(&handle);
    assert_eq!(
        names,
        ["custom"],
        "the config's console span exporter must be replaced"
    );
    handle.shutdown(T).unwrap();

    // Metrics injected, traces from the config.
    let reader = InMemoryMetricReader::new();
    let handle = Telemetry::builder(cfg)
        .metric_reader(reader.clone())
        .local();
    let names = exporter_names(&handle);
    assert_eq!(names, ["console"]);
    handle.meter("m").u64_counter("c").build().add(1, &[]);
    let data = reader.get_metrics_data().unwrap();
    let user_scopes: Vec<&str> = data
        .scope_metrics()
        .map(|s| s.scope().name())
        .filter(|n| *n != "lens")
        .collect();
    assert_eq!(user_scopes, ["m"]);
    handle.shutdown(T).unwrap();
}

#[test]
fn add_span_processor_after_setup_sees_later_spans() {
    let first = InMemorySpanExporter::default();
    let later = InMemorySpanExporter::default();
    let handle = Telemetry::builder(config("none"))
        .span_exporter(first.clone())
        .local();
    let tracer = handle.tracer("t");
    tracer.start("before").end();
    handle.add_span_exporter("archive", later.clone());
    tracer.start("after").end();
    handle.force_flush(T).unwrap();
    let names = |e: &InMemorySpanExporter| {
        e.get_finished_spans()
            .unwrap()
            .iter()
            .map(|s| s.name.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&first), ["before", "after"]);
    assert_eq!(names(&later), ["after"]);
    let stats = handle.stats();
    assert_eq!(stats.exporter("archive").unwrap().exported, 1);
    handle.shutdown(T).unwrap();
}

#[test]
fn open_spans_are_closed_live_innermost_first_and_marked_truncated_at_shutdown() {
    let spans = InMemorySpanExporter::default();
    let handle = Telemetry::builder(config("none"))
        .span_exporter(spans.clone())
        .local();
    let tracer = handle.tracer("t");
    let mut run = tracer
        .span_builder("run")
        .with_attributes([KeyValue::new("step", 100)])
        .start(&tracer);
    let cx = lens::opentelemetry::Context::current_with_span(tracer.start("placeholder"));
    let mut epoch = tracer.start_with_context("epoch", &cx);
    tracer.start("done").end();
    // Recorded after start: everything until shutdown reaches the exporter.
    run.set_attribute(KeyValue::new("loss", 0.5));
    run.add_event("eval", vec![KeyValue::new("accuracy", 0.9)]);
    epoch.set_attribute(KeyValue::new("epoch", 3));
    // The oracle keeps what it gets across its shutdown.
    let seen = RecordingSpanExporter::default();
    handle.add_span_exporter("recorder", seen.clone());
    drop(cx); // ends `placeholder` (dropping a span ends it)
    handle.shutdown(T).unwrap();
    let recorded = seen.spans();
    let names: Vec<&str> = recorded.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(
        names,
        ["placeholder", "epoch", "run"],
        "the dropped span ends normally, then the open ones, latest started first"
    );
    for span in &recorded[1..] {
        assert!(
            span.attributes
                .contains(&KeyValue::new("nemo.span.truncated", true)),
            "{:?}",
            span.attributes
        );
        let marker = span.events.events.last().unwrap();
        assert_eq!(marker.name, "nemo.span.truncated");
        assert_eq!(
            marker.attributes,
            [KeyValue::new(
                "nemo.span.truncated.reason",
                "still open at telemetry shutdown"
            )]
        );
        assert_eq!(span.status, Status::Unset, "truncated is not an error");
        assert!(span.end_time >= span.start_time);
    }
    let run = &recorded[2];
    assert!(run.attributes.contains(&KeyValue::new("step", 100)));
    assert!(run.attributes.contains(&KeyValue::new("loss", 0.5)));
    assert_eq!(run.events.events[0].name, "eval");
    assert!(recorded[1].attributes.contains(&KeyValue::new("epoch", 3)));
    assert!(
        !recorded[0]
            .attributes
            .iter()
            .any(|kv| kv.key.as_str() == "nemo.span.truncated")
    );
    let stats = handle.stats();
    assert_eq!(stats.spans_truncated, 2);
    assert_eq!(stats.spans_produced, 4);
    // Ending a closed span later exports nothing more.
    epoch.end();
    assert_eq!(seen.spans().len(), 3);
}

#[test]
fn non_exporting_rank_gets_no_op_providers() {
    let spans = InMemorySpanExporter::default();
    let mut cfg = config("none");
    cfg.export_strategy = "single_rank".into();
    cfg.export_rank = -1;
    let handle = Telemetry::builder(cfg)
        .rank(2)
        .world_size(8)
        .span_exporter(spans.clone())
        .local();
    assert!(!handle.is_exporting());
    let tracer = handle.tracer("t");
    let span = tracer.start("ignored");
    assert!(!lens::opentelemetry::trace::Span::is_recording(&span));
    drop(span);
    handle.force_flush(T).unwrap();
    assert!(spans.get_finished_spans().unwrap().is_empty());
    assert_eq!(handle.stats(), lens::DeliveryStats::default());
}

#[test]
fn sampler_drops_every_span_of_an_unsampled_rank() {
    // Rank 3 hashes to 0.0883 (kept at 0.1), rank 0 to 0.785 (dropped at 0.1).
    for (rank, kept) in [(3, true), (0, false)] {
        let spans = InMemorySpanExporter::default();
        let mut cfg = config("none");
        cfg.sampler_enabled = true;
        cfg.export_sample_rate = 0.1;
        let handle = Telemetry::builder(cfg)
            .rank(rank)
            .world_size(4)
            .span_exporter(spans.clone())
            .local();
        assert!(handle.is_exporting());
        assert_eq!(handle.sampler_keeps(), kept);
        let tracer = handle.tracer("t");
        for _ in 0..10 {
            let mut s = tracer.start("s");
            assert_eq!(s.is_recording(), kept);
            s.set_status(Status::Ok);
            s.end();
        }
        handle.force_flush(T).unwrap();
        assert_eq!(
            spans.get_finished_spans().unwrap().len(),
            if kept { 10 } else { 0 }
        );
        handle.shutdown(T).unwrap();
    }
}

#[test]
fn second_global_setup_is_refused_unless_allowed_or_disabled() {
    // Process-wide state: its own process.
    lens_test_support::isolated(|| {
        let first = Telemetry::builder(config("none"))
            .env(no_env())
            .install()
            .unwrap();
        let err = Telemetry::builder(config("none"))
            .env(no_env())
            .install()
            .unwrap_err();
        assert!(matches!(err, LensError::AlreadyInitialized), "{err}");
        // A disabled setup is always allowed (NeMo Lens checks the rule for enabled ones only).
        let mut off = config("none");
        off.enabled = false;
        let quiet = Telemetry::builder(off).env(no_env()).install().unwrap();
        assert!(!quiet.is_exporting());
        let mut again = config("none");
        again.allow_reinit = true;
        // A failed re-init leaves the first installation's claim in place.
        let mut broken = again.clone();
        broken.exporter = "missing.wasm".into();
        assert!(Telemetry::builder(broken).env(no_env()).install().is_err());
        let err = Telemetry::builder(config("none"))
            .env(no_env())
            .install()
            .unwrap_err();
        assert!(matches!(err, LensError::AlreadyInitialized), "{err}");
        let second = Telemetry::builder(again).env(no_env()).install().unwrap();
        second.shutdown(T).unwrap();
        first.shutdown(T).unwrap();
        // As in NeMo Lens, the process stays initialised after shutdown.
        let err = Telemetry::builder(config("none"))
            .env(no_env())
            .install()
            .unwrap_err();
        assert!(matches!(err, LensError::AlreadyInitialized), "{err}");
    });
}

#[test]
fn tracing_instrument_spans_reach_the_exporter() {
    use tracing_subscriber::layer::SubscriberExt;
    let spans = InMemorySpanExporter::default();
    let handle = Telemetry::builder(config("none"))
        .span_exporter(spans.clone())
        .local();
    let subscriber = tracing_subscriber::registry().with(handle.tracing_layer());
    // `#[instrument]` records arguments with their `Debug` form.
    #[tracing::instrument]
    fn optimizer_step(step: u64) -> u64 {
        step + 1
    }
    tracing::subscriber::with_default(subscriber, || {
        assert_eq!(optimizer_step(41), 42);
    });
    handle.force_flush(T).unwrap();
    let finished = spans.get_finished_spans().unwrap();
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0].name, "optimizer_step");
    assert!(
        finished[0]
            .attributes
            .iter()
            .any(|kv| kv.key.as_str() == "step" && kv.value == Value::from("41")),
        "{:?}",
        finished[0].attributes
    );
    handle.shutdown(T).unwrap();
}

/// Sum data points of metric `name` as (sorted attributes, value).
fn sum_points(
    data: &lens::opentelemetry_sdk::metrics::data::ResourceMetrics,
    name: &str,
) -> Vec<(Vec<String>, u64)> {
    use lens::opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
    let mut out = Vec::new();
    for scope in data.scope_metrics() {
        for m in scope.metrics().filter(|m| m.name() == name) {
            if let AggregatedMetrics::U64(MetricData::Sum(sum)) = m.data() {
                for p in sum.data_points() {
                    let mut attrs: Vec<String> = p
                        .attributes()
                        .map(|kv| format!("{}={}", kv.key, kv.value))
                        .collect();
                    attrs.sort();
                    out.push((attrs, p.value()));
                }
            }
        }
    }
    out.sort();
    out
}

#[test]
fn lens_reports_its_own_health_as_metrics() {
    let reader = InMemoryMetricReader::new();
    let mut cfg = config("none");
    cfg.batch.max_export_batch_size = 10;
    let handle = Telemetry::builder(cfg)
        .span_exporter(SlowExporter::new(std::time::Duration::ZERO, 2).0)
        .metric_reader(reader.clone())
        .local();
    let tracer = handle.tracer("t");
    for _ in 0..40 {
        tracer.start("s").end();
    }
    handle.force_flush(T).unwrap_or(());
    let stats = handle.stats();
    let e = &stats.exporters[0];
    assert_eq!(e.exported + e.dropped_export_failed, 40);
    let data = reader.get_metrics_data().unwrap();
    assert_eq!(sum_points(&data, "lens.spans.produced"), [(vec![], 40)]);
    let outcomes = |pairs: &[(&str, u64)]| -> Vec<(Vec<String>, u64)> {
        pairs
            .iter()
            .map(|(outcome, n)| {
                let attrs = [
                    "exporter=custom",
                    &format!("outcome={outcome}"),
                    "signal=traces",
                ];
                (attrs.iter().map(|a| a.to_string()).collect(), *n)
            })
            .collect()
    };
    assert_eq!(
        sum_points(&data, "lens.exporter.spans"),
        outcomes(&[
            ("dropped_disabled", 0),
            ("dropped_export_failed", e.dropped_export_failed),
            ("dropped_processor", 0),
            ("dropped_queue_full", 0),
            ("dropped_rejected", 0),
            ("dropped_shutdown", 0),
            ("exported", e.exported),
        ])
    );
    assert_eq!(
        sum_points(&data, "lens.exporter.batches"),
        outcomes(&[("failed", e.batches_failed), ("ok", e.batches_exported)])
    );
    assert!(e.batches_failed > 0 && e.batches_exported > 0);
    handle.shutdown(T).unwrap();
}

/// Counts how often its `force_flush` is called.
#[derive(Debug, Clone, Default)]
struct FlushCounter(Arc<AtomicU64>);

impl SpanExporter for FlushCounter {
    async fn export(&self, _batch: Vec<SpanData>) -> OTelSdkResult {
        Ok(())
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[test]
fn force_flush_reaches_the_exporter_after_the_queue() {
    let flushes = FlushCounter::default();
    let handle = Telemetry::builder(config("none"))
        .span_exporter(flushes.clone())
        .local();
    handle.tracer("t").start("s").end();
    handle.force_flush(T).unwrap();
    handle.force_flush(T).unwrap();
    assert_eq!(flushes.0.load(Ordering::SeqCst), 2);
    assert_eq!(handle.stats().exporters[0].exported, 1);
    handle.shutdown(T).unwrap();
}
