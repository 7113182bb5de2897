//! Installing Lens for a test, and exporters with scripted behaviour.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lens::config::{
    ExporterSpec, OtlpExporterSpec, OtlpProtocol, SignalConfig, SpoolSpec, WasmCacheConfig,
};
use lens::opentelemetry::{Key, Value};
use lens::opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use lens::opentelemetry_sdk::logs::{LogBatch, LogExporter};
use lens::opentelemetry_sdk::trace::{SpanData, SpanExporter};
use lens::{LensConfig, TelemetryBuilder, TelemetryHandle};

/// The longest a test waits for a flush or a shutdown.
pub const T: Duration = Duration::from_secs(10);

/// NeMo Lens's defaults, but enabled and exporting from every rank: what most tests start from
/// (the library's defaults export nothing).
pub fn exporting() -> LensConfig {
    LensConfig {
        enabled: true,
        export_strategy: "all_ranks".into(),
        wasm_cache: test_wasm_cache(),
        ..Default::default()
    }
}

/// The compilation cache the tests share (`target/lens-test-wasm-cache`): the tests' configs
/// read an empty environment, so without it every load of a 20 MB Python guest would compile
/// it again.
pub fn test_wasm_cache() -> WasmCacheConfig {
    WasmCacheConfig {
        dir: Some(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/lens-test-wasm-cache"),
        ),
        ..Default::default()
    }
}

/// An exporting config through the `exporter` shorthand, with a fixed run id.
pub fn config(exporter: &str) -> LensConfig {
    LensConfig {
        exporter: exporter.into(),
        run_id: "run42".into(),
        ..exporting()
    }
}

/// An OTLP exporter entry for `endpoint` over `protocol` (`timeout_ms` unset: 10 s).
pub fn otlp_spec(protocol: OtlpProtocol, endpoint: String) -> OtlpExporterSpec {
    OtlpExporterSpec {
        protocol: Some(protocol),
        endpoint: Some(endpoint),
        ..Default::default()
    }
}

/// A spool in `dir`, with the other keys at their defaults.
pub fn spool_in(dir: &std::path::Path) -> SpoolSpec {
    SpoolSpec {
        dir: Some(dir.to_path_buf()),
        ..Default::default()
    }
}

/// Exporting on every rank, metrics off, traces to that one OTLP exporter entry.
pub fn traces_to(spec: OtlpExporterSpec) -> LensConfig {
    LensConfig {
        metrics_enabled: false,
        traces: SignalConfig {
            exporters: vec![ExporterSpec::Otlp(spec)],
            processors: Vec::new(),
        },
        ..exporting()
    }
}

/// A signal exporting to that one OTLP exporter.
pub fn otlp_signal(protocol: OtlpProtocol, endpoint: String) -> SignalConfig {
    SignalConfig {
        exporters: vec![ExporterSpec::Otlp(otlp_spec(protocol, endpoint))],
        processors: Vec::new(),
    }
}

/// An empty environment.
pub fn no_env() -> HashMap<String, String> {
    HashMap::new()
}

/// Installs without touching the process environment or the global providers.
pub trait LocalInstall {
    /// Installs with an empty environment, not globally; panics on error.
    fn local(self) -> TelemetryHandle;
}

impl LocalInstall for TelemetryBuilder {
    fn local(self) -> TelemetryHandle {
        self.env(no_env()).install_global(false).install().unwrap()
    }
}

/// The data of the metric `name` in a collection (panics naming it when it is missing).
pub fn metric<'a>(
    data: &'a lens::opentelemetry_sdk::metrics::data::ResourceMetrics,
    name: &str,
) -> &'a lens::opentelemetry_sdk::metrics::data::AggregatedMetrics {
    data.scope_metrics()
        .flat_map(|s| s.metrics())
        .find(|m| m.name() == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .data()
}

/// The value of attribute `key` among `attrs`.
pub fn attr<'a>(attrs: impl IntoIterator<Item = (&'a Key, &'a Value)>, key: &str) -> Option<Value> {
    attrs
        .into_iter()
        .find(|(k, _)| k.as_str() == key)
        .map(|(_, v)| v.clone())
}

/// An exporter that takes `delay` per batch and fails every `fail_every`-th batch (0: never),
/// counting the spans it accepts.
#[derive(Debug)]
pub struct SlowExporter {
    delay: Duration,
    fail_every: u64,
    calls: AtomicU64,
    accepted: Arc<AtomicU64>,
}

impl SlowExporter {
    /// The exporter and its count of accepted spans.
    pub fn new(delay: Duration, fail_every: u64) -> (Self, Arc<AtomicU64>) {
        let accepted = Arc::new(AtomicU64::new(0));
        let exporter = Self {
            delay,
            fail_every,
            calls: AtomicU64::new(0),
            accepted: accepted.clone(),
        };
        (exporter, accepted)
    }
}

impl SlowExporter {
    fn take(&self, items: usize) -> OTelSdkResult {
        std::thread::sleep(self.delay);
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if self.fail_every > 0 && n.is_multiple_of(self.fail_every) {
            return Err(OTelSdkError::InternalFailure("backend said no".into()));
        }
        self.accepted.fetch_add(items as u64, Ordering::SeqCst);
        Ok(())
    }
}

impl SpanExporter for SlowExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.take(batch.len())
    }
}

impl LogExporter for SlowExporter {
    async fn export(&self, batch: LogBatch<'_>) -> OTelSdkResult {
        self.take(batch.iter().count())
    }
}
