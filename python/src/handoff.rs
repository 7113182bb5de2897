//! [`Core`]: what the span, metric and log cores share — the exporter (behind [`Following`]),
//! its counters, Lens's batch processor when batches are handed off, the resource the guest
//! follows, and flush, shutdown and blocking exports, each with the GIL released.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lens::logs::{BatchLogProcessor, Queued};
use lens::opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use lens::opentelemetry_sdk::logs::{LogExporter as _, LogProcessor as _};
use lens::opentelemetry_sdk::metrics::exporter::PushMetricExporter as _;
use lens::opentelemetry_sdk::trace::SpanData;
use lens::opentelemetry_sdk::trace::{SpanExporter as _, SpanProcessor as _};
use lens::trace::{BatchSpanProcessor, ExportStage, ExporterStats};
use lens::wasm::{WasmLogExporter, WasmMetricExporter, WasmProcessor, WasmSpanExporter};
use pyo3::prelude::*;

use std::path::Path;

use lens::config::{FileWatch, WasmExporterSpec};
use lens::wasm::Reloaded;
use lens::{LensError, Signal};

use crate::core::{Entry, ResourceFollower, load_error, stats_json};
use crate::following::{Following, Resourced};

/// Lens's batch processor of one signal, as the hand-off drives it.
pub trait Queue: Send + Sync + 'static {
    fn flush_within(&self, timeout: Duration) -> OTelSdkResult;
    /// Batches handed off from now on go through `processors` (a watched config file's new
    /// ones); those running finish on the old ones.
    fn rechain(&self, processors: Vec<Arc<WasmProcessor>>);
    /// What `export` waits for in delivered mode: each item exported, spooled or dropped.
    fn settle_within(&self, timeout: Duration) -> OTelSdkResult;
    fn shut_down(&self, timeout: Duration) -> OTelSdkResult;
}

impl Queue for BatchSpanProcessor {
    fn flush_within(&self, timeout: Duration) -> OTelSdkResult {
        self.force_flush_within(timeout)
    }
    fn rechain(&self, processors: Vec<Arc<WasmProcessor>>) {
        let stages = processors
            .into_iter()
            .map(|p| p as Arc<dyn ExportStage<SpanData>>);
        self.chain().replace(stages.collect());
    }
    fn settle_within(&self, timeout: Duration) -> OTelSdkResult {
        self.settle_within(timeout)
    }
    fn shut_down(&self, timeout: Duration) -> OTelSdkResult {
        self.shutdown_with_timeout(timeout)
    }
}

impl Queue for BatchLogProcessor {
    fn rechain(&self, processors: Vec<Arc<WasmProcessor>>) {
        if let Some(chain) = self.chain() {
            let stages = processors
                .into_iter()
                .map(|p| p as Arc<dyn ExportStage<Queued>>);
            chain.replace(stages.collect());
        }
    }
    fn flush_within(&self, timeout: Duration) -> OTelSdkResult {
        self.force_flush_within(timeout)
    }
    fn settle_within(&self, timeout: Duration) -> OTelSdkResult {
        self.settle_within(timeout)
    }
    fn shut_down(&self, timeout: Duration) -> OTelSdkResult {
        self.shutdown_with_timeout(timeout)
    }
}

/// A wasm exporter of one signal, as the cores drive it directly.
pub trait Guest: Resourced + Send + Sync + 'static {
    fn flush_within(&self, timeout: Duration) -> OTelSdkResult;
    fn shut_down(&self, timeout: Duration) -> OTelSdkResult;
    fn encoding(&self) -> Option<&'static str>;
    fn reload(&self, spec: &WasmExporterSpec) -> Result<Reloaded, LensError>;
    fn runs(&self, spec: &WasmExporterSpec) -> bool;
}

macro_rules! guest {
    ($ty:ty) => {
        impl Guest for $ty {
            fn flush_within(&self, timeout: Duration) -> OTelSdkResult {
                self.force_flush_within(timeout)
            }
            fn shut_down(&self, timeout: Duration) -> OTelSdkResult {
                self.shutdown_with_timeout(timeout)
            }
            fn encoding(&self) -> Option<&'static str> {
                <$ty>::encoding(self)
            }
            fn reload(&self, spec: &WasmExporterSpec) -> Result<Reloaded, LensError> {
                <$ty>::reload(self, spec)
            }
            fn runs(&self, spec: &WasmExporterSpec) -> bool {
                <$ty>::runs(self, spec)
            }
        }
    };
}

guest!(WasmSpanExporter);
guest!(WasmMetricExporter);
guest!(WasmLogExporter);

