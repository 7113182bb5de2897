//! OTLP end to end against a real collector (rotel) on 127.0.0.1, over gRPC and HTTP.

use std::time::{Duration, Instant};

use lens::config::OtlpProtocol;
use lens::opentelemetry::KeyValue;
use lens::opentelemetry::trace::{Span, Tracer};
use lens::{LensConfig, Telemetry};
use lens_test_support::collector::{Collector, free_port};
use lens_test_support::pipeline::{LocalInstall, exporting, otlp_signal};

const T: Duration = Duration::from_secs(20);

fn otlp_config(protocol: OtlpProtocol, endpoint: String) -> LensConfig {
    LensConfig {
        service_name: "otlp-e2e".into(),
        run_id: "e2e".into(),
        metrics_enabled: false,
        traces: otlp_signal(protocol, endpoint),
        ..exporting()
    }
}

fn assert_printed(out: &str, expected: &str) {
    assert!(
        out.contains(expected),
        "collector output lacks `{expected}`:\n{out}"
    );
}

fn spans_arrive(protocol: OtlpProtocol) {
    let collector = Collector::start();
    let endpoint = collector.endpoint(protocol, lens::Signal::Traces);
    let handle = Telemetry::builder(otlp_config(protocol, endpoint))
        .rank(2)
        .world_size(4)
        .local();
    let tracer = handle.tracer("trainer");
    tracer.in_span("train_step", |cx| {
        let span = lens::opentelemetry::trace::TraceContextExt::span(&cx);
        span.set_attribute(KeyValue::new("step", 17));
        span.set_attribute(KeyValue::new("phase", "forward ünïcode"));
        span.set_attribute(KeyValue::new("loss", 2.5));
        let mut child = tracer.start("optimizer");
        child.set_attribute(KeyValue::new("lr", 0.0003));
        child.end();
    });
    handle.force_flush(T).unwrap();
    let out = collector.wait_for("both spans", |o| {
        let names = Collector::span_names(o);
        names.contains(&"train_step".to_string()) && names.contains(&"optimizer".to_string())
    });
    for expected in [
        "service.name: Str(otlp-e2e)",
        "dl.rank: Int(2)",
        "dl.world_size: Int(4)",
        "service.instance.id: Str(e2e-rank2)",
        "step: Int(17)",
        "phase: Str(forward ünïcode)",
        "loss: Double(2.5)",
        "lr: Double(0.0003)",
    ] {
        assert_printed(&out, expected);
    }
    handle.shutdown(T).unwrap();
    let e = &handle.stats().exporters[0];
    assert_eq!((e.exported, e.dropped()), (2, 0), "{e:?}");
}

#[test]
fn spans_arrive_at_a_real_collector_over_grpc() {
    spans_arrive(OtlpProtocol::Grpc);
}

#[test]
fn spans_arrive_at_a_real_collector_over_http_protobuf() {
    spans_arrive(OtlpProtocol::HttpProtobuf);
}

#[test]
fn an_unreachable_collector_counts_failed_batches_without_blocking_training() {
    let port = free_port(); // nothing listens here
    let mut cfg = otlp_config(
        OtlpProtocol::HttpProtobuf,
        format!("http://127.0.0.1:{port}/v1/traces"),
    );
    cfg.otlp.timeout_ms = Some(500);
    let handle = Telemetry::builder(cfg).local();
    let tracer = handle.tracer("t");
    let started = Instant::now();
    for _ in 0..1000 {
        tracer.start("s").end();
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "ending spans must not wait on the exporter"
    );
    let _ = handle.shutdown(T);
    let e = &handle.stats().exporters[0];
    assert_eq!(e.received, 1000);
    assert_eq!(e.exported, 0);
    assert_eq!(e.dropped(), 1000, "{e:?}");
}

