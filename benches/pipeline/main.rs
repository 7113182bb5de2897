//! Lens benchmarks, every figure a ratio against a baseline measured in the same run.
//!
//! `cargo bench --bench pipeline` (after `guest-examples/build.sh` and
//! `pip install -r benches/requirements.txt`) writes `docs/benchmarks.md` and
//! `docs/benchmarks.svg`. `-- --quick` runs smaller loops.
//!
//! Sections: [`app`] (application thread), [`export`] (throughput and boundary cost per guest),
//! [`signals`] (metric and log export per guest and encoding), [`encoders`] (hand-written encoders against the crate path), [`seed`] (the Python seed's
//! stack), [`startup`] (cold and cached loads); [`report`] writes the results.

mod app;
mod encoders;
mod export;
mod outage;
mod processors;
mod reload;
mod report;
mod seed;
mod signal_processors;
mod signals;
mod soak;
mod spool;
mod startup;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use lens::config::{ExporterSpec, SignalConfig, WasmExporterSpec, WasmPreopen};
use lens::opentelemetry::KeyValue;
use lens::opentelemetry::trace::{Span, Tracer};
use lens::{LensConfig, Telemetry, TelemetryHandle};

/// The benchmark's span: start, 4 attributes, end.
fn one_span<T: Tracer>(tracer: &T, i: i64) {
    let mut s = tracer.start("step");
    s.set_attribute(KeyValue::new("step", i));
    s.set_attribute(KeyValue::new("loss", 1.0 / (1.0 + i as f64)));
    s.set_attribute(KeyValue::new("phase", "train"));
    s.set_attribute(KeyValue::new("ok", true));
    s.end();
}

