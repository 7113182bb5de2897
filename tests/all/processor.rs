//! Lens's batch processor: exact accounting under a full queue and failing exports, shutdown
//! giving up on a hung exporter, a panicking exporter, and concurrent exports.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lens::Telemetry;
use lens::opentelemetry::trace::{Span, Tracer};
use lens::opentelemetry::{KeyValue, Value};
use lens::opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use lens::opentelemetry_sdk::trace::{SpanData, SpanExporter};
use lens_test_support::pipeline::{LocalInstall, SlowExporter, T, attr, config};

#[test]
fn drop_accounting_is_exact_with_a_slow_exporter_and_tiny_queue() {
    let (slow, accepted) = SlowExporter::new(Duration::from_millis(2), 3);
    let mut cfg = config("none");
    cfg.batch.max_queue_size = 16;
    cfg.batch.max_export_batch_size = 4;
    cfg.batch.scheduled_delay_ms = 5;
    let handle = Telemetry::builder(cfg).span_exporter(slow).local();
    let tracer = handle.tracer("t");
    const N: u64 = 5000;
    for i in 0..N {
        let mut s = tracer.start("s");
        s.set_attribute(KeyValue::new("i", i as i64));
        s.end();
    }
    handle.shutdown(T).unwrap();
    let stats = handle.stats();
    let e = &stats.exporters[0];
    assert_eq!(stats.spans_produced, N);
    assert_eq!(e.received, N);
    assert!(
        e.dropped_queue_full > 0,
        "the tiny queue must overflow: {e:?}"
    );
    assert!(
        e.dropped_export_failed > 0,
        "every third batch fails: {e:?}"
    );
    assert_eq!(e.exported, accepted.load(Ordering::SeqCst));
    assert_eq!(e.exported + e.dropped(), N, "{e:?}");
    assert_eq!(e.pending(), 0);
}

/// An exporter stuck far longer than the shutdown deadline.
#[derive(Debug)]
struct HungExporter;

impl SpanExporter for HungExporter {
    async fn export(&self, _batch: Vec<SpanData>) -> OTelSdkResult {
        std::thread::sleep(Duration::from_secs(3));
        Ok(())
    }
}

#[test]
fn shutdown_timeout_counts_queued_and_in_flight_spans_as_dropped() {
    // With 3 concurrent exports, three batches are in flight when shutdown gives up.
    for lanes in [1, 3] {
        let mut cfg = config("none");
        cfg.batch.max_export_batch_size = 10;
        cfg.batch.scheduled_delay_ms = 1;
        cfg.batch.max_concurrent_exports = lanes;
        let handle = Telemetry::builder(cfg).span_exporter(HungExporter).local();
        let tracer = handle.tracer("t");
        for _ in 0..100 {
            tracer.start("s").end();
        }
        std::thread::sleep(Duration::from_millis(50)); // the first batches are now in flight
        let started = std::time::Instant::now();
        let err = handle.shutdown(Duration::from_millis(300)).unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "shutdown must not wait for the exporter"
        );
        assert!(err.to_string().contains("shutdown"), "{err}");
        let e = &handle.stats().exporters[0];
        assert_eq!(e.received, 100);
        assert_eq!(e.exported, 0);
        assert_eq!(e.dropped_shutdown, 100, "{lanes} lanes: {e:?}");
        // After shutdown the provider hands out non-recording spans: nothing more to account for.
        let late = tracer.start("late");
        assert!(!late.is_recording());
    }
}

/// Panics on a batch holding a span named `boom`.
#[derive(Debug)]
struct PanickingExporter;

impl SpanExporter for PanickingExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        assert!(batch.iter().all(|s| s.name != "boom"), "a span named boom");
        Ok(())
    }
}

