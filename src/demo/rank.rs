//! One rank of `lens demo`: telemetry from the launcher's environment, then a training loop of
//! nested spans (job → step → forward_backward / optimizer, checkpoints) and metrics.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::builtin::JSONL_EXPORTER_FILE;
use lens::config::{ExporterSpec, WasmExporterSpec, WasmPreopen};
use lens::logs::LogBridge;
use lens::opentelemetry::KeyValue;
use lens::opentelemetry::metrics::{Counter, Gauge, Histogram};
use lens::opentelemetry::trace::{Span, TraceContextExt, Tracer};
use lens::trace::LensTracer;
use lens::wasm::GuestOutputCopy;
use lens::{LensConfig, Telemetry, TelemetryHandle};

use super::{RankArgs, RankMessage, RankSummary};
use crate::{EXIT_BAD_INPUT, EXIT_RUN_FAILED};

fn emit(msg: &RankMessage) {
    println!("{}", serde_json::to_string(msg).unwrap_or_default());
}

/// `(resident, peak resident)` MiB of this process, from /proc (0 elsewhere).
fn rss_mib() -> (f64, f64) {
    let mib = |field| lens::testing::process_status(field) as f64 / 1024.0;
    (mib("VmRSS"), mib("VmHWM"))
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

/// One rank: set up telemetry from the launcher's environment and train.
pub fn run_rank(args: RankArgs) -> ExitCode {
    match train(&args) {
        Ok(summary) => {
            let failed = summary.error.is_some();
            emit(&RankMessage::Summary(Box::new(summary)));
            if failed {
                ExitCode::from(EXIT_RUN_FAILED)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            // Only the setup returns an error: the launcher says so, not "crashed".
            eprintln!("error: {e}");
            emit(&RankMessage::SetupFailed {
                error: e.to_string(),
            });
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// The built-in JSON-lines exporter writing `file` (under `/out`, `--out` pre-opened
/// writable): one config entry per signal, each its own instance of the same component.
fn builtin(out: &Path, name: &str, file: &str) -> Vec<ExporterSpec> {
    vec![ExporterSpec::Wasm(WasmExporterSpec {
        name: Some(name.into()),
        path: out.join(JSONL_EXPORTER_FILE),
        preopens: vec![WasmPreopen {
            host: out.to_path_buf(),
            guest: "/out".into(),
            read_only: false,
        }],
        settings: [("path".to_string(), format!("/out/{file}"))].into(),
        ..Default::default()
    })]
}

/// The configuration of a rank: `config`, or the default job's (the built-in JSON-lines
/// exporter writing the rank's spans, metrics and log records into `rank-N.jsonl`,
/// `rank-N.metrics.jsonl` and `rank-N.logs.jsonl` in `out`). The launcher reads it too, to
/// compile its exporters before the ranks start.
pub(super) fn rank_config(
    config: Option<&Path>,
    out: &Path,
) -> Result<LensConfig, lens::LensError> {
    if let Some(file) = config {
        return LensConfig::load(Some(file));
    }
    // The demo's own choices, set explicitly (the library's defaults are NeMo Lens's: disabled,
    // one exporting rank); the environment still overrides them.
    let mut config = LensConfig {
        enabled: true,
        service_name: "lens-demo".into(),
        export_strategy: "all_ranks".into(),
        exporter: "none".into(),
        logs_enabled: true,
        ..LensConfig::default()
    };
    config.apply_env(&lens::config::env::ProcessEnv)?;
    config.traces.exporters = builtin(out, "jsonl", "rank-{dl.rank}.jsonl");
    config.metrics.exporters = builtin(out, "jsonl-metrics", "rank-{dl.rank}.metrics.jsonl");
    config.logs.exporters = builtin(out, "jsonl-logs", "rank-{dl.rank}.logs.jsonl");
    Ok(config)
}

/// The telemetry of a rank; its wasm exporters' guest stdout/stderr copied into
/// `rank-N-guest/<exporter>.stdout|stderr` in the run folder.
fn install(args: &RankArgs) -> Result<TelemetryHandle, lens::LensError> {
    // The launcher sets RANK; the installation reads (and checks) it again.
    let rank: u32 = std::env::var("RANK")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    let mut builder = Telemetry::builder(rank_config(args.config.as_deref(), &args.out)?)
        .guest_output(GuestOutputCopy::dir(guest_output_dir(&args.out, rank)));
    if let Some(file) = &args.config {
        // What `[reload] watch`/`sighup` read again.
        builder = builder.config_file(file);
    }
    builder.install()
}

/// Where a rank's guest output goes in the run folder.
pub fn guest_output_dir(out: &Path, rank: u32) -> PathBuf {
    out.join(format!("rank-{rank}-guest"))
}

/// The demo's instruments.
struct Instruments {
    step_time: Histogram<f64>,
    tokens: Counter<u64>,
    throughput: Gauge<f64>,
}

const TOKENS_PER_STEP: u64 = 4096;

/// The loop's clock: a number of steps, or a duration for a stress run.
struct Schedule {
    started: Instant,
    deadline: Option<Instant>,
    rss_early: Option<f64>,
}

impl Schedule {
    fn new(args: &RankArgs) -> Self {
        let started = Instant::now();
        Self {
            started,
            deadline: args.duration_s.map(|d| started + Duration::from_secs(d)),
            rss_early: None,
        }
    }

    /// Whether a stress run is over; samples the early RSS a tenth of the way in.
    fn over(&mut self) -> bool {
        let Some(d) = self.deadline else {
            return false;
        };
        let now = Instant::now();
        if self.rss_early.is_none() && now >= self.started + (d - self.started) / 10 {
            self.rss_early = Some(rss_mib().0);
        }
        now >= d
    }

    /// The step to show in the progress bar (time-based for a stress run).
    fn shown_step(&self, step: u64, args: &RankArgs) -> u64 {
        match self.deadline {
            None => step,
            Some(_) => {
                (self.started.elapsed().as_secs_f64() / args.duration_s.unwrap_or(1).max(1) as f64
                    * args.steps as f64) as u64
            }
        }
    }
}

/// The simulated compute of one step: `--step-ms`, twice that on `--slow-rank`.
fn compute_time(args: &RankArgs) -> Duration {
    let rank: Option<u32> = std::env::var("RANK").ok().and_then(|r| r.parse().ok());
    let ms = Duration::from_millis(args.step_ms);
    if args.slow_rank.is_some() && args.slow_rank == rank {
        (ms * 2).max(ms + Duration::from_millis(2))
    } else {
        ms
    }
}

/// Steps between two evaluation samples (a `gen_ai.chat` span holding a prompt and a
/// completion).
const EVAL_EVERY: u64 = 5;

/// One training step: its span with the forward/backward and optimizer children (an evaluation
/// sample every `EVAL_EVERY` steps, and a checkpoint every `checkpoint_every` steps, logged
/// through the logging bridge inside its span).
fn step(tracer: &LensTracer, logs: &LogBridge, args: &RankArgs, step: u64) {
    tracer.in_span("step", |cx| {
        let span = cx.span();
        let mut fb = tracer.start("forward_backward");
        std::thread::sleep(compute_time(args));
        fb.set_attribute(KeyValue::new("micro_batches", 4));
        fb.end();
        let mut opt = tracer.start("optimizer");
        opt.set_attribute(KeyValue::new(
            "lr",
            3e-4 * (1.0 - step as f64 / args.steps as f64),
        ));
        opt.end();
        if step.is_multiple_of(EVAL_EVERY) {
            // An evaluation sample: what a redaction processor (`[[traces.processors]]`) is for.
            let mut eval = tracer.start("gen_ai.chat");
            eval.set_attribute(KeyValue::new("gen_ai.operation.name", "chat"));
            eval.set_attribute(KeyValue::new("gen_ai.request.model", "lens-demo-7b"));
            eval.set_attribute(KeyValue::new(
                "gen_ai.prompt",
                format!("Summarise training step {step} for the operator."),
            ));
            eval.set_attribute(KeyValue::new(
                "gen_ai.completion",
                format!("Step {step} finished without incident."),
            ));
            eval.end();
        }
        if args.checkpoint_every > 0 && step.is_multiple_of(args.checkpoint_every) {
            tracer.in_span("checkpoint", |cx| {
                cx.span().set_attribute(KeyValue::new("step", step as i64));
                log::Log::log(
                    logs,
                    &log::Record::builder()
                        .level(log::Level::Info)
                        .target("lens.demo")
                        .args(format_args!("checkpoint saved at step {step}"))
                        .build(),
                );
            });
        }
        span.set_attribute(KeyValue::new("step", step as i64));
        span.set_attribute(KeyValue::new("loss", 4.0 / (1.0 + step as f64 / 20.0)));
        span.set_attribute(KeyValue::new("tokens", TOKENS_PER_STEP as i64));
    });
}

fn train(args: &RankArgs) -> Result<RankSummary, lens::LensError> {
    let handle = install(args)?;
    let rank = handle.rank().rank;
    let output = (args.config.is_none() && handle.is_exporting())
        .then(|| args.out.join(format!("rank-{rank}.jsonl")));
    let tracer = handle.tracer("lens.demo");
    // The process's `log` logger is the CLI's own (stderr): the demo calls the bridge itself.
    let logs = handle.log_bridge(log::LevelFilter::Info, "lens.demo");
    let meter = handle.meter("lens.demo");
    let instruments = Instruments {
        step_time: meter
            .f64_histogram("train.step_time")
            .with_unit("ms")
            .build(),
        tokens: meter.u64_counter("train.tokens").build(),
        throughput: meter.f64_gauge("train.tokens_per_second").build(),
    };
    let reloader = args
        .reload_config
        .clone()
        .zip(args.reload_after_s)
        .map(|(file, after)| {
            super::reload::Reloader::start(
                &handle,
                file,
                args.out.clone(),
                Duration::from_secs_f64(after.max(0.0)),
            )
        });
    let mut schedule = Schedule::new(args);
    let total_steps = if schedule.deadline.is_some() {
        u64::MAX
    } else {
        args.steps
    };
    tracer.in_span("job", |job_cx| {
        job_cx
            .span()
            .set_attribute(KeyValue::new("job.steps", args.steps as i64));
        for n in 1..=total_steps {
            if schedule.over() {
                break;
            }
            let started = Instant::now();
            step(&tracer, &logs, args, n);
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            instruments.step_time.record(ms, &[]);
            instruments.tokens.add(TOKENS_PER_STEP, &[]);
            instruments
                .throughput
                .record(TOKENS_PER_STEP as f64 / (ms / 1000.0), &[]);
            if args.crash_rank == Some(rank) && n == args.steps / 2 {
                eprintln!("rank {rank}: simulated crash at step {n}");
                std::process::abort();
            }
            if n.is_multiple_of(10) || n == args.steps {
                emit(&RankMessage::Progress {
                    step: schedule.shown_step(n, args),
                    spans: handle.stats().spans_produced,
                });
            }
        }
    });
    let elapsed = schedule.started.elapsed().as_secs_f64();
    let reloaded = reloader.map(super::reload::Reloader::finish);
    let shutdown = handle.shutdown(Duration::from_secs(10));
    let mut summary = summary(&handle, &schedule, elapsed, output, shutdown);
    let asked = reloaded.is_some();
    summary.notes.extend(reloaded);
    // Which component each exporter ended on, when a reload was asked for or happened (the
    // config's `[reload] watch`).
    if asked || summary.reloads > 0 {
        summary.components = components(&handle);
    }
    Ok(summary)
}

/// The component each wasm exporter of the rank runs, with its reload count.
fn components(handle: &TelemetryHandle) -> Vec<String> {
    let stats = handle.stats();
    [
        ("traces", &stats.exporters),
        ("metrics", &stats.metric_exporters),
        ("logs", &stats.log_exporters),
    ]
    .into_iter()
    .flat_map(|(signal, list)| {
        list.iter().filter_map(move |e| {
            let sha = e.component_sha256.as_deref()?;
            Some(format!(
                "{signal} `{}`: {} ({} reload{})",
                e.name,
                super::reload::short(sha),
                e.reloads,
                if e.reloads == 1 { "" } else { "s" }
            ))
        })
    })
    .collect()
}

/// What a span processor did on the rank, e.g. "processor `redact`: 120 spans seen, 0
/// dropped, 0 met a fault".
fn processor_note(p: &lens::ExporterSnapshot, items: &str) -> String {
    let disabled = p
        .disabled
        .as_deref()
        .map(|why| format!(" (disabled at setup: {why})"))
        .unwrap_or_default();
    format!(
        "processor `{}`: {} {items} seen, {} dropped, {} met a fault{disabled}",
        p.name, p.received, p.dropped_processor, p.processor_faults
    )
}

/// Each exporter's last error in one line ("exporter `acme` (traces): 65 spans dropped; last
/// error: rejected: 401 Unauthorized from 127.0.0.1:18401"), unless the rank's `error` says it.
fn last_errors(stats: &lens::DeliveryStats, error: Option<&str>) -> Vec<String> {
    let mut notes = Vec::new();
    for signal in lens::Signal::ALL {
        for e in stats.exporters_of(signal) {
            let Some(line) = e.last_error.as_deref() else {
                continue;
            };
            if error.is_some_and(|error| error.contains(line)) {
                continue;
            }
            notes.push(format!(
                "exporter `{}` ({}): {} {} dropped; last error: {line}",
                e.name,
                signal.as_str(),
                e.dropped(),
                signal.items()
            ));
        }
    }
    notes
}

fn summary(
    handle: &TelemetryHandle,
    schedule: &Schedule,
    elapsed: f64,
    output: Option<PathBuf>,
    shutdown: Result<(), lens::LensError>,
) -> RankSummary {
    let (rss_end, max_rss) = rss_mib();
    let stats = handle.stats();
    let error = shutdown.err().map(|e| e.to_string());
    let all = || {
        stats
            .exporters
            .iter()
            .chain(&stats.metric_exporters)
            .chain(&stats.log_exporters)
    };
    let sum = |f: fn(&lens::ExporterSnapshot) -> u64| all().map(f).sum::<u64>();
    let exported = |list: &[lens::ExporterSnapshot]| list.iter().map(|e| e.exported).sum();
    let max = |f: fn(&lens::ExporterSnapshot) -> Duration| {
        stats
            .exporters
            .iter()
            .map(f)
            .max()
            .unwrap_or_default()
            .as_micros() as u64
    };
    let mut dropped_by_reason = std::collections::BTreeMap::new();
    for e in all() {
        let reasons = [
            ("queue_full", e.dropped_queue_full),
            ("export_failed", e.dropped_export_failed),
            ("shutdown", e.dropped_shutdown),
            ("disabled", e.dropped_disabled),
            ("rejected", e.dropped_rejected),
            ("processor", e.dropped_processor),
            ("spool_full", e.dropped_spool_full),
            ("spool_corrupt", e.dropped_spool_corrupt),
        ];
        for (reason, n) in reasons.into_iter().filter(|(_, n)| *n > 0) {
            *dropped_by_reason.entry(reason.to_string()).or_insert(0) += n;
        }
    }
    RankSummary {
        rank: handle.rank().rank,
        node: 0,
        dropped_by_reason,
        exporting: handle.is_exporting(),
        sampler_keeps: handle.sampler_keeps(),
        produced: stats.spans_produced,
        exported: exported(&stats.exporters),
        data_points_exported: exported(&stats.metric_exporters),
        log_records_exported: exported(&stats.log_exporters),
        dropped: sum(|e| e.dropped()),
        spooled: sum(|e| e.spooled),
        in_spool: sum(|e| e.in_spool),
        retries: sum(|e| e.retries),
        restarts: sum(|e| e.restarts),
        reloads: sum(|e| e.reloads),
        latency_p50_us: max(|e| e.latency_p50),
        latency_p99_us: max(|e| e.latency_p99),
        output: output.map(|p| p.display().to_string()),
        error: error.clone(),
        components: Vec::new(),
        notes: all()
            .filter_map(|e| {
                let why = e.disabled.as_deref()?;
                Some(format!("exporter `{}` disabled at setup: {why}", e.name))
            })
            .chain(last_errors(&stats, error.as_deref()))
            .chain(
                stats
                    .span_processors
                    .iter()
                    .map(|p| processor_note(p, "spans")),
            )
            .chain((stats.metric_processors.iter()).map(|p| processor_note(p, "data points")))
            .chain(
                stats
                    .log_processors
                    .iter()
                    .map(|p| processor_note(p, "log records")),
            )
            .collect(),
        spans_per_second: stats.spans_produced as f64 / elapsed.max(1e-9),
        cpu_seconds: cpu_seconds(),
        max_rss_mib: max_rss,
        rss_early_mib: schedule.rss_early.unwrap_or(rss_end),
        rss_end_mib: rss_end,
    }
}
