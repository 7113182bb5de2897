//! Section `reload` (run alone with `--only reload`): one rank ending spans at a fixed rate
//! into a wasm exporter; 2 s in, another thread reloads the exporter. The longest gap between
//! two exports (the stats' batch count, sampled every millisecond) against the same run
//! without a reload, and how long the reload took, for a component the cache holds and for
//! one it must compile.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lens::config::WasmExporterSpec;
use lens::opentelemetry::trace::Tracer;

use crate::{Opts, Row, jsonl_spec, lens_rank, wasm_config};

const GROUP: &str = "Hot reload: 20,000 spans/s into a wasm exporter, reloaded 2 s in (longest gap between two exports, ms)";
const RATE: u64 = 20_000;

/// `component` with a custom section appended: another file, another SHA-256, compiled anew.
fn variant(component: &Path, dir: &Path, tag: &str) -> PathBuf {
    let mut bytes = std::fs::read(component).unwrap();
    let payload = [&[4u8][..], b"lens", tag.as_bytes()].concat();
    bytes.push(0);
    bytes.push(payload.len() as u8);
    bytes.extend_from_slice(&payload);
    let path = dir.join(format!("variant-{tag}.wasm"));
    std::fs::write(&path, bytes).unwrap();
    path
}

/// One run of `seconds`: `(longest gap ms, reload ms, exported, dropped)`; `reload_to`, when
/// given, is swapped in 2 s in.
fn run(
    spec: &WasmExporterSpec,
    cache: &Path,
    seconds: f64,
    reload_to: Option<&WasmExporterSpec>,
) -> (f64, f64, u64, u64) {
    let mut config = wasm_config(spec.clone());
    config.wasm_cache.dir = Some(cache.to_path_buf());
    config.batch.scheduled_delay_ms = 20;
    config.batch.max_queue_size = 200_000;
    let handle = lens_rank(config.clone(), 0, 1);
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (handle, stop) = (handle.clone(), stop.clone());
        std::thread::spawn(move || {
            let (mut last, mut at, mut longest) = (0, Instant::now(), Duration::ZERO);
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
                let batches = handle.stats().exporters[0].batches_exported;
                let now = Instant::now();
                if batches != last {
                    longest = longest.max(now - at);
                    (last, at) = (batches, now);
                }
            }
            longest
        })
    };
    let reloader = reload_to.map(|to| {
        let (handle, mut next) = (handle.clone(), config.clone());
        next.traces.exporters = vec![lens::config::ExporterSpec::Wasm(to.clone())];
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(2));
            let started = Instant::now();
            let report = handle.reload_exporters(&next).expect("the reload");
            assert_eq!(report.reloaded.len(), 1);
            started.elapsed()
        })
    });
    let tracer = handle.tracer("trainer");
    let started = Instant::now();
    let total = (RATE as f64 * seconds) as u64;
    for i in 0..total {
        tracer.in_span("step", |_| {});
        let due = started + Duration::from_micros((i + 1) * 1_000_000 / RATE);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    let took = reloader.map_or(Duration::ZERO, |r| r.join().unwrap());
    // The last gap ends at the shutdown's flush: stop watching before it.
    std::thread::sleep(Duration::from_millis(100));
    stop.store(true, Ordering::Relaxed);
    let longest = watcher.join().unwrap();
    handle.shutdown(Duration::from_secs(30)).unwrap();
    let e = handle.stats().exporters[0].clone();
    (
        longest.as_secs_f64() * 1e3,
        took.as_secs_f64() * 1e3,
        e.exported,
        e.dropped(),
    )
}

/// The section's rows.
pub fn reload(_opts: &Opts, builtin: &Path, dir: &Path, rows: &mut Vec<Row>) {
    let python = crate::dist("python-jsonl.wasm");
    for (guest, component, seconds) in [
        ("rust-jsonl", builtin.to_path_buf(), 4.0),
        ("python-jsonl", python, 14.0),
    ] {
        let cache = tempfile::tempdir().unwrap();
        let spec = jsonl_spec(component.clone(), dir);
        let mut cached = spec.clone();
        cached
            .settings
            .insert("path".into(), "/out/spans-2.jsonl".into());
        let tag = format!("{:08x}", rand::random::<u32>());
        let cold = jsonl_spec(variant(&component, dir, &tag), dir);
        // Warm the cache with the running component first (a run of its own).
        run(&spec, cache.path(), 0.5, None);
        for (name, to) in [
            ("no reload (the baseline)", None),
            ("reload, component in the cache", Some(&cached)),
            ("reload, component compiled by the reload", Some(&cold)),
        ] {
            let (gap, took, exported, dropped) = run(&spec, cache.path(), seconds, to);
            println!(
                "{guest}, {name}: longest gap {gap:.0} ms, reload {took:.0} ms, {exported} exported, {dropped} dropped"
            );
            rows.push(Row {
                group: GROUP,
                name: format!("{guest}, {name}: reload took {took:.0} ms; {exported} exported, {dropped} dropped"),
                value: gap,
                unit: "ms",
                ratio: None,
            });
        }
    }
}
