//! The native exporters a config can name: `otlp` (opentelemetry-otlp, gRPC or HTTP),
//! `console` (OpenTelemetry-Python's JSON shapes, as NeMo Lens prints) and `none`; Lens's compact
//! JSON renderings ([`json`]) for the JSON-lines guests and the demo's files.

pub mod console;
pub mod json;
pub mod otlp;
pub mod python_json;

use std::time::Duration;

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;

pub use console::{
    ConsoleLogExporter, ConsoleMetricExporter, ConsoleOut, ConsoleSpanExporter, NoopLogExporter,
    NoopSpanExporter,
};
pub use otlp::{OtlpLogExporter, OtlpMetricExporter, OtlpSpanExporter};

/// The metric exporters a config can name.
#[derive(Debug)]
pub enum MetricExporterKind {
    /// OTLP.
    Otlp(Box<OtlpMetricExporter>),
    /// JSON lines on stdout.
    Console(ConsoleMetricExporter),
}

impl PushMetricExporter for MetricExporterKind {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        match self {
            Self::Otlp(e) => e.export(metrics).await,
            Self::Console(e) => e.export(metrics).await,
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        match self {
            Self::Otlp(e) => e.force_flush(),
            Self::Console(e) => e.force_flush(),
        }
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        match self {
            Self::Otlp(e) => e.shutdown_with_timeout(timeout),
            Self::Console(e) => e.shutdown_with_timeout(timeout),
        }
    }

    fn temporality(&self) -> Temporality {
        match self {
            Self::Otlp(e) => e.temporality(),
            Self::Console(e) => e.temporality(),
        }
    }
}
