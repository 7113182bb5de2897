//! {{name}}: a vendor integration for Lens ({{signals}}).
//!
//! Each batch arrives as OTLP protobuf and is POSTed, unchanged, to the vendor's OTLP/HTTP
//! ingest with the SDK's HTTP client.
//!
//! Settings (`settings = { … }` in the config, `--setting` with `lens check`):
//! - `endpoint` (required): `https://ingest.example.com` (each signal's OTLP path is added:
//!   `/v1/traces`, `/v1/metrics`, `/v1/logs`), or a URL with its own path;
//! - `timeout_ms` (default 10000): the connection's and each response wait's bound.
//!
//! The vendor's key is not read here: the platform team gives it to the host as a credential
//! (`credentials` in `lens.toml`), and the host adds the header to the requests to that host.
//! This component never holds it. Retries are the host's: `http::export_result` answers 429,
//! 502, 503, 504 and connection failures `retryable`, any other failure `rejected`.

use std::time::Duration;

use lens_exporter_sdk::{Config, Encoding, ExportResult, http};

/// One signal's exporter: where it posts, and how long it waits.
struct Vendor {
    url: String,
    timeout: Duration,
}

impl Vendor {
    /// The exporter of the signal whose OTLP path is `default_path`.
    fn new(config: &Config, default_path: &str) -> Result<Self, String> {
        let endpoint = config
            .setting("endpoint")
            .ok_or("setting `endpoint` is required, e.g. https://ingest.example.com")?;
        let url = http::parse_url(endpoint, default_path).map_err(|e| e.to_string())?;
        let scheme = if url.https { "https" } else { "http" };
        let timeout_ms = match config.setting("timeout_ms") {
            Some(v) => v
                .parse()
                .map_err(|_| format!("setting `timeout_ms` = {v:?} is not a number"))?,
            None => 10_000,
        };
        Ok(Vendor {
            url: format!("{scheme}://{}{}", url.authority, url.path),
            timeout: Duration::from_millis(timeout_ms),
        })
    }

    /// POSTs one batch's OTLP protobuf bytes and reads the answer as OTLP exporters do.
    fn post(&self, body: Option<&[u8]>) -> ExportResult {
        let body = body.ok_or("this exporter asked for OTLP protobuf batches")?;
        let headers: [(&str, &[u8]); 1] = [("content-type", b"application/x-protobuf")];
        http::export_result(
            &self.url,
            http::post(&self.url, body, &headers, Some(self.timeout)),
        )
    }
}
