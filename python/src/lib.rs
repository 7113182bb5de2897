//! `lens._lens`: the native half of the `lens` Python package.
//!
//! [`WasmExporterCore`] holds one [`lens::wasm::WasmSpanExporter`] — the same host the Rust
//! library runs: load checks, sandbox, memory cap, deadlines, lanes and fault backoff. The Python
//! half (`pysrc/lens/__init__.py`) wraps it in a real `opentelemetry.sdk` `SpanExporter`.
//!
//! - [`convert`]: `ReadableSpan` objects read once, under the GIL, into `SpanData`;
//! - [`WasmExporterCore::export`] then releases the GIL for the encoding and the guest call.

mod convert;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use lens::LensConfig;
use lens::config::{ExporterSpec, WasmExporterSpec};
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::trace::SpanExporter as _;
use lens::trace::ExporterStats;
use lens::wasm::WasmSpanExporter;
use pyo3::prelude::*;

pyo3::create_exception!(
    _lens,
    ExporterLoadError,
    pyo3::exceptions::PyException,
    "A wasm exporter could not be set up: the file, the component, its imports, its pin, or its \
     `init` (the message is the Rust host's)."
);

/// The resource the guest was last initialised with, and the Python object it came from.
struct SeenResource {
    object: Option<Py<PyAny>>,
    current: Resource,
}

/// One sandboxed exporter, driven by the Python SDK's span processor.
#[pyclass(module = "lens._lens", frozen)]
pub struct WasmExporterCore {
    name: String,
    exporter: RwLock<WasmSpanExporter>,
    stats: Arc<ExporterStats>,
    resource: Mutex<SeenResource>,
    shut_down: AtomicBool,
}

fn load_error(e: impl std::fmt::Display) -> PyErr {
    ExporterLoadError::new_err(e.to_string())
}

impl WasmExporterCore {
    /// Loads, checks and starts `spec` (its `init` runs with an empty resource; the spans'
    /// resource re-initialises it at the first batch).
    fn build(py: Python<'_>, spec: WasmExporterSpec, name: Option<String>) -> PyResult<Self> {
        let name = name.unwrap_or_else(|| ExporterSpec::Wasm(spec.clone()).display_name());
        let empty = Resource::builder_empty().build();
        let (exporter, stats) = py
            .detach(|| WasmSpanExporter::from_config(&name, &spec, &empty))
            .map_err(load_error)?;
        Ok(Self {
            name,
            exporter: RwLock::new(exporter),
            stats,
            resource: Mutex::new(SeenResource {
                object: None,
                current: empty,
            }),
            shut_down: AtomicBool::new(false),
        })
    }

    /// Re-initialises the guest when `resource` is not the one it last saw.
    fn follow_resource(&self, py: Python<'_>, resource: Option<Py<PyAny>>) -> PyResult<()> {
        let Some(object) = resource else {
            return Ok(());
        };
        let mut seen = self.resource.lock().unwrap_or_else(|p| p.into_inner());
        if seen.object.as_ref().is_some_and(|o| o.is(&object)) {
            return Ok(());
        }
        let converted = convert::resource(object.bind(py))?;
        if converted != seen.current {
            let mut exporter = self.exporter.write().unwrap_or_else(|p| p.into_inner());
            exporter.set_resource(&converted);
            seen.current = converted;
        }
        seen.object = Some(object);
        Ok(())
    }
}

#[pymethods]
impl WasmExporterCore {
    /// An exporter from the JSON of a `[[traces.exporters]]` wasm entry (without `kind`).
    #[new]
    #[pyo3(signature = (spec_json, name=None))]
    fn new(py: Python<'_>, spec_json: &str, name: Option<String>) -> PyResult<Self> {
        let spec: WasmExporterSpec = serde_json::from_str(spec_json)
            .map_err(|e| load_error(format!("invalid exporter settings: {e}")))?;
        Self::build(py, spec, name)
    }

