//! `console`: what NeMo Lens's console exporters print, in OpenTelemetry-Python's shapes (a span
//! per line, a collection of metrics per line, a log record per line; [`super::python_json`]),
//! on stdout or any writer.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::logs::{LogBatch, LogExporter};
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

use super::python_dumps::dumps;
use super::python_json::{ResourceOrder, log_record_json, metrics_data_json, span_json};

/// Where a console exporter writes: stdout, or a shared writer (tests, a file).
#[derive(Clone, Default)]
pub enum ConsoleOut {
    /// The process's stdout.
    #[default]
    Stdout,
    /// Any writer, shared by the exporters given it.
    Writer(Arc<Mutex<dyn Write + Send>>),
}

impl std::fmt::Debug for ConsoleOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Stdout => "Stdout",
            Self::Writer(_) => "Writer",
        })
    }
}

impl ConsoleOut {
    /// Writes each value as one JSON line, then flushes.
    fn write_lines(&self, lines: impl Iterator<Item = serde_json::Value>) -> OTelSdkResult {
        let fail = |e: &dyn std::fmt::Display| OTelSdkError::InternalFailure(e.to_string());
        let mut text = String::new();
        for line in lines {
            text.push_str(&dumps(&line));
            text.push('\n');
        }
        let text = text.into_bytes();
        let result = match self {
            Self::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(&text).and_then(|()| out.flush())
            }
            Self::Writer(w) => {
                let mut out = w.lock().unwrap_or_else(|p| p.into_inner());
                out.write_all(&text).and_then(|()| out.flush())
            }
        };
        result.map_err(|e| fail(&e))
    }
}

/// Defines a console exporter of spans or log records: where it writes, the resource the SDK
/// hands it and the resource's key order.
macro_rules! console_exporter {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name {
            out: ConsoleOut,
            resource: Resource,
            order: ResourceOrder,
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new(ConsoleOut::Stdout)
            }
        }

        impl $name {
            /// An exporter writing to `out`.
            pub fn new(out: ConsoleOut) -> Self {
                Self {
                    out,
                    resource: Resource::builder_empty().build(),
                    order: ResourceOrder::default(),
                }
            }

            /// Writes the resource's keys in `order` (the exporters Lens builds from a config
            /// get the rank's: NeMo Lens's order); without it they are sorted.
            pub fn with_resource_order(mut self, order: ResourceOrder) -> Self {
                self.order = order;
                self
            }
        }
    };
}

console_exporter!(
    /// Writes each span as `ReadableSpan.to_json` does, one per line.
    ConsoleSpanExporter
);
console_exporter!(
    /// Writes each log record as `LogRecord.to_json` does, one per line.
    ConsoleLogExporter
);

impl SpanExporter for ConsoleSpanExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.out.write_lines(
            batch
                .iter()
                .map(|s| span_json(s, &self.resource, &self.order)),
        )
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.resource = resource.clone();
    }
}

/// Writes each collection as `MetricsData.to_json` does, one per line (a collection brings its
/// resource).
#[derive(Debug, Default)]
pub struct ConsoleMetricExporter {
    out: ConsoleOut,
    order: ResourceOrder,
}

impl ConsoleMetricExporter {
    /// An exporter writing to `out`.
    pub fn new(out: ConsoleOut) -> Self {
        Self {
            out,
            order: ResourceOrder::default(),
        }
    }

    /// Writes the resource's keys in `order` (see [`ConsoleSpanExporter::with_resource_order`]).
    pub fn with_resource_order(mut self, order: ResourceOrder) -> Self {
        self.order = order;
        self
    }

    /// Writes `metrics` as [`export`](PushMetricExporter::export) does, after `edit` changed
    /// its JSON (what the metric processors did to the collection).
    pub fn export_json(
        &self,
        metrics: &ResourceMetrics,
        edit: impl FnOnce(&mut serde_json::Value),
    ) -> OTelSdkResult {
        let mut json = metrics_data_json(metrics, &self.order);
        edit(&mut json);
        self.out.write_lines(std::iter::once(json))
    }
}

impl PushMetricExporter for ConsoleMetricExporter {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        self.out
            .write_lines(std::iter::once(metrics_data_json(metrics, &self.order)))
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

impl LogExporter for ConsoleLogExporter {
    async fn export(&self, batch: LogBatch<'_>) -> OTelSdkResult {
        self.out.write_lines(
            batch
                .iter()
                .map(|(record, _scope)| log_record_json(record, &self.resource, &self.order)),
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
