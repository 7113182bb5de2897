//! [`MetricCore`]: the native half of `lens.WasmMetricExporter`.
//!
//! The Python SDK's periodic reader calls `export` on a thread of its own, once per interval:
//! the collection is read under the GIL into an OTLP request, then the GIL is released while
//! the guest runs. The export waits for the guest (the reader's thread is there to wait, and
//! its `FAILURE` is how the reader learns of a failed collection); it is bounded by the
//! reader's `timeout_millis` and the exporter's `export_timeout_ms`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use lens::Signal;
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::metrics::Temporality;
use lens::opentelemetry_sdk::metrics::exporter::PushMetricExporter as _;
use lens::trace::ExporterStats;
use lens::wasm::WasmMetricExporter;
use pyo3::prelude::*;
use std::sync::Arc;

use crate::convert;
use crate::core::{Entry, ResourceFollower, load_error, signal, stats_json};

/// One sandboxed metric exporter, driven by the Python SDK's metric reader.
#[pyclass(module = "lens._lens", frozen)]
pub struct MetricCore {
    name: String,
    exporter: RwLock<WasmMetricExporter>,
    stats: Arc<ExporterStats>,
    resource: Mutex<ResourceFollower>,
    shut_down: AtomicBool,
}

impl MetricCore {
    fn build(py: Python<'_>, entry: Entry) -> PyResult<Self> {
        let empty = Resource::builder_empty().build();
        let (exporter, stats) = py
            .detach(|| WasmMetricExporter::from_config(&entry.name, &entry.spec, &empty))
            .map_err(load_error)?;
        Ok(Self {
            name: entry.name,
            exporter: RwLock::new(exporter),
            stats,
            resource: Mutex::new(ResourceFollower::new()),
            shut_down: AtomicBool::new(false),
        })
    }

    fn exporter(&self) -> std::sync::RwLockReadGuard<'_, WasmMetricExporter> {
        self.exporter.read().unwrap_or_else(|p| p.into_inner())
    }
}

#[pymethods]
impl MetricCore {
    #[new]
    fn new(py: Python<'_>, spec_json: &str) -> PyResult<Self> {
        Self::build(py, Entry::from_json(spec_json, Signal::Metrics)?)
    }

    #[staticmethod]
    #[pyo3(signature = (path, name=None))]
    fn from_config(
        py: Python<'_>,
        path: std::path::PathBuf,
        name: Option<String>,
    ) -> PyResult<Self> {
        Self::build(
            py,
            Entry::from_config(&path, name.as_deref(), signal("metrics")?)?,
        )
    }

    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    #[getter]
    fn encoding(&self) -> Option<&'static str> {
        self.exporter().encoding()
    }

    /// The temporality the guest asked for: `cumulative`, `delta` or `low_memory`.
    #[getter]
    fn temporality(&self) -> &'static str {
        match self.exporter().temporality() {
            Temporality::Delta => "delta",
            Temporality::LowMemory => "low_memory",
            _ => "cumulative",
        }
    }

    /// Exports a `MetricsData`; `None` on success, else why it failed (never raises).
    fn export(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> Option<String> {
        let started = Instant::now();
        let collection = match convert::metrics::collection(data) {
            Ok(c) => c,
            Err(e) => {
                let export = self.stats.begin_direct_export(0);
                self.stats
                    .end_direct_export(export, false, started.elapsed());
                return Some(format!(
                    "wasm exporter `{}`: reading the metrics: {e}",
                    self.name
                ));
            }
        };
        if let Some(resource) = &collection.resource {
            let mut seen = self.resource.lock().unwrap_or_else(|p| p.into_inner());
            match seen.changed(resource) {
                Ok(Some(changed)) => self
                    .exporter
                    .write()
                    .unwrap_or_else(|p| p.into_inner())
                    .set_resource(&changed),
                Ok(None) => {}
                Err(e) => {
                    return Some(format!(
                        "wasm exporter `{}`: reading the resource: {e}",
                        self.name
                    ));
                }
            }
        }
        if self.shut_down.load(Ordering::Acquire) {
            // Counted as dropped at shutdown: the stats are closed.
            let points = lens::wasm::metric_exporter::otlp_data_points(&collection.request);
            let export = self.stats.begin_direct_export(points);
            self.stats.abandon_direct_export(export);
            return Some(format!("wasm exporter `{}`: already shut down", self.name));
        }
        let request = collection.request;
        py.detach(|| self.exporter().export_otlp(&request))
            .err()
            .map(|e| e.to_string())
    }

    fn force_flush(&self, py: Python<'_>, timeout_millis: u64) -> Option<String> {
        py.detach(|| {
            self.exporter()
                .force_flush_within(Duration::from_millis(timeout_millis))
        })
        .err()
        .map(|e| e.to_string())
    }

    fn shutdown(&self, py: Python<'_>, timeout_millis: u64) -> Option<String> {
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return None;
        }
        let result = py.detach(|| {
            self.exporter()
                .shutdown_with_timeout(Duration::from_millis(timeout_millis))
        });
        self.stats.close_direct();
        result.err().map(|e| e.to_string())
    }

    fn stats_json(&self) -> String {
        stats_json(&self.stats, "blocking")
    }
}
