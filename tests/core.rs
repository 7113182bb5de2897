//! Core pipeline tests: the seed's examples in Rust, strategies, sampler, env, drop accounting.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lens::config::env::parse_bool;
use lens::opentelemetry::trace::{Span, Status, Tracer};
use lens::opentelemetry::{KeyValue, Value};
use lens::opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use lens::opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData, SpanExporter};
use lens::strategy::{decide_export, rank_hash_fraction, rank_is_sampled};
use lens::{InMemoryMetricReader, LensConfig, LensError, RankAwareSampler, RankInfo, Telemetry};

const T: Duration = Duration::from_secs(10);

fn config(exporter: &str) -> LensConfig {
    LensConfig {
        exporter: exporter.into(),
        run_id: "run42".into(),
        ..Default::default()
    }
}

fn no_env() -> HashMap<String, String> {
    HashMap::new()
}

/// Installs without touching the process environment or the global providers.
trait LocalInstall {
    fn local(self) -> lens::TelemetryHandle;
}

impl LocalInstall for lens::TelemetryBuilder {
    fn local(self) -> lens::TelemetryHandle {
        self.env(no_env()).install_global(false).install().unwrap()
    }
}

fn attr<'a>(
    attrs: impl IntoIterator<Item = (&'a lens::opentelemetry::Key, &'a Value)>,
    key: &str,
) -> Option<Value> {
    attrs
        .into_iter()
        .find(|(k, _)| k.as_str() == key)
        .map(|(_, v)| v.clone())
}

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
    assert_eq!(
        res.get(&"service.name".into()),
        Some(Value::from("nemo-lens"))
    );
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

#[test]
fn injected_exporter_replaces_only_its_own_signal() {
    // Traces from the injected exporter, metrics from the config's console exporter.
    let spans = InMemorySpanExporter::default();
    let mut cfg = config("none");
    cfg.traces.exporters = vec![lens::config::ExporterSpec::from_shorthand("console").unwrap()];
    let handle = Telemetry::builder(cfg.clone())
        .span_exporter(spans.clone())
        .local();
    let names: Vec<_> = handle
        .stats()
        .exporters
        .into_iter()
        .map(|e| e.name)
        .collect();
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
    let names: Vec<_> = handle
        .stats()
        .exporters
        .into_iter()
        .map(|e| e.name)
        .collect();
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
fn open_spans_are_ended_and_marked_truncated_at_shutdown() {
    let spans = InMemorySpanExporter::default();
    let handle = Telemetry::builder(config("none"))
        .span_exporter(spans.clone())
        .local();
    let tracer = handle.tracer("t");
    let _open = tracer
        .span_builder("checkpoint")
        .with_attributes([KeyValue::new("step", 100)])
        .start(&tracer);
    tracer.start("done").end();
    // Capture what the exporter gets before its shutdown clears it.
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    handle.add_span_exporter("recorder", Recorder(seen.clone()));
    handle.shutdown(T).unwrap();
    let recorded = seen.lock().unwrap().clone();
    assert_eq!(
        recorded.len(),
        1,
        "only the open span reaches an exporter added after `done`"
    );
    let span = &recorded[0];
    assert_eq!(span.name, "checkpoint");
    assert!(
        span.attributes
            .contains(&KeyValue::new("lens.truncated", true))
    );
    assert!(span.attributes.contains(&KeyValue::new("step", 100)));
    assert!(span.end_time >= span.start_time);
    let stats = handle.stats();
    assert_eq!(stats.spans_truncated, 1);
    assert_eq!(stats.spans_produced, 2);
}

#[derive(Debug, Clone)]
struct Recorder(Arc<std::sync::Mutex<Vec<SpanData>>>);

impl SpanExporter for Recorder {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

/// An exporter that takes `delay` per batch and fails every `fail_every`-th batch.
#[derive(Debug)]
struct SlowExporter {
    delay: Duration,
    fail_every: u64,
    calls: AtomicU64,
    accepted: Arc<AtomicU64>,
}

impl SpanExporter for SlowExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        std::thread::sleep(self.delay);
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if self.fail_every > 0 && n.is_multiple_of(self.fail_every) {
            return Err(OTelSdkError::InternalFailure("backend said no".into()));
        }
        self.accepted
            .fetch_add(batch.len() as u64, Ordering::SeqCst);
        Ok(())
    }
}

