//! Lens's integration tests: one binary, a module per concern (linking wasmtime once instead of
//! once per file). Shared helpers are the `lens-test-support` crate (`tests/support`); the guest
//! components come from `lens-test-guests` (`tests/guests`) and `guest-examples/build.sh`.
//!
//! Tests that set process-wide state (the global providers, the one-setup rule, the process
//! logger) run in a process of their own: see [`lens_test_support::isolated`].
//!
//! | module | concern |
//! |---|---|
//! | [`telemetry`], [`strategy`], [`span_groups`], [`propagation`], [`env`] | setting up a rank: decisions, resource, environment |
//! | [`processor`], [`logs`] | the batch processors and their accounting, the log signal |
//! | [`processors`] | sandboxed span processors: edits against native references, pipeline, faults |
//! | [`otlp`] | OTLP against a real collector, and under collector faults |
//! | [`wasm`] | the sandbox host: loading, cache, limits, faults, retries, every signal |
//! | [`registry`] | components from a real OCI registry: push, pull by digest once per node, offline, refusals |
//! | [`reload`] | hot reload of exporters under load, entry by entry, and its triggers |
//! | [`guests`] | the example guests of every language, the guest SDKs, `lens check` |
//! | [`parity`] | the differential suite against the real NeMo Lens |
//! | [`cli`], [`config_errors`], [`config_files`], [`docs`] | the `lens` binary, golden config errors, config files read from elsewhere, the README's and docs' code |
//! | [`report`] | `lens report`'s page in a real browser (headless Chromium) and its Perfetto file |
//! | [`project`] | `lens new` and `lens build` for every language, outside the repository |

mod cli;
mod config_errors;
mod config_files;
mod docs;
mod env;
mod guests;
mod logs;
mod otlp;
mod parity;
mod processor;
mod processors;
mod project;
mod propagation;
mod registry;
mod reload;
mod report;
mod span_groups;
mod spool;
mod strategy;
mod telemetry;
mod wasm;

/// The `lens` binary's built-in JSON-lines exporter, as `build.rs` compiled it
/// (`guest-examples/rust-jsonl`).
fn builtin_jsonl() -> std::path::PathBuf {
    env!("LENS_BUILTIN_JSONL_WASM").into()
}

/// The `lens` binary, without the launcher and config variables the test runner may have.
fn lens() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_lens"));
    for var in [
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
        "LENS_EXPORTER",
        "LENS_EXPORT_STRATEGY",
        "NEMO_LENS_ENABLED",
        "NEMO_LENS_EXPORTER",
        "NEMO_LENS_EXPORT_STRATEGY",
        "TRACEPARENT",
        "TRACESTATE",
    ] {
        c.env_remove(var);
    }
    c
}