/// How a core's `export` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Handed to Lens's queue, then waited for (the GIL released) until delivered: exported,
    /// or counted as dropped. The exporter classes' default: the SDK's batch processors flush
    /// by exporting their queue and never call the exporter's `force_flush`, so only this
    /// makes a provider's `force_flush()` mean delivered.
    Delivered,
    /// Handed to Lens's queue; returns at once (`lens.WasmSpanProcessor`, which owns its
    /// flush, and `mode="hand-off"`).
    HandOff,
    /// Exported while the caller waits, without the queue (and so without processors).
    Blocking,
}

impl Mode {
    /// `mode=` as Python says it.
    pub fn parse(text: &str) -> PyResult<Self> {
        match text {
            "delivered" => Ok(Self::Delivered),
            "hand-off" => Ok(Self::HandOff),
            "blocking" => Ok(Self::Blocking),
            other => Err(pyo3::exceptions::PyValueError::new_err(format!(
                "mode={other:?}: one of \"delivered\", \"hand-off\", \"blocking\""
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Delivered => "delivered",
            Self::HandOff => "hand-off",
            Self::Blocking => "blocking",
        }
    }

    /// Whether batches go through Lens's queue (and its processors).
    pub fn queued(self) -> bool {
        self != Self::Blocking
    }
}

/// One exporter and, when it hands batches off, the batch processor it feeds.
pub struct Core<E, Q> {
    pub name: String,
    pub following: Arc<Following<E>>,
    pub stats: Arc<ExporterStats>,
    /// `None`: blocking.
    pub queue: Option<Arc<Q>>,
    mode: Mode,
    /// One export's budget (`batch.export_timeout_ms`) and the queue's batch size: what a
    /// delivered `export` waits for at most, per batch of the queue its items make.
    export_timeout: Duration,
    max_export_batch_size: usize,
    resource: Mutex<ResourceFollower>,
    /// Set at shutdown (shared with the thread watching the config file, if any).
    shut_down: Arc<AtomicBool>,
    shutdown_timeout: Duration,
    /// The entry the guest runs now (a reload by `.wasm` path changes its file only).
    spec: Arc<Mutex<WasmExporterSpec>>,
}

impl<E: Guest, Q: Queue> Core<E, Q> {
    /// The entry's credentials as shown (header, host, source; never a value).
    pub fn credentials(&self) -> Vec<String> {
        let spec = self.spec.lock().unwrap_or_else(|p| p.into_inner());
        spec.credentials.iter().map(|c| c.describe()).collect()
    }

    /// The core of `entry`'s `exporter` (of `signal`); `queue`, when given, makes the
    /// processor it hands off to. A shutdown without a timeout (the SDK's processors call
    /// `shutdown()` without one) gets the entry's `batch.shutdown_timeout_ms`. An entry from a
    /// config file with `[reload] watch = true` is reloaded when the file changes.
    pub fn new(
        entry: Entry,
        signal: Signal,
        exporter: E,
        stats: Arc<ExporterStats>,
        mode: Mode,
        queue: impl FnOnce(Arc<Following<E>>) -> Q,
    ) -> Self {
        let following = Following::new(exporter);
        let processors = entry.processors.clone();
        let core = Self {
            queue: mode.queued().then(|| Arc::new(queue(following.clone()))),
            mode,
            export_timeout: Duration::from_millis(entry.batch.export_timeout_ms),
            max_export_batch_size: entry.batch.max_export_batch_size.max(1),
            shutdown_timeout: Duration::from_millis(entry.batch.shutdown_timeout_ms),
            spec: Arc::new(Mutex::new(entry.spec)),
            name: entry.name,
            following,
            stats,
            resource: Mutex::new(ResourceFollower::new()),
            shut_down: Arc::default(),
        };
        if let Some((file, reload)) = entry.source {
            if reload.sighup {
                log::warn!(
                    "wasm exporter `{}`: `reload.sighup` in {} applies to Rust installations; \
                     in Python, call exporter.reload(path) from a signal handler",
                    core.name,
                    file.path().display()
                );
            }
            if reload.watch {
                let queue = core.queue.as_ref().map(|q| {
                    let q: Arc<dyn Queue> = q.clone();
                    Arc::downgrade(&q)
                });
                let watched = crate::watch::Watched {
                    following: Arc::downgrade(&core.following),
                    spec: core.spec.clone(),
                    closed: core.shut_down.clone(),
                    name: core.name.clone(),
                    signal,
                    queue,
                    processors: Mutex::new(processors),
                };
                let poll = Duration::from_millis(reload.poll_interval_ms);
                let file = match reload.file {
                    Some(other) => FileWatch::new(other),
                    None => file,
                };
                crate::watch::start(watched, file, poll);
            }
        }
        core
    }

    pub fn encoding(&self) -> Option<&'static str> {
        self.following.with(E::encoding)
    }

    /// The guest follows `resource` (a Python `Resource`) when it is new: before its next
    /// export.
    pub fn follow(&self, resource: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut seen = self.resource.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(changed) = seen.changed(resource)? {
            self.following.follow(changed);
        }
        Ok(())
    }

    /// `items` that could not be read (or whose resource could not): received and failed.
    pub fn failed(&self, what: &str, items: u64, started: Instant, e: PyErr) -> Option<String> {
        let export = self.stats.begin_direct_export(items);
        let error = format!("wasm exporter `{}`: {what}: {e}", self.name);
        let failed = Err(OTelSdkError::InternalFailure(error.clone()));
        self.stats
            .end_direct_export(export, &failed, started.elapsed());
        Some(error)
    }

    /// After `items` were handed off: why the export failed (after the shutdown, the queue
    /// counted them as dropped at shutdown), else `None`; delivered, once the queue has
    /// exported or dropped everything handed to it so far (the GIL released).
    pub fn handed_off(&self, py: Python<'_>, items: usize) -> Option<String> {
        if self.shut_down.load(Ordering::Acquire) {
            return Some(format!("wasm exporter `{}`: already shut down", self.name));
        }
        let queue = self
            .queue
            .as_ref()
            .filter(|_| self.mode == Mode::Delivered)?;
        let batches = items.div_ceil(self.max_export_batch_size).max(1) as u32;
        let budget = self.export_timeout.saturating_mul(batches);
        // Spooled counts as handed over: the spool's replay is its own (the exporter's
        // `force_flush` waits for it), and an SDK thread blocked on it would drop spans.
        py.detach(|| queue.settle_within(budget))
            .err()
            .map(|e| format!("wasm exporter `{}`: not delivered: {e}", self.name))
    }

    /// After the shutdown: `items` received and dropped at shutdown, and why.
    pub fn refused_after_shutdown(&self, items: u64) -> Option<String> {
        if !self.shut_down.load(Ordering::Acquire) {
            return None;
        }
        let ticket = self.stats.begin_direct_export(items);
        self.stats.abandon_direct_export(ticket);
        Some(format!("wasm exporter `{}`: already shut down", self.name))
    }

    /// Exports `items` with `export`, waiting for the guest with the GIL released; counted
    /// as dropped at shutdown once the core is shut down.
    pub fn export_blocking(
        &self,
        py: Python<'_>,
        items: u64,
        started: Instant,
        export: impl FnOnce(&E) -> OTelSdkResult + Send,
    ) -> Option<String> {
        if let Some(refused) = self.refused_after_shutdown(items) {
            return Some(refused);
        }
        let ticket = self.stats.begin_direct_export(items);
        let outcome = py.detach(|| self.following.with(export));
        self.stats
            .end_direct_export(ticket, &outcome, started.elapsed());
        outcome.err().map(|e| e.to_string())
    }

    /// Exports what was handed off, then has the guest flush, within `timeout_millis`.
    pub fn force_flush(&self, py: Python<'_>, timeout_millis: u64) -> Option<String> {
        let timeout = Duration::from_millis(timeout_millis);
        py.detach(|| match &self.queue {
            Some(queue) => queue.flush_within(timeout),
            None => self.following.with(|e| e.flush_within(timeout)),
        })
        .err()
        .map(|e| e.to_string())
    }

    /// Exports what was handed off and shuts the guest down within `timeout_millis` (default:
    /// the entry's `shutdown_timeout_ms`; idempotent); what is left is counted as dropped at
    /// shutdown.
    pub fn shutdown(&self, py: Python<'_>, timeout_millis: Option<u64>) -> Option<String> {
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return None;
        }
        let timeout = timeout_millis.map_or(self.shutdown_timeout, Duration::from_millis);
        let result = py.detach(|| match &self.queue {
            Some(queue) => queue.shut_down(timeout),
            None => self.following.with(|e| e.shut_down(timeout)),
        });
        self.stats.close_direct();
        result.err().map(|e| e.to_string())
    }

    /// Replaces the guest's component while batches flow (see `lens::wasm::reload`): with
    /// `keywords` (the JSON of a wasm entry), that entry for the file `source`; else `source` is
    /// a `.wasm` file (the running entry with that file) or a Lens TOML file (its wasm entry of
    /// `signal` named like this exporter). The new component's SHA-256; an error naming the
    /// file and the step leaves the running one in place.
    pub fn reload(
        &self,
        py: Python<'_>,
        source: &Path,
        keywords: Option<&str>,
        signal: Signal,
    ) -> PyResult<String> {
        let spec = match keywords {
            Some(json) => {
                let mut spec = Entry::from_json(json, signal)?.spec;
                match &spec.name {
                    Some(name) if *name != self.name => {
                        return Err(load_error(format!(
                            "wasm exporter `{}`: a reload keeps the exporter's name (asked: `{name}`)",
                            self.name
                        )));
                    }
                    _ => spec.name = Some(self.name.clone()),
                }
                spec
            }
            None if source.extension().is_some_and(|e| e == "toml") => {
                Entry::from_config(source, Some(&self.name), signal)?.spec
            }
            None => {
                let mut spec = self.spec.lock().unwrap_or_else(|p| p.into_inner()).clone();
                spec.path = source.to_path_buf();
                spec
            }
        };
        let reloaded = py
            .detach(|| self.following.with(|e| e.reload(&spec)))
            .map_err(load_error)?;
        *self.spec.lock().unwrap_or_else(|p| p.into_inner()) = spec;
        Ok(reloaded.sha256)
    }

    pub fn mode(&self) -> &'static str {
        self.mode.as_str()
    }

