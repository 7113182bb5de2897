//! A guest may call an export retryable (with a delay hint) or partly rejected: the host owns
//! the retry schedule and the deadline, and every span is exported or counted as dropped, by
//! reason.

use std::collections::HashMap;

use lens::config::{ExporterSpec, SignalConfig};
use lens::opentelemetry::trace::Tracer;
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::trace::SpanExporter;
use lens::testing::spans;
use lens::wasm::WasmSpanExporter;
use lens::{LensConfig, Telemetry};
use lens_test_support::pipeline::{T, exporting};
use lens_test_support::wasm::{lines, recorder_at};

/// The recorder answering `retryable` `times` times, hinting `delay_ms`, with an export budget
/// of `budget_ms`, and its statistics.
fn retrying(
    dir: &std::path::Path,
    times: &str,
    delay_ms: &str,
    budget_ms: u64,
) -> (WasmSpanExporter, std::sync::Arc<lens::trace::ExporterStats>) {
    let mut s = recorder_at(
        dir,
        "r",
        "r.jsonl",
        "typed",
        &[("retryable", times), ("retry_delay_ms", delay_ms)],
    );
    s.batch.export_timeout_ms = Some(budget_ms);
    WasmSpanExporter::from_config("r", &s, &Resource::builder_empty().build()).unwrap()
}

#[test]
fn retryable_twice_then_success_exports_the_batch_once() {
    let dir = tempfile::tempdir().unwrap();
    let s = recorder_at(dir.path(), "r", "r.jsonl", "typed", &[("retryable", "2")]);
    let (exporter, stats) =
        WasmSpanExporter::from_config("r", &s, &Resource::builder_empty().build()).unwrap();
    futures_executor::block_on(exporter.export(spans::many(10))).unwrap();
    exporter.shutdown().unwrap();
    let snap = stats.snapshot();
    assert_eq!(
        (snap.retries, snap.retries_exhausted, snap.guest_errors),
        (2, 0, 0)
    );
    let batches: Vec<_> = lines(&dir.path().join("r.jsonl"))
        .into_iter()
        .filter(|l| l.get("typed").is_some())
        .collect();
    assert_eq!(batches.len(), 1);
    assert_eq!(batches[0]["typed"].as_array().unwrap().len(), 10);
}

#[test]
fn a_batch_still_retryable_at_its_deadline_fails_after_n_attempts() {
    let dir = tempfile::tempdir().unwrap();
    // Attempts at 0, 400 and 800 ms; a fourth would start at 1,200 ms, past the 1 s deadline.
    let (exporter, stats) = retrying(dir.path(), "100", "400", 1000);
    let err = futures_executor::block_on(exporter.export(spans::many(3))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Operation failed: wasm exporter `r`: export failed after 3 attempts: unavailable (98 more)"
    );
    let snap = stats.snapshot();
    assert_eq!((snap.retries, snap.retries_exhausted), (2, 1));
}

#[test]
fn in_a_pipeline_produced_equals_exported_plus_dropped_by_reason() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = LensConfig {
        run_id: "retry".into(),
        metrics_enabled: false,
        ..exporting()
    };
    config.batch.max_export_batch_size = 10;
    config.traces = SignalConfig {
        processors: Vec::new(),
        exporters: vec![
            ExporterSpec::Wasm(recorder_at(
                dir.path(),
                "flaky",
                "flaky.jsonl",
                "otlp",
                &[("retryable", "3"), ("retry_delay_ms", "10")],
            )),
            ExporterSpec::Wasm(recorder_at(
                dir.path(),
                "picky",
                "picky.jsonl",
                "typed",
                &[("partial", "2")],
            )),
            // Claims to reject more than it was given.
            ExporterSpec::Wasm(recorder_at(
                dir.path(),
                "liar",
                "liar.jsonl",
                "typed",
                &[("partial", "1000")],
            )),
        ],
    };
    let handle = Telemetry::builder(config)
        .env(HashMap::<String, String>::new())
        .install_global(false)
        .install()
        .unwrap();
    let tracer = handle.tracer("t");
    for _ in 0..50 {
        tracer.in_span("s", |_| {});
    }
    handle.shutdown(T).unwrap();
    let stats = handle.stats();
    assert_eq!(stats.spans_produced, 50);
    let flaky = stats.exporter("flaky").unwrap();
    assert_eq!((flaky.exported, flaky.dropped(), flaky.retries), (50, 0, 3));
    let picky = stats.exporter("picky").unwrap();
    let batches = picky.batches_exported;
    assert!(batches >= 5, "{picky:?}");
    // Each batch: 2 spans rejected, the rest accepted.
    assert_eq!(picky.dropped_rejected, 2 * batches);
    assert_eq!(picky.exported + picky.dropped(), 50);
    assert_eq!(picky.exported, 50 - 2 * batches);
    let liar = stats.exporter("liar").unwrap();
    assert_eq!((liar.exported, liar.dropped_rejected), (0, 50), "{liar:?}");
}

/// A guest answering `retryable` with a delay of 0 for ever (a retry storm): the host's backoff
/// still applies (100 ms doubling, jittered to no less than half), so a 1 s budget holds a
/// handful of attempts, not thousands.
#[test]
fn a_zero_delay_hint_does_not_make_the_host_spin() {
    let dir = tempfile::tempdir().unwrap();
    let (exporter, stats) = retrying(dir.path(), "1000000", "0", 1000);
    let err = futures_executor::block_on(exporter.export(spans::many(3))).unwrap_err();
    assert!(err.to_string().contains("export failed after"), "{err}");
    let snap = stats.snapshot();
    // Waits of at least 50, 100, 200, 400 ms: at most five attempts fit in 1 s.
    assert!((1..=4).contains(&snap.retries), "{snap:?}");
    assert_eq!(snap.retries_exhausted, 1);
}

/// An export waiting to retry holds its instance: a flush gives up at its own timeout, and a
/// shutdown makes the export give up at once (its batch failed, counted once).
#[test]
fn flush_and_shutdown_honour_their_timeouts_during_a_retry_storm() {
    let dir = tempfile::tempdir().unwrap();
    let (exporter, stats) = retrying(dir.path(), "1000000", "0", 60_000);
    std::thread::scope(|scope| {
        let export = scope.spawn(|| futures_executor::block_on(exporter.export(spans::many(3))));
        std::thread::sleep(std::time::Duration::from_millis(300));
        let started = std::time::Instant::now();
        let flushed = exporter.force_flush_within(std::time::Duration::from_millis(300));
        assert!(flushed.is_err(), "the instance is busy retrying");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        let started = std::time::Instant::now();
        exporter
            .shutdown_with_timeout(std::time::Duration::from_secs(10))
            .unwrap();
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        let err = export.join().unwrap().unwrap_err();
        assert!(err.to_string().contains("given up at shutdown"), "{err}");
    });
    assert_eq!(stats.snapshot().retries_exhausted, 1);
}
