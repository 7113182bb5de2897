//! The launcher of `lens demo`: one OS process per rank with the environment `torchrun` gives
//! (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, a shared run id), a progress bar per rank, and the
//! summary table at the end.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use crate::builtin::write_jsonl_exporter;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use lens::LensConfig;
use lens::opentelemetry::Context;
use lens::opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState,
};
use lens::wasm::sandbox::guest_output::escape;

use super::{DemoArgs, RankMessage, RankSummary};
use crate::{EXIT_BAD_INPUT, EXIT_RUN_FAILED};

/// How each rank ended: its summary, or why there is none.
type RankResult = (u32, Result<RankSummary, String>);

/// What every rank of one run shares.
struct Job {
    run_id: String,
    /// The job's trace, handed to each rank as `TRACEPARENT` (every rank's root spans join it).
    trace_id: TraceId,
    trace_env: Vec<(String, String)>,
    /// The run's output directory.
    out: PathBuf,
    /// This binary, started once per rank.
    exe: PathBuf,
}

/// The launcher: spawn the ranks, show progress, print the summary table.
pub fn run(args: DemoArgs) -> ExitCode {
    let job = match prepare(&args) {
        Ok(prepared) => prepared,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    warm_cache(&args, &job);
    let started = Instant::now();
    let mut results = run_ranks(&args, &job, started);
    let per_node = args.ranks / args.nodes();
    for (rank, r) in &mut results {
        if let Ok(s) = r {
            s.node = *rank / per_node;
        }
    }
    print_table(&results, &job, started.elapsed());
    write_summary(&results, &args, &job);
    if !args.no_report {
        write_report(&job);
    }
    if results
        .iter()
        .all(|(_, r)| r.as_ref().is_ok_and(|s| s.error.is_none()))
    {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_RUN_FAILED)
    }
}

/// `summary.json` (format [`lens::report::SUMMARY_FORMAT`]): every rank's summary, and the
/// ranks that ended without one (crashed, setup failed), which `lens report` marks.
fn write_summary(results: &[RankResult], args: &DemoArgs, job: &Job) {
    let per_node = args.ranks / args.nodes();
    let summary = serde_json::json!({
        "format": lens::report::SUMMARY_FORMAT,
        "run_id": job.run_id,
        "world_size": args.ranks,
        "nodes": args.nodes(),
        "ranks": results.iter().filter_map(|(_, r)| r.as_ref().ok()).collect::<Vec<_>>(),
        "failed": results
            .iter()
            .filter_map(|(rank, r)| {
                let error = r.as_ref().err()?;
                Some(serde_json::json!({"rank": rank, "node": rank / per_node, "error": error}))
            })
            .collect::<Vec<_>>(),
    });
    let _ = std::fs::write(
        job.out.join("summary.json"),
        serde_json::to_string_pretty(&summary).unwrap_or_default(),
    );
}

/// The run's page and Perfetto file, named in the output (a failure is said, not fatal: the
/// run itself is over and its data is in the folder).
fn write_report(job: &Job) {
    let options = lens::report::ReportOptions::default();
    // One reading of the run folder for both files.
    match lens::report::write_report_and_perfetto(&job.out, &options) {
        Ok((page, trace)) => {
            println!("report: {page}");
            println!(
                "perfetto trace: {} (open it in ui.perfetto.dev)",
                trace.path.display()
            );
        }
        Err(e) => println!("report: not written: {e}"),
    }
}

