//! `lens demo`: a simulated training job, one real OS process per rank (like `torchrun`).
//!
//! - [`launcher`]: spawns the ranks, shows their progress, prints the summary table;
//! - [`rank`]: one rank (the hidden `demo-rank` command): sets up telemetry from the launcher's
//!   environment and trains;
//! - [`reload`]: a rank's hot reload of its exporters part-way through the run.
//!
//! A rank talks to the launcher in JSON lines on its stdout ([`RankMessage`]).

mod launcher;
mod rank;
mod reload;

use std::path::PathBuf;

use clap::Args;
use serde::{Deserialize, Serialize};

pub use launcher::run;
pub use rank::run_rank;

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Number of rank processes.
    #[arg(long, default_value_t = 8)]
    ranks: u32,
    /// Number of simulated nodes (ranks are spread evenly; LOCAL_RANK follows). Default: 2
    /// when that divides --ranks, else 1.
    #[arg(long)]
    nodes: Option<u32>,
    /// Training steps per rank.
    #[arg(long, default_value_t = 200)]
    steps: u64,
    /// A checkpoint span every N steps.
    #[arg(long, default_value_t = 50)]
    checkpoint_every: u64,
    /// Simulated compute per step, milliseconds.
    #[arg(long, default_value_t = 2)]
    step_ms: u64,
    /// Run on this config (OTLP, several exporters, another .wasm…) instead of the default.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Output directory of the default exporter.
    #[arg(long, default_value = "lens-out")]
    out: PathBuf,
    /// Make this rank abort half-way (to see how the launcher reports a crashed rank).
    #[arg(long)]
    crash_rank: Option<u32>,
    /// Make this rank's steps take twice as long (a straggler, for the report to flag).
    #[arg(long)]
    slow_rank: Option<u32>,
    /// Do not write the run's report (report.html, trace.json) at the end.
    #[arg(long)]
    no_report: bool,
    /// Run each rank for this many seconds instead of `--steps` (a stress run with `--step-ms 0`).
    #[arg(long)]
    duration_s: Option<u64>,
    /// Hot reload: this many seconds into the run, every rank applies `--reload-config`'s
    /// exporters while it trains (entries matched by name; see docs/reload.md).
    #[arg(long, requires = "reload_config")]
    reload_after_s: Option<f64>,
    /// The config file a hot reload applies (with `--reload-after-s`).
    #[arg(long, requires = "reload_after_s")]
    reload_config: Option<PathBuf>,
}

impl DemoArgs {
    /// `--nodes`, else 2 when that divides `--ranks`, else 1 (a single rank, or an odd count).
    fn nodes(&self) -> u32 {
        self.nodes
            .unwrap_or(if self.ranks >= 2 && self.ranks.is_multiple_of(2) {
                2
            } else {
                1
            })
    }
}

#[derive(Args, Debug)]
pub struct RankArgs {
    #[arg(long)]
    steps: u64,
    #[arg(long)]
    checkpoint_every: u64,
    #[arg(long)]
    step_ms: u64,
    #[arg(long)]
    config: Option<PathBuf>,
    #[arg(long)]
    out: PathBuf,
    #[arg(long)]
    crash_rank: Option<u32>,
    #[arg(long)]
    slow_rank: Option<u32>,
    #[arg(long)]
    duration_s: Option<u64>,
    #[arg(long)]
    reload_after_s: Option<f64>,
    #[arg(long)]
    reload_config: Option<PathBuf>,
}

/// What a rank reports at the end (one JSON line on its stdout).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankSummary {
    pub rank: u32,
    /// The simulated node the rank ran on (set by the launcher).
    #[serde(default)]
    pub node: u32,
    pub exporting: bool,
    pub sampler_keeps: bool,
    /// Spans ended on the rank.
    pub produced: u64,
    /// Spans exported.
    pub exported: u64,
    /// Metric data points exported (every collection's).
    #[serde(default)]
    pub data_points_exported: u64,
    /// Log records exported.
    #[serde(default)]
    pub log_records_exported: u64,
    /// Spans, data points and log records dropped.
    pub dropped: u64,
    /// `dropped` by reason (`queue_full`, `export_failed`, …), reasons with none left out.
    #[serde(default)]
    pub dropped_by_reason: std::collections::BTreeMap<String, u64>,
    /// Items written to the exporters' spools (`spool = {…}`) instead of being dropped.
    #[serde(default)]
    pub spooled: u64,
    /// Items still in the spools at the end (sent by the next run given the same spool).
    #[serde(default)]
    pub in_spool: u64,
    /// Export attempts repeated after a retryable failure.
    #[serde(default)]
    pub retries: u64,
    pub restarts: u64,
    /// Components swapped in by reloads, over the rank's wasm exporters.
    #[serde(default)]
    pub reloads: u64,
    pub latency_p50_us: u64,
    pub latency_p99_us: u64,
    pub output: Option<String>,
    pub error: Option<String>,
    /// What else the rank's exporters report (an exporter disabled at setup, and why; what a
    /// reload did).
    #[serde(default)]
    pub notes: Vec<String>,
    /// The component each wasm exporter ended on: `signal `name`: sha256 (N reloads)`.
    #[serde(default)]
    pub components: Vec<String>,
    /// Spans produced per second of the run.
    pub spans_per_second: f64,
    /// User + system CPU time of the rank process.
    pub cpu_seconds: f64,
    /// Peak resident memory of the rank process, MiB.
    pub max_rss_mib: f64,
    /// Resident memory after the first tenth of the run and at its end, MiB.
    pub rss_early_mib: f64,
    pub rss_end_mib: f64,
}

/// One line from a rank to the launcher.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum RankMessage {
    Progress {
        step: u64,
        spans: u64,
    },
    Summary(Box<RankSummary>),
    /// `setup_telemetry` failed (a config problem): the rank trained nothing.
    SetupFailed {
        error: String,
    },
}