#[test]
fn a_panicking_exporter_fails_its_batch_and_the_processor_carries_on() {
    for lanes in [1, 2] {
        let mut cfg = config("none");
        cfg.batch.max_export_batch_size = 10;
        cfg.batch.max_concurrent_exports = lanes;
        let handle = Telemetry::builder(cfg)
            .span_exporter(PanickingExporter)
            .local();
        let tracer = handle.tracer("t");
        for boom in [false, true, false] {
            for i in 0..10 {
                tracer
                    .start(if boom && i == 5 { "boom" } else { "fine" })
                    .end();
            }
            let _ = handle.force_flush(T); // fails if the panicking batch was flushed
        }
        handle.shutdown(T).unwrap();
        let e = &handle.stats().exporters[0];
        assert_eq!(
            (e.received, e.exported, e.dropped_export_failed),
            (30, 20, 10),
            "{lanes} lanes: {e:?}"
        );
    }
}

/// Records which spans each call got and how many calls overlapped; every fourth call fails.
#[derive(Debug, Default)]
struct Overlap {
    running: std::sync::atomic::AtomicUsize,
    max_running: std::sync::atomic::AtomicUsize,
    calls: AtomicU64,
    accepted: std::sync::Mutex<Vec<i64>>,
}

#[derive(Debug, Clone, Default)]
struct OverlapExporter(Arc<Overlap>);

impl SpanExporter for OverlapExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let this = &self.0;
        let now = this.running.fetch_add(1, Ordering::SeqCst) + 1;
        this.max_running.fetch_max(now, Ordering::SeqCst);
        // Wait (a bounded time) for the other calls of a round, however late they start.
        let started = std::time::Instant::now();
        while this.running.load(Ordering::SeqCst) < 3 && started.elapsed() < T / 20 {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(5));
        this.running.fetch_sub(1, Ordering::SeqCst);
        if (this.calls.fetch_add(1, Ordering::SeqCst) + 1).is_multiple_of(4) {
            return Err(OTelSdkError::InternalFailure("backend said no".into()));
        }
        let mut accepted = this.accepted.lock().unwrap();
        for s in &batch {
            match attr(s.attributes.iter().map(|kv| (&kv.key, &kv.value)), "i") {
                Some(Value::I64(i)) => accepted.push(i),
                other => panic!("span without its index: {other:?}"),
            }
        }
        Ok(())
    }
}

#[test]
fn concurrent_exports_overlap_and_account_for_every_span_once() {
    let exporter = OverlapExporter::default();
    let mut cfg = config("none");
    cfg.batch.max_export_batch_size = 8;
    cfg.batch.scheduled_delay_ms = 5;
    cfg.batch.max_concurrent_exports = 3;
    let handle = Telemetry::builder(cfg)
        .span_exporter(exporter.clone())
        .local();
    let tracer = handle.tracer("t");
    const N: i64 = 400;
    for i in 0..N {
        let mut s = tracer.start("s");
        s.set_attribute(KeyValue::new("i", i));
        s.end();
    }
    // The flush sends what is still queued; when one of its calls is a failing fourth, it
    // says so (and those spans are counted as dropped, checked below).
    if let Err(e) = handle.force_flush(T) {
        assert!(e.to_string().contains("backend said no"), "{e}");
    }
    let e = handle.stats().exporters[0].clone();
    handle.shutdown(T).unwrap();
    assert_eq!(exporter.0.max_running.load(Ordering::SeqCst), 3);
    let mut accepted = exporter.0.accepted.lock().unwrap().clone();
    accepted.sort_unstable();
    let unique = accepted.len();
    accepted.dedup();
    assert_eq!(unique, accepted.len(), "a span was exported twice");
    assert_eq!(e.exported, unique as u64);
    assert!(
        e.dropped_export_failed > 0,
        "every fourth call fails: {e:?}"
    );
    assert_eq!(e.exported + e.dropped(), N as u64, "{e:?}");
    assert_eq!(e.dropped(), e.dropped_export_failed, "{e:?}");
    assert_eq!(e.pending(), 0);
}
