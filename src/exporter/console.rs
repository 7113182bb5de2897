//! `console`: one compact JSON line per span (or metric) on stdout.

use std::io::Write;
use std::time::Duration;

use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

use super::json::{metrics_json, span_json};

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