#[test]
fn drop_accounting_is_exact_with_a_slow_exporter_and_tiny_queue() {
    let accepted = Arc::new(AtomicU64::new(0));
    let mut cfg = config("none");
    cfg.batch.max_queue_size = 16;
    cfg.batch.max_export_batch_size = 4;
    cfg.batch.scheduled_delay_ms = 5;
    let handle = Telemetry::builder(cfg)
        .span_exporter(SlowExporter {
            delay: Duration::from_millis(2),
            fail_every: 3,
            calls: AtomicU64::new(0),
            accepted: accepted.clone(),
        })
        .local();
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
    handle.force_flush(T).unwrap();
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
fn second_global_setup_is_refused_unless_allowed() {
    let first = Telemetry::builder(config("none"))
        .env(no_env())
        .install()
        .unwrap();
    let err = Telemetry::builder(config("none"))
        .env(no_env())
        .install()
        .unwrap_err();
    assert!(matches!(err, LensError::AlreadyInitialized), "{err}");
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
    // After shutdown a new setup is fine.
    Telemetry::builder(config("none"))
        .env(no_env())
        .install()
        .unwrap()
        .shutdown(T)
        .unwrap();
}

/// `int(md5(str(rank)).hexdigest(), 16) % 10000 / 10000`, computed by Python for ranks 0..16.
const PYTHON_FRACTIONS: [f64; 16] = [
    0.785, 0.8411, 0.9212, 0.0883, 0.19, 0.0693, 0.0412, 0.5555, 0.3101, 0.8374, 0.1824, 0.265,
    0.8112, 0.4873, 0.6038, 0.7603,
];

#[test]
fn rank_hash_matches_nemo_lens_for_ranks_0_to_15() {
    for (rank, expected) in PYTHON_FRACTIONS.iter().enumerate() {
        assert_eq!(
            rank_hash_fraction(rank as u32).to_bits(),
            expected.to_bits(),
            "rank {rank}"
        );
    }
}

#[test]
fn sampled_decisions_match_python_bit_for_bit() {
    // Python's own decisions for 1000 ranks and several rates, computed live.
    let rates = [0.0, 0.01, 0.1, 0.25, 0.0883, 0.5, 0.9, 1.0];
    let script = format!(
        "import hashlib\nfor rate in {rates:?}:\n    print(''.join('1' if int(hashlib.md5(str(r).encode()).hexdigest(), 16) % 10000 / 10000 < rate else '0' for r in range(1000)))"
    );
    let out = std::process::Command::new("python3")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(lines.len(), rates.len());
    for (rate, line) in rates.iter().zip(lines) {
        let ours: String = (0..1000)
            .map(|r| if rank_is_sampled(r, *rate) { '1' } else { '0' })
            .collect();
        assert_eq!(ours, line, "rate {rate}");
        let sampler: String = (0..1000)
            .map(|r| {
                if RankAwareSampler::new(r, *rate).keeps() {
                    '1'
                } else {
                    '0'
                }
            })
            .collect();
        assert_eq!(sampler, line, "sampler at rate {rate}");
    }
}

fn decide(strategy: &str, rank: u32, world: u32, local: u32, export_rank: i64, rate: f64) -> bool {
    let cfg = LensConfig {
        export_strategy: strategy.into(),
        export_rank,
        export_sample_rate: rate,
        ..Default::default()
    };
    decide_export(
        &RankInfo {
            rank,
            world_size: world,
            local_rank: local,
        },
        &cfg,
    )
    .unwrap()
}

#[test]
fn strategy_table_for_ranks_0_to_15() {
    let exporting = |f: &dyn Fn(u32) -> bool| (0..16).filter(|r| f(*r)).collect::<Vec<u32>>();
    assert_eq!(
        exporting(&|r| decide("all_ranks", r, 16, r % 4, 0, 1.0)).len(),
        16
    );
    assert_eq!(
        exporting(&|r| decide("single_rank", r, 16, r % 4, 0, 1.0)),
        [0]
    );
    assert_eq!(
        exporting(&|r| decide("single_rank", r, 16, r % 4, -1, 1.0)),
        [15]
    );
    assert_eq!(
        exporting(&|r| decide("single_rank", r, 16, r % 4, 5, 1.0)),
        [5]
    );
    assert_eq!(
        exporting(&|r| decide("first_rank_per_node", r, 16, r % 4, 0, 1.0)),
        [0, 4, 8, 12]
    );
    assert_eq!(
        exporting(&|r| decide("sampled", r, 16, 0, 0, 0.25)),
        [3, 4, 5, 6, 10]
    );
    assert_eq!(
        exporting(&|r| decide("sampled", r, 16, 0, 0, 0.3)),
        [3, 4, 5, 6, 10, 11]
    );
    assert_eq!(
        exporting(&|r| decide("sampled", r, 16, 0, 0, 0.0)),
        Vec::<u32>::new()
    );
    assert_eq!(
        exporting(&|r| decide("sampled", r, 16, 0, 0, 1.0)).len(),
        16
    );
}

#[test]
fn custom_strategies_register_by_name_and_builtins_are_protected() {
    lens::register_export_strategy("even_ranks", |r: &RankInfo, _: &LensConfig| {
        r.rank.is_multiple_of(2)
    })
    .unwrap();
    assert!(decide("even_ranks", 2, 4, 0, 0, 1.0));
    assert!(!decide("even_ranks", 3, 4, 0, 0, 1.0));
    let taken = lens::register_export_strategy("sampled", |_: &RankInfo, _: &LensConfig| true);
    assert!(matches!(taken, Err(LensError::StrategyNameTaken(_))));
    let cfg = LensConfig {
        export_strategy: "nope".into(),
        ..Default::default()
    };
    let err = decide_export(
        &RankInfo {
            rank: 0,
            world_size: 1,
            local_rank: 0,
        },
        &cfg,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("unknown export strategy `nope`"),
        "{err}"
    );
    assert!(lens::unregister_export_strategy("even_ranks"));
}

#[test]
fn export_rank_outside_the_world_is_an_error() {
    let cfg = LensConfig {
        export_strategy: "single_rank".into(),
        export_rank: 9,
        ..Default::default()
    };
    let err = decide_export(
        &RankInfo {
            rank: 0,
            world_size: 8,
            local_rank: 0,
        },
        &cfg,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid rank: export_rank 9 is outside world_size 8"
    );
}

#[test]
fn rank_detection_from_launcher_environment() {
    let torchrun = [("RANK", "5"), ("WORLD_SIZE", "8"), ("LOCAL_RANK", "1")];
    assert_eq!(
        RankInfo::detect(None, None, &torchrun).unwrap(),
        RankInfo {
            rank: 5,
            world_size: 8,
            local_rank: 1
        }
    );
    let slurm = [
        ("SLURM_PROCID", "9"),
        ("SLURM_NTASKS", "16"),
        ("SLURM_LOCALID", "3"),
    ];
    assert_eq!(
        RankInfo::detect(None, None, &slurm).unwrap(),
        RankInfo {
            rank: 9,
            world_size: 16,
            local_rank: 3
        }
    );
    assert_eq!(RankInfo::detect(Some(2), Some(4), &slurm).unwrap().rank, 2);
    assert_eq!(
        RankInfo::detect(None, None, &[("A", "b")]).unwrap(),
        RankInfo {
            rank: 0,
            world_size: 1,
            local_rank: 0
        }
    );
    let bad = RankInfo::detect(None, None, &[("RANK", "x")]).unwrap_err();
    assert_eq!(
        bad.to_string(),
        "invalid environment variable RANK=\"x\": expected a non-negative integer"
    );
    let outside = RankInfo::detect(None, None, &[("RANK", "8"), ("WORLD_SIZE", "8")]).unwrap_err();
    assert_eq!(
        outside.to_string(),
        "invalid rank: rank 8 is outside world_size 8"
    );
}

#[test]
fn strict_booleans() {
    for t in ["1", "true", "YES", "On"] {
        assert_eq!(parse_bool(t), Some(true), "{t}");
    }
    for f in ["0", "false", "no", "OFF"] {
        assert_eq!(parse_bool(f), Some(false), "{f}");
    }
    for bad in ["", "2", "y", "enabled"] {
        assert_eq!(parse_bool(bad), None, "{bad}");
    }
}

#[test]
fn environment_overrides_with_fallback_prefix() {
    let env: HashMap<String, String> = [
        ("LENS_EXPORT_STRATEGY", "sampled"),
        ("NEMO_LENS_EXPORT_SAMPLE_RATE", "0.5"),
        ("NEMO_LENS_SAMPLER_ENABLED", "yes"),
        ("LENS_METRICS_ENABLED", "off"),
        ("NEMO_LENS_METRICS_ENABLED", "on"), // LENS_ wins
        ("OTEL_SERVICE_NAME", "from-otel"),
        ("OTEL_BSP_MAX_QUEUE_SIZE", "4096"),
        ("OTEL_BSP_SCHEDULE_DELAY", "250"),
        ("OTEL_BSP_MAX_CONCURRENT_EXPORTS", "2"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "2000"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=secret,x-team=ml"),
        ("LENS_RUN_ID", "job-7"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let mut cfg = LensConfig::default();
    cfg.apply_env(&env).unwrap();
    assert_eq!(cfg.export_strategy, "sampled");
    assert_eq!(cfg.export_sample_rate, 0.5);
    assert!(cfg.sampler_enabled);
    assert!(!cfg.metrics_enabled);
    assert_eq!(cfg.service_name, "from-otel");
    assert_eq!(cfg.batch.max_queue_size, 4096);
    assert_eq!(cfg.batch.scheduled_delay_ms, 250);
    assert_eq!(cfg.batch.max_concurrent_exports, 2);
    assert_eq!(cfg.metric_export_interval_ms, 2000);
    assert_eq!(
        cfg.otlp.protocol,
        Some(lens::config::OtlpProtocol::HttpProtobuf)
    );
    assert_eq!(
        cfg.otlp.headers.get("api-key").map(String::as_str),
        Some("secret")
    );
    assert_eq!(cfg.run_id, "job-7");
}

#[test]
fn environment_errors_name_the_variable() {
    let cases = [
        (
            ("LENS_SAMPLER_ENABLED", "maybe"),
            "invalid environment variable LENS_SAMPLER_ENABLED=\"maybe\": expected one of 1/true/yes/on or 0/false/no/off",
        ),
        (
            ("NEMO_LENS_EXPORT_RANK", "last"),
            "invalid environment variable NEMO_LENS_EXPORT_RANK=\"last\": expected an integer rank (-1 = last)",
        ),
        (
            ("LENS_EXPORT_SAMPLE_RATE", "1.5"),
            "invalid config <config>: `export_sample_rate`: 1.5 is not between 0 and 1",
        ),
        (
            ("OTEL_BSP_MAX_QUEUE_SIZE", "big"),
            "invalid environment variable OTEL_BSP_MAX_QUEUE_SIZE=\"big\": expected a positive whole number",
        ),
        (
            ("OTEL_BSP_MAX_CONCURRENT_EXPORTS", "100"),
            "invalid config <config>: `batch`: max_concurrent_exports (100) must be between 1 and 64",
        ),
        (
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon"),
            "invalid environment variable OTEL_EXPORTER_OTLP_PROTOCOL=\"carrier-pigeon\": expected unknown OTLP protocol `carrier-pigeon` (expected `grpc` or `http/protobuf`)",
        ),
        (
            ("LENS_EXPORTER", "zipkin"),
            "invalid environment variable LENS_EXPORTER=\"zipkin\": expected unknown exporter `zipkin` (expected `otlp`, `console`, `none` or a path ending in `.wasm`)",
        ),
    ];
    for ((k, v), expected) in cases {
        let mut cfg = LensConfig::default();
        let err = cfg.apply_env(&[(k, v)]).unwrap_err();
        assert_eq!(err.to_string(), expected);
    }
}

#[test]
fn resource_has_slurm_kubernetes_caller_and_otel_attributes() {
    let env = [
        ("SLURM_JOB_ID", "777"),
        ("SLURM_JOB_NAME", "llama"),
        ("KUBERNETES_SERVICE_HOST", "10.0.0.1"),
        ("POD_NAME", "trainer-0"),
        ("POD_NAMESPACE", "ml"),
        (
            "OTEL_RESOURCE_ATTRIBUTES",
            "deployment.environment=prod,team=from%20env",
        ),
    ];
    let mut cfg = config("none");
    cfg.run_id = String::new();
    let handle = Telemetry::builder(cfg)
        .rank(1)
        .world_size(2)
        .resource_attributes([
            KeyValue::new("team", "from-caller"),
            KeyValue::new("owner", "me"),
        ])
        .env(env)
        .install_global(false)
        .install()
        .unwrap();
    let r = handle.resource();
    let get = |k: &str| r.get(&lens::opentelemetry::Key::from(k.to_string()));
    assert_eq!(
        handle.run_id(),
        "777",
        "empty run_id falls back to SLURM_JOB_ID"
    );
    assert_eq!(get("dl.run_id"), Some(Value::from("777")));
    assert_eq!(get("service.instance.id"), Some(Value::from("777-rank1")));
    assert_eq!(get("slurm.job.id"), Some(Value::from("777")));
    assert_eq!(get("slurm.job.name"), Some(Value::from("llama")));
    assert_eq!(get("k8s.pod.name"), Some(Value::from("trainer-0")));
    assert_eq!(get("k8s.namespace.name"), Some(Value::from("ml")));
    assert_eq!(get("owner"), Some(Value::from("me")));
    assert_eq!(
        get("team"),
        Some(Value::from("from env")),
        "OTEL_RESOURCE_ATTRIBUTES comes last"
    );
    assert_eq!(get("deployment.environment"), Some(Value::from("prod")));
    let _ = attr(r.iter(), "dl.rank").expect("dl.rank");
    handle.shutdown(T).unwrap();

    // Without SLURM, an empty run id becomes a random 8-hex-digit id.
    let handle = Telemetry::builder(config("none"))
        .env(no_env())
        .install_global(false);
    let handle = handle.install().unwrap();
    assert_eq!(handle.run_id(), "run42");
    let mut cfg = config("none");
    cfg.run_id.clear();
    let h = Telemetry::builder(cfg).local();
    assert_eq!(h.run_id().len(), 8);
    assert!(h.run_id().chars().all(|c| c.is_ascii_hexdigit()));
}

#[cfg(feature = "tracing")]
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
        .span_exporter(SlowExporter {
            delay: Duration::ZERO,
            fail_every: 2,
            calls: AtomicU64::new(0),
            accepted: Arc::new(AtomicU64::new(0)),
        })
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
    assert_eq!(
        sum_points(&data, "lens.exporter.spans"),
        [
            (
                vec![
                    "exporter=custom".to_string(),
                    "outcome=dropped_export_failed".to_string()
                ],
                e.dropped_export_failed
            ),
            (
                vec![
                    "exporter=custom".to_string(),
                    "outcome=dropped_queue_full".to_string()
                ],
                0
            ),
            (
                vec![
                    "exporter=custom".to_string(),
                    "outcome=dropped_shutdown".to_string()
                ],
                0
            ),
            (
                vec![
                    "exporter=custom".to_string(),
                    "outcome=exported".to_string()
                ],
                e.exported
            ),
        ]
    );
    assert_eq!(
        sum_points(&data, "lens.exporter.batches"),
        [
            (
                vec!["exporter=custom".to_string(), "outcome=failed".to_string()],
                e.batches_failed
            ),
            (
                vec!["exporter=custom".to_string(), "outcome=ok".to_string()],
                e.batches_exported
            ),
        ]
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
