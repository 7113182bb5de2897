//! Metric collections through an outage, with a spool on the metric entry: against a real
//! rotel (OTLP/HTTP in one process, gRPC across a restart) and through the sandboxed vendor
//! exporter (`rust-vendor-http`) to a vendor that comes back on its port. Every data point
//! ends exported (live or replayed), spooled, or dropped by reason; none is lost.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use lens::config::{ExporterSpec, OtlpExporterSpec, OtlpProtocol, SignalConfig, WasmExporterSpec};
use lens::opentelemetry::KeyValue;
use lens::{ExporterSnapshot, LensConfig, Telemetry, TelemetryHandle};
use lens_test_support::collector::{Collector, free_port};
use lens_test_support::http::{Answer, IngestServer};
use lens_test_support::pipeline::{LocalInstall, exporting, otlp_spec, spool_in};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use prost::Message;

const T: Duration = Duration::from_secs(30);

/// A rank exporting only metrics, every 100 ms, through `exporter`.
fn metrics_only(exporter: ExporterSpec) -> LensConfig {
    LensConfig {
        traces_enabled: false,
        metrics_enabled: true,
        metric_export_interval_ms: 100,
        exporter: "none".into(),
        metrics: SignalConfig {
            exporters: vec![exporter],
            processors: Vec::new(),
        },
        ..exporting()
    }
}

/// An OTLP metric entry to `collector` over `protocol`, spooled in `spool`.
fn otlp_to(collector: &Collector, protocol: OtlpProtocol, spool: &Path) -> ExporterSpec {
    ExporterSpec::Otlp(OtlpExporterSpec {
        timeout_ms: Some(300),
        spool: Some(spool_in(spool)),
        ..otlp_spec(
            protocol,
            collector.endpoint(protocol, lens::Signal::Metrics),
        )
    })
}

/// Counts steps on two series for at most `how_long`, calling `at(elapsed)` between them until
/// it says stop.
fn train(handle: &TelemetryHandle, how_long: Duration, mut at: impl FnMut(Duration) -> bool) {
    let counter = handle.meter("trainer").u64_counter("train.steps").build();
    let started = Instant::now();
    while started.elapsed() < how_long {
        counter.add(1, &[KeyValue::new("phase", "train")]);
        counter.add(1, &[KeyValue::new("phase", "eval")]);
        if !at(started.elapsed()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn metric_exporter(handle: &TelemetryHandle) -> ExporterSnapshot {
    handle.stats().metric_exporters[0].clone()
}

/// Every data point in exactly one place.
fn assert_accounted(s: &ExporterSnapshot) {
    assert_eq!(
        s.received + s.spool_found,
        s.exported + s.dropped() + s.in_spool,
        "{s:?}"
    );
}

/// Data points of the metric requests a quiet rotel counted (`Received metrics.` lines).
fn points_counted(out: &str) -> u64 {
    out.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["msg"] == "Received metrics.")
        .filter_map(|v| v["data_points"].as_u64().or(v["metrics"].as_u64()))
        .sum()
}

#[test]
fn metric_collections_of_an_outage_reach_the_collector_when_it_is_back() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let mut collector = Collector::start_quiet();
    collector.kill();
    let protocol = OtlpProtocol::HttpProtobuf;
    let handle = metrics_only(otlp_to(&collector, protocol, &spool));
    let handle = Telemetry::builder(handle).rank(0).world_size(1).local();
    let mut back = false;
    train(&handle, Duration::from_secs(3), |t| {
        if !back && t >= Duration::from_millis(1_500) {
            let s = metric_exporter(&handle);
            assert!(s.spooled > 0 && s.exported == 0, "down: {s:?}");
            collector.restart();
            back = true;
        }
        true
    });
    handle.shutdown(T).unwrap();
    let s = metric_exporter(&handle);
    assert_accounted(&s);
    assert_eq!((s.dropped(), s.in_spool), (0, 0), "{s:?}");
    assert!(s.spooled > 0 && s.replayed == s.spooled, "{s:?}");
    let out = collector.wait_for("every data point exported", |o| {
        points_counted(o) >= s.exported
    });
    assert_eq!(points_counted(&out), s.exported, "{out}");
}

#[test]
fn a_rank_shut_down_during_an_outage_leaves_its_collections_and_the_next_one_sends_them() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let mut collector = Collector::start_quiet();
    collector.kill();
    let protocol = OtlpProtocol::Grpc;
    let config = metrics_only(otlp_to(&collector, protocol, &spool));
    let first = Telemetry::builder(config.clone())
        .rank(0)
        .world_size(1)
        .local();
    train(&first, Duration::from_secs(1), |_| true);
    let err = first
        .shutdown(Duration::from_secs(2))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("metrics"),
        "a shutdown leaving data says so: {err}"
    );
    let left = metric_exporter(&first);
    assert_accounted(&left);
    assert!(left.in_spool > 0 && left.exported == 0, "{left:?}");
    assert_eq!(left.dropped(), 0, "{left:?}");
    drop(first);

    collector.restart();
    let next = Telemetry::builder(config).rank(0).world_size(1).local();
    train(&next, Duration::from_millis(500), |_| true);
    next.shutdown(T).unwrap();
    let s = metric_exporter(&next);
    assert_accounted(&s);
    assert_eq!(
        (s.spool_found, s.replayed, s.in_spool, s.dropped()),
        (left.in_spool, left.in_spool, 0, 0),
        "{s:?}"
    );
    let out = collector.wait_for("both processes' data points", |o| {
        points_counted(o) >= s.exported
    });
    assert_eq!(points_counted(&out), s.exported, "{out}");
}

