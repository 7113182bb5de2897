//! A vendor integration as a sandboxed exporter of every signal: asks for the OTLP protobuf
//! encoding and POSTs each batch (spans, a metric collection, log records), unchanged, to an
//! OTLP/HTTP endpoint with the SDK's HTTP client (`lens_exporter_sdk::http`, over `wasi:http`).
//!
//! Settings:
//! - `endpoint` (required): e.g. `https://ingest.example.com/v1/traces`; without a path, the
//!   signal's OTLP path (`/v1/traces`, `/v1/metrics`, `/v1/logs`). The config must list its
//!   host in `allowed_hosts`, or every request is denied.
//! - `temporality` (metrics): `cumulative` (default), `delta` or `low-memory`.
//! - `timeout_ms` (default 10000): the connection's and each response wait's bound.
//!
//! The vendor's key is not a setting: the platform team gives it to the host as a credential
//! (`credentials = [{ host = "ingest.example.com:443", header = "x-api-key", from_env =
//! "VENDOR_API_KEY" }]`), and the host adds the header to these requests; the guest never sees
//! it.
//!
//! Retries are the host's, as OTLP exporters do: HTTP 429, 502, 503 and 504 (with their
//! `Retry-After` in seconds) and connection failures are answered `retryable`, other statuses
//! `rejected` (naming the status and the start of the body); the host sends the batch again
//! within the export deadline.

use std::time::Duration;

use lens_exporter_sdk::metrics::Temporality;
use lens_exporter_sdk::{
    Config, Encoding, ExportResult, LogBatch, LogExporter, MetricBatch, MetricExporter, SpanBatch,
    SpanExporter, http,
};

lens_exporter_sdk::export!(spans: VendorHttp, metrics: VendorHttp, logs: VendorHttp);

struct VendorHttp {
    /// The whole URL posted to.
    url: String,
    timeout: Duration,
    temporality: Temporality,
}

impl VendorHttp {
    /// The exporter of one signal, whose OTLP path is `default_path`.
    fn from(config: &Config, default_path: &str) -> Result<Self, String> {
        let endpoint = config
            .setting("endpoint")
            .ok_or("setting `endpoint` is required")?;
        let url = http::parse_url(endpoint, default_path).map_err(|e| e.to_string())?;
        let scheme = if url.https { "https" } else { "http" };
        let timeout_ms = match config.setting("timeout_ms") {
            Some(v) => v
                .parse()
                .map_err(|_| format!("setting `timeout_ms` = {v:?} is not a number"))?,
            None => 10_000,
        };
        Ok(VendorHttp {
            url: format!("{scheme}://{}{}", url.authority, url.path),
            timeout: Duration::from_millis(timeout_ms),
            temporality: config.temporality()?,
        })
    }

    /// POSTs one request body and reads the answer as OTLP exporters do.
    fn send(&self, body: Option<&[u8]>) -> ExportResult {
        let body = body.ok_or("this exporter asked for OTLP protobuf batches")?;
        let headers: [(&str, &[u8]); 1] = [("content-type", b"application/x-protobuf")];
        http::export_result(
            &self.url,
            http::post(&self.url, body, &headers, Some(self.timeout)),
        )
    }
}

// The batch's bytes are the request body, for every signal.

impl SpanExporter for VendorHttp {
    fn new(config: Config) -> Result<Self, String> {
        Self::from(&config, "/v1/traces")
    }

    fn encoding(&self) -> Encoding {
        Encoding::OtlpProtobuf
    }

    fn export(&mut self, batch: SpanBatch<'_>) -> ExportResult {
        self.send(batch.otlp_protobuf())
    }
}

impl MetricExporter for VendorHttp {
    fn new(config: Config) -> Result<Self, String> {
        Self::from(&config, "/v1/metrics")
    }

    fn encoding(&self) -> Encoding {
        Encoding::OtlpProtobuf
    }

    fn temporality(&self) -> Temporality {
        self.temporality
    }

    fn export(&mut self, batch: MetricBatch<'_>) -> ExportResult {
        self.send(match batch {
            MetricBatch::OtlpProtobuf(bytes) => Some(bytes),
            MetricBatch::Scopes(_) => None,
        })
    }
}

impl LogExporter for VendorHttp {
    fn new(config: Config) -> Result<Self, String> {
        Self::from(&config, "/v1/logs")
    }

    fn encoding(&self) -> Encoding {
        Encoding::OtlpProtobuf
    }

    fn export(&mut self, batch: LogBatch<'_>) -> ExportResult {
        self.send(match batch {
            LogBatch::OtlpProtobuf(bytes) => Some(bytes),
            LogBatch::Scopes(_) => None,
        })
    }
}
