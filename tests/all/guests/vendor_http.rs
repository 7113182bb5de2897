//! The Rust vendor exporter (`guest-examples/rust-vendor-http`, on the SDK's HTTP client) in a
//! rank, against a vendor's ingest that requires its key: with the key held by the host, every
//! span arrives exactly once and the key travels only in the credential's header; with a wrong
//! key, every batch is `rejected`, the status in the rank's log.

use std::collections::HashMap;
use std::time::Duration;

use lens::config::{CredentialSpec, ExporterSpec, SignalConfig, WasmExporterSpec};
use lens::opentelemetry::trace::{Span, Tracer};
use lens::{LensConfig, Telemetry};
use lens_test_support::http::{Answer, IngestServer};
use lens_test_support::log::capture_log;
use lens_test_support::pipeline::exporting;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;

const VENDOR: &str = env!("LENS_EXAMPLE_VENDOR_HTTP_WASM");
const SPANS: usize = 600;

/// A rank exporting `SPANS` spans through the vendor exporter to `server`, its key `key`;
/// returns how the flush went and the exporter's counts after it.
fn run(
    server: &IngestServer,
    name: &str,
    key: &str,
) -> (Result<(), lens::LensError>, lens::trace::ExporterSnapshot) {
    let authority = server.authority();
    let config = LensConfig {
        service_name: "vendor".into(),
        run_id: "v".into(),
        metrics_enabled: false,
        traces: SignalConfig {
            processors: Vec::new(),
            exporters: vec![ExporterSpec::Wasm(WasmExporterSpec {
                name: Some(name.into()),
                path: VENDOR.into(),
                allowed_hosts: vec![authority.clone()],
                credentials: vec![CredentialSpec {
                    host: format!("http://{authority}"),
                    header: "x-acme-key".into(),
                    from_env: Some("ACME_KEY".into()),
                    from_file: None,
                    prefix: String::new(),
                }],
                settings: [(
                    "endpoint".to_string(),
                    format!("http://{authority}/v1/traces"),
                )]
                .into(),
                call_timeout_ms: Some(5000),
                ..Default::default()
            })],
        },
        ..exporting()
    };
    let handle = Telemetry::builder(config)
        .rank(0)
        .world_size(1)
        .env(HashMap::from([("ACME_KEY".to_string(), key.to_string())]))
        .install_global(false)
        .install()
        .unwrap();
    let tracer = handle.tracer("trainer");
    for i in 0..SPANS {
        let mut s = tracer.start(format!("step {i}"));
        s.end();
    }
    let flushed = handle.force_flush(Duration::from_secs(20));
    let stats = handle.stats();
    handle.shutdown(Duration::from_secs(10)).ok();
    let stats = stats
        .exporters
        .into_iter()
        .find(|s| s.name == name)
        .expect("the vendor exporter's counts");
    (flushed, stats)
}

#[test]
fn the_rust_vendor_exporter_authenticates_with_a_host_held_key_and_delivers_every_span_once() {
    let key = "sk-acme-3f9a";
    let server = IngestServer::start(Answer {
        required: Some(("x-acme-key".into(), key.into())),
        ..Answer::default()
    });
    let (flushed, stats) = run(&server, "acme", key);
    flushed.unwrap();
    assert_eq!(
        (stats.received, stats.exported),
        (SPANS as u64, SPANS as u64),
        "{stats:?}"
    );
    let mut names = Vec::new();
    for r in server.received() {
        assert_eq!(r.line, "POST /v1/traces HTTP/1.1");
        assert_eq!(r.header("x-acme-key"), Some(key));
        assert_eq!(r.header("content-type"), Some("application/x-protobuf"));
        let request = ExportTraceServiceRequest::decode(&r.body[..]).unwrap();
        for rs in request.resource_spans {
            for ss in rs.scope_spans {
                names.extend(ss.spans.into_iter().map(|s| s.name));
            }
        }
    }
    names.sort();
    let mut expected: Vec<String> = (0..SPANS).map(|i| format!("step {i}")).collect();
    expected.sort();
    assert_eq!(names, expected, "every span exactly once");
}

#[test]
fn a_wrong_key_gets_every_batch_rejected_with_the_status_in_the_log() {
    let capture = capture_log();
    let server = IngestServer::start(Answer {
        required: Some(("x-acme-key".into(), "the-right-key".into())),
        ..Answer::default()
    });
    let (flushed, stats) = run(&server, "acme-wrong", "a-wrong-key");
    let err = flushed.unwrap_err().to_string();
    assert!(err.contains("HTTP 401"), "{err}");
    assert_eq!(stats.exported, 0, "{stats:?}");
    // A batch the guest rejects whole ends as a failed export (the guest's error, counted).
    assert_eq!(stats.dropped_export_failed, SPANS as u64, "{stats:?}");
    assert_eq!(stats.guest_errors, stats.batches_failed, "{stats:?}");
    assert_eq!(stats.retries, 0, "a 401 is not retried: {stats:?}");
    let logged = capture.matching("`acme-wrong`");
    assert!(
        logged
            .iter()
            .any(|l| l.contains("HTTP 401") && l.contains("invalid api key")),
        "{logged:?}"
    );
    assert!(
        logged.iter().all(|l| !l.contains("a-wrong-key")),
        "{logged:?}"
    );
}
