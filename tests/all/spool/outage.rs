//! A collector down for longer than the exporter's timeout, against a real rotel on
//! 127.0.0.1: without a spool the batches sent meanwhile are dropped; with one, every span is
//! delivered after it is back; a rank shut down during the outage leaves its spans on disk and
//! the next process given the same spool sends them; log records the same way, with their ids.

use std::path::Path;
use std::time::{Duration, Instant};

use lens::config::{ExporterSpec, OtlpExporterSpec, OtlpProtocol, SignalConfig};
use lens::opentelemetry::KeyValue;
use lens::opentelemetry::trace::{Span, Tracer};
use lens::{ExporterSnapshot, LensConfig, Telemetry, TelemetryHandle};
use lens_test_support::collector::Collector;
use lens_test_support::pipeline::{LocalInstall, exporting, otlp_spec, spool_in, traces_to};

const T: Duration = Duration::from_secs(30);

/// Traces to `collector` over `protocol`, a 1 s export timeout and a 1,024-span queue (a third
/// of an outage's spans, and room for the sender's catch-up burst after the test process was
/// starved of the CPU on a loaded machine; batches of 64), spooled in `spool` when given.
fn install(collector: &Collector, protocol: OtlpProtocol, spool: Option<&Path>) -> TelemetryHandle {
    let spec = OtlpExporterSpec {
        timeout_ms: Some(1_000),
        spool: spool.map(spool_in),
        ..otlp_spec(protocol, collector.endpoint(protocol, lens::Signal::Traces))
    };
    let mut config = traces_to(spec);
    config.batch.scheduled_delay_ms = 100;
    config.batch.max_queue_size = 1_024;
    config.batch.max_export_batch_size = 64;
    Telemetry::builder(config).rank(0).world_size(1).local()
}

/// `n` spans at 1,000/s from `first`, calling `at(elapsed)` between them.
fn send(handle: &TelemetryHandle, first: u64, n: u64, mut at: impl FnMut(Duration)) {
    let tracer = handle.tracer("trainer");
    let started = Instant::now();
    for i in first..first + n {
        let mut s = tracer.start("step");
        s.set_attribute(KeyValue::new("i", i as i64));
        s.end();
        at(started.elapsed());
        let due = started + Duration::from_micros((i - first + 1) * 1_000);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
}

/// 5,000 spans with the collector down from 1 s to 4 s (three times the export timeout).
fn through_an_outage(protocol: OtlpProtocol, spool: Option<&Path>) -> (ExporterSnapshot, u64) {
    let mut collector = Collector::start_quiet();
    let handle = install(&collector, protocol, spool);
    let (mut killed, mut restarted) = (false, false);
    send(&handle, 0, 5_000, |t| {
        if !killed && t >= Duration::from_secs(1) {
            collector.kill();
            killed = true;
        }
        if !restarted && t >= Duration::from_secs(4) {
            collector.restart();
            restarted = true;
        }
    });
    let _ = handle.shutdown(T);
    let stats = handle.stats().exporters[0].clone();
    let delivered = stats.exported;
    let out = collector.wait_for("the spans exported", |o| {
        Collector::spans_counted(o) >= delivered
    });
    (stats, Collector::spans_counted(&out))
}

#[test]
fn a_spool_delivers_every_span_of_an_outage_longer_than_the_timeout_that_drops_them_without() {
    let (without, _) = through_an_outage(OtlpProtocol::HttpProtobuf, None);
    assert!(
        without.dropped() > 0 && without.spooled == 0,
        "without a spool, the outage costs spans: {without:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let (with, counted) = through_an_outage(OtlpProtocol::HttpProtobuf, Some(&spool));
    assert_eq!(
        (with.received, with.exported, with.dropped(), with.in_spool),
        (5_000, 5_000, 0, 0),
        "{with:?}"
    );
    assert!(
        with.spooled > 0 && with.replayed == with.spooled,
        "{with:?}"
    );
    assert!(counted >= 5_000, "the collector counted {counted}");
}

#[test]
fn a_rank_shut_down_during_an_outage_leaves_its_spans_and_the_next_one_sends_them_over_grpc() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let mut collector = Collector::start_quiet();
    collector.kill();
    let first = install(&collector, OtlpProtocol::Grpc, Some(&spool));
    send(&first, 0, 1_000, |_| {});
    assert!(
        first.shutdown(T).is_err(),
        "a shutdown leaving spans spooled says so"
    );
    let s = first.stats().exporters[0].clone();
    assert_eq!(
        (s.received, s.exported, s.dropped(), s.in_spool),
        (1_000, 0, 0, 1_000),
        "{s:?}"
    );
    drop(first);

    // The restarted rank: the collector is back.
    collector.restart();
    let next = install(&collector, OtlpProtocol::Grpc, Some(&spool));
    send(&next, 1_000, 500, |_| {});
    next.shutdown(T).unwrap();
    let s = next.stats().exporters[0].clone();
    assert_eq!(
        (
            s.received,
            s.spool_found,
            s.replayed,
            s.exported,
            s.dropped(),
            s.in_spool
        ),
        (500, 1_000, 1_000, 1_500, 0, 0),
        "{s:?}"
    );
    let out = collector.wait_for("every span", |o| Collector::spans_counted(o) >= 1_500);
    assert_eq!(Collector::spans_counted(&out), 1_500);
}

#[test]
fn two_live_processes_never_share_a_spool() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let collector = Collector::start_quiet();
    let _held = install(&collector, OtlpProtocol::HttpProtobuf, Some(&spool));
    let spec = OtlpExporterSpec {
        spool: Some(spool_in(&spool)),
        ..otlp_spec(
            OtlpProtocol::HttpProtobuf,
            collector.endpoint(OtlpProtocol::HttpProtobuf, lens::Signal::Traces),
        )
    };
    let config = traces_to(spec);
    let second = Telemetry::builder(config)
        .rank(0)
        .world_size(1)
        .env(lens_test_support::pipeline::no_env())
        .install_global(false)
        .install();
    let Err(err) = second else {
        panic!("a second holder of the spool was let in");
    };
    let err = err.to_string();
    assert!(
        err.contains("exporter `otlp`: cannot open its spool")
            && err.contains(&format!("spool directory {} is in use", spool.display())),
        "{err}"
    );
}

