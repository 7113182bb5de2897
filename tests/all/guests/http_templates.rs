//! `lens new LANG DIR --template http` (Python, JavaScript, Rust): the vendor exporter each
//! language's template makes, built with `lens build` outside the repository, in a rank against
//! an ingest that requires its key. With the key held by the host every span arrives exactly once; with a wrong key every
//! batch is `rejected`, the status in the rank's log and the key nowhere in it. The project's
//! own config validates, and its Python is clean under the repository's linter.

use std::path::PathBuf;
use std::process::Command;

use lens_test_support::http::{Answer, IngestServer};
use lens_test_support::log::capture_log;

use super::vendor_http::{
    SPANS, WRONG, assert_every_span_once, assert_rejected_with_401, run_exporter,
};
use crate::project::{lens_in, ok};

const HEADER: &str = "x-api-key";

/// The template's project for `language` (every signal), built; returns its folder (kept for
/// the test's length) and its component.
fn built(language: &str) -> (tempfile::TempDir, PathBuf) {
    let outside = tempfile::tempdir().unwrap();
    let name = format!("acme-{language}");
    let made = ok(lens_in(outside.path()).args([
        "new",
        language,
        &name,
        "--template",
        "http",
        "--signals",
        "spans,metrics,logs",
    ]));
    assert!(made.contains("test_server.py"), "{made}");
    let project = outside.path().join(&name);
    // The README points to this language's HTTP client.
    let readme = std::fs::read_to_string(project.join("README.md")).unwrap();
    let client = match language {
        "python" => "`lens_exporter_sdk.http`",
        "js" => "`exportResult`",
        _ => "`lens_exporter_sdk::http`",
    };
    assert!(readme.contains(client), "{readme}");
    let manifest = std::fs::read_to_string(project.join("lens-exporter.toml")).unwrap();
    assert!(manifest.contains("\nhttp = true\n"), "{manifest}");
    ok(lens_in(&project).arg("build"));
    // The config `lens new` wrote is valid as it stands (with its key's variable set).
    let validated = ok(lens_in(&project)
        .args(["config", "validate", "lens.toml"])
        .env("VENDOR_API_KEY", "test-key"));
    assert!(!validated.contains("test-key"), "{validated}");
    for script in ["test_server.py", "app.py"] {
        let path = project.join(script);
        if path.exists() {
            ok(Command::new("ruff")
                .args(["check", "--no-cache"])
                .arg(&path));
            ok(Command::new("ruff")
                .args(["format", "--check", "--no-cache"])
                .arg(&path));
        }
    }
    let wasm = project.join(format!("build/{name}.wasm"));
    (outside, wasm)
}

/// The template's exporter delivers every span once with the right key, in `content_type`
/// (`settings` picking it), and has every batch rejected with a wrong one.
fn delivers_with_the_key_and_is_rejected_without(
    language: &str,
    settings: &[(&str, &str)],
    content_type: &str,
) {
    let (_dir, wasm) = built(language);
    let wasm = wasm.to_str().unwrap();
    let key = "sk-acme-7c21";
    let server = IngestServer::start(Answer {
        required: Some((HEADER.into(), key.into())),
        ..Answer::default()
    });
    let endpoint = format!("http://{}", server.authority());
    let mut with_endpoint = vec![("endpoint", endpoint.as_str())];
    with_endpoint.extend_from_slice(settings);
    let (flushed, stats) = run_exporter(&server, wasm, "acme", (HEADER, key), &with_endpoint);
    flushed.unwrap();
    assert_eq!(
        (stats.received, stats.exported),
        (SPANS as u64, SPANS as u64),
        "{stats:?}"
    );
    assert_every_span_once(&server, (HEADER, key), content_type);

    let capture = capture_log();
    let (flushed, stats) = run_exporter(&server, wasm, WRONG.0, (HEADER, WRONG.1), &with_endpoint);
    assert_rejected_with_401(capture, &server, flushed, &stats);
}

#[test]
fn the_python_http_template_authenticates_with_a_host_held_key() {
    delivers_with_the_key_and_is_rejected_without("python", &[], "application/x-protobuf");
}

#[test]
fn the_python_http_template_sends_otlp_json_when_its_settings_say_so() {
    delivers_with_the_key_and_is_rejected_without(
        "python",
        &[("format", "json")],
        "application/json",
    );
}

#[test]
fn the_rust_http_template_authenticates_with_a_host_held_key() {
    delivers_with_the_key_and_is_rejected_without("rust", &[], "application/x-protobuf");
}

#[test]
fn the_javascript_http_template_authenticates_with_a_host_held_key() {
    delivers_with_the_key_and_is_rejected_without("js", &[], "application/x-protobuf");
}

#[test]
fn the_javascript_http_template_sends_otlp_json_when_its_settings_say_so() {
    delivers_with_the_key_and_is_rejected_without("js", &[("format", "json")], "application/json");
}
