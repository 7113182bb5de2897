//! [`LogCore`]: the native half of `lens.WasmLogExporter`, in the span exporter's two modes:
//! hand-off (the default: the records, read under the GIL, are queued in Lens's own
//! [`BatchLogProcessor`]) and blocking (`blocking=True`: the export waits for the guest, the
//! GIL released).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lens::Signal;
use lens::logs::BatchLogProcessor;
use lens::opentelemetry::InstrumentationScope;
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::logs::{LogBatch, LogExporter as _, SdkLogRecord};
use lens::trace::ExporterStats;
use lens::wasm::WasmLogExporter;
use pyo3::prelude::*;

use crate::convert;
use crate::core::{Entry, ResourceFollower, load_error, signal, stats_json};
use crate::following::{Following, Handle};

/// One sandboxed log exporter, driven by the Python SDK's log record processor.
#[pyclass(module = "lens._lens", frozen)]
pub struct LogCore {
    name: String,
    following: Arc<Following<WasmLogExporter>>,
    stats: Arc<ExporterStats>,
    /// `None`: blocking.
    queue: Option<BatchLogProcessor>,
    resource: Mutex<ResourceFollower>,
    shut_down: AtomicBool,
}

impl LogCore {
    fn build(py: Python<'_>, entry: Entry, blocking: bool) -> PyResult<Self> {
        let empty = Resource::builder_empty().build();
        let (exporter, stats) = py
            .detach(|| WasmLogExporter::from_config(&entry.name, &entry.spec, &empty))
            .map_err(load_error)?;
        let following = Following::new(exporter);
        let queue = (!blocking).then(|| {
            BatchLogProcessor::with_flush(
                Handle(following.clone()),
                |h| h.0.with(WasmLogExporter::force_flush),
                entry.batch,
                stats.clone(),
            )
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
}

#[pymethods]
impl LogCore {
    #[new]
    #[pyo3(signature = (spec_json, blocking=false))]
    fn new(py: Python<'_>, spec_json: &str, blocking: bool) -> PyResult<Self> {
        Self::build(py, Entry::from_json(spec_json, Signal::Logs)?, blocking)
    }

    #[staticmethod]
    #[pyo3(signature = (path, name=None, blocking=false))]
    fn from_config(
        py: Python<'_>,
        path: std::path::PathBuf,
        name: Option<String>,
        blocking: bool,
    ) -> PyResult<Self> {
        let entry = Entry::from_config(&path, name.as_deref(), signal("logs")?)?;
        Self::build(py, entry, blocking)
    }

    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    #[getter]
    fn encoding(&self) -> Option<&'static str> {
        self.following.with(WasmLogExporter::encoding)
    }

    #[getter]
    fn blocking(&self) -> bool {
        self.queue.is_none()
    }

    /// Exports (or hands off) a batch of log records; `None` on success, else why it failed
    /// (never raises).
    fn export(&self, py: Python<'_>, batch: &Bound<'_, PyAny>) -> Option<String> {
        let started = Instant::now();
        let read = convert::logs::records(batch).and_then(|r| {
            if let Some(resource) = &r.resource {
                let mut seen = self.resource.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(changed) = seen.changed(resource)? {
                    self.following.follow(changed);
                }
            }
            Ok(r.records)
        });
        let records = match read {
            Ok(r) => r,
            Err(e) => {
                let export = self
                    .stats
                    .begin_direct_export(batch.len().unwrap_or(0) as u64);
                self.stats
                    .end_direct_export(export, false, started.elapsed());
                return Some(format!(
                    "wasm exporter `{}`: reading the records: {e}",
                    self.name
                ));
            }
        };
        if let Some(queue) = &self.queue {
            queue.hand_off(records);
            return None;
        }
        let export = self.stats.begin_direct_export(records.len() as u64);
        if self.shut_down.load(Ordering::Acquire) {
            self.stats.abandon_direct_export(export);
            return Some(format!("wasm exporter `{}`: already shut down", self.name));
        }
        let outcome = py.detach(|| {
            let refs: Vec<(&SdkLogRecord, &InstrumentationScope)> =
                records.iter().map(|(r, s)| (r, s)).collect();
            self.following
                .with(|e| futures_executor::block_on(e.export(LogBatch::new(&refs))))
        });
        self.stats
            .end_direct_export(export, outcome.is_ok(), started.elapsed());
        outcome.err().map(|e| e.to_string())
    }

    fn force_flush(&self, py: Python<'_>, timeout_millis: u64) -> Option<String> {
        let timeout = Duration::from_millis(timeout_millis);
        py.detach(|| match &self.queue {
            Some(queue) => queue.force_flush_within(timeout),
            None => self.following.with(|e| e.force_flush_within(timeout)),
        })
        .err()
        .map(|e| e.to_string())
    }

    fn shutdown(&self, py: Python<'_>, timeout_millis: u64) -> Option<String> {
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return None;
        }
        let timeout = Duration::from_millis(timeout_millis);
        let result = py.detach(|| match &self.queue {
            Some(queue) => {
                lens::opentelemetry_sdk::logs::LogProcessor::shutdown_with_timeout(queue, timeout)
            }
            None => self.following.with(|e| e.shutdown_with_timeout(timeout)),
        });
        self.stats.close_direct();
        result.err().map(|e| e.to_string())
    }

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
