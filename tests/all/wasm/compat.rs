//! Components built for `lens:exporter@0.2.0` keep loading and running unchanged: the
//! recorder guest as it was built for 0.2.0 (committed in `tests/all/fixtures/`, never rebuilt)
//! receives every span as the SDK made it, in every encoding, and passes `lens check` (its
//! errors are rejections). The WAT guests (`tests/guests/wat/`) are 0.2.0 components too.

use std::path::PathBuf;

use lens::config::WasmPreopen;
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::trace::SpanExporter;
use lens::testing::spans;
use lens::wasm::{GuestInterface, Signal, WasmSpanExporter};
use lens_test_support::wasm::{lines, spec};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;

/// The 0.2.0 recorder, as built from `tests/guests/programs/recorder` at commit 2b1287e.
fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/all/fixtures/recorder-lens-exporter-0.2.0.wasm")
}

const FIXTURE_SHA256: &str = "cada3dfc53c1723dd101263af6e8598af637e0ed6da304f847691ce5d9505212";

fn recorder(dir: &std::path::Path, encoding: &str) -> lens::config::WasmExporterSpec {
    let mut s = spec(
        fixture().to_str().unwrap(),
        &[("out", "/out/batches.jsonl"), ("encoding", encoding)],
    );
    // The pin proves the fixture is the file built for 0.2.0, not a rebuild.
    s.sha256 = Some(FIXTURE_SHA256.into());
    s.preopens = vec![WasmPreopen {
        host: dir.to_path_buf(),
        guest: "/out".into(),
        read_only: false,
    }];
    s
}

#[test]
fn the_fixture_exports_the_0_2_0_span_exporter_only() {
    let engine = lens::wasm::artefact::engine::engine(false).unwrap();
    let loaded = lens::wasm::load(&fixture(), Default::default(), engine, None).unwrap();
    assert_eq!(
        loaded.interfaces,
        [GuestInterface {
            signal: Signal::Traces,
            role: lens::wasm::Role::Exporter,
            version: "0.2.0",
        }]
    );
    assert_eq!(
        loaded.interfaces[0].name(),
        "lens:exporter/span-exporter@0.2.0"
    );
    assert_eq!(
        loaded.interface(Signal::Metrics).unwrap_err().to_string(),
        "is configured under [metrics] but does not export `lens:exporter/metric-exporter@0.4.0` (it exports `lens:exporter/span-exporter@0.2.0`); build it for the `metrics` or `all-signals` world"
    );
}

#[test]
fn a_0_2_0_guest_receives_every_span_in_every_encoding() {
    let batch = [
        spans::every_value_type(),
        spans::unicode(),
        spans::events_links_status(),
    ]
    .concat();
    let resource = Resource::builder_empty().build();
    for encoding in ["typed", "otlp", "otlp-json"] {
        let dir = tempfile::tempdir().unwrap();
        let (exporter, stats) =
            WasmSpanExporter::from_config("old", &recorder(dir.path(), encoding), &resource)
                .unwrap();
        futures_executor::block_on(exporter.export(batch.clone())).unwrap();
        exporter.shutdown().unwrap();
        let got = lines(&dir.path().join("batches.jsonl"));
        assert!(got[0].get("init").is_some());
        let names: Vec<String> = match encoding {
            "typed" => got[1]["typed"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["name"].as_str().unwrap().to_string())
                .collect(),
            "otlp" => {
                let bytes: Vec<u8> = serde_json::from_value(got[1]["otlp"].clone()).unwrap();
                let request = ExportTraceServiceRequest::decode(bytes.as_slice()).unwrap();
                request.resource_spans[0]
                    .scope_spans
                    .iter()
                    .flat_map(|s| s.spans.iter().map(|s| s.name.clone()))
                    .collect()
            }
            _ => {
                let request: ExportTraceServiceRequest =
                    serde_json::from_str(got[1]["otlp_json"].as_str().unwrap()).unwrap();
                request.resource_spans[0]
                    .scope_spans
                    .iter()
                    .flat_map(|s| s.spans.iter().map(|s| s.name.clone()))
                    .collect()
            }
        };
        let mut expected: Vec<String> = batch.iter().map(|s| s.name.to_string()).collect();
        let mut names = names;
        expected.sort();
        names.sort();
        assert_eq!(names, expected, "{encoding}");
        let snap = stats.snapshot();
        assert_eq!((snap.guest_errors, snap.traps.len()), (0, 0), "{encoding}");
    }
}

/// The suite's last case calls the 0.2.0 guest's `export` after its `shutdown`: the guest's
/// `err(string)` must come back as a clean rejection, not a type mismatch or a trap.
#[test]
fn lens_check_passes_on_the_0_2_0_fixture() {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::lens()
        .arg("check")
        .arg(fixture())
        .arg("--preopen")
        .arg(format!("{}:/out:rw", dir.path().display()))
        .args(["--setting", "out=/out/batches.jsonl"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("  exports       lens:exporter/span-exporter@0.2.0 (valid)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("      ok    shutdown, then an export fails cleanly"),
        "{stdout}"
    );
}