#[test]
fn log_records_spooled_in_an_outage_reach_the_collector_from_the_next_process_with_their_ids() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let mut collector = Collector::start();
    let install_logs = |collector: &Collector| {
        let spec = OtlpExporterSpec {
            timeout_ms: Some(500),
            spool: Some(spool_in(&spool)),
            ..otlp_spec(
                OtlpProtocol::Grpc,
                collector.endpoint(OtlpProtocol::Grpc, lens::Signal::Logs),
            )
        };
        let config = LensConfig {
            metrics_enabled: false,
            logs_enabled: true,
            exporter: "none".into(),
            logs: SignalConfig {
                exporters: vec![ExporterSpec::Otlp(spec)],
                processors: Vec::new(),
            },
            ..exporting()
        };
        Telemetry::builder(config).rank(0).world_size(1).local()
    };
    collector.kill();
    let first = install_logs(&collector);
    let bridge = first.log_bridge(log::LevelFilter::Info, "");
    let tracer = first.tracer("trainer");
    let trace_id = tracer.in_span("checkpoint", |cx| {
        for i in 0..20 {
            log::Log::log(
                &bridge,
                &log::Record::builder()
                    .level(log::Level::Warn)
                    .target("trainer::ckpt")
                    .args(format_args!("spooled record {i}"))
                    .build(),
            );
        }
        lens::opentelemetry::trace::TraceContextExt::span(&cx)
            .span_context()
            .trace_id()
    });
    assert!(first.shutdown(T).is_err());
    assert_eq!(first.stats().log_exporters[0].in_spool, 20);
    drop((bridge, tracer, first));

    collector.restart();
    let next = install_logs(&collector);
    next.shutdown(T).unwrap();
    let e = &next.stats().log_exporters[0];
    assert_eq!(
        (e.spool_found, e.replayed, e.exported, e.in_spool),
        (20, 20, 20, 0),
        "{e:?}"
    );
    let out = collector.wait_for("the replayed records", |o| o.contains("spooled record 19"));
    for expected in [
        "spooled record 0".to_string(),
        trace_id.to_string(),
        "trainer::ckpt".to_string(),
        "WARN".to_string(),
    ] {
        assert!(out.contains(&expected), "{expected} not in:\n{out}");
    }
}

