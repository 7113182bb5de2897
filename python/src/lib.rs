//! `lens._lens`: the native half of the `lens` Python package.
//!
//! Each core holds one of Lens's wasm exporters — the same host the Rust library runs: load
//! checks, sandbox, memory cap, deadlines, lanes, retries and fault backoff. The Python half
//! (`pysrc/lens/`) wraps each in a real `opentelemetry.sdk` exporter or processor.
//!
//! - [`convert`]: the Python SDK's spans, metrics and log records read once, under the GIL,
//!   into Lens-owned data;
//! - [`core`]: entries (keywords or a config file), the resource a guest follows, counters;
//! - [`following`]: an exporter shared by the converting and the exporting thread;
//! - [`spans`], [`metrics`], [`logs`]: the cores, each handing batches off to Lens's own queue
//!   and export thread, or waiting for the guest (the GIL released);
//! - [`process`]: sandboxed span processors before a Python exporter;
//! - [`process_metrics`], [`process_logs`]: the same before a Python metric or log exporter;
//! - [`watch`]: `[reload] watch = true` for an exporter built from a config file.

mod convert;
mod core;
mod following;
mod handoff;
mod logs;
mod metric_queue;
mod metrics;
mod process;
mod process_logs;
mod process_metrics;
mod spans;
mod watch;

use std::path::PathBuf;

use pyo3::prelude::*;

pyo3::create_exception!(
    _lens,
    ExporterLoadError,
    pyo3::exceptions::PyException,
    "A wasm exporter could not be set up: the file, the component, its imports, its pin, or its \
     `init` (the message is the Rust host's)."
);

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

/// Compiles the component at `path` (a `.wasm` file, an `oci://` reference pulled into the
/// node's store, or every wasm exporter of a Lens config file) into the compilation cache: `[(path, exporters, was_cached, seconds)]`. Raises
/// `ExporterLoadError` naming the first that does not load, after trying them all.
#[pyfunction]
#[pyo3(signature = (path, *, fuel = false, allow_unpinned = false, verify_key = None))]
fn compile(
    py: Python<'_>,
    path: PathBuf,
    fuel: bool,
    allow_unpinned: bool,
    verify_key: Option<PathBuf>,
) -> PyResult<Vec<Compiled>> {
    let entry = lens::config::WasmExporterSpec {
        fuel_per_call: fuel.then_some(u64::MAX),
        allow_unpinned: allow_unpinned.then_some(true),
        verify: verify_key.map(|key| lens::config::VerifySpec { key }),
        ..Default::default()
    };
    let warmed = py
        .detach(|| {
            lens::wasm::sandbox::warm::warm_file(&path, &entry, &lens::config::env::ProcessEnv)
        })
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

/// The compile worker's side (`lens::wasm::artefact::compiler`): what the child this module starts for
/// each compile runs; its exit code.
#[pyfunction]
fn _compile_worker(py: Python<'_>) -> u8 {
    // Without the GIL: wasmtime compiles on several threads, and a thread that logs goes
    // through Python's `logging` (pyo3-log), which takes it.
    py.detach(lens::wasm::artefact::compiler::serve_worker)
}

/// Compiles run in a child Python (this interpreter, running [`_compile_worker`]), bounded in
/// memory and time, rather than in the rank's process.
fn use_compile_worker(py: Python<'_>) -> PyResult<()> {
    let executable: String = py.import("sys")?.getattr("executable")?.extract()?;
    if !executable.is_empty() {
        lens::wasm::artefact::compiler::use_worker(
            executable,
            [
                "-c",
                "import sys; from lens import _lens; sys.exit(_lens._compile_worker())",
            ],
        );
    }
    Ok(())
}

/// What the host's `log` records go through: Python's `logging`, with the loggers' levels
/// cached (a disabled level then costs no GIL).
static LOG_CACHE: std::sync::OnceLock<pyo3_log::ResetHandle> = std::sync::OnceLock::new();

/// Forgets the cached levels of the `lens` loggers: call after changing them (say, to see a
/// trap's backtrace at `DEBUG`).
#[pyfunction]
fn refresh_logging() {
    if let Some(handle) = LOG_CACHE.get() {
        handle.reset();
    }
}

/// `lens report`: a run folder drawn as `report.html` (or, `perfetto=True`, its spans as
/// `trace.json`); returns what it wrote. A missing or empty folder raises `ValueError`.
#[pyfunction]
#[pyo3(signature = (run_dir, perfetto=false, config=None, out=None, straggler_threshold=0.1))]
fn report(
    py: Python<'_>,
    run_dir: PathBuf,
    perfetto: bool,
    config: Option<PathBuf>,
    out: Option<PathBuf>,
    straggler_threshold: f64,
) -> PyResult<std::collections::HashMap<&'static str, Py<PyAny>>> {
    let mut options =
        lens::report::ReportOptions::default().with_straggler_threshold(straggler_threshold);
    if let Some(c) = config {
        options = options.with_config(c);
    }
    if let Some(o) = out {
        options = options.with_output(o);
    }
    let written = py.detach(|| {
        if perfetto {
            lens::report::write_perfetto(&run_dir, &options)
        } else {
            lens::report::write_report(&run_dir, &options)
        }
    });
    let r = written.map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    let mut d = std::collections::HashMap::new();
    d.insert(
        "summary",
        r.to_string().into_pyobject(py)?.into_any().unbind(),
    );
    d.insert(
        "path",
        r.path
            .display()
            .to_string()
            .into_pyobject(py)?
            .into_any()
            .unbind(),
    );
    d.insert("bytes", r.bytes.into_pyobject(py)?.into_any().unbind());
    d.insert("ranks", r.ranks.into_pyobject(py)?.into_any().unbind());
    d.insert("spans", r.spans.into_pyobject(py)?.into_any().unbind());
    d.insert("skipped", r.skipped.into_pyobject(py)?.into_any().unbind());
    d.insert(
        "stragglers",
        r.stragglers.into_pyobject(py)?.into_any().unbind(),
    );
    d.insert("crashed", r.crashed.into_pyobject(py)?.into_any().unbind());
    Ok(d)
}

#[pymodule]
fn _lens(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The host's messages (faults, backoff, the guest's stderr) go to Python's `logging`, under
    // the Rust module paths (`lens.wasm.exporter`, …): a `lens` logger sees them all.
    if let Ok(handle) = pyo3_log::try_init() {
        let _ = LOG_CACHE.set(handle);
    }
    m.add_function(wrap_pyfunction!(refresh_logging, m)?)?;
    m.add_class::<spans::SpanCore>()?;
    m.add_class::<metrics::MetricCore>()?;
    m.add_class::<logs::LogCore>()?;
    m.add_class::<process::ProcessCore>()?;
    m.add_function(wrap_pyfunction!(read_spans, m)?)?;
    m.add_function(wrap_pyfunction!(_compile_worker, m)?)?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(report, m)?)?;
    use_compile_worker(m.py())?;
    m.add("ExporterLoadError", m.py().get_type::<ExporterLoadError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
