//! [`MetricCore`]: the native half of `lens.WasmMetricExporter`.
//!
//! The Python SDK's reader calls `export` on a thread of its own once per interval, and on the
//! application's when it flushes or shuts the meter provider down: the collection is read under
//! the GIL into an OTLP request, then handed off to the [`MetricQueue`]'s export thread (the
//! default), or exported while the caller waits with the GIL released (`blocking=True`). The
//! queue runs the entry's sandboxed processors (`[[metrics.processors]]`) before the export.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lens::Signal;
use lens::metric_spool::{MetricSpool, RequestSink};
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::metrics::Temporality;
use lens::opentelemetry_sdk::metrics::exporter::PushMetricExporter as _;
use lens::wasm::WasmMetricExporter;
use lens::wasm::exporters::metric::otlp_data_points;
use pyo3::prelude::*;

use crate::convert;
use crate::core::{Entry, load_error, processors};
use crate::following::Following;
use crate::handoff::{Core, Mode, core_methods};
use crate::metric_queue::MetricQueue;

/// The Python SDK's export interval (`OTEL_METRIC_EXPORT_INTERVAL`, 60 s by default): a
/// spool replays after each collection for half of it (at most 5 s).
fn metric_interval() -> Duration {
    std::env::var("OTEL_METRIC_EXPORT_INTERVAL")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&ms| ms > 0)
        .map_or(Duration::from_secs(60), Duration::from_millis)
}

/// One sandboxed metric exporter, driven by the Python SDK's metric reader.
#[pyclass(module = "lens._lens", frozen)]
pub struct MetricCore(Core<WasmMetricExporter, MetricQueue>);

impl MetricCore {
    fn build(py: Python<'_>, entry: Entry, mode: Mode) -> PyResult<Self> {
        let blocking = !mode.queued();
        let empty = Resource::builder_empty().build();
        let (exporter, stats) = py
            .detach(|| WasmMetricExporter::from_config(&entry.name, &entry.spec, &empty))
            .map_err(load_error)?;
        let processors = processors(py, &entry, blocking)?;
        let spool = crate::core::spool_of(&entry, mode.queued())?;
        let (name, queue_stats) = (entry.name.clone(), stats.clone());
        let interval = metric_interval();
        let queue = move |f: Arc<Following<WasmMetricExporter>>| {
            let spool = spool.map(|opened| {
                let guest = f.clone();
                let sink = RequestSink::function(Box::new(move |request, items| {
                    guest.with(|e| e.export_request(request, items))
                }));
                Arc::new(MetricSpool::new(
                    opened,
                    sink,
                    queue_stats.clone(),
                    interval,
                ))
            });
            MetricQueue::new(&name, f, queue_stats, processors, spool)
        };
        Ok(Self(Core::new(
            entry,
            Signal::Metrics,
            exporter,
            stats,
            mode,
            queue,
        )))
    }
}

core_methods!(MetricCore, Signal::Metrics, {
    /// The temporality the guest asked for: `cumulative`, `delta` or `low_memory`.
    #[getter]
    fn temporality(&self) -> &'static str {
        match self.0.following.with(WasmMetricExporter::temporality) {
            Temporality::Delta => "delta",
            Temporality::LowMemory => "low_memory",
            _ => "cumulative",
        }
    }

    /// Hands off (or, blocking, exports) a `MetricsData`; `None` on success, else why it
    /// failed (never raises). Counted per data point.
    fn export(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> Option<String> {
        let started = Instant::now();
        let collection = match convert::metrics::collection(data) {
            Ok(c) => c,
            Err(e) => return self.0.failed("reading the metrics", 0, started, e),
        };
        let points = otlp_data_points(&collection.request);
        if let Some(resource) = &collection.resource
            && let Err(e) = self.0.follow(resource)
        {
            return self.0.failed("reading the resource", points, started, e);
        }
        if let Some(refused) = self.0.refused_after_shutdown(points) {
            return Some(refused);
        }
        let request = collection.request;
        if let Some(queue) = &self.0.queue {
            queue.hand_off(request, points);
            return self.0.handed_off(py, 1);
        }
        // `export_otlp` counts the points itself; the core's ticket covers none.
        self.0
            .export_blocking(py, 0, started, |e| e.export_otlp(&request))
    }
});
