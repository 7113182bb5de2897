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
pub(super) const SPANS: usize = 600;

/// A rank exporting `SPANS` spans through the vendor exporter to `server`, its key `key`;
/// returns how the flush went and the exporter's counts after it.
fn run(
    server: &IngestServer,
    name: &str,
    key: &str,
) -> (Result<(), lens::LensError>, lens::trace::ExporterSnapshot) {
    let endpoint = format!("http://{}/v1/traces", server.authority());
    run_exporter(
        server,
        VENDOR,
        name,
        ("x-acme-key", key),
        &[("endpoint", &endpoint)],
    )
}

/// A rank exporting `SPANS` spans through the wasm exporter at `path` to `server`, with the
/// credential `(header, key)` for the server's host and `settings`; returns how the flush went
/// and the exporter's counts after it.
pub(super) fn run_exporter(
    server: &IngestServer,
    path: &str,
    name: &str,
    (header, key): (&str, &str),
    settings: &[(&str, &str)],
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
                path: path.into(),
                allowed_hosts: vec![authority.clone()],
                credentials: vec![CredentialSpec {
                    host: format!("http://{authority}"),
                    header: header.into(),
                    from_env: Some("ACME_KEY".into()),
                    from_file: None,
                    prefix: String::new(),
                }],
                settings: settings
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
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
    assert_every_span_once(&server, ("x-acme-key", key), "application/x-protobuf");
}

/// Every request `server` received was a POST to `/v1/traces` with the key in `header` and
/// `content_type`, and together they hold each of the `SPANS` spans exactly once.
pub(super) fn assert_every_span_once(
    server: &IngestServer,
    (header, key): (&str, &str),
    content_type: &str,
) {
    let mut names = Vec::new();
    for r in server.received() {
        assert_eq!(r.line, "POST /v1/traces HTTP/1.1");
        assert_eq!(r.header(header), Some(key));
        assert_eq!(r.header("content-type"), Some(content_type));
        assert_eq!(
            r.header("content-length"),
            Some(r.body.len().to_string().as_str())
        );
        let request = if content_type == "application/json" {
            serde_json::from_slice::<ExportTraceServiceRequest>(&r.body).unwrap()
        } else {
            ExportTraceServiceRequest::decode(&r.body[..]).unwrap()
        };
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
    let (flushed, stats) = run(&server, WRONG.0, WRONG.1);
    assert_rejected_with_401(capture, &server, flushed, &stats);
}

/// The exporter name and the key of the runs with a wrong key.
pub(super) const WRONG: (&str, &str) = ("acme-wrong", "a-wrong-key");

/// A rank whose exporter [`WRONG`]`.0` sent the key `WRONG.1` to `server`: the flush failed with the 401,
/// every span is counted as a failed export (the guest's error, not retried), its last error
/// is one line in the host's words, and the rank's log names the status and the server's
/// answer but never the key.
pub(super) fn assert_rejected_with_401(
    capture: &lens_test_support::log::CaptureLog,
    server: &IngestServer,
    flushed: Result<(), lens::LensError>,
    stats: &lens::trace::ExporterSnapshot,
) {
    let (name, wrong_key) = WRONG;
    let err = flushed.unwrap_err().to_string();
    let rejected = format!("rejected: 401 Unauthorized from {}", server.authority());
    assert_eq!(
        err,
        format!("force_flush incomplete: traces: exporter `{name}`: {rejected}")
    );
    assert_eq!(
        (stats.exported, stats.dropped_export_failed, stats.retries),
        (0, SPANS as u64, 0),
        "rejected whole, not retried: {stats:?}"
    );
    assert_eq!(stats.guest_errors, stats.batches_failed, "{stats:?}");
    assert_eq!(stats.last_error, Some(rejected));
    let logged = capture.matching(&format!("`{name}`"));
    assert!(
        logged
            .iter()
            .any(|l| l.contains("HTTP 401") && l.contains("invalid api key")),
        "{logged:?}"
    );
    assert!(logged.iter().all(|l| !l.contains(wrong_key)), "{logged:?}");
}

#[test]
fn the_demo_table_shows_a_rejected_key_as_one_line_in_the_hosts_words() {
    let server = IngestServer::start(Answer {
        required: Some(("x-acme-key".into(), "the-right-key".into())),
        ..Answer::default()
    });
    let authority = server.authority();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("lens.toml");
    // No credential: the guest's requests carry no key, and the vendor answers 401.
    std::fs::write(
        &config,
        format!(
            "enabled = true\nexport_strategy = \"all_ranks\"\nmetrics_enabled = false\n\
             [[traces.exporters]]\nkind = \"wasm\"\nname = \"acme\"\npath = {VENDOR:?}\n\
             allowed_hosts = [\"{authority}\"]\n\
             settings = {{ endpoint = \"http://{authority}/v1/traces\" }}\n"
        ),
    )
    .unwrap();
    let run = crate::lens()
        .args(["demo", "--ranks", "1", "--steps", "5", "--step-ms", "0"])
        .arg("--config")
        .arg(&config)
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&run.stdout);
    let row = table
        .lines()
        .find(|l| l.trim_start().starts_with("0  yes"))
        .unwrap_or_else(|| panic!("rank 0's row: {table}"));
    assert!(
        row.ends_with(&format!(
            "ERROR: shutdown incomplete: traces: exporter `acme`: rejected: 401 Unauthorized \
             from {authority}"
        )),
        "{row}"
    );
    assert!(!table.contains("InternalFailure"), "{table}");
}
