//! # Lens
//!
//! OpenTelemetry (traces, metrics, logs) for multi-rank ML training jobs, with custom
//! exporters of every signal running as sandboxed WebAssembly components. The Rust counterpart of NeMo Lens: its defaults, environment,
//! export decisions and resource, checked against the real package (`tests/all/parity/`).
//!
//! ```text
//!  rank process
//!  ┌───────────────────────────────────────────────────────────────────────────────────┐
//!  │ setup_telemetry(config, rank, world_size, …)                                        │
//!  │   export strategy ── no ──► no-op providers (nothing recorded)                       │
//!  │        │ yes                                                                         │
//!  │        ▼                                                                             │
//!  │  Tracer ─► RankAwareSampler ─► FanOutSpanProcessor ─┬► BatchSpanProcessor ─► OTLP     │
//!  │  (spans)   (one keep/drop       (closes open spans  ├► BatchSpanProcessor ─► console  │
//!  │             per rank)            at shutdown)       ├► BatchSpanProcessor ─► wasm ──┐ │
//!  │                                                     └► processors added later       │ │
//!  │  Meter ─► PeriodicReader ─► OTLP / console / wasm (or an injected reader) ──────────┤ │
//!  │  log / tracing ─► LogBridge ─► Logger ─► BatchLogProcessor ─► OTLP / console / wasm ┤ │
//!  └─────────────────────────────────────────────────────────────────────────────────────┼─┘
//!                   wasmtime sandbox: memory cap, deadlines, granted capabilities ◄───────┘
//! ```
//!
//! Every span, metric data point and log record that reaches an exporter is either exported or
//! counted as dropped, by reason, per exporter ([`DeliveryStats`]), retries included. A batch processor exports one batch at a time, or up to
//! `batch.max_concurrent_exports` at once; a wasm exporter then runs one sandboxed instance per
//! concurrent export. Sandboxed processors (`[[traces.processors]]`, `[[metrics.processors]]`,
//! `[[logs.processors]]`) run between each batch processor (or reader) and its exporter, on the
//! export side; what they drop is counted too (`dropped_processor`).
//!
//! ## Map of the modules, along the pipeline
//!
//! | module | what it holds | uses |
//! |---|---|---|
//! | [`config`] | the TOML shape, defaults, validation, environment overrides | `error` |
//! | [`semconv`] | NeMo Lens's attribute names (a leaf) | — |
//! | `signal` | [`Signal`] and the WIT package's version, which name every signal and interface (a leaf) | — |
//! | [`rank`], [`strategy`], [`resource`] | who this rank is, whether it exports, what its signals carry (attribute names from `semconv`) | `config`, `semconv` |
//! | `batch` | the batch queue under the span and log processors, delivery statistics | `config` |
//! | [`spool`] | a bounded disk spool of one exporter's export requests: checksummed segments, its lock, replay oldest first | `signal` |
//! | `tls` | the process's TLS provider for the HTTP clients Lens builds (a leaf) | — |
//! | `slots` | the named processors one signal fans out to, which a reload replaces, adds and removes (a leaf) | — |
//! | [`trace`] | Lens's tracer (open spans, the launcher's trace, span groups), safe attributes with redaction, rank-aware sampler, fan-out, Lens's batch span processor and the stages before its exporter (`ExportStage`), health metrics | `config`, `strategy`, `batch`, `slots` |
//! | [`logs`] | Lens's batch log processor, its fan-out, the `log` and `tracing` bridges | `config`, `batch`, `slots` |
//! | [`instruments`] | NeMo Lens's inference, RL and Gym instruments | `semconv` |
//! | [`propagation`] | the W3C propagator, `inject_context`/`extract_context`, the launcher's `TRACEPARENT` | `config` |
//! | `encoding` | how a batch of spans, metrics or log records reaches a guest: typed records, OTLP bytes, OTLP/JSON (a leaf) | `bindings` |
//! | `metrics` | the in-memory metric reader, [`data_points`] | `encoding` |
//! | [`exporter`] | the native exporters of spans, metrics and log records: OTLP, console, none | `config`, `encoding` |
//! | [`wasm`] | the sandbox host, one folder per stage a component goes through: source (read), checks (header, digest, structure), artefact (engine, compiler, cache), sandbox (link, grants, HTTP, output, instances), lanes (backoff, retries), reload, then the roles: the span, metric and log exporters, processors of every signal and their edits | `config`, `batch`, `trace`, `logs`, `encoding`, `bindings` |
//! | `pipeline` | assembly: config entries become batch processors and readers (metric exporters counted per data point, the metric processors before them, a metric entry's spool as [`metric_spool`]); a reload's plan, entry by entry | `exporter`, `wasm`, `trace`, `logs`, `spool` |
//! | `telemetry` | [`TelemetryBuilder`] (decide, assemble, install), [`TelemetryHandle`], its reloads and their triggers (watched file, SIGHUP) | `pipeline` and below |
//! | [`check`] | what `lens check` runs: validation, timings, a conformance suite per exporter interface (feature `testing`) | `wasm`, `encoding`, `testing` |
//! | [`testing`] | the oracle exporter, the span fixtures, metric collections and log records of every kind (feature `testing`) | `exporter`, `metrics` |
//! | [`report`] | after the run: `lens report`'s page and Perfetto file from a run folder's JSON-lines and `summary.json` (reads the config to redact it) | `config`, `semconv` |
//! | `error` | every error type, and [`FaultKind`] (a leaf) | — |
//! | `bindings` | the host side generated from `wit/` (`lens:exporter@0.4.0`; a leaf) | — |
//!
//! No module imports from a module above it in this table: the native exporters and the wasm
//! host know nothing of each other, and only `pipeline` sees both.
//!
//! ## Features
//!
//! - `tracing` (default): [`TelemetryHandle::tracing_layer`] for `#[instrument]` spans.
//! - `hand-lowering` (default): typed batches are lowered into guest memory by hand, a list at a
//!   time; it uses wasmtime's unstable internals (hence the exact wasmtime version). Without it
//!   wasmtime's derived lowering does the same, slower.
//! - `testing`: [`testing`] and [`check`] (what the `lens` command line, a separate package,
//!   turns on).