/// The data points in the metric requests `server` received.
fn points_received(server: &IngestServer) -> u64 {
    server
        .received()
        .iter()
        .filter(|r| r.line.starts_with("POST /v1/metrics"))
        .map(|r| ExportMetricsServiceRequest::decode(r.body.as_slice()).unwrap())
        .map(|req| lens::wasm::exporters::metric::otlp_data_points(&req))
        .sum()
}

#[test]
fn a_sandboxed_metric_exporter_spools_while_its_vendor_is_away() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let exporter = ExporterSpec::Wasm(WasmExporterSpec {
        name: Some("vendor".into()),
        path: env!("LENS_EXAMPLE_VENDOR_HTTP_WASM").into(),
        allowed_hosts: vec![format!("127.0.0.1:{port}")],
        settings: HashMap::from([(
            "endpoint".to_string(),
            format!("http://127.0.0.1:{port}/v1/metrics"),
        )])
        .into_iter()
        .collect(),
        call_timeout_ms: Some(2_000),
        // The export's budget, retries included: past it the collection is spooled.
        batch: lens::config::BatchOverrides {
            export_timeout_ms: Some(500),
            ..Default::default()
        },
        spool: Some(spool_in(&dir.path().join("spool"))),
        ..Default::default()
    });
    let handle = Telemetry::builder(metrics_only(exporter))
        .rank(0)
        .world_size(1)
        .local();
    let mut vendor = None;
    let mut back_at = Duration::MAX;
    // The vendor comes back once the spool holds some collections; a second later the rank
    // stops.
    train(&handle, Duration::from_secs(12), |t| {
        if vendor.is_none() && metric_exporter(&handle).spooled >= 4 {
            assert_eq!(metric_exporter(&handle).exported, 0);
            vendor = Some(IngestServer::start_on(port, Answer::default()));
            back_at = t;
        }
        assert!(
            vendor.is_some() || t < Duration::from_secs(8),
            "nothing was spooled"
        );
        t < back_at.saturating_add(Duration::from_secs(1))
    });
    handle.shutdown(T).unwrap();
    let s = metric_exporter(&handle);
    assert_accounted(&s);
    assert_eq!((s.dropped(), s.in_spool), (0, 0), "{s:?}");
    assert!(s.spooled > 0 && s.replayed == s.spooled, "{s:?}");
    assert_eq!(points_received(vendor.as_ref().unwrap()), s.exported);
}

#[test]
fn a_shutdown_that_stops_waiting_for_a_hung_metric_export_releases_the_spool() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    // A collector that takes the connection and never answers: the last collection's export
    // hangs past the reader's own shutdown wait (5 s).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let _held = std::thread::spawn(move || {
        let conns: Vec<_> = listener.incoming().take(64).collect();
        std::thread::sleep(Duration::from_secs(60));
        drop(conns);
    });
    let exporter = ExporterSpec::Otlp(OtlpExporterSpec {
        timeout_ms: Some(20_000),
        spool: Some(spool_in(&spool)),
        ..otlp_spec(
            OtlpProtocol::HttpProtobuf,
            format!("http://127.0.0.1:{port}/v1/metrics"),
        )
    });
    let handle = Telemetry::builder(metrics_only(exporter))
        .rank(0)
        .world_size(1)
        .local();
    train(&handle, Duration::from_millis(50), |_| true);
    let started = Instant::now();
    let _ = handle.shutdown(Duration::from_secs(2));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the shutdown is bounded"
    );
    // Released: the next installation (here, or the restarted rank) opens it at once.
    let limits = lens::spool::SpoolLimits::new(1 << 20, lens::spool::WhenFull::DropOldest);
    lens::spool::Spool::open(&spool, lens::Signal::Metrics, limits).unwrap();
    let s = metric_exporter(&handle);
    assert_accounted(&s);
}
