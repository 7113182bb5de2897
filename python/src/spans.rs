//! [`SpanCore`]: the native half of `lens.WasmSpanExporter` and `lens.WasmSpanProcessor`.
//!
//! - hand-off (the default): `export` reads the batch under the GIL into `SpanData` and queues
//!   it in Lens's own [`BatchSpanProcessor`] (its queue, export thread and accounting), and
//!   returns; `on_end` (the processor) queues one span;
//! - blocking (`blocking=True`): `export` waits for the guest's answer, the GIL released.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lens::Signal;
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::trace::{SpanExporter as _, SpanProcessor as _};
use lens::trace::{BatchSpanProcessor, ExporterStats};
use lens::wasm::WasmSpanExporter;
use pyo3::prelude::*;

use crate::convert;
use crate::core::{Entry, ResourceFollower, load_error, signal, stats_json};
use crate::following::{Following, Handle};

/// One sandboxed span exporter, driven by the Python SDK's processor or used as one.
#[pyclass(module = "lens._lens", frozen)]
pub struct SpanCore {
    name: String,
    following: Arc<Following<WasmSpanExporter>>,
    stats: Arc<ExporterStats>,
    /// `None`: blocking.
    queue: Option<BatchSpanProcessor>,
    resource: Mutex<ResourceFollower>,
    shut_down: AtomicBool,
}

impl SpanCore {
    fn build(py: Python<'_>, entry: Entry, blocking: bool) -> PyResult<Self> {
        let empty = Resource::builder_empty().build();
        let (exporter, stats) = py
            .detach(|| WasmSpanExporter::from_config(&entry.name, &entry.spec, &empty))
            .map_err(load_error)?;
        let following = Following::new(exporter);
        let queue = (!blocking).then(|| {
            BatchSpanProcessor::new(Handle(following.clone()), entry.batch, stats.clone())
        });
        Ok(Self {
            name: entry.name,
            following,
            stats,
            queue,
            resource: Mutex::new(ResourceFollower::new()),
            shut_down: AtomicBool::new(false),
        })
    }

    /// The guest follows `resource` (a Python `Resource`) when it is new.
    fn follow(&self, resource: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut seen = self.resource.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(changed) = seen.changed(resource)? {
            self.following.follow(changed);
        }
        Ok(())
    }

    fn failed(&self, what: &str, items: u64, started: Instant, e: PyErr) -> Option<String> {
        let export = self.stats.begin_direct_export(items);
        self.stats
            .end_direct_export(export, false, started.elapsed());
        Some(format!("wasm exporter `{}`: {what}: {e}", self.name))
    }
}

#[pymethods]
impl SpanCore {
    /// An exporter from the JSON of a wasm entry (without `kind`).
    #[new]
    #[pyo3(signature = (spec_json, blocking=false))]
    fn new(py: Python<'_>, spec_json: &str, blocking: bool) -> PyResult<Self> {
        Self::build(py, Entry::from_json(spec_json, Signal::Traces)?, blocking)
    }

    /// The `kind = "wasm"` entry of `signal`'s exporters in a Lens TOML file named `name`.
    #[staticmethod]
    #[pyo3(signature = (path, name=None, blocking=false))]
    fn from_config(
        py: Python<'_>,
        path: std::path::PathBuf,
        name: Option<String>,
        blocking: bool,
    ) -> PyResult<Self> {
        let entry = Entry::from_config(&path, name.as_deref(), signal("traces")?)?;
        Self::build(py, entry, blocking)
    }

    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    #[getter]
    fn encoding(&self) -> Option<&'static str> {
        self.following.with(WasmSpanExporter::encoding)
    }

    #[getter]
    fn blocking(&self) -> bool {
        self.queue.is_none()
    }

    /// Exports (or hands off) a batch of `ReadableSpan`s; `None` on success, else why it
    /// failed (never raises: a fault must not reach the SDK's thread).
    fn export(&self, py: Python<'_>, spans: &Bound<'_, PyAny>) -> Option<String> {
        let started = Instant::now();
        let batch = match convert::batch(spans) {
            Ok(b) => b,
            Err(e) => {
                let n = spans.len().unwrap_or(0) as u64;
                return self.failed("reading the spans", n, started, e);
            }
        };
        if let Some(resource) = &batch.resource
            && let Err(e) = self.follow(resource.bind(py))
        {
            return self.failed("reading the resource", batch.spans.len() as u64, started, e);
        }
        if let Some(queue) = &self.queue {
            // Counted by the queue: after its shutdown, as dropped at shutdown.
            queue.hand_off(batch.spans);
            return None;
        }
        let export = self.stats.begin_direct_export(batch.spans.len() as u64);
        if self.shut_down.load(Ordering::Acquire) {
            self.stats.abandon_direct_export(export);
            return Some(format!("wasm exporter `{}`: already shut down", self.name));
        }
        let spans = batch.spans;
        let outcome = py.detach(|| {
            self.following
                .with(|e| futures_executor::block_on(e.export(spans)))
        });
        self.stats
            .end_direct_export(export, outcome.is_ok(), started.elapsed());
        outcome.err().map(|e| e.to_string())
    }

    /// Queues one ended span (`SpanProcessor.on_end`); never raises.
    fn on_end(&self, py: Python<'_>, span: &Bound<'_, PyAny>) {
        let Some(queue) = &self.queue else {
            return;
        };
        match convert::span(span) {
            Ok((data, resource)) => {
                if let Err(e) = self.follow(&resource) {
                    self.failed("reading the resource", 1, Instant::now(), e);
                    return;
                }
                queue.on_end(data);
            }
            Err(e) => {
                let _ = py;
                self.failed("reading the span", 1, Instant::now(), e);
            }
        }
    }

    /// Exports what was handed off, then asks the guest to flush, within `timeout_millis`;
    /// `None` on success, else why not.
    fn force_flush(&self, py: Python<'_>, timeout_millis: u64) -> Option<String> {
        let timeout = Duration::from_millis(timeout_millis);
        py.detach(|| match &self.queue {
            Some(queue) => queue.force_flush_within(timeout),
            None => self.following.with(|e| e.force_flush_within(timeout)),
        })
        .err()
        .map(|e| e.to_string())
    }

    /// Exports what was handed off and shuts the guest down within `timeout_millis`
    /// (idempotent); what is left then is counted as dropped at shutdown.
    fn shutdown(&self, py: Python<'_>, timeout_millis: u64) -> Option<String> {
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return None;
        }
        let timeout = Duration::from_millis(timeout_millis);
        let result = py.detach(|| match &self.queue {
            Some(queue) => queue.shutdown_with_timeout(timeout),
            None => self.following.with(|e| e.shutdown_with_timeout(timeout)),
        });
        self.stats.close_direct();
        result.err().map(|e| e.to_string())
    }

    /// The counters as JSON.
    fn stats_json(&self) -> String {
        stats_json(
            &self.stats,
            if self.queue.is_some() {
                "hand-off"
            } else {
                "blocking"
            },
        )
    }
}
