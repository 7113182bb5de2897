//! Sandboxed WebAssembly component exporters.

use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

use crate::config::{BatchConfig, WasmExporterSpec};
use crate::error::LensError;
use crate::exporter::BuildContext;

/// A span exporter running a WebAssembly component.
#[derive(Debug)]
pub struct WasmSpanExporter {}

impl WasmSpanExporter {
    pub(crate) fn from_spec(
        name: &str,
        spec: &WasmExporterSpec,
        _batch: &BatchConfig,
        _ctx: &BuildContext<'_>,
    ) -> Result<Self, LensError> {
        Err(LensError::WasmLoad {
            exporter: name.to_string(),
            path: spec.path.clone(),
            message: "not yet supported".into(),
        })
    }
}

impl SpanExporter for WasmSpanExporter {
    async fn export(&self, _batch: Vec<SpanData>) -> OTelSdkResult {
        Err(OTelSdkError::InternalFailure("unsupported".into()))
    }
}
