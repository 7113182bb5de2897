//! Hot reload: exporters replaced in a running installation (`reload_exporters`, the watched
//! file, SIGHUP) under load, with every span accounted for.

mod demo;
mod entries;
mod load;
mod triggers;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use lens::config::{ExporterSpec, SignalConfig, WasmExporterSpec};
use lens::opentelemetry::trace::{Span as _, Tracer as _};
use lens::{ExporterSnapshot, LensConfig, Telemetry, TelemetryHandle};
use lens_test_support::pipeline::{exporting, no_env};
use lens_test_support::wasm::{RECORDER, lines, recorder_at};

/// The recorder guest as a second component: its bytes plus a custom section, so another
/// file with another SHA-256 that compiles on its own, and behaves the same.
fn recorder_variant(dir: &Path, tag: &str) -> PathBuf {
    let mut bytes = std::fs::read(RECORDER).unwrap();
    let name = b"lens-test-variant";
    let mut payload = vec![name.len() as u8];
    payload.extend_from_slice(name);
    payload.extend_from_slice(tag.as_bytes());
    // A custom section: id 0, then its size (one LEB128 byte under 128).
    assert!(payload.len() < 128);
    bytes.extend_from_slice(&[0, payload.len() as u8]);
    bytes.extend_from_slice(&payload);
    let path = dir.join(format!("recorder-{tag}.wasm"));
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The SHA-256 of a file, in hex.
fn sha256(path: &Path) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

/// The recorder at `path` named `vendor`, writing `/out/<file>` into `dir` (typed, with a
/// line for each force-flush and shutdown).
fn vendor(dir: &Path, path: &Path, file: &str) -> WasmExporterSpec {
    let mut spec = recorder_at(dir, "vendor", file, "typed", &[("lifecycle", "true")]);
    spec.path = path.to_path_buf();
    spec
}

/// An exporting config (traces only) whose span exporters are `specs`, in small, frequent
/// batches.
fn traces_config(specs: Vec<ExporterSpec>) -> LensConfig {
    let mut config = LensConfig {
        run_id: "reload".into(),
        metrics_enabled: false,
        traces: SignalConfig {
            exporters: specs,
            ..Default::default()
        },
        ..exporting()
    };
    config.batch.max_export_batch_size = 64;
    config.batch.scheduled_delay_ms = 5;
    config
}

fn install(config: LensConfig) -> TelemetryHandle {
    Telemetry::builder(config)
        .env(no_env())
        .install_global(false)
        .install()
        .unwrap()
}

/// The statistics of the span exporter `name`.
fn span_stats(handle: &TelemetryHandle, name: &str) -> ExporterSnapshot {
    handle
        .stats()
        .exporters
        .into_iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no span exporter `{name}`"))
}

/// A thread ending spans named `s<N>` (N = 0, 1, …) as fast as it can until stopped; joined,
/// it says how many it ended.
struct Producer {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<u64>,
}

impl Producer {
    fn start(handle: &TelemetryHandle) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let tracer = handle.tracer("load");
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut n = 0u64;
            while !flag.load(Ordering::Relaxed) {
                tracer.start(format!("s{n}")).end();
                n += 1;
            }
            n
        });
        Self { stop, thread }
    }

    fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

/// What one recorder file holds: the span numbers of its typed batches in order, and its
/// other lines (`init`, `force_flush`, `shutdown`) by kind and position.
struct Recorded {
    spans: Vec<u64>,
    events: BTreeMap<String, Vec<usize>>,
    lines: usize,
}

fn recorded(path: &Path) -> Recorded {
    let mut out = Recorded {
        spans: Vec::new(),
        events: BTreeMap::new(),
        lines: 0,
    };
    for (i, line) in lines(path).into_iter().enumerate() {
        out.lines += 1;
        match line.get("typed").and_then(|t| t.as_array()) {
            Some(spans) => out.spans.extend(spans.iter().map(|s| {
                s["name"].as_str().unwrap()[1..]
                    .parse::<u64>()
                    .expect("a span named s<N>")
            })),
            None => {
                let kind = line.as_object().unwrap().keys().next().unwrap().clone();
                out.events.entry(kind).or_default().push(i);
            }
        }
    }
    out
}

/// Waits up to 10 s for `done`.
pub(super) fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !done() {
        assert!(
            std::time::Instant::now() < until,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