    /// The `kind = "wasm"` entry of a Lens TOML file named `name` (its `name` key, else its
    /// file's stem); without a name, the file's only wasm entry.
    #[staticmethod]
    #[pyo3(signature = (path, name=None))]
    fn from_config(py: Python<'_>, path: PathBuf, name: Option<String>) -> PyResult<Self> {
        let config = LensConfig::from_file(&path).map_err(load_error)?;
        let entries: Vec<(String, WasmExporterSpec)> = config
            .traces
            .exporters
            .iter()
            .filter_map(|e| match e {
                ExporterSpec::Wasm(w) => Some((e.display_name(), w.clone())),
                _ => None,
            })
            .collect();
        let names = || {
            entries
                .iter()
                .map(|(n, _)| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (name, spec) = match (&name, entries.len()) {
            (Some(wanted), _) => entries
                .iter()
                .find(|(n, _)| n == wanted)
                .cloned()
                .ok_or_else(|| {
                    load_error(format!(
                        "{}: no wasm exporter named `{wanted}` in [[traces.exporters]] (there: {})",
                        path.display(),
                        if entries.is_empty() {
                            "none".to_string()
                        } else {
                            names()
                        }
                    ))
                })?,
            (None, 1) => entries[0].clone(),
            (None, 0) => {
                return Err(load_error(format!(
                    "{}: no `kind = \"wasm\"` entry in [[traces.exporters]]",
                    path.display()
                )));
            }
            (None, _) => {
                return Err(load_error(format!(
                    "{}: several wasm exporters ({}): pass name=",
                    path.display(),
                    names()
                )));
            }
        };
        Self::build(py, spec, Some(name))
    }

    /// The exporter's display name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The batch encoding the guest asked for.
    #[getter]
    fn encoding(&self) -> Option<&'static str> {
        self.exporter
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .encoding()
    }

    /// Exports a batch of `ReadableSpan`s; `None` on success, else why it failed (never
    /// raises: a fault must not reach the SDK's thread).
    fn export(&self, py: Python<'_>, spans: &Bound<'_, PyAny>) -> Option<String> {
        let started = Instant::now();
        let batch = match convert::batch(spans) {
            Ok(b) => b,
            Err(e) => {
                let n = spans.len().unwrap_or(0) as u64;
                let export = self.stats.begin_direct_export(n);
                self.stats
                    .end_direct_export(export, false, started.elapsed());
                return Some(format!(
                    "wasm exporter `{}`: reading the spans: {e}",
                    self.name
                ));
            }
        };
        // Counted from here: after the shutdown, or still running when it ends, the spans are
        // dropped at shutdown.
        let export = self.stats.begin_direct_export(batch.spans.len() as u64);
        if self.shut_down.load(Ordering::Acquire) {
            self.stats.abandon_direct_export(export);
            return Some(format!("wasm exporter `{}`: already shut down", self.name));
        }
        if let Err(e) = self.follow_resource(py, batch.resource) {
            self.stats
                .end_direct_export(export, false, started.elapsed());
            return Some(format!(
                "wasm exporter `{}`: reading the resource: {e}",
                self.name
            ));
        }
        let spans = batch.spans;
        let outcome = py.detach(|| {
            let exporter = self.exporter.read().unwrap_or_else(|p| p.into_inner());
            futures_executor::block_on(exporter.export(spans))
        });
        self.stats
            .end_direct_export(export, outcome.is_ok(), started.elapsed());
        outcome.err().map(|e| e.to_string())
    }

    /// Asks the guest to flush within `timeout_millis`; `None` on success, else why not.
    fn force_flush(&self, py: Python<'_>, timeout_millis: u64) -> Option<String> {
        py.detach(|| {
            self.exporter
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .force_flush_within(Duration::from_millis(timeout_millis))
        })
        .err()
        .map(|e| e.to_string())
    }

    /// Shuts the guest down within `timeout_millis` (idempotent); `None` on success, else why
    /// not.
    fn shutdown(&self, py: Python<'_>, timeout_millis: u64) -> Option<String> {
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return None;
        }
        let result = py.detach(|| {
            self.exporter
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .shutdown_with_timeout(Duration::from_millis(timeout_millis))
        });
        self.stats.close_direct();
        result.err().map(|e| e.to_string())
    }

