//! [`WasmMetricExporter`]: a component's `metric-exporter` behind the periodic reader.

use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;

use crate::batch::{DirectExport, ExporterStats};
use crate::bindings::metric_types::Temporality as WitTemporality;
use crate::config::{BatchConfig, WasmExporterSpec};
use crate::encoding::metrics::{data_points, encode_metrics};
use crate::encoding::metrics_otlp::encode_otlp_metrics;
pub use crate::encoding::metrics_otlp::otlp_data_points;
use crate::error::{LensError, WasmSetupError};
use crate::wasm::lanes::start::HostInputs;
use crate::wasm::reload::{
    Reloadable, Reloaded, reload_from_config, reloadable, reloadable_from_config,
};
use crate::wasm::sandbox::guest_output::GuestOutputCopy;
use crate::wasm::sandbox::instance::Payload;
use crate::wasm::sandbox::interface::{Preferences, Signal};

/// A metric exporter running a sandboxed WebAssembly component
/// (`lens:exporter/metric-exporter@0.4.0`): one instance, called by the periodic reader once
/// per interval with every instrument's data. Its data points are counted like spans:
/// received, then exported or dropped by reason.
pub struct WasmMetricExporter {
    inner: Arc<Reloadable>,
    temporality: Temporality,
    stats: Arc<ExporterStats>,
}

impl std::fmt::Debug for WasmMetricExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmMetricExporter")
            .field("name", &self.inner.name())
            .field("temporality", &self.temporality)
            .finish()
    }
}

impl WasmMetricExporter {
    /// Loads, links and starts the exporter of a `[[metrics.exporters]]` entry; its `init`
    /// decides the temporality the reader aggregates with.
    pub fn build(
        name: &str,
        spec: &WasmExporterSpec,
        batch: &BatchConfig,
        inputs: &HostInputs<'_>,
        stats: Arc<ExporterStats>,
    ) -> Result<Self, WasmSetupError> {
        let inner = reloadable(name, spec, Signal::Metrics, batch, inputs, stats.clone())?;
        Ok(Self::new(inner, stats))
    }

    /// Loads a `.wasm` metric exporter outside a telemetry installation, as
    /// [`WasmSpanExporter::from_config`](super::WasmSpanExporter::from_config) does.
    pub fn from_config(
        name: &str,
        spec: &WasmExporterSpec,
        resource: &Resource,
    ) -> Result<(Self, Arc<ExporterStats>), LensError> {
        Self::from_config_with_output(name, spec, resource, GuestOutputCopy::None)
    }

    /// [`Self::from_config`], with a copy of the guest's stdout/stderr going to `output`.
    pub fn from_config_with_output(
        name: &str,
        spec: &WasmExporterSpec,
        resource: &Resource,
        output: GuestOutputCopy,
    ) -> Result<(Self, Arc<ExporterStats>), LensError> {
        let (inner, stats) = reloadable_from_config(name, spec, Signal::Metrics, resource, output)?;
        Ok((Self::new(inner, stats.clone()), stats))
    }

    fn new(inner: Reloadable, stats: Arc<ExporterStats>) -> Self {
        let temporality = temporality(inner.current().preferences().as_ref());
        inner.set_accept(Box::new(move |p: &Preferences| {
            let asked = self::temporality(Some(p));
            if asked == temporality {
                Ok(())
            } else {
                Err(format!(
                    "its init asks for {asked:?} temporality; the reader aggregates \
                     {temporality:?} since setup"
                ))
            }
        }));
        Self {
            inner: Arc::new(inner),
            temporality,
            stats,
        }
    }

    /// Replaces the running component with the entry `spec`'s, built beside it while it
    /// exports (see [`crate::wasm::reload`]); refused when the new one asks for another temporality
    /// (the reader aggregates with the first one's). Errors name the exporter, the file and
    /// the step; the running component stays.
    pub fn reload(&self, spec: &WasmExporterSpec) -> Result<Reloaded, LensError> {
        reload_from_config(&self.inner, spec, Signal::Metrics)
    }

    /// Whether the exporter runs the entry `spec` as it is: the same settings, and a file
    /// whose SHA-256 is the running component's (a reload would keep it).
    pub fn runs(&self, spec: &WasmExporterSpec) -> bool {
        self.inner.unchanged(spec)
    }

    /// The running instances, for a reload from the telemetry handle.
    pub(crate) fn reloadable(&self) -> Arc<Reloadable> {
        self.inner.clone()
    }

    /// The encoding the guest asked for, once started.
    pub fn encoding(&self) -> Option<&'static str> {
        self.inner.encoding()
    }

    /// Exports a collection that arrives as an OTLP request (from outside the Rust SDK: the
    /// Python package's), counted per data point as [`PushMetricExporter::export`] counts.
    /// The typed encoding is built from the request; the OTLP encodings are the request.
    pub fn export_otlp(&self, request: &ExportMetricsServiceRequest) -> OTelSdkResult {
        let export = self.stats.begin_direct_export(otlp_data_points(request));
        self.export_otlp_counted(request, export)
    }

    /// As [`export_otlp`](Self::export_otlp), counted under `export`, begun by the caller when
    /// it took the collection, with its data points (a hand-off to a queue: counted while it
    /// waits there).
    pub fn export_otlp_counted(
        &self,
        request: &ExportMetricsServiceRequest,
        export: DirectExport,
    ) -> OTelSdkResult {
        let started = Instant::now();
        let result = export_request(&self.inner, request, export.items());
        self.stats
            .end_direct_export(export, &result, started.elapsed());
        result
    }

    /// Exports `request` of `items` data points without counting them (a caller that counts
    /// itself: a spool).
    pub fn export_request(
        &self,
        request: &ExportMetricsServiceRequest,
        items: u64,
    ) -> OTelSdkResult {
        export_request(&self.inner, request, items)
    }

    /// Calls the guest's `force-flush` within `timeout`.
    pub fn force_flush_within(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.force_flush(Some(timeout))
    }

    /// Hands the guest the resource of the metrics: a new one starts a fresh instance with it
    /// at the next collection (the reader of a Rust installation knows it from the start).
    pub fn set_resource(&self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// Exports `request` of `items` data points through the running instances of `inner`,
/// counted by the caller (a spool's replay counts its records itself).
pub(crate) fn export_request(
    inner: &Reloadable,
    request: &ExportMetricsServiceRequest,
    items: u64,
) -> OTelSdkResult {
    inner.export(items, |preferences, _| {
        Payload::Metrics(encode_otlp_metrics(request, preferences.encoding))
    })
}

/// The temporality a guest asked for in `init` (cumulative when it did not say).
fn temporality(preferences: Option<&Preferences>) -> Temporality {
    match preferences.and_then(|p| p.temporality) {
        Some(WitTemporality::Delta) => Temporality::Delta,
        Some(WitTemporality::LowMemory) => Temporality::LowMemory,
        Some(WitTemporality::Cumulative) | None => Temporality::Cumulative,
    }
}

impl PushMetricExporter for WasmMetricExporter {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let points = data_points(metrics);
        let started = Instant::now();
        let export = self.stats.begin_direct_export(points);
        let result = self.inner.export(points, |preferences, _| {
            Payload::Metrics(encode_metrics(metrics, preferences.encoding))
        });
        self.stats
            .end_direct_export(export, &result, started.elapsed());
        result
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush(None)
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown(Some(timeout))
    }

    fn temporality(&self) -> Temporality {
        self.temporality
    }
}