/// A rank producing 50k spans/s for 10 s to a local collector over OTLP, default settings:
/// every span is accounted for exactly, and the collector holds exactly the exported ones.
/// Whether any are dropped depends on the machine (the exporter's capacity in a debug build
/// here is ~60k spans/s), so the figures are printed, not asserted: with
/// `-- --nocapture` this is the measurement behind the default queue size.
#[test]
fn fifty_thousand_spans_per_second_are_accounted_for_exactly() {
    let collector = Collector::start_quiet();
    let cfg = otlp_config(
        OtlpProtocol::Grpc,
        format!("http://127.0.0.1:{}", collector.grpc_port),
    );
    let handle = Telemetry::builder(cfg).local();
    let tracer = handle.tracer("load");
    const RATE: u64 = 50_000;
    const SECONDS: u64 = 10;
    let started = Instant::now();
    let mut produced = 0u64;
    // Paced in 1 ms slices of 50 spans.
    while produced < RATE * SECONDS {
        for _ in 0..50 {
            let mut s = tracer.start("step");
            s.set_attribute(KeyValue::new("i", produced as i64));
            s.end();
            produced += 1;
        }
        let due = started + Duration::from_micros(produced * 1_000_000 / RATE);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    let elapsed = started.elapsed();
    handle.shutdown(T).unwrap();
    let e = &handle.stats().exporters[0];
    eprintln!("produced {produced} spans in {elapsed:?}: {e:?}");
    assert_eq!(e.received, RATE * SECONDS);
    assert_eq!(e.exported + e.dropped(), RATE * SECONDS, "{e:?}");
    assert_eq!(
        e.dropped(),
        e.dropped_queue_full,
        "only overflow may drop: {e:?}"
    );
    let exported = e.exported;
    // The collector acknowledged every request; its debug log can lag behind that.
    let counted = Collector::spans_counted;
    let out = collector.wait_for("every exported span", |o| counted(o) >= exported);
    assert_eq!(
        counted(&out),
        exported,
        "the collector counted what it acknowledged"
    );
}

fn metrics_arrive(protocol: OtlpProtocol) {
    let collector = Collector::start();
    let endpoint = collector.endpoint(protocol, lens::Signal::Metrics);
    let mut cfg = otlp_config(protocol, "http://127.0.0.1:9/unused".into());
    cfg.traces_enabled = false;
    cfg.metrics_enabled = true;
    cfg.metric_export_interval_ms = 200;
    cfg.metrics = otlp_signal(protocol, endpoint);
    let handle = Telemetry::builder(cfg).rank(1).world_size(2).local();
    let meter = handle.meter("trainer");
    meter
        .u64_counter("train.tokens")
        .build()
        .add(4096, &[KeyValue::new("phase", "train")]);
    meter
        .f64_histogram("train.step_time")
        .with_unit("ms")
        .build()
        .record(12.5, &[]);
    let out = collector.wait_for("both metrics from the periodic reader", |o| {
        o.contains("Name: train.tokens") && o.contains("Name: train.step_time")
    });
    for expected in [
        "service.instance.id: Str(e2e-rank1)",
        "dl.rank: Int(1)",
        "phase: Str(train)",
    ] {
        assert!(
            out.contains(expected),
            "collector output lacks `{expected}`:\n{out}"
        );
    }
    handle.shutdown(T).unwrap();
}

#[test]
fn metrics_arrive_at_a_real_collector_over_grpc() {
    metrics_arrive(OtlpProtocol::Grpc);
}

#[test]
fn metrics_arrive_at_a_real_collector_over_http_protobuf() {
    metrics_arrive(OtlpProtocol::HttpProtobuf);
}

fn logs_arrive(protocol: OtlpProtocol) {
    let collector = Collector::start();
    let config = LensConfig {
        logs_enabled: true,
        exporter: "none".into(),
        logs: otlp_signal(protocol, collector.endpoint(protocol, lens::Signal::Logs)),
        traces: Default::default(),
        ..otlp_config(protocol, String::new())
    };
    let handle = Telemetry::builder(config).rank(1).world_size(2).local();
    let bridge = handle.log_bridge(log::LevelFilter::Info, "");
    let tracer = handle.tracer("trainer");
    let (trace_id, span_id) = tracer.in_span("checkpoint", |cx| {
        log::Log::log(
            &bridge,
            &log::Record::builder()
                .level(log::Level::Info)
                .target("trainer::ckpt")
                .args(format_args!("checkpoint saved at step 300"))
                .build(),
        );
        let sc = lens::opentelemetry::trace::TraceContextExt::span(&cx)
            .span_context()
            .clone();
        (sc.trace_id(), sc.span_id())
    });
    handle.force_flush(T).unwrap();
    let out = collector.wait_for("the log record", |o| {
        o.contains("checkpoint saved at step 300")
    });
    for expected in [
        trace_id.to_string(),
        span_id.to_string(),
        "trainer::ckpt".to_string(),
        "service.instance.id: Str(e2e-rank1)".to_string(),
    ] {
        assert_printed(&out, &expected);
    }
    handle.shutdown(T).unwrap();
    let e = &handle.stats().log_exporters[0];
    assert_eq!((e.exported, e.dropped()), (1, 0), "{e:?}");
}

#[test]
fn a_log_inside_a_span_reaches_a_real_collector_with_its_ids_over_grpc() {
    logs_arrive(OtlpProtocol::Grpc);
}

#[test]
fn a_log_inside_a_span_reaches_a_real_collector_with_its_ids_over_http() {
    logs_arrive(OtlpProtocol::HttpProtobuf);
}
