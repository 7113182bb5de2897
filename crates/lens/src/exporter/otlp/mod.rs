//! `otlp`: the opentelemetry-otlp exporters, gRPC (tonic) or HTTP/protobuf (blocking reqwest).
//!
//! Batch processors call `export` from their own thread with no tokio runtime; tonic needs one.
//! The gRPC exporters therefore get a small shared runtime and every call is driven on it.
//! The `attempts` module counts the requests of each export, retries included; `request` sends
//! metrics requests Lens edited itself, with the same settings and retries.

mod attempts;
mod request;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry_otlp::tonic_types::metadata as tonic_metadata;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig, WithTonicConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::logs::{LogBatch, LogExporter};
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

use crate::batch::ExporterStats;
use crate::config::env::{EnvSource, otlp_endpoint, otlp_protocol};
use crate::config::{OtlpExporterSpec, OtlpProtocol};
use crate::error::LensError;
use crate::signal::Signal;
use attempts::{Attempts, CountingClient};
pub(crate) use request::OtlpRequestSender;

/// The runtime tonic runs on; one per installation, shared by its gRPC exporters.
pub(crate) fn grpc_runtime() -> Result<Arc<tokio::runtime::Runtime>, LensError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("lens-otlp-grpc")
        .enable_all()
        .build()
        .map(Arc::new)
        .map_err(|e| LensError::exporter("otlp", "cannot start the gRPC runtime", e))
}

/// Effective settings of one OTLP exporter: its own, then the `[otlp]` defaults, then `OTEL_*`.
/// (No `Debug`: the header values are credentials.)
#[derive(Clone)]
pub(crate) struct OtlpSettings {
    pub protocol: OtlpProtocol,
    pub endpoint: String,
    pub headers: HashMap<String, String>,
    pub timeout: Duration,
}

impl OtlpSettings {
    pub(crate) fn resolve(
        spec: &OtlpExporterSpec,
        defaults: &OtlpExporterSpec,
        signal: Signal,
        env: &dyn EnvSource,
    ) -> Self {
        let protocol = spec
            .protocol
            .unwrap_or_else(|| otlp_protocol(env, defaults.protocol, signal));
        let endpoint = spec
            .endpoint
            .clone()
            .or_else(|| defaults.endpoint.clone())
            .unwrap_or_else(|| otlp_endpoint(env, protocol, signal));
        let mut headers: HashMap<String, String> = HashMap::new();
        for (k, v) in defaults.headers.iter().chain(&spec.headers) {
            headers.insert(k.clone(), v.expose().to_string());
        }
        let timeout =
            Duration::from_millis(spec.timeout_ms.or(defaults.timeout_ms).unwrap_or(10_000));
        Self {
            protocol,
            endpoint,
            headers,
            timeout,
        }
    }
}

/// `headers` checked as HTTP headers (an error names the header, never its value).
fn header_map(headers: &HashMap<String, String>) -> Result<http::HeaderMap, String> {
    let mut map = http::HeaderMap::new();
    for (k, v) in headers {
        let key = http::HeaderName::from_bytes(k.to_ascii_lowercase().as_bytes())
            .map_err(|e| format!("header name `{k}`: {e}"))?;
        let value =
            http::HeaderValue::from_str(v).map_err(|e| format!("header `{k}` value: {e}"))?;
        map.insert(key, value);
    }
    Ok(map)
}

fn metadata(headers: &HashMap<String, String>) -> Result<tonic_metadata::MetadataMap, String> {
    header_map(headers).map(tonic_metadata::MetadataMap::from_headers)
}

/// How the OTLP exporters retry: what opentelemetry-otlp classifies as retryable (gRPC
/// `UNAVAILABLE`, `RESOURCE_EXHAUSTED` with retry info, …; HTTP 429/502/503/504, connection
/// refused or reset), with exponential backoff from 100 ms to 5 s and up to 100 ms of jitter,
/// honouring the server's `Retry-After`/`RetryInfo`, until the exporter's timeout (`timeout_ms`,
/// 10 s by default) runs out — as the Python SDK's exporters retry until theirs. The crate's
/// own default stops after three retries (~0.7 s), too soon for a collector restart.
fn retry_policy() -> opentelemetry_otlp::RetryPolicy {
    opentelemetry_otlp::RetryPolicy::recommended()
        .with_max_retries(usize::from(u16::MAX))
        .with_initial_delay(attempts::FIRST_DELAY)
        .with_max_delay(attempts::MAX_DELAY)
}