    /// The exporter's counters as JSON (the Python half returns them as a dict).
    fn stats_json(&self) -> String {
        let s = self.stats.snapshot();
        serde_json::json!({
            "name": s.name,
            "received": s.received,
            "exported": s.exported,
            "dropped": s.dropped(),
            "dropped_export_failed": s.dropped_export_failed,
            "dropped_shutdown": s.dropped_shutdown,
            "dropped_rejected": s.dropped_rejected,
            "retries": s.retries,
            "retries_exhausted": s.retries_exhausted,
            "batches_exported": s.batches_exported,
            "batches_failed": s.batches_failed,
            "guest_errors": s.guest_errors,
            "traps": s.traps.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect::<serde_json::Map<_, _>>(),
            "restarts": s.restarts,
            "latency_p50_ms": s.latency_p50.as_secs_f64() * 1000.0,
            "latency_p99_ms": s.latency_p99.as_secs_f64() * 1000.0,
            "peak_memory_bytes": s.peak_memory_bytes,
        })
        .to_string()
    }
}

/// Reads `spans` into the host's span data and discards them; the number read. What
/// `WasmSpanExporter.export` does under the GIL before it releases it: the benchmark
/// (`python/bench/exporters.py`) times the conversion alone with it.
#[pyfunction]
fn read_spans(spans: &Bound<'_, PyAny>) -> PyResult<usize> {
    Ok(convert::batch(spans)?.spans.len())
}

/// One component [`compile`] put in the cache: its path, the exporters using it, whether the
/// cache held it already, and the seconds it took.
type Compiled = (String, Vec<String>, bool, f64);

/// Compiles the component at `path` (a `.wasm` file, or every wasm exporter of a Lens config
/// file) into the compilation cache: `[(path, exporters, was_cached, seconds)]`. Raises
/// `ExporterLoadError` naming the first that does not load, after trying them all.
#[pyfunction]
#[pyo3(signature = (path, *, fuel = false))]
fn compile(py: Python<'_>, path: PathBuf, fuel: bool) -> PyResult<Vec<Compiled>> {
    let warmed = py
        .detach(|| lens::wasm::warm::warm_file(&path, fuel, &lens::config::env::ProcessEnv))
        .map_err(ExporterLoadError::new_err)?;
    warmed
        .into_iter()
        .map(|w| match w.outcome {
            Ok(cached) => Ok((
                w.path.display().to_string(),
                w.exporters,
                cached,
                w.elapsed.as_secs_f64(),
            )),
            Err(e) => Err(ExporterLoadError::new_err(e.to_string())),
        })
        .collect()
}

/// The compile worker's side (`lens::wasm::compiler`): what the child this module starts for
/// each compile runs; its exit code.
#[pyfunction]
fn _compile_worker(py: Python<'_>) -> u8 {
    // Without the GIL: wasmtime compiles on several threads, and a thread that logs goes
    // through Python's `logging` (pyo3-log), which takes it.
    py.detach(lens::wasm::compiler::serve_worker)
}

/// Compiles run in a child Python (this interpreter, running [`_compile_worker`]), bounded in
/// memory and time, rather than in the rank's process.
fn use_compile_worker(py: Python<'_>) -> PyResult<()> {
    let executable: String = py.import("sys")?.getattr("executable")?.extract()?;
    if !executable.is_empty() {
        lens::wasm::compiler::use_worker(
            executable,
            [
                "-c",
                "import sys; from lens import _lens; sys.exit(_lens._compile_worker())",
            ],
        );
    }
    Ok(())
}

#[pymodule]
fn _lens(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The host's messages (faults, backoff, the guest's stderr) go to Python's `logging`, under
    // the Rust module paths (`lens.wasm.exporter`, …): a `lens` logger sees them all.
    let _ = pyo3_log::try_init();
    m.add_class::<WasmExporterCore>()?;
    m.add_function(wrap_pyfunction!(read_spans, m)?)?;
    m.add_function(wrap_pyfunction!(_compile_worker, m)?)?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    use_compile_worker(m.py())?;
    m.add("ExporterLoadError", m.py().get_type::<ExporterLoadError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
