//! Delivery under collector faults, against real processes on 127.0.0.1: a rotel collector
//! killed and started again mid-run costs no span, over gRPC and HTTP (the OTLP exporters retry
//! retryable failures until their timeout); a scripted OTLP/HTTP endpoint
//! (`tests/support/otlp_http_stub.py`) answering 503 with `Retry-After` then 200, 400, or never.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lens::config::{ExporterSpec, OtlpExporterSpec, OtlpProtocol, SignalConfig};
use lens::opentelemetry::KeyValue;
use lens::opentelemetry::trace::{Span, Tracer};
use lens::{LensConfig, Telemetry};
use lens_test_support::collector::{Collector, free_port};
use lens_test_support::pipeline::{LocalInstall, exporting, otlp_signal, otlp_spec};

const T: Duration = Duration::from_secs(30);

fn a_collector_restart_loses_nothing(protocol: OtlpProtocol) {
    let mut collector = Collector::start_quiet();
    let mut config = LensConfig {
        metrics_enabled: false,
        traces: otlp_signal(protocol, collector.endpoint(protocol, lens::Signal::Traces)),
        ..exporting()
    };
    // Batches every 100 ms, so that several fall into the outage.
    config.batch.scheduled_delay_ms = 100;
    let handle = Telemetry::builder(config).rank(0).world_size(1).local();
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
    // The batches sent during the outage were retried, and none was given up.
    assert!(e.retries > 0, "{e:?}");
    assert_eq!(e.retries_exhausted, 0, "{e:?}");
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

/// The scripted endpoint: its process and the statuses it answered, in order.
struct Stub {
    child: Child,
    port: u16,
    answered: Arc<Mutex<Vec<String>>>,
}

impl Stub {
    fn start(mode: &str) -> Self {
        let port = free_port();
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/support/otlp_http_stub.py"
        );
        let mut child = Command::new("python3")
            .args([script, &port.to_string(), mode])
            .stdout(Stdio::piped())
            .spawn()
            .expect("starting the OTLP/HTTP stub");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(lines.next().unwrap().unwrap(), "listening");
        let answered = Arc::new(Mutex::new(Vec::new()));
        let seen = answered.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Some(status) = line.strip_prefix("request ") {
                    seen.lock().unwrap().push(status.to_string());
                }
            }
        });
        Self {
            child,
            port,
            answered,
        }
    }

    /// The statuses answered so far, once the stub's report has settled: its lines reach
    /// this process through a pipe and a reader thread, which may lag the exporter's own view
    /// of the answer (seen once under load).
    fn answered(&self) -> Vec<String> {
        let read = || self.answered.lock().unwrap().clone();
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        let mut last = read();
        loop {
            std::thread::sleep(Duration::from_millis(100));
            let now = read();
            if (now == last && !now.is_empty()) || std::time::Instant::now() > deadline {
                return now;
            }
            last = now;
        }
    }

    /// 100 spans in one batch to the stub, exporter timeout `timeout_ms`; the exporter's
    /// statistics and how long the shutdown took.
    fn send_100_spans(&self, timeout_ms: u64) -> (lens::ExporterSnapshot, Duration) {
        let spec = OtlpExporterSpec {
            timeout_ms: Some(timeout_ms),
            ..otlp_spec(
                OtlpProtocol::HttpProtobuf,
                format!("http://127.0.0.1:{}/v1/traces", self.port),
            )
        };
        let traces = SignalConfig {
            exporters: vec![ExporterSpec::Otlp(spec)],
            processors: Vec::new(),
        };
        let config = LensConfig {
            metrics_enabled: false,
            traces,
            ..exporting()
        };
        let handle = Telemetry::builder(config).rank(0).world_size(1).local();
        let tracer = handle.tracer("trainer");
        for _ in 0..100 {
            tracer.start("step").end();
        }
        let started = Instant::now();
        let _ = handle.shutdown(T);
        (handle.stats().exporters[0].clone(), started.elapsed())
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn unavailable_with_retry_after_is_retried_until_accepted() {
    let stub = Stub::start("unavailable:2");
    let (e, took) = stub.send_100_spans(10_000);
    assert_eq!((e.exported, e.dropped()), (100, 0), "{e:?}");
    assert_eq!(stub.answered(), ["503", "503", "200"]);
    assert_eq!((e.retries, e.retries_exhausted), (2, 0), "{e:?}");
    // `Retry-After: 1` was honoured, twice.
    assert!(took >= Duration::from_secs(2), "{took:?}");
}

#[test]
fn a_bad_request_is_not_retried() {
    let stub = Stub::start("bad-request");
    let (e, took) = stub.send_100_spans(10_000);
    assert_eq!((e.exported, e.dropped_export_failed), (0, 100), "{e:?}");
    assert_eq!(stub.answered(), ["400"]);
    assert_eq!((e.retries, e.retries_exhausted), (0, 0), "{e:?}");
    assert!(
        took < Duration::from_secs(5),
        "no backoff for a permanent error: {took:?}"
    );
}

#[test]
fn an_endpoint_that_never_answers_is_bounded_and_counted() {
    let stub = Stub::start("silent");
    let (e, took) = stub.send_100_spans(1_000);
    assert_eq!(
        (e.received, e.exported, e.dropped()),
        (100, 0, 100),
        "{e:?}"
    );
    assert!(
        took < Duration::from_secs(15),
        "bounded by the timeouts: {took:?}"
    );
    assert!(!stub.answered().is_empty(), "the request did reach it");
    // Every request the exporter sent is an attempt: the stub saw them all.
    let attempts = stub.answered().len() as u64;
    assert_eq!(e.retries, attempts - e.batches_failed, "{e:?}");
}
