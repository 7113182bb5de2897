//! `lens demo`: a simulated training job, one real OS process per rank (like `torchrun`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use lens::config::{ExporterSpec, WasmExporterSpec, WasmPreopen};
use lens::exporter::json::metrics_json;
use lens::opentelemetry::KeyValue;
use lens::opentelemetry::trace::{Span, TraceContextExt, Tracer};
use lens::wasm::builtin::{JSONL_EXPORTER_FILE, write_jsonl_exporter};
use lens::{InMemoryMetricReader, LensConfig, Telemetry};
use serde::{Deserialize, Serialize};

use super::{EXIT_BAD_INPUT, EXIT_RUN_FAILED};

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Number of rank processes.
    #[arg(long, default_value_t = 8)]
    ranks: u32,
    /// Number of simulated nodes (ranks are spread evenly; LOCAL_RANK follows).
    #[arg(long, default_value_t = 2)]
    nodes: u32,
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
    /// Run each rank for this many seconds instead of `--steps` (a stress run with `--step-ms 0`).
    #[arg(long)]
    duration_s: Option<u64>,
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
    duration_s: Option<u64>,
}

/// What a rank reports at the end (one JSON line on its stdout).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankSummary {
    pub rank: u32,
    pub exporting: bool,
    pub sampler_keeps: bool,
    pub produced: u64,
    pub exported: u64,
    pub dropped: u64,
    pub restarts: u64,
    pub latency_p50_us: u64,
    pub latency_p99_us: u64,
    pub output: Option<String>,
    pub error: Option<String>,
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

/// `(resident, peak resident)` MiB of this process, from /proc (0 elsewhere).
fn rss_mib() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 1024.0
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// User + system CPU seconds of this process, from /proc (0 elsewhere).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces): utime and stime are 14th and 15th.
    let rest = stat.rsplit_once(") ").map(|(_, r)| r).unwrap_or("");
    let f: Vec<f64> = rest
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    // rest starts at field 3 (state is not numeric, so it is filtered out): utime = f[10], stime = f[11].
    f.get(10)
        .zip(f.get(11))
        .map(|(u, s)| (u + s) / 100.0)
        .unwrap_or(0.0)
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum RankMessage {
    Progress { step: u64, spans: u64 },
    Summary(RankSummary),
}

fn emit(msg: &RankMessage) {
    println!("{}", serde_json::to_string(msg).unwrap_or_default());
}

