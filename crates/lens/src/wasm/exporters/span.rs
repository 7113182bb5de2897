//! [`WasmSpanExporter`]: a component's `span-exporter` behind the batch span processor.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

use crate::batch::ExporterStats;
use crate::config::{BatchConfig, WasmExporterSpec};
use crate::error::{LensError, WasmSetupError};
use crate::wasm::lanes::start::HostInputs;
use crate::wasm::reload::{
    Reloadable, Reloaded, reload_from_config, reloadable, reloadable_from_config,
};
use crate::wasm::sandbox::guest_output::GuestOutputCopy;
use crate::wasm::sandbox::instance::Payload;
use crate::wasm::sandbox::interface::Signal;

/// A span exporter running a sandboxed WebAssembly component (`lens:exporter/span-exporter`,
/// 0.4.0, 0.3.0 or 0.2.0): one instance per lane, as many lanes as the batch processor's
/// `max_concurrent_exports`. Spans are encoded on the instance's worker, in the encoding the
/// guest asked for.
pub struct WasmSpanExporter {
    inner: Arc<Reloadable>,
}

impl std::fmt::Debug for WasmSpanExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmSpanExporter")
            .field("name", &self.inner.name())
            .finish()
    }
}

impl WasmSpanExporter {
    /// Loads, links and starts the exporter of a config entry: as many instances as
    /// `batch.max_concurrent_exports`, each initialised before this returns.
    pub fn build(
        name: &str,
        spec: &WasmExporterSpec,
        batch: &BatchConfig,
        inputs: &HostInputs<'_>,
        stats: Arc<ExporterStats>,
    ) -> Result<Self, WasmSetupError> {
        let inner = reloadable(name, spec, Signal::Traces, batch, inputs, stats)?;
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// Loads a `.wasm` span exporter outside a telemetry installation (tests, benchmarks,
    /// tools): the process environment for `from_host` grants, the cache and the batch defaults
    /// (with the entry's own `batch` overrides), rank 0. Errors name the exporter and the file.
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
        let (inner, stats) = reloadable_from_config(name, spec, Signal::Traces, resource, output)?;
        let inner = Arc::new(inner);
        Ok((Self { inner }, stats))
    }

    /// Replaces the running component with the entry `spec`'s, built beside it while it
    /// exports (see [`crate::wasm::reload`]): a batch is exported whole by one of the two. Errors
    /// name the exporter, the file and the step; the running component stays.
    pub fn reload(&self, spec: &WasmExporterSpec) -> Result<Reloaded, LensError> {
        reload_from_config(&self.inner, spec, Signal::Traces)
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

    /// Calls every instance's `force-flush`, giving up after `timeout` (an export in progress,
    /// retries included, holds its instance until it ends).
    pub fn force_flush_within(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.force_flush(Some(timeout))
    }

    /// The batch encoding the guest asked for (`typed`, `otlp-protobuf` or `otlp-json`), once
    /// started.
    pub fn encoding(&self) -> Option<&'static str> {
        self.inner.encoding()
    }
}

impl SpanExporter for WasmSpanExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.inner
            .export(batch.len() as u64, |_, _| Payload::Spans(batch))
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush(None)
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown(Some(timeout))
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
