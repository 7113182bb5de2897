//! Built-in exporters and how config entries become processors and readers.

pub mod console;
pub mod json;
pub mod jsonl_file;
pub mod otlp;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use opentelemetry_sdk::metrics::PeriodicReader;
use opentelemetry_sdk::trace::SpanProcessor;

use crate::config::env::EnvSource;
use crate::config::{ExporterSpec, LensConfig};
use crate::error::LensError;
use crate::rank::RankInfo;
use crate::trace::{BatchSpanProcessor, ExporterStats};
use console::{ConsoleMetricExporter, ConsoleSpanExporter, NoopSpanExporter};
use opentelemetry_sdk::Resource;
use otlp::{OtlpMetricExporter, OtlpSettings, OtlpSpanExporter};

/// What building exporters needs, shared across the entries of one installation.
pub(crate) struct BuildContext<'a> {
    pub config: &'a LensConfig,
    pub env: &'a dyn EnvSource,
    pub rank: RankInfo,
    pub resource: Resource,
    runtime: OnceLock<Arc<tokio::runtime::Runtime>>,
}

impl<'a> BuildContext<'a> {
    pub(crate) fn new(
        config: &'a LensConfig,
        env: &'a dyn EnvSource,
        rank: RankInfo,
        resource: Resource,
    ) -> Self {
        Self {
            config,
            env,
            rank,
            resource,
            runtime: OnceLock::new(),
        }
    }

    fn runtime(&self) -> Result<Arc<tokio::runtime::Runtime>, LensError> {
        if let Some(rt) = self.runtime.get() {
            return Ok(rt.clone());
        }
        let rt = otlp::grpc_runtime()?;
        Ok(self.runtime.get_or_init(|| rt).clone())
    }

    /// A batch processor (with its statistics) for a span exporter entry.
    pub(crate) fn span_processor(
        &self,
        spec: &ExporterSpec,
        name: &str,
    ) -> Result<(Box<dyn SpanProcessor>, Arc<ExporterStats>), LensError> {
        let batch = spec.batch_config(&self.config.batch);
        let stats = Arc::new(ExporterStats::new(name));
        let processor = match spec {
            ExporterSpec::Otlp(o) => {
                let settings = OtlpSettings::resolve(o, &self.config.otlp, "traces", self.env);
                let exporter = OtlpSpanExporter::build(name, &settings, &|| self.runtime())?;
                BatchSpanProcessor::new(exporter, batch, stats.clone())
            }
            ExporterSpec::Console(_) => {
                BatchSpanProcessor::new(ConsoleSpanExporter, batch, stats.clone())
            }
            ExporterSpec::None(_) => {
                BatchSpanProcessor::new(NoopSpanExporter, batch, stats.clone())
            }
            ExporterSpec::Wasm(w) => {
                let exporter =
                    crate::wasm::WasmSpanExporter::from_spec(name, w, &batch, self, stats.clone())?;
                BatchSpanProcessor::new(exporter, batch, stats.clone())
            }
        };
        Ok((Box::new(processor), stats))
    }

    /// A periodic reader for a metric exporter entry (`None` for `kind = "none"`).
    pub(crate) fn metric_reader(
        &self,
        spec: &ExporterSpec,
        name: &str,
    ) -> Result<Option<PeriodicReader<MetricExporterKind>>, LensError> {
        let exporter = match spec {
            ExporterSpec::Otlp(o) => {
                let settings = OtlpSettings::resolve(o, &self.config.otlp, "metrics", self.env);
                let exporter = OtlpMetricExporter::build(name, &settings, &|| self.runtime())?;
                MetricExporterKind::Otlp(Box::new(exporter))
            }
            ExporterSpec::Console(_) => MetricExporterKind::Console(ConsoleMetricExporter),
            ExporterSpec::None(_) => return Ok(None),
            ExporterSpec::Wasm(_) => {
                return Err(LensError::exporter(
                    name,
                    "wasm exporters export spans only",
                ));
            }
        };
        let interval = Duration::from_millis(self.config.metric_export_interval_ms.max(1));
        Ok(Some(
            PeriodicReader::builder(exporter)
                .with_interval(interval)
                .build(),
        ))
    }
}

/// The metric exporters a config can name.
#[derive(Debug)]
pub enum MetricExporterKind {
    /// OTLP.
    Otlp(Box<OtlpMetricExporter>),
    /// JSON lines on stdout.
    Console(ConsoleMetricExporter),
}

impl opentelemetry_sdk::metrics::exporter::PushMetricExporter for MetricExporterKind {
    async fn export(
        &self,
        metrics: &opentelemetry_sdk::metrics::data::ResourceMetrics,
    ) -> opentelemetry_sdk::error::OTelSdkResult {
        match self {
            Self::Otlp(e) => e.export(metrics).await,
            Self::Console(e) => e.export(metrics).await,
        }
    }

    fn force_flush(&self) -> opentelemetry_sdk::error::OTelSdkResult {
        match self {
            Self::Otlp(e) => e.force_flush(),
            Self::Console(e) => e.force_flush(),
        }
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> opentelemetry_sdk::error::OTelSdkResult {
        match self {
            Self::Otlp(e) => e.shutdown_with_timeout(timeout),
            Self::Console(e) => e.shutdown_with_timeout(timeout),
        }
    }

    fn temporality(&self) -> opentelemetry_sdk::metrics::Temporality {
        match self {
            Self::Otlp(e) => e.temporality(),
            Self::Console(e) => e.temporality(),
        }
    }
}