/// Builds an opentelemetry-otlp exporter (`SpanExporter`, `MetricExporter`, `LogExporter`: same builder
/// shape, different types) for `settings`; gRPC ones are built inside their runtime.
macro_rules! build_otlp {
    ($exporter:path, $name:expr, $settings:expr, $runtime:expr, $attempts:expr) => {{
        let attempts: &Attempts = $attempts;
        let s: &OtlpSettings = $settings;
        let err = |e: crate::error::BoxError| {
            LensError::exporter(
                $name,
                format!(
                    "{} ({})",
                    crate::config::secret::redact_url(&s.endpoint),
                    protocol_name(s.protocol)
                ),
                e,
            )
        };
        match s.protocol {
            OtlpProtocol::Grpc => {
                let rt = $runtime()?;
                let _guard = rt.enter();
                let inner = <$exporter>::builder()
                    .with_tonic()
                    .with_endpoint(&s.endpoint)
                    .with_timeout(s.timeout)
                    .with_metadata(metadata(&s.headers).map_err(|e| err(e.into()))?)
                    .with_interceptor(attempts.interceptor())
                    .with_retry_policy(retry_policy())
                    .build()
                    .map_err(|e| err(e.into()))?;
                (inner, Some(rt.clone()))
            }
            OtlpProtocol::HttpProtobuf => {
                let inner = <$exporter>::builder()
                    .with_http()
                    .with_protocol(Protocol::HttpBinary)
                    .with_endpoint(&s.endpoint)
                    .with_timeout(s.timeout)
                    .with_headers(s.headers.clone())
                    .with_http_client(
                        CountingClient::new(s.timeout, attempts.clone())
                            .map_err(|e| err(e.into()))?,
                    )
                    .with_retry_policy(retry_policy())
                    .build()
                    .map_err(|e| err(e.into()))?;
                (inner, None)
            }
        }
    }};
}

/// Runs an export to completion: on the exporter's runtime when it has one (gRPC), else on the
/// caller's executor.
async fn drive<F: std::future::Future>(
    runtime: &Option<Arc<tokio::runtime::Runtime>>,
    export: F,
) -> F::Output {
    match runtime {
        Some(rt) => rt.block_on(export),
        None => export.await,
    }
}

/// An OTLP exporter type of one signal: opentelemetry-otlp's exporter, the runtime it is
/// driven on (gRPC), the count of its requests and the statistics its retries go to. The trait
/// implementations, which differ per signal, follow each.
macro_rules! otlp_exporter {
    ($(#[$doc:meta])* $name:ident, $inner:path) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name {
            inner: $inner,
            runtime: Option<Arc<tokio::runtime::Runtime>>,
            attempts: Attempts,
            stats: Option<Arc<ExporterStats>>,
            /// The export's timeout (`timeout_ms`), within which a lost connection is retried.
            timeout: Duration,
        }

        impl $name {
            pub(crate) fn build(
                name: &str,
                s: &OtlpSettings,
                runtime: &dyn Fn() -> Result<Arc<tokio::runtime::Runtime>, LensError>,
            ) -> Result<Self, LensError> {
                let attempts = Attempts::default();
                let (inner, runtime) = build_otlp!($inner, name, s, runtime, &attempts);
                Ok(Self {
                    inner,
                    runtime,
                    attempts,
                    stats: None,
                    timeout: s.timeout,
                })
            }

            /// Until when a gRPC export that lost its connection is made again (none over
            /// HTTP, whose client sees a lost connection as a retryable error already).
            fn retry_until(&self) -> Option<std::time::Instant> {
                self.runtime
                    .as_ref()
                    .map(|_| std::time::Instant::now() + self.timeout)
            }

            /// Counts its retries into `stats` (the processor's or reader's statistics).
            pub(crate) fn with_stats(mut self, stats: Arc<ExporterStats>) -> Self {
                self.stats = Some(stats);
                self
            }
        }
    };
}

otlp_exporter!(
    /// An OTLP span exporter, driven on its own runtime when it speaks gRPC.
    OtlpSpanExporter,
    opentelemetry_otlp::SpanExporter
);

fn protocol_name(p: OtlpProtocol) -> &'static str {
    match p {
        OtlpProtocol::Grpc => "grpc",
        OtlpProtocol::HttpProtobuf => "http/protobuf",
    }
}

impl SpanExporter for OtlpSpanExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        if self.runtime.is_none() {
            return (self.attempts)
                .export(self.stats.as_deref(), self.inner.export(batch))
                .await;
        }
        // A copy per attempt: a lost connection is made again with the same spans.
        let attempt = || drive(&self.runtime, self.inner.export(batch.clone()));
        (self.attempts)
            .export_retrying(self.stats.as_deref(), self.retry_until(), attempt)
            .await
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

otlp_exporter!(
    /// An OTLP metric exporter, driven on its own runtime when it speaks gRPC.
    OtlpMetricExporter,
    opentelemetry_otlp::MetricExporter
);

impl PushMetricExporter for OtlpMetricExporter {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let attempt = || drive(&self.runtime, self.inner.export(metrics));
        (self.attempts)
            .export_retrying(self.stats.as_deref(), self.retry_until(), attempt)
            .await
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}

otlp_exporter!(
    /// An OTLP log exporter, driven on its own runtime when it speaks gRPC.
    OtlpLogExporter,
    opentelemetry_otlp::LogExporter
);

impl LogExporter for OtlpLogExporter {
    async fn export(&self, batch: LogBatch<'_>) -> OTelSdkResult {
        // The records, lent to each attempt's batch.
        let records: Vec<_> = batch.iter().collect();
        let attempt = || drive(&self.runtime, self.inner.export(LogBatch::new(&records)));
        (self.attempts)
            .export_retrying(self.stats.as_deref(), self.retry_until(), attempt)
            .await
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
