//! [`SpanCore`]: the native half of `lens.WasmSpanExporter` and `lens.WasmSpanProcessor`.
//!
//! - hand-off (the default): `export` reads the batch under the GIL into `SpanData` and queues
//!   it in Lens's own [`BatchSpanProcessor`] (its queue, export thread and accounting), and
//!   returns; `on_end` (the processor) queues one span;
//! - blocking (`blocking=True`): `export` waits for the guest's answer, the GIL released.

use std::time::Instant;

use lens::Signal;
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::trace::{SpanData, SpanExporter as _, SpanProcessor as _};
use lens::trace::BatchSpanProcessor;
use lens::wasm::WasmSpanExporter;
use pyo3::prelude::*;

use crate::convert;
use crate::core::{Entry, load_error, stages};
use crate::following::Handle;
use crate::handoff::{Core, Mode, core_methods};

/// One sandboxed span exporter, driven by the Python SDK's processor or used as one.
#[pyclass(module = "lens._lens", frozen)]
pub struct SpanCore(Core<WasmSpanExporter, BatchSpanProcessor>);

impl SpanCore {
    fn build(py: Python<'_>, entry: Entry, mode: Mode) -> PyResult<Self> {
        let blocking = !mode.queued();
        // The processors first: they run before the exporter, and fail setup as early.
        let processors = stages::<SpanData>(py, &entry, blocking)?;
        let empty = Resource::builder_empty().build();
        let (exporter, stats) = py
            .detach(|| WasmSpanExporter::from_config(&entry.name, &entry.spec, &empty))
            .map_err(load_error)?;
        let spool = crate::core::spool_of(&entry, mode.queued())?;
        let batch = entry.batch;
        let queue_stats = stats.clone();
        let queue = move |f| {
            BatchSpanProcessor::with_spool(Handle(f), processors, batch, queue_stats, spool)
        };
        Ok(Self(Core::new(
            entry,
            Signal::Traces,
            exporter,
            stats,
            mode,
            queue,
        )))
    }
}

core_methods!(SpanCore, Signal::Traces, {
    /// Exports (or hands off) a batch of `ReadableSpan`s; `None` on success, else why it
    /// failed (never raises: a fault must not reach the SDK's thread).
    fn export(&self, py: Python<'_>, spans: &Bound<'_, PyAny>) -> Option<String> {
        let started = Instant::now();
        let batch = match convert::batch(spans) {
            Ok(b) => b,
            Err(e) => {
                let n = spans.len().unwrap_or(0) as u64;
                return self.0.failed("reading the spans", n, started, e);
            }
        };
        let n = batch.spans.len() as u64;
        if let Some(resource) = &batch.resource
            && let Err(e) = self.0.follow(resource.bind(py))
        {
            return self.0.failed("reading the resource", n, started, e);
        }
        match &self.0.queue {
            // Counted by the queue: after its shutdown, as dropped at shutdown.
            Some(queue) => {
                queue.hand_off(batch.spans);
                self.0.handed_off(py, n as usize)
            }
            None => self.0.export_blocking(py, n, started, |e| {
                futures_executor::block_on(e.export(batch.spans))
            }),
        }
    }

    /// Queues one ended span (`SpanProcessor.on_end`); never raises.
    fn on_end(&self, span: &Bound<'_, PyAny>) {
        let Some(queue) = &self.0.queue else {
            return;
        };
        let read = convert::span(span).and_then(|(data, resource)| {
            self.0.follow(&resource)?;
            Ok(data)
        });
        match read {
            Ok(data) => queue.on_end(data),
            Err(e) => {
                self.0.failed("reading the span", 1, Instant::now(), e);
            }
        }
    }
});
