//! # Lens
//!
//! OpenTelemetry for multi-rank ML training jobs, with custom span exporters running as
//! sandboxed WebAssembly components. The Rust counterpart of NeMo Lens: one configuration file
//! serves Python and Rust ranks alike, and the export decisions agree bit for bit.
//!
//! ```text
//!  rank process
//!  ┌─────────────────────────────────────────────────────────────────────────────┐
//!  │ setup_telemetry(config, rank, world_size, …)                                  │
//!  │   export strategy ── no ──► no-op providers (nothing recorded)                 │
//!  │        │ yes                                                                   │
//!  │        ▼                                                                       │
//!  │  Tracer ─► RankAwareSampler ─► FanOutSpanProcessor ─┬► BatchSpanProcessor ─► OTLP      │
//!  │  (spans)   (one keep/drop       (closes open spans  ├► BatchSpanProcessor ─► console   │
//!  │             per rank)            at shutdown)       ├► BatchSpanProcessor ─► wasm ──┐  │
//!  │                                                     └► processors added later       │  │
//!  │  Meter ─► PeriodicReader ─► OTLP / console (or an injected reader)                 │  │
//!  └────────────────────────────────────────────────────────────────────────────────┼──┘
//!                       wasmtime sandbox: memory cap, deadlines, granted capabilities ◄┘
//! ```
//!
//! Every span that reaches a batch processor is either exported or counted as dropped, per
//! exporter ([`DeliveryStats`]). A batch processor exports one batch at a time, or up to
//! `batch.max_concurrent_exports` at once; a wasm exporter then runs one sandboxed instance per
//! concurrent export.

pub mod config;
mod error;
pub mod exporter;
mod metrics;
pub mod rank;
pub mod resource;
pub mod strategy;
mod telemetry;
pub mod trace;
pub mod wasm;

pub use config::LensConfig;
pub use error::LensError;
pub use metrics::InMemoryMetricReader;
pub use rank::RankInfo;
pub use strategy::{ExportStrategy, register_export_strategy, unregister_export_strategy};
pub use telemetry::{Telemetry, TelemetryBuilder, TelemetryHandle, setup_telemetry};
pub use trace::{DeliveryStats, ExporterSnapshot, RankAwareSampler};

/// Re-exported so users need not pin matching versions themselves.
pub use opentelemetry;
pub use opentelemetry_sdk;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