/// Checks the arguments and the config, creates the run's output directory (with the built-in
/// exporter in it for the default job) and the job's trace.
fn prepare(args: &DemoArgs) -> Result<Job, String> {
    let nodes = args.nodes();
    if args.ranks == 0 || nodes == 0 || !args.ranks.is_multiple_of(nodes) {
        return Err(format!(
            "--ranks ({}) must be a positive multiple of --nodes ({nodes})",
            args.ranks
        ));
    }
    for (flag, rank) in [
        ("--crash-rank", args.crash_rank),
        ("--slow-rank", args.slow_rank),
    ] {
        if let Some(r) = rank
            && r >= args.ranks
        {
            return Err(format!(
                "{flag} {r} is not a rank of this run (ranks 0 to {})",
                args.ranks - 1
            ));
        }
    }
    if let Some(file) = &args.reload_config {
        LensConfig::load(Some(file)).map_err(|e| format!("--reload-config: {e}"))?;
    }
    if let Some(after) = args.reload_after_s
        && !(after.is_finite() && after >= 0.0)
    {
        return Err(format!(
            "--reload-after-s ({after}) must be a number of seconds, 0 or more"
        ));
    }
    if let Some(file) = &args.config {
        let config = LensConfig::load(Some(file)).map_err(|e| e.to_string())?;
        if !config.enabled {
            return Err(format!(
                "{}: `enabled` is false (NeMo Lens's default, also when the key is missing): the demo would export nothing; set `enabled = true`",
                file.display()
            ));
        }
    }
    let run_id = format!("demo-{:08x}", rand::random::<u32>());
    let out = args.out.join(&run_id);
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    if args.config.is_none() {
        write_jsonl_exporter(&out).map_err(|e| {
            format!(
                "cannot write the built-in exporter into {}: {e}",
                out.display()
            )
        })?;
    }
    // The run's configuration, redacted, for `lens report` to show.
    if let Ok(config) = super::rank::rank_config(args.config.as_deref(), &out) {
        let _ = std::fs::write(out.join("config.toml"), config.to_toml());
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the lens binary: {e}"))?;
    // The launcher's span is not exported (the launcher has no telemetry of its own): in a
    // backend the ranks' root spans share the trace under a parent shown as missing.
    let trace_id = TraceId::from(rand::random::<u128>().max(1));
    let launcher = SpanContext::new(
        trace_id,
        SpanId::from(rand::random::<u64>().max(1)),
        // Sampled, and the trace id drawn at random (W3C level 2), as NeMo Lens's spans say.
        TraceFlags::SAMPLED | lens::trace::flags::RANDOM_TRACE_ID,
        false,
        TraceState::default(),
    );
    let trace_env =
        lens::propagation::environment_carrier(&Context::new().with_remote_span_context(launcher));
    Ok(Job {
        run_id,
        trace_id,
        trace_env,
        out,
        exe,
    })
}

/// Compiles the ranks' wasm exporters into the compilation cache once, before any rank
/// starts: the ranks then map the artefact instead of waiting for one of them to compile it.
/// A component that does not load is left to the ranks to report (each applies its entry's
/// `on_setup_failure`).
fn warm_cache(args: &DemoArgs, job: &Job) {
    let started = Instant::now();
    // The reload's components too: the ranks then swap them in without compiling.
    let files = [
        Some(args.config.as_deref()),
        args.reload_config.as_deref().map(Some),
    ];
    let mut compiled: Vec<String> = Vec::new();
    for file in files.into_iter().flatten() {
        let Ok(config) = super::rank::rank_config(file, &job.out) else {
            continue; // checked by `prepare`; the ranks say it again
        };
        let Ok(warmed) = lens::wasm::warm_cache(&config, &lens::config::env::ProcessEnv) else {
            return; // the cache is off: each rank compiles
        };
        compiled.extend(
            warmed
                .iter()
                .filter(|w| matches!(w.outcome, Ok(false)))
                .map(|w| w.exporters.join(", ")),
        );
    }
    if !compiled.is_empty() {
        println!(
            "compiled {} into the cache in {:.1}s, before the ranks start",
            compiled.join("; "),
            started.elapsed().as_secs_f64()
        );
    }
}

/// The command line of one rank.
fn rank_command(args: &DemoArgs, rank: u32, job: &Job) -> Command {
    let per_node = args.ranks / args.nodes();
    let mut cmd = Command::new(&job.exe);
    cmd.arg("demo-rank")
        .args(["--steps", &args.steps.to_string()])
        .args(["--checkpoint-every", &args.checkpoint_every.to_string()])
        .args(["--step-ms", &args.step_ms.to_string()])
        .arg("--out")
        .arg(&job.out)
        .env("RANK", rank.to_string())
        .env("WORLD_SIZE", args.ranks.to_string())
        .env("LOCAL_RANK", (rank % per_node).to_string())
        .env("LENS_RUN_ID", &job.run_id)
        .envs(job.trace_env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(c) = &args.config {
        cmd.arg("--config").arg(c);
    }
    if let Some(r) = args.crash_rank {
        cmd.args(["--crash-rank", &r.to_string()]);
    }
    if let Some(r) = args.slow_rank {
        cmd.args(["--slow-rank", &r.to_string()]);
    }
    if let Some(d) = args.duration_s {
        cmd.args(["--duration-s", &d.to_string()]);
    }
    if let (Some(after), Some(file)) = (args.reload_after_s, &args.reload_config) {
        cmd.args(["--reload-after-s", &after.to_string()])
            .arg("--reload-config")
            .arg(file);
    }
    cmd
}

/// Starts every rank, each watched by its own thread, and waits for all of them.
fn run_ranks(args: &DemoArgs, job: &Job, started: Instant) -> Vec<RankResult> {
    let bars = MultiProgress::new();
    let style = ProgressStyle::with_template("rank {prefix:>3} [{bar:30}] {pos}/{len} steps {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    let workers: Vec<_> = (0..args.ranks)
        .map(|rank| {
            let bar = bars.add(
                ProgressBar::new(args.steps)
                    .with_style(style.clone())
                    .with_prefix(rank.to_string()),
            );
            let child = rank_command(args, rank, job).spawn();
            let log = job.out.join(format!("rank-{rank}.log"));
            std::thread::spawn(move || supervise(rank, child, bar, started, log))
        })
        .collect();
    let results = workers
        .into_iter()
        .map(|w| {
            w.join()
                .unwrap_or_else(|_| (u32::MAX, Err("supervisor panicked".into())))
        })
        .collect();
    let _ = bars.clear();
    results
}

/// Follows one rank's messages until it exits; its log goes to `log` too.
fn supervise(
    rank: u32,
    child: std::io::Result<std::process::Child>,
    bar: ProgressBar,
    started: Instant,
    log: PathBuf,
) -> RankResult {
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return (rank, Err(format!("cannot start: {e}"))),
    };
    // The rank's stderr (its log) is shown above the progress bars, each line prefixed with
    // the rank (on a terminal: the bars hide it otherwise), and kept in the run folder's
    // `rank-N.log`; its last error line is kept for the table if the rank dies without a
    // summary.
    let stderr = child.stderr.take().map(|stderr| {
        let bar = bar.clone();
        std::thread::spawn(move || {
            let mut file = std::fs::File::create(&log).ok();
            let mut last_error: Option<String> = None;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let line = escape(&line).into_owned();
                if line.starts_with("error: ") || last_error.is_none() {
                    last_error = Some(line.trim_start_matches("error: ").to_string());
                }
                if let Some(f) = &mut file {
                    use std::io::Write as _;
                    let _ = writeln!(f, "{line}");
                }
                bar.println(format!("[rank {rank}] {line}"));
            }
            last_error
        })
    });
    let mut summary = None;
    let mut setup_failed = None;
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            match serde_json::from_str::<RankMessage>(&line) {
                Ok(RankMessage::Progress { step, spans }) => {
                    bar.set_position(step);
                    let secs = started.elapsed().as_secs_f64().max(1e-3);
                    bar.set_message(format!("{:.0} spans/s", spans as f64 / secs));
                }
                Ok(RankMessage::Summary(s)) => summary = Some(*s),
                Ok(RankMessage::SetupFailed { error }) => setup_failed = Some(error),
                Err(_) => {}
            }
        }
    }
    let status = child.wait();
    let last_error = stderr.and_then(|t| t.join().ok().flatten());
    bar.finish();
    let reason = last_error.map(|e| format!(": {e}")).unwrap_or_default();
    match (summary, setup_failed, status) {
        (Some(s), _, _) => (rank, Ok(s)),
        (None, Some(error), _) => (rank, Err(format!("setup failed: {}", escape(&error)))),
        (None, None, Ok(st)) => (rank, Err(format!("crashed ({st}){reason}"))),
        (None, None, Err(e)) => (rank, Err(format!("lost: {e}{reason}"))),
    }
}

