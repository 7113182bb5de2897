//! The log signal: the logger provider, Lens's batch log processor and its accounting, the
//! `log` and `tracing` bridges (level, target, the active span's ids), and the config.

use std::time::Duration;

use lens::opentelemetry::logs::{AnyValue, Severity};
use lens::opentelemetry::trace::{TraceContextExt, Tracer};
use lens::opentelemetry_sdk::logs::InMemoryLogExporter;
use lens::{LensConfig, Telemetry, TelemetryHandle};
use lens_test_support::pipeline::{LocalInstall, SlowExporter, T, exporting};

fn logs_config() -> LensConfig {
    LensConfig {
        logs_enabled: true,
        exporter: "none".into(),
        ..exporting()
    }
}

/// A rank with logs on and an in-memory log exporter.
fn with_memory(config: LensConfig) -> (TelemetryHandle, InMemoryLogExporter) {
    let memory = InMemoryLogExporter::default();
    let handle = Telemetry::builder(config)
        .rank(0)
        .world_size(1)
        .named_log_exporter("memory", memory.clone())
        .local();
    (handle, memory)
}

/// Sends one record through `bridge`, as `log::log!` would.
fn emit(bridge: &dyn log::Log, level: log::Level, target: &str, message: &str) {
    bridge.log(
        &log::Record::builder()
            .level(level)
            .target(target)
            .args(format_args!("{message}"))
            .file(Some("train.rs"))
            .line(Some(42))
            .build(),
    );
}

fn bodies(memory: &InMemoryLogExporter) -> Vec<String> {
    memory
        .get_emitted_logs()
        .unwrap()
        .iter()
        .map(|l| match l.record.body() {
            Some(AnyValue::String(s)) => s.to_string(),
            other => panic!("body {other:?}"),
        })
        .collect()
}

