//! Lens benchmarks, every figure a ratio against a baseline measured in the same run.
//!
//! `cargo bench --bench pipeline` (after `guest-examples/build.sh` and
//! `pip install -r benches/requirements.txt`) writes `docs/benchmarks.md` and
//! `docs/benchmarks.svg`. `-- --quick` runs smaller loops.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lens::config::{ExporterSpec, SignalConfig, WasmExporterSpec, WasmPreopen};
use lens::exporter::jsonl_file::JsonLinesFileExporter;
use lens::opentelemetry::KeyValue;
use lens::opentelemetry::trace::{Span, Tracer, TracerProvider};
use lens::opentelemetry_sdk::error::OTelSdkResult;
use lens::opentelemetry_sdk::trace::{Sampler, SdkTracerProvider, SpanData, SpanExporter};
use lens::wasm::WasmSpanExporter;
use lens::{LensConfig, Telemetry, TelemetryHandle};

#[derive(Debug, Default, Clone)]
struct Noop;

impl SpanExporter for Noop {
    async fn export(&self, _batch: Vec<SpanData>) -> OTelSdkResult {
        Ok(())
    }
}

#[derive(Debug, Default, Clone)]
struct Collect(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Collect {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

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

fn wasm_config(spec: WasmExporterSpec) -> LensConfig {
    LensConfig {
        run_id: "bench".into(),
        metrics_enabled: false,
        traces: SignalConfig {
            exporters: vec![ExporterSpec::Wasm(spec)],
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

/// What one run measures: `--quick` shrinks the loops; `--only SECTION` (app, export, seed,
/// startup; repeatable) runs some sections and prints them without touching `docs/`;
/// `--guest SUBSTRING` narrows the export section to matching rows; `--batches N` sets its
/// number of batches (for profiling).
struct Opts {
    quick: bool,
    only: Vec<String>,
    guest: Option<String>,
    batches: Option<usize>,
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
        Self {
            quick: args.iter().any(|a| a == "--quick"),
            only,
            guest,
            batches,
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

fn main() {
    let opts = Opts::parse();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let builtin = lens::wasm::builtin::write_jsonl_exporter(dir).unwrap();
    let mut rows: Vec<Row> = Vec::new();
    let mut dropped = 0;
    let mut memory = Vec::new();
    if opts.wants("app") {
        dropped = app_thread(&opts, &builtin, dir, &mut rows);
    }
    if opts.wants("export") {
        memory = export_throughput(&opts, &builtin, dir, &mut rows);
    }
    if opts.wants("seed") {
        seed_stack(&opts, dir, &mut rows);
    }
    if opts.wants("startup") {
        startup(&builtin, dir, &mut rows);
    }
    let mem = "Peak linear memory per exporter instance, MiB";
    for (name, bytes) in memory {
        rows.push(Row {
            group: mem,
            name,
            value: bytes as f64 / (1 << 20) as f64,
            unit: "MiB",
            ratio: None,
        });
    }
    if opts.only.is_empty() {
        write_report(&rows, opts.quick, dropped);
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

/// 1. Application-thread cost per span; returns the spans the wasm rank's queue dropped.
fn app_thread(opts: &Opts, builtin: &Path, dir: &Path, rows: &mut Vec<Row>) -> u64 {
    let quick = opts.quick;
    let n = if quick { 20_000 } else { 200_000 };
    let runs = 9;
    let raw_noop = SdkTracerProvider::builder()
        .with_batch_exporter(Noop)
        .build();
    let raw_off = SdkTracerProvider::builder()
        .with_sampler(Sampler::AlwaysOff)
        .build();
    let with_wasm = lens_rank(wasm_config(jsonl_spec(builtin.to_path_buf(), dir)), 0, 1);
    let mut sampled_out = wasm_config(jsonl_spec(builtin.to_path_buf(), dir));
    sampled_out.sampler_enabled = true;
    sampled_out.export_sample_rate = 0.5; // rank 0 hashes to 0.785: dropped
    let sampled_out = lens_rank(sampled_out, 0, 8);
    assert!(!sampled_out.sampler_keeps());
    let mut not_exporting = wasm_config(jsonl_spec(builtin.to_path_buf(), dir));
    not_exporting.export_strategy = "single_rank".into();
    let not_exporting = lens_rank(not_exporting, 1, 8);
    assert!(!not_exporting.is_exporting());
    let mut no_tracking = wasm_config(jsonl_spec(builtin.to_path_buf(), dir));
    no_tracking.close_open_spans_on_shutdown = false;
    let no_tracking = lens_rank(no_tracking, 0, 1);
    let (t_raw_noop, t_raw_off) = (raw_noop.tracer("bench"), raw_off.tracer("bench"));
    let (t_wasm, t_untracked, t_sampled, t_off) = (
        with_wasm.tracer("bench"),
        no_tracking.tracer("bench"),
        sampled_out.tracer("bench"),
        not_exporting.tracer("bench"),
    );
    let mut samples: HashMap<&str, Vec<f64>> = HashMap::new();
    for _ in 0..runs {
        let mut measure = |key, f: &dyn Fn(i64), settle: &dyn Fn()| {
            samples.entry(key).or_default().push(ns_per_span(n, f));
            // Whatever the exporter still has queued is drained outside the clock, so that it
            // does not compete for the 2 cores with the next measurement.
            settle();
        };
        let flush = |h: &TelemetryHandle| {
            let _ = h.force_flush(Duration::from_secs(60));
        };
        let raw_flush = || {
            let _ = raw_noop.force_flush();
        };
        measure("raw_noop", &|i| one_span(&t_raw_noop, i), &raw_flush);
        measure("wasm", &|i| one_span(&t_wasm, i), &|| flush(&with_wasm));
        measure("untracked", &|i| one_span(&t_untracked, i), &|| {
            flush(&no_tracking)
        });
        measure("raw_off", &|i| one_span(&t_raw_off, i), &|| ());
        measure("sampled", &|i| one_span(&t_sampled, i), &|| ());
        measure("off", &|i| one_span(&t_off, i), &|| ());
    }
    let m = |k: &str| median(samples[k].clone());
    let app = "Application thread, ns per span (start, 4 attributes, end)";
    rows.push(Row {
        group: app,
        name: "raw SDK + no-op exporter (baseline)".into(),
        value: m("raw_noop"),
        unit: "ns",
        ratio: None,
    });
    rows.push(Row {
        group: app,
        name: "Lens rank with the wasm JSON-lines exporter".into(),
        value: m("wasm"),
        unit: "ns",
        ratio: Some((m("wasm") / m("raw_noop"), "× raw SDK + no-op")),
    });
    rows.push(Row {
        group: app,
        name: "the same, without tracking open spans (`close_open_spans_on_shutdown = false`)"
            .into(),
        value: m("untracked"),
        unit: "ns",
        ratio: Some((m("untracked") / m("raw_noop"), "× raw SDK + no-op")),
    });
    rows.push(Row {
        group: app,
        name: "raw SDK AlwaysOff (baseline)".into(),
        value: m("raw_off"),
        unit: "ns",
        ratio: None,
    });
    rows.push(Row {
        group: app,
        name: "Lens rank dropped by the rank-aware sampler".into(),
        value: m("sampled"),
        unit: "ns",
        ratio: Some((m("sampled") / m("raw_off"), "× raw AlwaysOff")),
    });
    rows.push(Row {
        group: app,
        name: "Lens non-exporting rank (no-op providers)".into(),
        value: m("off"),
        unit: "ns",
        ratio: Some((m("off") / m("raw_off"), "× raw AlwaysOff")),
    });
    let dropped = with_wasm.stats().exporters[0].dropped_queue_full;
    for h in [with_wasm, no_tracking, sampled_out, not_exporting] {
        let _ = h.shutdown(Duration::from_secs(60));
    }
    let _ = raw_noop.shutdown();
    dropped
}

/// Export throughput (section 2) through each exporter, batches of 512, spans made
/// beforehand; returns the peak memory of each guest.
fn export_throughput(
    opts: &Opts,
    builtin: &Path,
    dir: &Path,
    rows: &mut Vec<Row>,
) -> Vec<(String, u64)> {
    let quick = opts.quick;
    let batches = opts.batches.unwrap_or(if quick { 20 } else { 100 });
    let sink = Collect::default();
    let maker = SdkTracerProvider::builder()
        .with_simple_exporter(sink.clone())
        .build();
    let tracer = maker.tracer("bench");
    for i in 0..512 {
        one_span(&tracer, i);
    }
    let batch = sink.0.lock().unwrap().clone();
    // Rounds alternate the native baseline and the exporter under test, so that the machine's
    // drift hits both; each figure is the median over rounds, each ratio the median of the
    // per-round ratios.
    let rounds = if quick { 3 } else { 5 };
    let per_round = batches.div_ceil(rounds);
    let throughput = |e: &dyn Fn(Vec<SpanData>)| -> f64 {
        // The batch processor hands over batches it owns: copies made outside the clock.
        let copies: Vec<Vec<SpanData>> = (0..per_round).map(|_| batch.clone()).collect();
        let started = Instant::now();
        for b in copies {
            e(b);
        }
        (per_round * batch.len()) as f64 / started.elapsed().as_secs_f64()
    };
    let native = JsonLinesFileExporter::create(dir.join("native.jsonl")).unwrap();
    let native_export = |b| futures_executor::block_on(native.export(b)).unwrap();
    native_export(batch.clone()); // warm up
    let mut native_rates = Vec::new();
    let thr = "Export throughput, spans per second (batches of 512)";
    let resource = lens::opentelemetry_sdk::Resource::builder_empty().build();
    let mut guests: Vec<(String, WasmExporterSpec)> = vec![
        (
            "Rust JSON-lines guest (typed)".into(),
            jsonl_spec(builtin.to_path_buf(), dir),
        ),
        ("Rust JSON-lines guest (typed), fuel metered too".into(), {
            let mut spec = jsonl_spec(builtin.to_path_buf(), dir);
            spec.fuel_per_call = Some(1 << 40);
            spec
        }),
        ("no-op guest, typed".into(), noop_spec("typed")),
        ("no-op guest, OTLP bytes".into(), noop_spec("otlp")),
        ("no-op guest, OTLP JSON".into(), noop_spec("otlp-json")),
        (
            "C JSON-lines guest (typed)".into(),
            jsonl_spec(dist("c-jsonl.wasm"), dir),
        ),
        (
            "Python JSON-lines guest (OTLP JSON)".into(),
            jsonl_spec(dist("python-jsonl.wasm"), dir),
        ),
    ];
    let mut js = jsonl_spec(dist("js-jsonl.wasm"), dir);
    js.settings.clear();
    js.forward_stdio = Some(false);
    guests.push(("JavaScript JSON-lines guest (OTLP JSON, stdout)".into(), js));
    let mut boundary = Vec::new();
    let mut memory = Vec::new();
    for (name, spec) in guests.iter().filter(|(n, _)| opts.matches(n)) {
        let (e, stats) = WasmSpanExporter::from_config("bench", spec, &resource).unwrap();
        let guest_export = |b| futures_executor::block_on(e.export(b)).unwrap();
        guest_export(batch.clone()); // warm up (first instance, caches)
        let (mut rates, mut ratios) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let native_rate = throughput(&native_export);
            let rate = throughput(&guest_export);
            native_rates.push(native_rate);
            rates.push(rate);
            ratios.push(native_rate / rate);
        }
        let _ = e.shutdown();
        let rate = median(rates);
        rows.push(Row {
            group: thr,
            name: name.clone(),
            value: rate,
            unit: "spans/s",
            ratio: Some((median(ratios), "× native time per span")),
        });
        if name.starts_with("no-op") {
            boundary.push((name.clone(), 1e6 / rate));
        }
        memory.push((name.clone(), stats.snapshot().peak_memory_bytes));
    }
    if native_rates.is_empty() {
        native_rates.push(throughput(&native_export));
    }
    let native_row = Row {
        group: thr,
        name: "native Rust JSON-lines exporter (the limit)".into(),
        value: median(native_rates),
        unit: "spans/s",
        ratio: None,
    };
    let first = rows
        .iter()
        .position(|r| r.group == thr)
        .unwrap_or(rows.len());
    rows.insert(first, native_row);
    // The same no-op guests at other batch sizes (same number of spans in all).
    for size in [64usize, 2048] {
        if !opts.matches("no-op") {
            break;
        }
        let sized: Vec<SpanData> = (0..size).map(|i| batch[i % batch.len()].clone()).collect();
        let n = (per_round * batch.len()).div_ceil(size);
        for (encoding, label) in [
            ("typed", "typed"),
            ("otlp", "OTLP bytes"),
            ("otlp-json", "OTLP JSON"),
        ] {
            let (e, _) =
                WasmSpanExporter::from_config("bench", &noop_spec(encoding), &resource).unwrap();
            let export = |b| futures_executor::block_on(e.export(b)).unwrap();
            export(sized.clone());
            let us = median(
                (0..rounds)
                    .map(|_| {
                        let copies: Vec<Vec<SpanData>> = (0..n).map(|_| sized.clone()).collect();
                        let started = Instant::now();
                        copies.into_iter().for_each(&export);
                        started.elapsed().as_secs_f64() * 1e6 / (n * size) as f64
                    })
                    .collect(),
            );
            let _ = e.shutdown();
            boundary.push((format!("no-op guest, {label}, batch {size}"), us));
        }
    }
    let bnd = "No-op guest boundary cost, µs per span (batches of 512 unless stated)";
    for (name, us) in boundary {
        rows.push(Row {
            group: bnd,
            name,
            value: us,
            unit: "µs",
            ratio: None,
        });
    }

    memory
}

/// 3. The seed's stack vs a Python guest under Lens, end to end (N spans into a file).
fn seed_stack(opts: &Opts, dir: &Path, rows: &mut Vec<Row>) {
    let quick = opts.quick;
    let n_py = if quick { 5_000 } else { 50_000 };
    let py_out = dir.join("python-sdk.jsonl");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/python_sdk_baseline.py");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg(n_py.to_string())
        .arg(&py_out)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} (pip install -r benches/requirements.txt)",
        String::from_utf8_lossy(&out.stderr)
    );
    let py: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let py_rate = py["spans_per_second"].as_f64().unwrap();
    let e2e = "End to end: N spans from the application into a JSON-lines file, spans per second";
    rows.push(Row {
        group: e2e,
        name: "Python SDK + BatchSpanProcessor + Python exporter (the seed)".into(),
        value: py_rate,
        unit: "spans/s",
        ratio: None,
    });
    for lanes in [1, 2] {
        let out_dir = dir.join(format!("python-guest-{lanes}"));
        std::fs::create_dir_all(&out_dir).unwrap();
        let mut spec = jsonl_spec(dist("python-jsonl.wasm"), &out_dir);
        spec.settings.insert(
            "path".into(),
            format!("/out/spans-{}.jsonl", lens::wasm::INSTANCE_PLACEHOLDER),
        );
        let mut cfg = wasm_config(spec);
        cfg.batch.max_queue_size = n_py;
        cfg.batch.max_concurrent_exports = lanes;
        let handle = lens_rank(cfg, 0, 1);
        let tracer = handle.tracer("bench");
        let started = Instant::now();
        for i in 0..n_py as i64 {
            one_span(&tracer, i);
        }
        handle.force_flush(Duration::from_secs(600)).unwrap();
        let rate = n_py as f64 / started.elapsed().as_secs_f64();
        let _ = handle.shutdown(Duration::from_secs(60));
        // Every span made it, once: the instances' files hold n_py lines together.
        let lines: usize = (0..lanes)
            .map(|k| {
                let text = std::fs::read_to_string(out_dir.join(format!("spans-{k}.jsonl")));
                text.unwrap().lines().count()
            })
            .sum();
        assert_eq!(
            lines, n_py,
            "lines written by {lanes} Python guest instance(s)"
        );
        rows.push(Row {
            group: e2e,
            name: if lanes == 1 {
                "Lens + Python guest".into()
            } else {
                format!(
                    "Lens + Python guest, {lanes} concurrent exports (`max_concurrent_exports`)"
                )
            },
            value: rate,
            unit: "spans/s",
            ratio: Some((rate / py_rate, "× the seed")),
        });
    }
}

/// 4. Start-up per guest: cold compile, then cached load (median of 5) from a fresh cache.
fn startup(builtin: &Path, dir: &Path, rows: &mut Vec<Row>) {
    let st = "Start-up per guest: cold compile / cached load, ms";
    let engine = lens::wasm::engine::engine(false).unwrap();
    let cache = lens::wasm::cache::ArtifactCache::new(dir.join("wasm-cache"), u64::MAX);
    for (name, path) in [
        ("Rust JSON-lines", builtin.to_path_buf()),
        ("C JSON-lines", dist("c-jsonl.wasm")),
        ("Python JSON-lines", dist("python-jsonl.wasm")),
        ("JavaScript JSON-lines", dist("js-jsonl.wasm")),
    ] {
        let ms = |cache| {
            let t = Instant::now();
            lens::wasm::load_with(&path, None, engine, cache).unwrap();
            t.elapsed().as_secs_f64() * 1e3
        };
        let cold = ms(None);
        ms(Some(&cache)); // compiles and stores
        let warm = median((0..5).map(|_| ms(Some(&cache))).collect());
        rows.push(Row {
            group: st,
            name: format!("{name}: cold"),
            value: cold,
            unit: "ms",
            ratio: None,
        });
        rows.push(Row {
            group: st,
            name: format!("{name}: cached"),
            value: warm,
            unit: "ms",
            ratio: Some((cold / warm, "× faster than cold")),
        });
    }
}

/// The first heading of the hand-written part of `docs/benchmarks.md`.
const HAND_WRITTEN: &str = "## Scale:";

fn write_report(rows: &[Row], quick: bool, dropped: u64) {
    let mut md = String::new();
    writeln!(md, "# Lens benchmarks\n").unwrap();
    writeln!(
        md,
        "Produced by `cargo bench --bench pipeline{}` on this project's 2-core machine; every ratio \
         is against a baseline measured in the same run. The machine is noisy: compare ratios, \
         not absolute figures. Regenerate with the same command.\n",
        if quick { " -- --quick" } else { "" }
    )
    .unwrap();
    let mut group = "";
    for r in rows {
        if r.group != group {
            group = r.group;
            writeln!(
                md,
                "\n## {group}\n\n| configuration | value | ratio |\n|---|---:|---:|"
            )
            .unwrap();
        }
        let value = match r.unit {
            "spans/s" => format!("{:.0} {}", r.value, r.unit),
            _ => format!("{:.2} {}", r.value, r.unit),
        };
        let ratio = r
            .ratio
            .map(|(x, what)| format!("{x:.2} {what}"))
            .unwrap_or_else(|| "—".into());
        writeln!(md, "| {} | {value} | {ratio} |", r.name).unwrap();
    }
    writeln!(
        md,
        "\nThe application-thread figure for the wasm exporter includes its queue: the producer \
         ran at full speed and the queue (16384) dropped {dropped} spans, each counted. \
         ![throughput](benchmarks.svg)"
    )
    .unwrap();
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    // Everything from the hand-written scale run on (not produced by this binary) is kept.
    let previous = std::fs::read_to_string(docs.join("benchmarks.md")).unwrap_or_default();
    if let Some(at) = previous.find(HAND_WRITTEN) {
        md.push('\n');
        md.push_str(&previous[at..]);
    }
    std::fs::write(docs.join("benchmarks.md"), md).unwrap();
    std::fs::write(docs.join("benchmarks.svg"), svg(rows)).unwrap();
    println!(
        "{}",
        std::fs::read_to_string(docs.join("benchmarks.md")).unwrap()
    );
}

/// A horizontal bar chart of the export throughputs (log scale).
fn svg(rows: &[Row]) -> String {
    let bars: Vec<&Row> = rows
        .iter()
        .filter(|r| r.unit == "spans/s" && r.group.starts_with("Export"))
        .collect();
    let max = bars.iter().map(|r| r.value).fold(1.0_f64, f64::max).log10();
    let (w, row_h, left) = (900.0, 28.0, 330.0);
    let h = 50.0 + row_h * bars.len() as f64;
    let mut s = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' font-family='sans-serif' font-size='12'>\
         <text x='10' y='20' font-size='14'>Export throughput, spans/s (log scale, batches of 512)</text>"
    );
    for (i, r) in bars.iter().enumerate() {
        let y = 35.0 + row_h * i as f64;
        let len = (r.value.max(1.0).log10() / max) * (w - left - 120.0);
        write!(
            s,
            "<text x='10' y='{}'>{}</text><rect x='{left}' y='{y}' width='{len:.1}' height='18' fill='#4a7fb5'/>\
             <text x='{}' y='{}'>{:.0}</text>",
            y + 13.0,
            r.name.replace('&', "&amp;").replace('<', "&lt;"),
            left + len + 6.0,
            y + 13.0,
            r.value
        )
        .unwrap();
    }
    s.push_str("</svg>\n");
    s
}