fn print_table(results: &[RankResult], job: &Job, elapsed: Duration) {
    println!(
        "{:>4}  {:<13}  {:>9}  {:>9}  {:>8}  {:>8}  {:>8}  {:>8}  {:>7}  {:>8}  {:>9}  {:>9}  {:>9}  {:>6}  {:>7}  output",
        "rank",
        "exporting",
        "produced",
        "spans",
        "points",
        "logs",
        "dropped",
        "spooled",
        "retries",
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
                    "{:>4}  {:<13}  {:>9}  {:>9}  {:>8}  {:>8}  {:>8}  {:>8}  {:>7}  {:>8}  {:>9}  {:>9}  {:>9.0}  {:>6.1}  {:>7.1}  {}{}",
                    s.rank,
                    exporting,
                    s.produced,
                    s.exported,
                    s.data_points_exported,
                    s.log_records_exported,
                    s.dropped,
                    s.spooled,
                    s.retries,
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
                if s.in_spool > 0 {
                    println!(
                        "      {} item(s) still spooled: not lost, the next run given the same \
                         spool sends them (`lens spool status DIR`)",
                        s.in_spool
                    );
                }
                for note in &s.notes {
                    println!("      {note}");
                }
                if !s.components.is_empty() {
                    println!("      ended on: {}", s.components.join(", "));
                }
            }
            Err(e) => println!("{rank:>4}  FAILED: {e}"),
        }
    }
    println!(
        "run finished in {:.1}s; output in {}; trace {}",
        elapsed.as_secs_f64(),
        job.out.display(),
        job.trace_id
    );
    let logged: Vec<String> = results
        .iter()
        .filter_map(|(rank, _)| {
            let text = std::fs::read_to_string(job.out.join(format!("rank-{rank}.log"))).ok()?;
            let n = text.lines().count();
            (n > 0).then(|| format!("{rank} ({n} line{})", if n == 1 { "" } else { "s" }))
        })
        .collect();
    println!(
        "each rank's log (host warnings, forwarded guest output) is in rank-N.log there{}",
        if logged.is_empty() {
            String::from(": none logged anything")
        } else {
            format!("; ranks that logged: {}", logged.join(", "))
        }
    );
    // What the wasm exporters printed, as they printed it.
    let printed: Vec<String> = results
        .iter()
        .filter_map(|(rank, _)| {
            let dir = super::rank::guest_output_dir(&job.out, *rank);
            let bytes: u64 = std::fs::read_dir(&dir)
                .ok()?
                .filter_map(|e| e.ok()?.metadata().ok())
                .map(|m| m.len())
                .sum();
            (bytes > 0).then(|| format!("{rank} ({bytes} bytes)"))
        })
        .collect();
    if !printed.is_empty() {
        println!(
            "the wasm exporters' stdout/stderr, as written, is in rank-N-guest/<exporter>.stdout \
             and .stderr there; ranks whose exporters printed: {}",
            printed.join(", ")
        );
    }
}
