//! [`LogCore`]: the native half of `lens.WasmLogExporter`, in the span exporter's two modes:
//! hand-off (the default: the records, read under the GIL, are queued in Lens's own
//! [`BatchLogProcessor`]) and blocking (`blocking=True`: the export waits for the guest, the
//! GIL released).

use std::time::Instant;

use lens::Signal;
use lens::logs::{BatchLogProcessor, Queued};
use lens::opentelemetry::InstrumentationScope;
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::logs::{LogBatch, LogExporter as _, SdkLogRecord};
use lens::wasm::WasmLogExporter;
use pyo3::prelude::*;

use crate::convert;
use crate::core::{Entry, load_error, stages};
use crate::following::Handle;
use crate::handoff::{Core, Mode, core_methods};

/// One sandboxed log exporter, driven by the Python SDK's log record processor.
#[pyclass(module = "lens._lens", frozen)]
pub struct LogCore(Core<WasmLogExporter, BatchLogProcessor>);

impl LogCore {
    fn build(py: Python<'_>, entry: Entry, mode: Mode) -> PyResult<Self> {
        let blocking = !mode.queued();
        let processors = stages::<Queued>(py, &entry, blocking)?;
        let empty = Resource::builder_empty().build();
        let (exporter, stats) = py
            .detach(|| WasmLogExporter::from_config(&entry.name, &entry.spec, &empty))
            .map_err(load_error)?;
        let spool = crate::core::spool_of(&entry, mode.queued())?;
        let batch = entry.batch;
        let queue_stats = stats.clone();
        let queue = move |f| {
            BatchLogProcessor::with_spool(
                Handle(f),
                |h| h.0.with(WasmLogExporter::force_flush),
                processors,
                batch,
                queue_stats,
                spool,
            )
        };
        Ok(Self(Core::new(
            entry,
            Signal::Logs,
            exporter,
            stats,
            mode,
            queue,
        )))
    }
}

core_methods!(LogCore, Signal::Logs, {
    /// Exports (or hands off) a batch of log records; `None` on success, else why it failed
    /// (never raises).
    fn export(&self, py: Python<'_>, batch: &Bound<'_, PyAny>) -> Option<String> {
        let started = Instant::now();
        let read = convert::logs::records(batch).and_then(|r| {
            if let Some(resource) = &r.resource {
                self.0.follow(resource)?;
            }
            Ok(r.records)
        });
        let records = match read {
            Ok(r) => r,
            Err(e) => {
                let n = batch.len().unwrap_or(0) as u64;
                return self.0.failed("reading the records", n, started, e);
            }
        };
        match &self.0.queue {
            Some(queue) => {
                let n = records.len();
                queue.hand_off(records);
                self.0.handed_off(py, n)
            }
            None => self
                .0
                .export_blocking(py, records.len() as u64, started, |e| {
                    let refs: Vec<(&SdkLogRecord, &InstrumentationScope)> =
                        records.iter().map(|(r, s)| (r, s)).collect();
                    futures_executor::block_on(e.export(LogBatch::new(&refs)))
                }),
        }
    }
});