    pub fn stats_json(&self) -> String {
        stats_json(&self.stats, self.mode.as_str())
    }
}

/// The `#[pymethods]` of a core (a newtype over [`Core`] with a `build(py, entry, blocking)`):
/// `methods`, then what every core has — construction from keywords or a config file of
/// `$signal`, its name, encoding and mode, flush, shutdown and counters.
macro_rules! core_methods {
    ($core:ident, $signal:expr, { $($methods:tt)* }) => {
        #[pyo3::pymethods]
        impl $core {
            $($methods)*

            /// An exporter from the JSON of a wasm entry (without `kind`).
            #[new]
            #[pyo3(signature = (spec_json, mode="hand-off"))]
            fn new(py: Python<'_>, spec_json: &str, mode: &str) -> PyResult<Self> {
                let mode = $crate::handoff::Mode::parse(mode)?;
                Self::build(py, Entry::from_json(spec_json, $signal)?, mode)
            }

            /// The `kind = "wasm"` entry of the signal's exporters in a Lens TOML file named
            /// `name` (or the only one).
            #[staticmethod]
            #[pyo3(signature = (path, name=None, mode="hand-off"))]
            fn from_config(
                py: Python<'_>,
                path: std::path::PathBuf,
                name: Option<String>,
                mode: &str,
            ) -> PyResult<Self> {
                let mode = $crate::handoff::Mode::parse(mode)?;
                let entry = Entry::from_config(&path, name.as_deref(), $signal)?;
                Self::build(py, entry, mode)
            }

            #[getter]
            fn name(&self) -> &str {
                &self.0.name
            }

            /// The entry's host-held credentials, by header and host (never a value).
            #[getter]
            fn credentials(&self) -> Vec<String> {
                self.0.credentials()
            }

            #[getter]
            fn encoding(&self) -> Option<&'static str> {
                self.0.encoding()
            }

            #[getter]
            fn blocking(&self) -> bool {
                self.0.queue.is_none()
            }

            /// `delivered`, `hand-off` or `blocking`.
            #[getter]
            fn mode(&self) -> &'static str {
                self.0.mode()
            }

            fn force_flush(&self, py: Python<'_>, timeout_millis: u64) -> Option<String> {
                self.0.force_flush(py, timeout_millis)
            }

            #[pyo3(signature = (timeout_millis=None))]
            fn shutdown(&self, py: Python<'_>, timeout_millis: Option<u64>) -> Option<String> {
                self.0.shutdown(py, timeout_millis)
            }

            fn stats_json(&self) -> String {
                self.0.stats_json()
            }

            /// Replaces the component while batches flow: `source` is a `.wasm` file (with
            /// `keywords_json`, the JSON of a whole entry for it) or a Lens TOML file; the new
            /// component's SHA-256.
            #[pyo3(signature = (source, keywords_json=None))]
            fn reload(
                &self,
                py: Python<'_>,
                source: std::path::PathBuf,
                keywords_json: Option<&str>,
            ) -> PyResult<String> {
                self.0.reload(py, &source, keywords_json, $signal)
            }
        }
    };
}

pub(crate) use core_methods;
