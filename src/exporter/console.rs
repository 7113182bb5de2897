//! `console`: one compact JSON line per span, metric or log record on stdout.

use std::io::Write;
use std::time::Duration;

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::logs::{LogBatch, LogExporter};
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

use super::json::{log_record_json, metrics_json, span_json};

/// Writes each span as one JSON line to stdout.
#[derive(Debug, Default)]
pub struct ConsoleSpanExporter;

fn write_lines(lines: impl Iterator<Item = serde_json::Value>) -> OTelSdkResult {
    let mut out = std::io::stdout().lock();
    for line in lines {
        serde_json::to_writer(&mut out, &line)
            .map_err(|e| OTelSdkError::InternalFailure(e.to_string()))?;
        out.write_all(b"\n")
            .map_err(|e| OTelSdkError::InternalFailure(e.to_string()))?;
    }
    out.flush()
        .map_err(|e| OTelSdkError::InternalFailure(e.to_string()))
}

impl SpanExporter for ConsoleSpanExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        write_lines(batch.iter().map(span_json))
    }
}

/// Writes each metric of a collection as one JSON line to stdout.
#[derive(Debug, Default)]
pub struct ConsoleMetricExporter;

impl PushMetricExporter for ConsoleMetricExporter {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        write_lines(metrics_json(metrics).into_iter())
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }

    fn temporality(&self) -> Temporality {
        Temporality::Cumulative
    }
}

/// `none`: accepts and discards (spans are still counted as exported).
#[derive(Debug, Default)]
pub struct NoopSpanExporter;

impl SpanExporter for NoopSpanExporter {
    async fn export(&self, _batch: Vec<SpanData>) -> OTelSdkResult {
        Ok(())
    }
}

/// Writes each log record as one JSON line to stdout, in OpenTelemetry-Python's
/// `LogRecord.to_json` shape (NeMo Lens's console log exporter writes the same, indented).
#[derive(Debug)]
pub struct ConsoleLogExporter {
    resource: Resource,
}

impl Default for ConsoleLogExporter {
    fn default() -> Self {
        Self {
            resource: Resource::builder_empty().build(),
        }
    }
}

impl LogExporter for ConsoleLogExporter {
    async fn export(&self, batch: LogBatch<'_>) -> OTelSdkResult {
        write_lines(
            batch
                .iter()
                .map(|(record, _scope)| log_record_json(record, &self.resource)),
        )
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.resource = resource.clone();
    }
}

/// `none` for logs: accepts and discards (records are still counted as exported).
#[derive(Debug, Default)]
pub struct NoopLogExporter;

impl LogExporter for NoopLogExporter {
    async fn export(&self, _batch: LogBatch<'_>) -> OTelSdkResult {
        Ok(())
    }
}
