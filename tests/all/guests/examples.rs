//! The example exporters in guest-examples/, end to end.

use std::collections::HashMap;
use std::time::Duration;

use lens::config::{CredentialSpec, ExporterSpec, SignalConfig, WasmExporterSpec};
use lens::opentelemetry::KeyValue;
use lens::opentelemetry::trace::{Span, Tracer};
use lens::{LensConfig, Telemetry};
use lens_test_support::collector::Collector;
use lens_test_support::pipeline::exporting;

const VENDOR: &str = env!("LENS_EXAMPLE_VENDOR_HTTP_WASM");

/// The vendor guest's entry, sending to the collector's OTLP/HTTP `endpoint`.
/// Its key is a host-held credential for each allowed host, from the rank's `VENDOR_API_KEY`.
fn vendor_entry(endpoint: String, allowed: Vec<String>) -> ExporterSpec {
    ExporterSpec::Wasm(WasmExporterSpec {
        name: Some("vendor".into()),
        path: VENDOR.into(),
        credentials: allowed
            .iter()
            .map(|host| CredentialSpec {
                host: format!("http://{host}"),
                header: "x-api-key".into(),
                from_env: Some("VENDOR_API_KEY".into()),
                from_file: None,
                prefix: String::new(),
            })
            .collect(),
        allowed_hosts: allowed,
        settings: [("endpoint".to_string(), endpoint)].into(),
        call_timeout_ms: Some(3000),
        ..Default::default()
    })
}

/// `config` installed as rank 1 of 2, reading an environment of the vendor's key alone.
fn install(config: LensConfig) -> lens::TelemetryHandle {
    Telemetry::builder(config)
        .rank(1)
        .world_size(2)
        .env(HashMap::from([(
            "VENDOR_API_KEY".to_string(),
            "s3cret".to_string(),
        )]))
        .install_global(false)
        .install()
        .unwrap()
}

fn vendor_config(port: u16, allowed: Vec<String>) -> LensConfig {
    LensConfig {
        service_name: "vendor-e2e".into(),
        run_id: "v".into(),
        metrics_enabled: false,
        traces: SignalConfig {
            processors: Vec::new(),
            exporters: vec![vendor_entry(
                format!("http://127.0.0.1:{port}/v1/traces"),
                allowed,
            )],
        },
        ..exporting()
    }
}

#[test]
fn vendor_http_guest_delivers_otlp_to_a_real_collector() {
    let collector = Collector::start();
    let port = collector.http_port;
    let handle = install(vendor_config(port, vec![format!("127.0.0.1:{port}")]));
    let tracer = handle.tracer("trainer");
    for step in 0..3 {
        let mut s = tracer.start("vendor_step");
        s.set_attribute(KeyValue::new("step", step));
        s.set_attribute(KeyValue::new("dataset", "pretraining"));
        s.end();
    }
    handle.force_flush(Duration::from_secs(10)).unwrap();
    let out = collector.wait_for("three vendor_step spans", |o| {
        Collector::span_names(o)
            .iter()
            .filter(|n| *n == "vendor_step")
            .count()
            == 3
    });
    for expected in [
        "service.name: Str(vendor-e2e)",
        "dl.rank: Int(1)",
        "step: Int(2)",
        "dataset: Str(pretraining)",
    ] {
        assert!(
            out.contains(expected),
            "collector output lacks `{expected}`:\n{out}"
        );
    }
    handle.shutdown(Duration::from_secs(10)).unwrap();
    let e = handle.stats().exporters[0].clone();
    assert_eq!((e.exported, e.dropped()), (3, 0), "{e:?}");
}

#[test]
fn vendor_http_guest_without_the_host_granted_is_denied_and_counts_drops() {
    let collector = Collector::start();
    let handle = Telemetry::builder(vendor_config(collector.http_port, Vec::new()))
        .env(HashMap::<String, String>::new())
        .install_global(false)
        .install()
        .unwrap();
    handle.tracer("t").start("never_arrives").end();
    let err = handle
        .force_flush(Duration::from_secs(10))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!(
            "force_flush incomplete: traces: exporter `vendor`: rejected: the host denied a \
             request to 127.0.0.1:{}: not in the entry's allowed_hosts",
            collector.http_port
        )
    );
    handle.shutdown(Duration::from_secs(10)).ok();
    let e = handle.stats().exporters[0].clone();
    assert_eq!(
        (e.exported, e.dropped_export_failed, e.guest_errors),
        (0, 1, 1),
        "{e:?}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(!Collector::span_names(&collector.output()).contains(&"never_arrives".to_string()));
}

#[test]
fn vendor_http_guest_delivers_metrics_and_log_records_to_their_otlp_paths() {
    // One endpoint without a path: each signal's exporter posts to its OTLP path.
    let collector = Collector::start();
    let port = collector.http_port;
    let entry = || SignalConfig {
        processors: Vec::new(),
        exporters: vec![vendor_entry(
            format!("http://127.0.0.1:{port}"),
            vec![format!("127.0.0.1:{port}")],
        )],
    };
    let config = LensConfig {
        traces_enabled: false,
        metrics_enabled: true,
        logs_enabled: true,
        metric_export_interval_ms: 200,
        metrics: entry(),
        logs: entry(),
        ..vendor_config(port, Vec::new())
    };
    let handle = install(config);
    handle
        .meter("trainer")
        .u64_counter("vendor.tokens")
        .build()
        .add(4096, &[KeyValue::new("phase", "train")]);
    let bridge = handle.log_bridge(log::LevelFilter::Info, "");
    log::Log::log(
        &bridge,
        &log::Record::builder()
            .level(log::Level::Warn)
            .target("trainer")
            .args(format_args!("vendor log line"))
            .build(),
    );
    handle.force_flush(Duration::from_secs(10)).unwrap();
    let out = collector.wait_for("the metric and the log record", |o| {
        o.contains("Name: vendor.tokens") && o.contains("vendor log line")
    });
    assert!(out.contains("phase: Str(train)"), "{out}");
    handle.shutdown(Duration::from_secs(10)).unwrap();
    let stats = handle.stats();
    for e in [&stats.metric_exporters[0], &stats.log_exporters[0]] {
        assert!(e.exported >= 1 && e.dropped() == 0, "{e:?}");
    }
}
