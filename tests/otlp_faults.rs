//! Delivery under collector faults, against real rotel processes on 127.0.0.1: a collector
//! killed and started again mid-run costs no span, over gRPC and HTTP (the OTLP exporters retry
//! retryable failures until their timeout).

use std::time::{Duration, Instant};

use lens::config::{ExporterSpec, OtlpExporterSpec, OtlpProtocol, SignalConfig};
use lens::opentelemetry::KeyValue;
use lens::opentelemetry::trace::{Span, Tracer};
use lens::{LensConfig, Telemetry};
use lens_test_support::collector::Collector;
use lens_test_support::pipeline::exporting;

const T: Duration = Duration::from_secs(30);

fn a_collector_restart_loses_nothing(protocol: OtlpProtocol) {
    let mut collector = Collector::start_quiet();
    let endpoint = match protocol {
        OtlpProtocol::Grpc => format!("http://127.0.0.1:{}", collector.grpc_port),
        OtlpProtocol::HttpProtobuf => format!("http://127.0.0.1:{}/v1/traces", collector.http_port),
    };
    let mut config = LensConfig {
        metrics_enabled: false,
        traces: SignalConfig {
            exporters: vec![ExporterSpec::Otlp(OtlpExporterSpec {
                protocol: Some(protocol),
                endpoint: Some(endpoint),
                ..Default::default()
            })],
        },
        ..exporting()
    };
    // Batches every 100 ms, so that several fall into the outage.
    config.batch.scheduled_delay_ms = 100;
    let handle = Telemetry::builder(config)
        .rank(0)
        .world_size(1)
        .env(std::collections::HashMap::<String, String>::new())
        .install_global(false)
        .install()
        .unwrap();
    let tracer = handle.tracer("trainer");
    // 1,000 spans/s for 6 s; the collector is down from 1.5 s to 4.5 s.
    const RATE: u64 = 1_000;
    const TOTAL: u64 = 6_000;
    let started = Instant::now();
    let (mut killed, mut restarted) = (false, false);
    for i in 0..TOTAL {
        let mut s = tracer.start("step");
        s.set_attribute(KeyValue::new("i", i as i64));
        s.end();
        let now = started.elapsed();
        if !killed && now >= Duration::from_millis(1_500) {
            collector.kill();
            killed = true;
        }
        if !restarted && now >= Duration::from_millis(4_500) {
            collector.restart();
            restarted = true;
        }
        let due = started + Duration::from_micros((i + 1) * 1_000_000 / RATE);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    assert!(killed && restarted);
    handle.shutdown(T).unwrap();
    let e = &handle.stats().exporters[0];
    assert_eq!(
        (e.received, e.exported, e.dropped()),
        (TOTAL, TOTAL, 0),
        "a 3 s outage, shorter than the exporter's 10 s timeout, loses nothing: {e:?}"
    );
    // The collector counted, after its restart, what it had not acknowledged before.
    let out = collector.wait_for("every span", |o| Collector::spans_counted(o) >= TOTAL);
    assert!(Collector::spans_counted(&out) >= TOTAL);
}

#[test]
fn a_collector_restarted_mid_run_loses_no_span_over_grpc() {
    a_collector_restart_loses_nothing(OtlpProtocol::Grpc);
}

#[test]
fn a_collector_restarted_mid_run_loses_no_span_over_http() {
    a_collector_restart_loses_nothing(OtlpProtocol::HttpProtobuf);
}
