//! The metric exporter behind one config entry's periodic reader, counting data points into
//! the entry's [`ExporterStats`] as the batch processors count spans and log records.

use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;

use crate::batch::{DropReason, ExporterStats};
use crate::encoding::metrics::data_points;
use crate::exporter::{ConsoleMetricExporter, OtlpMetricExporter};
use crate::wasm::WasmMetricExporter;

/// The metric exporters a config can name.
#[derive(Debug)]
pub enum MetricExporterKind {
    /// OTLP.
    Otlp(Box<OtlpMetricExporter>),
    /// JSON lines on stdout.
    Console(ConsoleMetricExporter),
    /// A sandboxed component (it counts its own data points, retries included).
    Wasm(WasmMetricExporter),
    /// A wasm exporter disabled at setup: every data point collected is counted as dropped.
    Disabled,
}

/// A config entry's metric exporter with its statistics: every data point collected is
/// exported or counted as dropped.
#[derive(Debug)]
pub struct CountedMetricExporter {
    exporter: MetricExporterKind,
    stats: Arc<ExporterStats>,
}

impl CountedMetricExporter {
    /// `exporter`, counting into `stats`.
    pub fn new(exporter: MetricExporterKind, stats: Arc<ExporterStats>) -> Self {
        Self { exporter, stats }
    }

    /// Runs `export` of `metrics`, its data points counted from its start (one still running
    /// at shutdown ends as dropped there).
    async fn counted(
        &self,
        metrics: &ResourceMetrics,
        export: impl Future<Output = OTelSdkResult>,
    ) -> OTelSdkResult {
        let started = Instant::now();
        let ticket = self.stats.begin_direct_export(data_points(metrics));
        let result = export.await;
        self.stats
            .end_direct_export(ticket, result.is_ok(), started.elapsed());
        result
    }
}

impl PushMetricExporter for CountedMetricExporter {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        match &self.exporter {
            MetricExporterKind::Otlp(e) => self.counted(metrics, e.export(metrics)).await,
            MetricExporterKind::Console(e) => self.counted(metrics, e.export(metrics)).await,
            MetricExporterKind::Wasm(e) => e.export(metrics).await,
            MetricExporterKind::Disabled => {
                let points = data_points(metrics);
                self.stats
                    .record_direct_dropped(DropReason::Disabled, points);
                Ok(())
            }
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        match &self.exporter {
            MetricExporterKind::Otlp(e) => e.force_flush(),
            MetricExporterKind::Console(e) => e.force_flush(),
            MetricExporterKind::Wasm(e) => e.force_flush(),
            MetricExporterKind::Disabled => Ok(()),
        }
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        match &self.exporter {
            MetricExporterKind::Otlp(e) => e.shutdown_with_timeout(timeout),
            MetricExporterKind::Console(e) => e.shutdown_with_timeout(timeout),
            MetricExporterKind::Wasm(e) => e.shutdown_with_timeout(timeout),
            MetricExporterKind::Disabled => Ok(()),
        }
    }

    fn temporality(&self) -> Temporality {
        match &self.exporter {
            MetricExporterKind::Otlp(e) => e.temporality(),
            MetricExporterKind::Console(e) => e.temporality(),
            MetricExporterKind::Wasm(e) => e.temporality(),
            MetricExporterKind::Disabled => Temporality::Cumulative,
        }
    }
}