mod batch;
pub(crate) mod bindings;
#[cfg(any(test, feature = "testing"))]
pub mod check;
pub mod config;
pub(crate) mod encoding;
mod error;
pub mod exporter;
pub mod instruments;
pub mod logs;
mod metrics;
pub(crate) mod pipeline;
pub mod propagation;
pub mod rank;
pub mod report;
pub mod resource;
pub mod semconv;
mod signal;
mod slots;
pub mod spool;
pub mod strategy;
mod telemetry;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod tls;
pub mod trace;
pub mod wasm;

pub use config::LensConfig;
pub use error::{
    BoxError, CompileError, FaultKind, GrantError, LensError, LoadError, RankError, ReloadStep,
    WasmSetupError,
};
pub use metrics::{InMemoryMetricReader, data_points};
pub use pipeline::metric_spool;
pub use pipeline::reload::ReloadReport;
pub use rank::RankInfo;
pub use signal::{Signal, WIT_VERSION};
pub use strategy::{ExportStrategy, register_export_strategy, unregister_export_strategy};
pub use telemetry::{Telemetry, TelemetryBuilder, TelemetryHandle, setup_telemetry};
pub use trace::{DeliveryStats, ExporterSnapshot, RankAwareSampler};

/// Re-exported so users need not pin matching versions themselves.
pub use opentelemetry;
pub use opentelemetry_proto;
pub use opentelemetry_sdk;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// `docs/training-helpers.md`'s examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/training-helpers.md")]
pub struct TrainingHelpersDoctests;