/// One rank: set up telemetry from the launcher's environment and train.
pub fn run_rank(args: RankArgs) -> ExitCode {
    match train(&args) {
        Ok(summary) => {
            let failed = summary.error.is_some();
            emit(&RankMessage::Summary(summary));
            if failed {
                ExitCode::from(EXIT_RUN_FAILED)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

fn train(args: &RankArgs) -> Result<RankSummary, lens::LensError> {
    let rank: u32 = std::env::var("RANK")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    let builder;
    let reader = InMemoryMetricReader::new();
    let default_exporter = args.config.is_none();
    if let Some(file) = &args.config {
        builder = Telemetry::builder(LensConfig::load(Some(file))?);
    } else {
        let mut config = LensConfig::load(None)?;
        config.exporter = "none".into();
        config.service_name = "lens-demo".into();
        config.traces.exporters = vec![ExporterSpec::Wasm(WasmExporterSpec {
            name: Some("jsonl".into()),
            path: args.out.join(JSONL_EXPORTER_FILE),
            preopens: vec![WasmPreopen {
                host: args.out.clone(),
                guest: "/out".into(),
                read_only: false,
            }],
            settings: [("path".to_string(), "/out/rank-{dl.rank}.jsonl".to_string())].into(),
            ..Default::default()
        })];
        builder = Telemetry::builder(config).metric_reader(reader.clone());
    }
    let handle = builder.install()?;
    let output = (default_exporter && handle.is_exporting())
        .then(|| args.out.join(format!("rank-{rank}.jsonl")));
    let tracer = handle.tracer("lens.demo");
    let meter = handle.meter("lens.demo");
    let step_time = meter
        .f64_histogram("train.step_time")
        .with_unit("ms")
        .build();
    let tokens = meter.u64_counter("train.tokens").build();
    let throughput = meter.f64_gauge("train.tokens_per_second").build();
    let tokens_per_step = 4096u64;
    let started_run = Instant::now();
    let deadline = args
        .duration_s
        .map(|d| started_run + Duration::from_secs(d));
    let total_steps = if deadline.is_some() {
        u64::MAX
    } else {
        args.steps
    };
    let mut rss_early = None;
    tracer.in_span("job", |job_cx| {
        job_cx
            .span()
            .set_attribute(KeyValue::new("job.steps", args.steps as i64));
        for step in 1..=total_steps {
            if let Some(d) = deadline {
                let now = Instant::now();
                if now >= d {
                    break;
                }
                if rss_early.is_none() && now >= started_run + (d - started_run) / 10 {
                    rss_early = Some(rss_mib().0);
                }
            }
            let started = Instant::now();
            tracer.in_span("step", |cx| {
                let span = cx.span();
                let mut fb = tracer.start("forward_backward");
                std::thread::sleep(Duration::from_millis(args.step_ms));
                fb.set_attribute(KeyValue::new("micro_batches", 4));
                fb.end();
                let mut opt = tracer.start("optimizer");
                opt.set_attribute(KeyValue::new(
                    "lr",
                    3e-4 * (1.0 - step as f64 / args.steps as f64),
                ));
                opt.end();
                if args.checkpoint_every > 0 && step.is_multiple_of(args.checkpoint_every) {
                    let mut ck = tracer.start("checkpoint");
                    ck.set_attribute(KeyValue::new("step", step as i64));
                    ck.end();
                }
                span.set_attribute(KeyValue::new("step", step as i64));
                span.set_attribute(KeyValue::new("loss", 4.0 / (1.0 + step as f64 / 20.0)));
                span.set_attribute(KeyValue::new("tokens", tokens_per_step as i64));
            });
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            step_time.record(ms, &[]);
            tokens.add(tokens_per_step, &[]);
            throughput.record(tokens_per_step as f64 / (ms / 1000.0), &[]);
            if args.crash_rank == Some(rank) && step == args.steps / 2 {
                eprintln!("rank {rank}: simulated crash at step {step}");
                std::process::abort();
            }
            if step.is_multiple_of(10) || step == args.steps {
                let step = if deadline.is_some() {
                    (started_run.elapsed().as_secs_f64()
                        / args.duration_s.unwrap_or(1).max(1) as f64
                        * args.steps as f64) as u64
                } else {
                    step
                };
                emit(&RankMessage::Progress {
                    step,
                    spans: handle.stats().spans_produced,
                });
            }
        }
    });
    if output.is_some() {
        let metrics_path = args.out.join(format!("rank-{rank}.metrics.jsonl"));
        if let Ok(data) = reader.get_metrics_data() {
            let lines: Vec<String> = metrics_json(&data).iter().map(|v| v.to_string()).collect();
            let _ = std::fs::write(&metrics_path, lines.join("\n") + "\n");
        }
    }
    let elapsed = started_run.elapsed().as_secs_f64();
    let shutdown = handle.shutdown(Duration::from_secs(10));
    let (rss_end, max_rss) = rss_mib();
    let stats = handle.stats();
    let sum = |f: fn(&lens::ExporterSnapshot) -> u64| stats.exporters.iter().map(f).sum::<u64>();
    let max = |f: fn(&lens::ExporterSnapshot) -> Duration| {
        stats
            .exporters
            .iter()
            .map(f)
            .max()
            .unwrap_or_default()
            .as_micros() as u64
    };
    Ok(RankSummary {
        rank,
        exporting: handle.is_exporting(),
        sampler_keeps: handle.sampler_keeps(),
        produced: stats.spans_produced,
        exported: sum(|e| e.exported),
        dropped: sum(|e| e.dropped()),
        restarts: sum(|e| e.restarts),
        latency_p50_us: max(|e| e.latency_p50),
        latency_p99_us: max(|e| e.latency_p99),
        output: output.map(|p| p.display().to_string()),
        error: shutdown.err().map(|e| e.to_string()),
        spans_per_second: stats.spans_produced as f64 / elapsed.max(1e-9),
        cpu_seconds: cpu_seconds(),
        max_rss_mib: max_rss,
        rss_early_mib: rss_early.unwrap_or(rss_end),
        rss_end_mib: rss_end,
    })
}

/// The launcher: spawn the ranks, show progress, print the summary table.
pub fn run(args: DemoArgs) -> ExitCode {
    if args.ranks == 0 || args.nodes == 0 || !args.ranks.is_multiple_of(args.nodes) {
        eprintln!(
            "error: --ranks ({}) must be a positive multiple of --nodes ({})",
            args.ranks, args.nodes
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    if let Some(file) = &args.config
        && let Err(e) = LensConfig::load(Some(file))
    {
        eprintln!("error: {e}");
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let run_id = format!("demo-{:08x}", rand::random::<u32>());
    let out = args.out.join(&run_id);
    if let Err(e) = std::fs::create_dir_all(&out) {
        eprintln!("error: cannot create {}: {e}", out.display());
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    if args.config.is_none()
        && let Err(e) = write_jsonl_exporter(&out)
    {
        eprintln!(
            "error: cannot write the built-in exporter into {}: {e}",
            out.display()
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: cannot find the lens binary: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let per_node = args.ranks / args.nodes;
    let bars = MultiProgress::new();
    let style = ProgressStyle::with_template("rank {prefix:>3} [{bar:30}] {pos}/{len} steps {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    let started = Instant::now();
    let mut workers = Vec::new();
    for rank in 0..args.ranks {
        let mut cmd = Command::new(&exe);
        cmd.arg("demo-rank")
            .args(["--steps", &args.steps.to_string()])
            .args(["--checkpoint-every", &args.checkpoint_every.to_string()])
            .args(["--step-ms", &args.step_ms.to_string()])
            .arg("--out")
            .arg(&out)
            .env("RANK", rank.to_string())
            .env("WORLD_SIZE", args.ranks.to_string())
            .env("LOCAL_RANK", (rank % per_node).to_string())
            .env("LENS_RUN_ID", &run_id)
            .stdout(Stdio::piped());
        if let Some(c) = &args.config {
            cmd.arg("--config").arg(c);
        }
        if let Some(r) = args.crash_rank {
            cmd.args(["--crash-rank", &r.to_string()]);
        }
        if let Some(d) = args.duration_s {
            cmd.args(["--duration-s", &d.to_string()]);
        }
        let bar = bars.add(
            ProgressBar::new(args.steps)
                .with_style(style.clone())
                .with_prefix(rank.to_string()),
        );
        let child = cmd.spawn();
        workers.push(std::thread::spawn(move || {
            supervise(rank, child, bar, started)
        }));
    }
    let results: Vec<(u32, Result<RankSummary, String>)> = workers
        .into_iter()
        .map(|w| {
            w.join()
                .unwrap_or_else(|_| (u32::MAX, Err("supervisor panicked".into())))
        })
        .collect();
    let _ = bars.clear();
    print_table(&results, &out, started.elapsed());
    let summaries: Vec<&RankSummary> = results
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok())
        .collect();
    let _ = std::fs::write(
        out.join("summary.json"),
        serde_json::to_string_pretty(&summaries).unwrap_or_default(),
    );
    if results
        .iter()
        .all(|(_, r)| r.as_ref().is_ok_and(|s| s.error.is_none()))
    {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_RUN_FAILED)
    }
}

fn supervise(
    rank: u32,
    child: std::io::Result<std::process::Child>,
    bar: ProgressBar,
    started: Instant,
) -> (u32, Result<RankSummary, String>) {
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return (rank, Err(format!("cannot start: {e}"))),
    };
    let mut summary = None;
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            match serde_json::from_str::<RankMessage>(&line) {
                Ok(RankMessage::Progress { step, spans }) => {
                    bar.set_position(step);
                    let secs = started.elapsed().as_secs_f64().max(1e-3);
                    bar.set_message(format!("{:.0} spans/s", spans as f64 / secs));
                }
                Ok(RankMessage::Summary(s)) => summary = Some(s),
                Err(_) => {}
            }
        }
    }
    let status = child.wait();
    bar.finish();
    match (summary, status) {
        (Some(s), _) => (rank, Ok(s)),
        (None, Ok(st)) => (rank, Err(format!("crashed ({st})"))),
        (None, Err(e)) => (rank, Err(format!("lost: {e}"))),
    }
}

fn print_table(results: &[(u32, Result<RankSummary, String>)], out: &Path, elapsed: Duration) {
    println!(
        "{:>4}  {:<13}  {:>9}  {:>9}  {:>8}  {:>8}  {:>9}  {:>9}  {:>9}  {:>6}  {:>7}  output",
        "rank",
        "exporting",
        "produced",
        "exported",
        "dropped",
        "restarts",
        "p50",
        "p99",
        "spans/s",
        "cpu s",
        "rss MiB"
    );
    for (rank, r) in results {
        match r {
            Ok(s) => {
                let exporting = match (s.exporting, s.sampler_keeps) {
                    (false, _) => "no (strategy)",
                    (true, false) => "no (sampler)",
                    (true, true) => "yes",
                };
                println!(
                    "{:>4}  {:<13}  {:>9}  {:>9}  {:>8}  {:>8}  {:>9}  {:>9}  {:>9.0}  {:>6.1}  {:>7.1}  {}{}",
                    s.rank,
                    exporting,
                    s.produced,
                    s.exported,
                    s.dropped,
                    s.restarts,
                    format!("{:.1}ms", s.latency_p50_us as f64 / 1000.0),
                    format!("{:.1}ms", s.latency_p99_us as f64 / 1000.0),
                    s.spans_per_second,
                    s.cpu_seconds,
                    s.max_rss_mib,
                    s.output.as_deref().unwrap_or("-"),
                    s.error
                        .as_deref()
                        .map(|e| format!("  ERROR: {e}"))
                        .unwrap_or_default(),
                );
            }
            Err(e) => println!("{rank:>4}  FAILED: {e}"),
        }
    }
    println!(
        "run finished in {:.1}s; output in {}",
        elapsed.as_secs_f64(),
        out.display()
    );
}