fn ns_per_span(n: usize, mut f: impl FnMut(i64)) -> f64 {
    let started = Instant::now();
    for i in 0..n as i64 {
        f(i);
    }
    started.elapsed().as_nanos() as f64 / n as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn dist(name: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("guest-examples/dist")
        .join(name);
    assert!(
        p.exists(),
        "{} is missing: run guest-examples/build.sh",
        p.display()
    );
    p
}

fn lens_rank(config: LensConfig, rank: u32, world: u32) -> TelemetryHandle {
    Telemetry::builder(config)
        .rank(rank)
        .world_size(world)
        .env(HashMap::<String, String>::new())
        .install_global(false)
        .install()
        .unwrap()
}

/// Enabled on every rank (the library's defaults, NeMo Lens's, export from one rank only).
fn wasm_config(spec: WasmExporterSpec) -> LensConfig {
    LensConfig {
        enabled: true,
        export_strategy: "all_ranks".into(),
        run_id: "bench".into(),
        metrics_enabled: false,
        traces: SignalConfig {
            exporters: vec![ExporterSpec::Wasm(spec)],
            processors: Vec::new(),
        },
        ..Default::default()
    }
}

fn jsonl_spec(wasm: PathBuf, dir: &Path) -> WasmExporterSpec {
    WasmExporterSpec {
        name: Some("jsonl".into()),
        path: wasm,
        preopens: vec![WasmPreopen {
            host: dir.into(),
            guest: "/out".into(),
            read_only: false,
        }],
        settings: [("path".to_string(), "/out/spans.jsonl".to_string())].into(),
        call_timeout_ms: Some(60_000),
        ..Default::default()
    }
}

fn noop_spec(encoding: &str) -> WasmExporterSpec {
    WasmExporterSpec {
        name: Some("noop".into()),
        path: lens_test_guests::HOSTILE.into(),
        settings: [
            ("mode".to_string(), "noop".to_string()),
            ("encoding".to_string(), encoding.to_string()),
        ]
        .into(),
        call_timeout_ms: Some(60_000),
        ..Default::default()
    }
}

struct Row {
    group: &'static str,
    name: String,
    value: f64,
    unit: &'static str,
    ratio: Option<(f64, &'static str)>,
}

/// What one run measures: `--quick` shrinks the loops; `--only SECTION` (app, export,
/// signals, encoders, seed, startup; repeatable) runs some sections and prints them without touching
/// `docs/`; `--guest SUBSTRING` narrows the export section to matching rows; `--batches N` sets
/// its number of batches (for profiling). `--only soak [--soak-s SECONDS]` runs the soak of a
/// guest blocking in every call, `--only outage` a run through a collector outage, `--only
/// spool` the disk spool's costs, `--only reload` the export gap around a hot reload (none of
/// them is part of a full run).
struct Opts {
    quick: bool,
    only: Vec<String>,
    guest: Option<String>,
    batches: Option<usize>,
    soak_s: u64,
}

impl Opts {
    fn parse() -> Self {
        let args: Vec<String> = std::env::args().collect();
        let only = args
            .windows(2)
            .filter(|w| w[0] == "--only")
            .map(|w| w[1].clone())
            .collect();
        let guest = args
            .windows(2)
            .find(|w| w[0] == "--guest")
            .map(|w| w[1].clone());
        let batches = args
            .windows(2)
            .find(|w| w[0] == "--batches")
            .map(|w| w[1].parse().expect("--batches N"));
        let soak_s = args
            .windows(2)
            .find(|w| w[0] == "--soak-s")
            .map_or(180, |w| w[1].parse().expect("--soak-s SECONDS"));
        Self {
            quick: args.iter().any(|a| a == "--quick"),
            only,
            guest,
            batches,
            soak_s,
        }
    }

    /// `--guest SUBSTRING`: only the export rows whose name contains it.
    fn matches(&self, name: &str) -> bool {
        self.guest
            .as_ref()
            .is_none_or(|g| name.contains(g.as_str()))
    }

    fn wants(&self, section: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|s| s == section)
    }
}

/// `--only SECTION` names: app, export, signals, encoders, seed, startup.
fn main() {
    let opts = Opts::parse();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // The `lens` binary's built-in exporter, as `build.rs` compiled it.
    let builtin = dir.join("lens-jsonl-exporter.wasm");
    std::fs::copy(env!("LENS_BUILTIN_JSONL_WASM"), &builtin).unwrap();
    // The benchmark's batch: 512 spans of 4 attributes, made by a real SDK tracer.
    let batch = lens::testing::record_spans(|t| (0..512).for_each(|i| one_span(t, i)));
    let mut rows: Vec<Row> = Vec::new();
    let mut dropped = 0;
    let mut memory = Vec::new();
    if opts.wants("app") {
        dropped = app::app_thread(&opts, &builtin, dir, &mut rows);
    }
    if opts.wants("export") {
        memory = export::export_throughput(&opts, &builtin, dir, &batch, &mut rows);
    }
    if opts.wants("signals") {
        signals::signals(&opts, &builtin, dir, &mut rows);
    }
    if opts.wants("encoders") {
        encoders::encoders(&opts, &batch, &mut rows);
    }
    if opts.wants("seed") {
        seed::seed_stack(&opts, dir, &mut rows);
    }
    if opts.wants("startup") {
        startup::startup(&builtin, dir, &mut rows);
    }
    if opts.only.iter().any(|s| s == "soak") {
        soak::soak(&opts);
    }
    if opts.only.iter().any(|s| s == "outage") {
        outage::outage(&opts, &mut rows);
    }
    if opts.only.iter().any(|s| s == "typed-crossing") {
        processors::typed_crossing(&opts, &mut rows);
    }
    if opts.only.iter().any(|s| s == "processors") {
        processors::processors(&opts, &mut rows);
        signal_processors::signal_processors(&opts, &mut rows);
    }
    if opts.only.iter().any(|s| s == "spool") {
        spool::spool(&opts, &mut rows);
    }
    if opts.only.iter().any(|s| s == "reload") {
        reload::reload(&opts, &builtin, dir, &mut rows);
    }
    let mem = "Peak linear memory per exporter instance, MiB";
    rows.extend(memory.into_iter().map(|(name, bytes)| Row {
        group: mem,
        name,
        value: bytes as f64 / (1 << 20) as f64,
        unit: "MiB",
        ratio: None,
    }));
    if opts.only.is_empty() {
        report::write_report(&rows, opts.quick, dropped);
    } else {
        for r in &rows {
            let ratio = r
                .ratio
                .map(|(x, w)| format!(" ({x:.2} {w})"))
                .unwrap_or_default();
            println!("{}: {:.2} {}{ratio}", r.name, r.value, r.unit);
        }
    }
}