#[test]
fn a_record_logged_inside_a_span_carries_its_ids() {
    let (handle, memory) = with_memory(logs_config());
    let bridge = handle.log_bridge(log::LevelFilter::Info, "");
    let tracer = handle.tracer("trainer");
    let (trace_id, span_id) = tracer.in_span("checkpoint", |cx| {
        emit(&bridge, log::Level::Info, "train::ckpt", "saved step 100");
        let sc = cx.span().span_context().clone();
        (sc.trace_id(), sc.span_id())
    });
    emit(&bridge, log::Level::Warn, "train", "outside any span");
    handle.force_flush(T).unwrap();
    let logs = memory.get_emitted_logs().unwrap();
    assert_eq!(logs.len(), 2);
    let inside = &logs[0].record;
    let cx = inside.trace_context().expect("the span's context");
    assert_eq!((cx.trace_id, cx.span_id), (trace_id, span_id));
    assert_eq!(inside.severity_number(), Some(Severity::Info));
    assert_eq!(inside.severity_text(), Some("INFO"));
    assert_eq!(
        inside.target().map(|t| t.to_string()),
        Some("train::ckpt".into())
    );
    // The code location, under the attribute names OpenTelemetry-Python's handler uses.
    let attr = |key: &str| {
        inside
            .attributes_iter()
            .find(|(k, _)| k.as_str() == key)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(attr("code.file.path"), Some(AnyValue::from("train.rs")));
    assert_eq!(attr("code.line.number"), Some(AnyValue::Int(42)));
    assert!(logs[1].record.trace_context().is_none());
    // The records carry the rank's resource.
    let resource = &logs[0].resource;
    assert!(resource.iter().any(|(k, _)| k.as_str() == "dl.rank"));
    let stats = handle.stats();
    let e = stats.log_exporter("memory").unwrap();
    assert_eq!((e.received, e.exported, e.dropped()), (2, 2, 0), "{e:?}");
    handle.shutdown(T).unwrap();
}

#[test]
fn the_bridge_keeps_its_level_and_target() {
    let (handle, memory) = with_memory(logs_config());
    let bridge = handle.log_bridge(log::LevelFilter::Warn, "train");
    for (level, target, message) in [
        (log::Level::Warn, "train", "kept: at the threshold"),
        (
            log::Level::Error,
            "train::loop",
            "kept: below the target, above the level",
        ),
        (log::Level::Warn, "train.data", "kept: a dotted child"),
        (log::Level::Info, "train", "dropped: under the threshold"),
        (log::Level::Error, "trainer", "dropped: another target"),
        (
            log::Level::Error,
            "data::train",
            "dropped: not below the target",
        ),
    ] {
        emit(&bridge, level, target, message);
    }
    assert!(log::Log::enabled(
        &bridge,
        &log::Metadata::builder()
            .level(log::Level::Warn)
            .target("train")
            .build()
    ));
    assert!(!log::Log::enabled(
        &bridge,
        &log::Metadata::builder()
            .level(log::Level::Info)
            .target("train")
            .build()
    ));
    handle.force_flush(T).unwrap();
    let got = bodies(&memory);
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(got.iter().all(|b| b.starts_with("kept")), "{got:?}");
    handle.shutdown(T).unwrap();
}

#[test]
fn without_logs_enabled_or_on_a_quiet_rank_nothing_is_recorded() {
    for config in [
        LensConfig {
            logs_enabled: false,
            ..logs_config()
        },
        LensConfig {
            export_strategy: "single_rank".into(),
            export_rank: 1,
            ..logs_config()
        },
    ] {
        let memory = InMemoryLogExporter::default();
        let handle = Telemetry::builder(config)
            .rank(0)
            .world_size(2)
            .log_exporter(memory.clone())
            .local();
        let bridge = handle.log_bridge(log::LevelFilter::Trace, "");
        assert!(!log::Log::enabled(
            &bridge,
            &log::Metadata::builder().level(log::Level::Error).build()
        ));
        emit(&bridge, log::Level::Error, "x", "never recorded");
        handle.force_flush(T).unwrap();
        assert!(memory.get_emitted_logs().unwrap().is_empty());
        assert!(handle.stats().log_exporters.is_empty());
        handle.shutdown(T).unwrap();
    }
}

#[test]
fn every_record_is_exported_or_counted_as_dropped() {
    let mut config = logs_config();
    config.log_batch.max_queue_size = 8;
    config.log_batch.max_export_batch_size = 4;
    config.log_batch.scheduled_delay_ms = 5;
    let (slow, accepted) = SlowExporter::new(Duration::from_millis(30), 2);
    let handle = Telemetry::builder(config)
        .rank(0)
        .world_size(1)
        .named_log_exporter("slow", slow)
        .local();
    let bridge = handle.log_bridge(log::LevelFilter::Info, "");
    // Four flushed batches of four: the second and the fourth fail.
    for wave in 0..4 {
        for i in 0..4 {
            emit(
                &bridge,
                log::Level::Info,
                "load",
                &format!("wave {wave} record {i}"),
            );
        }
        // A full batch is exported at once; the flush waits for it (its failure is counted
        // below, not returned here).
        let _ = handle.force_flush(T);
    }
    // Then a burst that a queue of 8 behind a 30 ms exporter cannot hold.
    for i in 0..184 {
        emit(&bridge, log::Level::Info, "load", &format!("burst {i}"));
    }
    handle.shutdown(T).unwrap();
    let stats = handle.stats();
    let e = stats.log_exporter("slow").unwrap();
    assert_eq!(e.received, 200);
    assert_eq!(e.exported + e.dropped(), 200, "{e:?}");
    assert!(e.dropped_queue_full > 0, "{e:?}");
    assert!(e.dropped_export_failed >= 8, "{e:?}");
    assert_eq!(
        e.exported,
        accepted.load(std::sync::atomic::Ordering::SeqCst)
    );
    // A record after shutdown is counted as dropped there, not lost silently.
    emit(&bridge, log::Level::Info, "load", "too late");
    let after = handle.stats().log_exporter("slow").unwrap().clone();
    assert_eq!(
        (after.received, after.dropped_shutdown, after.exported),
        (201, e.dropped_shutdown + 1, e.exported)
    );
}

#[test]
fn tracing_events_inside_instrumented_spans_carry_their_ids() {
    use lens::opentelemetry_sdk::trace::InMemorySpanExporter;
    use tracing_subscriber::layer::SubscriberExt;
    let spans = InMemorySpanExporter::default();
    let memory = InMemoryLogExporter::default();
    let handle = Telemetry::builder(logs_config())
        .rank(0)
        .world_size(1)
        .span_exporter(spans.clone())
        .log_exporter(memory.clone())
        .local();
    let subscriber = tracing_subscriber::registry()
        .with(handle.tracing_layer())
        .with(handle.tracing_log_layer(tracing::Level::INFO, "lens_logs_test"));
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!(target: "lens_logs_test", "epoch", n = 3);
        let _entered = span.enter();
        tracing::info!(target: "lens_logs_test", loss = 0.5, "epoch done");
        tracing::debug!(target: "lens_logs_test", "under the threshold");
        tracing::warn!(target: "elsewhere", "another target");
    });
    handle.force_flush(T).unwrap();
    let logs = memory.get_emitted_logs().unwrap();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let cx = logs[0]
        .record
        .trace_context()
        .expect("the tracing span's context");
    let epoch = spans.get_finished_spans().unwrap();
    let epoch = epoch
        .iter()
        .find(|s| s.name == "epoch")
        .expect("the epoch span");
    assert_eq!(
        (cx.trace_id, cx.span_id),
        (epoch.span_context.trace_id(), epoch.span_context.span_id())
    );
    handle.shutdown(T).unwrap();
}

#[test]
fn setup_logging_bridge_installs_the_process_logger_once() {
    // Process-wide state: its own process.
    lens_test_support::isolated(|| {
        let (handle, memory) = with_memory(logs_config());
        assert!(handle.setup_logging_bridge(log::LevelFilter::Info, "lens_logs_global"));
        let tracer = handle.tracer("trainer");
        let span_id = tracer.in_span("step", |cx| {
            log::info!(target: "lens_logs_global::step", "through the log macros");
            log::debug!(target: "lens_logs_global", "under the threshold");
            cx.span().span_context().span_id()
        });
        log::warn!(target: "somewhere_else", "another target");
        // A second bridge cannot replace the first: it says so and the application goes on.
        assert!(!handle.setup_logging_bridge(log::LevelFilter::Info, ""));
        handle.force_flush(T).unwrap();
        let logs = memory.get_emitted_logs().unwrap();
        assert_eq!(logs.len(), 1, "{logs:?}");
        assert_eq!(
            logs[0].record.trace_context().map(|c| c.span_id),
            Some(span_id)
        );
        handle.shutdown(T).unwrap();
    });
}
