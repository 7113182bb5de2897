//! Helpers shared by Lens's integration tests (a library crate, so that each test binary uses
//! what it needs without dead-code allowances):
//!
//! - [`collector`]: a real OTLP collector (rotel) on loopback;
//! - [`log`]: a logger capturing every record;
//! - [`pipeline`]: installing Lens without touching the process's environment or globals, and
//!   small exporters with scripted behaviour;
//! - [`wasm`]: wasm exporter entries for the test guests, and driving them directly;
//! - [`dist`]: the example components built by `guest-examples/build.sh`.

pub mod collector;
pub mod log;
pub mod pipeline;
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
