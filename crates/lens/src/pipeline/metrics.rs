//! The metric exporter behind one config entry's periodic reader, counting data points into
//! the entry's [`ExporterStats`] as the batch processors count spans and log records, and
//! running the collection through the entry's `[[metrics.processors]]` first.
//!
//! The SDK's collections cannot be edited: with processors, a collection becomes an OTLP
//! request, which the processors edit in turn; the OTLP exporter then sends that request
//! itself ([`OtlpRequestSender`]), a wasm exporter takes it as a Python rank's request, and
//! the console writes the SDK's collection with each processor's answer replayed on its JSON.

use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use serde_json::Value as Json;

use crate::batch::{Chain, DropReason, ExporterStats, Retained};
use crate::encoding::metrics::data_points;
use crate::exporter::otlp::OtlpRequestSender;
use crate::exporter::{ConsoleMetricExporter, OtlpMetricExporter};
use crate::pipeline::metric_spool::MetricSpool;
use crate::wasm::processors::metric_edit::{self, MetricCollection};
use crate::wasm::processors::{MetricsOutcome, run_metric_processors_answers};
use crate::wasm::{WasmMetricExporter, WasmProcessor};

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
    /// The processors before it, in order (a reload replaces them).
    processors: Arc<Chain<WasmProcessor>>,
    /// How an OTLP exporter sends a collection the processors edited.
    requests: Option<OtlpRequestSender>,
    /// Where collections go while the exporter cannot take them, if its entry has a spool.
    spool: Option<Arc<MetricSpool>>,
}

impl CountedMetricExporter {
    /// `exporter`, counting into `stats`.
    pub fn new(exporter: MetricExporterKind, stats: Arc<ExporterStats>) -> Self {
        Self {
            exporter,
            stats,
            processors: Arc::new(Chain::new(Vec::new())),
            requests: None,
            spool: None,
        }
    }

    /// Sends every collection through `spool`'s sink, spooling what it cannot take.
    pub(crate) fn with_spool(mut self, spool: Arc<MetricSpool>) -> Self {
        self.spool = Some(spool);
        self
    }

    /// Runs each collection through `processors` first (an OTLP exporter sends the result
    /// through `requests`).
    pub(crate) fn with_processors(
        mut self,
        processors: Vec<Arc<WasmProcessor>>,
        requests: Option<OtlpRequestSender>,
    ) -> Self {
        self.processors = Arc::new(Chain::new(processors));
        self.requests = requests;
        self
    }

    /// The processors before it, which a reload replaces.
    pub(crate) fn chain(&self) -> Arc<Chain<WasmProcessor>> {
        self.processors.clone()
    }

    /// Exports `metrics` after the processors (through the spool's sink when the entry has
    /// one): counted from the start in data points, those the processors drop ending as
    /// `dropped_processor`.
    async fn export_processed(
        &self,
        processors: &[Arc<WasmProcessor>],
        metrics: &ResourceMetrics,
    ) -> OTelSdkResult {
        let started = Instant::now();
        let export = self.stats.begin_direct_export(data_points(metrics));
        let mut request = ExportMetricsServiceRequest::from(metrics);
        let (processed, outcomes) = run_metric_processors_answers(processors, &mut request);
        let Some(export) = self.stats.processed_direct(export, &processed.by) else {
            return Ok(());
        };
        if let Some(spool) = &self.spool {
            return spool.export(request, export).await;
        }
        let result = match &self.exporter {
            MetricExporterKind::Wasm(e) => return e.export_otlp_counted(&request, export),
            MetricExporterKind::Otlp(_) => match &self.requests {
                Some(sender) => sender.send(&request).await,
                None => Err(OTelSdkError::InternalFailure(
                    "no sender for processed metrics".into(),
                )),
            },
            MetricExporterKind::Console(e) => e.export_json(metrics, |json| {
                replay(&mut ConsoleMetrics(json), &outcomes);
            }),
            MetricExporterKind::Disabled => {
                self.stats
                    .refuse_direct_export(export, DropReason::Disabled);
                return Ok(());
            }
        };
        self.stats
            .end_direct_export(export, &result, started.elapsed());
        result
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
            .end_direct_export(ticket, &result, started.elapsed());
        result
    }
}

impl PushMetricExporter for CountedMetricExporter {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        // The chain as it is now, for this whole collection.
        let chain = self.processors.current();
        // A spool is only an OTLP or a started wasm entry's.
        let processing =
            !chain.list().is_empty() && !matches!(self.exporter, MetricExporterKind::Disabled);
        if self.spool.is_some() || processing {
            return self.export_processed(chain.list(), metrics).await;
        }
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
        self.processors.shutdown(timeout);
        let result = match &self.exporter {
            MetricExporterKind::Otlp(e) => e.shutdown_with_timeout(timeout),
            MetricExporterKind::Console(e) => e.shutdown_with_timeout(timeout),
            MetricExporterKind::Wasm(e) => e.shutdown_with_timeout(timeout),
            MetricExporterKind::Disabled => Ok(()),
        };
        if let Some(spool) = &self.spool {
            spool.release();
        }
        result
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

impl Retained for WasmProcessor {
    fn retain(&self) {
        WasmProcessor::retain(self);
    }

    fn release(&self, timeout: Duration) {
        WasmProcessor::release(self, timeout);
    }
}

/// The processors' answers, replayed in order on another form of the collection they answered.
fn replay<C: MetricCollection>(collection: &mut C, outcomes: &[MetricsOutcome]) {
    for outcome in outcomes {
        match outcome {
            MetricsOutcome::Edited(edits) => {
                let items = metric_edit::count(collection);
                metric_edit::apply_checked(collection, edits, items);
            }
            MetricsOutcome::Unprocessed => {}
            MetricsOutcome::Dropped => collection.groups().into_iter().for_each(Vec::clear),
        }
    }
}

/// A collection as the console writes it (`MetricsData.to_json`): metrics under
/// `resource_metrics[].scope_metrics[].metrics`, each data point's attributes an object.
struct ConsoleMetrics<'a>(&'a mut Json);

impl ConsoleMetrics<'_> {
    fn point_attributes(
        metric: &mut Json,
    ) -> impl Iterator<Item = &mut serde_json::Map<String, Json>> {
        metric["data"]["data_points"]
            .as_array_mut()
            .into_iter()
            .flatten()
            .filter_map(|p| p["attributes"].as_object_mut())
    }
}

impl MetricCollection for ConsoleMetrics<'_> {
    type Metric = Json;

    fn groups(&mut self) -> Vec<&mut Vec<Json>> {
        self.0["resource_metrics"]
            .as_array_mut()
            .into_iter()
            .flatten()
            .filter_map(|r| r["scope_metrics"].as_array_mut())
            .flatten()
            .filter_map(|s| s["metrics"].as_array_mut())
            .collect()
    }

    fn points(metric: &Json) -> u64 {
        metric["data"]["data_points"]
            .as_array()
            .map_or(0, |p| p.len() as u64)
    }

    fn rename(metric: &mut Json, name: String) {
        metric["name"] = Json::String(name);
    }

    fn set_attribute(metric: &mut Json, key: &str, value: &opentelemetry::Value) {
        let value = crate::exporter::json::value_json(value);
        for attributes in Self::point_attributes(metric) {
            attributes.insert(key.to_string(), value.clone());
        }
    }

    fn remove_attribute(metric: &mut Json, key: &str) {
        for attributes in Self::point_attributes(metric) {
            attributes.shift_remove(key);
        }
    }
}