#[test]
fn an_entry_rebuilt_by_a_reload_during_an_outage_keeps_its_spool_and_sends_each_span_once() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let mut collector = Collector::start_quiet();
    collector.kill();
    let handle = install(&collector, OtlpProtocol::HttpProtobuf, Some(&spool));
    send(&handle, 0, 1_000, |_| {});
    // New batch settings rebuild the entry: the new processor takes the running one's spool
    // on (its lock is held until the swap) instead of failing to open it.
    let spec = OtlpExporterSpec {
        timeout_ms: Some(1_000),
        spool: Some(spool_in(&spool)),
        ..otlp_spec(
            OtlpProtocol::HttpProtobuf,
            collector.endpoint(OtlpProtocol::HttpProtobuf, lens::Signal::Traces),
        )
    };
    let mut changed = traces_to(spec);
    changed.batch.scheduled_delay_ms = 100;
    changed.batch.max_queue_size = 1_024;
    changed.batch.max_export_batch_size = 32;
    let report = handle.reload_exporters(&changed).unwrap();
    assert_eq!(report.replaced.len(), 1, "{report:?}");
    send(&handle, 1_000, 500, |_| {});
    collector.restart();
    handle.shutdown(T).unwrap();
    let s = handle.stats().exporters[0].clone();
    assert_eq!(
        (s.received, s.exported, s.dropped(), s.in_spool),
        (1_500, 1_500, 0, 0),
        "{s:?}"
    );
    assert!(s.spooled > 0 && s.replayed == s.spooled, "{s:?}");
    let out = collector.wait_for("every span", |o| Collector::spans_counted(o) >= 1_500);
    assert_eq!(Collector::spans_counted(&out), 1_500, "each span once");
    // Released at the end: another process may open it.
    lens::spool::Spool::open(
        &spool,
        lens::Signal::Traces,
        lens::spool::SpoolLimits::new(1 << 20, lens::spool::WhenFull::DropOldest),
    )
    .unwrap();
}

#[test]
fn each_entry_gets_its_own_default_spool_and_two_entries_never_share_one() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = |signal| format!("http://127.0.0.1:9/v1/{signal}");
    let entry = |signal: lens::Signal, spool: lens::config::SpoolSpec| {
        ExporterSpec::Otlp(OtlpExporterSpec {
            spool: Some(spool),
            timeout_ms: Some(300),
            ..otlp_spec(OtlpProtocol::HttpProtobuf, endpoint(signal))
        })
    };
    let config = |logs_spool: lens::config::SpoolSpec| LensConfig {
        metrics_enabled: true,
        logs_enabled: true,
        traces: SignalConfig {
            exporters: vec![entry(lens::Signal::Traces, Default::default())],
            processors: Vec::new(),
        },
        metrics: SignalConfig {
            exporters: vec![entry(lens::Signal::Metrics, Default::default())],
            processors: Vec::new(),
        },
        logs: SignalConfig {
            exporters: vec![entry(lens::Signal::Logs, logs_spool)],
            processors: Vec::new(),
        },
        ..exporting()
    };
    let env = std::collections::HashMap::from([(
        "LENS_SPOOL_DIR".to_string(),
        dir.path().display().to_string(),
    )]);
    let install = |config| {
        Telemetry::builder(config)
            .rank(0)
            .world_size(1)
            .env(env.clone())
            .install_global(false)
            .install()
    };
    // Three entries named `otlp`, one per signal: three spools, each under its signal.
    let handle = install(config(Default::default())).unwrap();
    let service = handle
        .resource()
        .get(&lens::opentelemetry::Key::from_static_str("service.name"))
        .unwrap()
        .to_string();
    let rank = dir.path().join(service).join("rank-0");
    for signal in ["traces", "metrics", "logs"] {
        assert!(
            rank.join(signal).join("otlp").join("lock").is_file(),
            "{signal}"
        );
    }
    handle.shutdown(Duration::from_secs(2)).ok();
    // A `dir` naming the traces entry's spool for the log entry: refused, naming both.
    let shared = lens::config::SpoolSpec {
        dir: Some(rank.join("traces").join("otlp")),
        ..Default::default()
    };
    let Err(err) = install(config(shared)) else {
        panic!("two entries shared a spool");
    };
    let err = err.to_string();
    assert!(
        err.contains("exporter `otlp`: cannot open its spool")
            && err.contains("is also that of traces exporter `otlp`"),
        "{err}"
    );
}
