//! [`WasmLogExporter`]: a component's `log-exporter` behind the batch log processor.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::logs::{LogBatch, LogExporter};

use crate::batch::ExporterStats;
use crate::config::{BatchConfig, WasmExporterSpec};
use crate::encoding::logs::encode_logs;
use crate::error::{LensError, WasmSetupError};
use crate::wasm::lanes::start::HostInputs;
use crate::wasm::reload::{
    Reloadable, Reloaded, reload_from_config, reloadable, reloadable_from_config,
};
use crate::wasm::sandbox::guest_output::GuestOutputCopy;
use crate::wasm::sandbox::instance::Payload;
use crate::wasm::sandbox::interface::Signal;

/// A log exporter running a sandboxed WebAssembly component
/// (`lens:exporter/log-exporter@0.4.0`): as many instances as the batch log processor's
/// `max_concurrent_exports`. Records are encoded on the processor's thread, in the encoding
/// the guest asked for.
pub struct WasmLogExporter {
    inner: Arc<Reloadable>,
}

impl std::fmt::Debug for WasmLogExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmLogExporter")
            .field("name", &self.inner.name())
            .finish()
    }
}

impl WasmLogExporter {
    /// Loads, links and starts the exporter of a `[[logs.exporters]]` entry.
    pub fn build(
        name: &str,
        spec: &WasmExporterSpec,
        batch: &BatchConfig,
        inputs: &HostInputs<'_>,
        stats: Arc<ExporterStats>,
    ) -> Result<Self, WasmSetupError> {
        let inner = reloadable(name, spec, Signal::Logs, batch, inputs, stats)?;
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// Loads a `.wasm` log exporter outside a telemetry installation, as
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
        let (inner, stats) = reloadable_from_config(name, spec, Signal::Logs, resource, output)?;
        let inner = Arc::new(inner);
        Ok((Self { inner }, stats))
    }

    /// Replaces the running component with the entry `spec`'s, built beside it while it
    /// exports (see [`crate::wasm::reload`]): a batch is exported whole by one of the two. Errors
    /// name the exporter, the file and the step; the running component stays.
    pub fn reload(&self, spec: &WasmExporterSpec) -> Result<Reloaded, LensError> {
        reload_from_config(&self.inner, spec, Signal::Logs)
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

    /// Calls every instance's `force-flush` (the SDK's `LogExporter` has none; the batch log
    /// processor calls this after draining its queue).
    pub fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush(None)
    }

    /// Calls every instance's `force-flush` within `timeout`.
    pub fn force_flush_within(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.force_flush(Some(timeout))
    }
}

impl LogExporter for WasmLogExporter {
    async fn export(&self, batch: LogBatch<'_>) -> OTelSdkResult {
        self.inner
            .export(batch.iter().count() as u64, |preferences, resource| {
                Payload::Logs(encode_logs(&batch, resource, preferences.encoding))
            })
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown(Some(timeout))
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
