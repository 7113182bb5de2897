//! Helpers shared by Lens's integration tests (a library crate, so that each test binary uses
//! what it needs without dead-code allowances):
//!
//! - [`collector`]: a real OTLP collector (rotel) on loopback;
//! - [`http`]: a vendor's ingest server on loopback, recording what it receives;
//! - [`hostile`]: hostile inputs made at test time, and commands measured as they run;
//! - [`log`]: a logger capturing every record;
//! - [`registry`]: a real OCI registry (Debian's docker-registry) on loopback;
//! - [`pipeline`]: installing Lens without touching the process's environment or globals, and
//!   small exporters with scripted behaviour;
//! - [`wasm`]: wasm exporter entries for the test guests, and driving them directly;
//! - [`dist`]: the example components built by `guest-examples/build.sh`.

pub mod collector;
pub mod hostile;
pub mod http;
pub mod log;
pub mod pipeline;
pub mod registry;
pub mod wasm;

use std::path::PathBuf;

/// A component built by `guest-examples/build.sh`.
pub fn dist(name: &str) -> PathBuf {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../guest-examples/dist")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: run guest-examples/build.sh first",
        path.display()
    );
    path
}

/// The integer resource attribute `key` of an OTLP `ResourceSpans`.
pub fn otlp_resource_int(
    rs: &opentelemetry_proto::tonic::trace::v1::ResourceSpans,
    key: &str,
) -> Option<i64> {
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    let attrs = &rs.resource.as_ref()?.attributes;
    match attrs.iter().find(|kv| kv.key == key)?.value.as_ref()?.value {
        Some(Value::IntValue(i)) => Some(i),
        _ => None,
    }
}

/// Runs the calling test in a process of its own: for tests that set what a process has once
/// (the global providers, the one-setup rule, the process logger), which other tests in the
/// same binary would see or be refused. The test binary runs itself on just that test; the
/// child's output is shown and its failure fails the test. Under `cargo nextest`, which already
/// gives each test its process, the test runs in place.
pub fn isolated(test: impl FnOnce()) {
    const CHILD: &str = "LENS_TEST_ISOLATED";
    if std::env::var_os(CHILD).is_some() || std::env::var_os("NEXTEST_EXECUTION_MODE").is_some() {
        test();
        return;
    }
    // libtest runs each test on a thread named after it.
    let name = std::thread::current()
        .name()
        .expect("isolated() runs inside a #[test]")
        .to_string();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .expect("running the test binary again");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{name} in its own process: {}\n{stdout}\n{stderr}",
        out.status
    );
}
