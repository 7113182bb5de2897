//! A vendor integration as a sandboxed exporter of every signal: asks for the OTLP protobuf
//! encoding and POSTs each batch (spans, a metric collection, log records), unchanged, to an
//! OTLP/HTTP endpoint with `wasi:http`.
//!
//! Settings:
//! - `endpoint` (required): e.g. `https://ingest.example.com/v1/traces`; without a path, the
//!   signal's OTLP path (`/v1/traces`, `/v1/metrics`, `/v1/logs`). The config must list its
//!   host in `allowed_hosts`, or every request is denied.
//! - `temporality` (metrics): `cumulative` (default), `delta` or `low-memory`.
//! - `api_key_env` (default `VENDOR_API_KEY`): environment variable holding the API key, sent
//!   as `api_key_header` (default `x-api-key`). Grant it with
//!   `env = { VENDOR_API_KEY = { from_host = "VENDOR_API_KEY" } }`; without it no key is sent.
//!
//! Retries are the host's: HTTP 429 and 5xx (with their `Retry-After` in seconds) and
//! connection failures are answered `retryable`, other 4xx `rejected`; the host sends the batch
//! again within the export deadline.

use std::time::Duration;

use lens_exporter_sdk::metrics::Temporality;
use lens_exporter_sdk::{
    Config, Encoding, ExportError, ExportResult, LogBatch, LogExporter, MetricBatch,
    MetricExporter, SpanBatch, SpanExporter,
};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, Method, OutgoingBody, OutgoingRequest, Scheme};

lens_exporter_sdk::export!(spans: VendorHttp, metrics: VendorHttp, logs: VendorHttp);

struct Target {
    scheme: Scheme,
    authority: String,
    path: String,
    header: String,
    key: Option<String>,
}

fn parse_endpoint(url: &str, default_path: &str) -> Result<(Scheme, String, String), String> {
    let (scheme, rest) = if let Some(r) = url.strip_prefix("https://") {
        (Scheme::Https, r)
    } else if let Some(r) = url.strip_prefix("http://") {
        (Scheme::Http, r)
    } else {
        return Err(format!(
            "endpoint `{url}` must start with http:// or https://"
        ));
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, default_path),
    };
    if authority.is_empty() {
        return Err(format!("endpoint `{url}` has no host"));
    }
    Ok((scheme, authority.to_string(), path.to_string()))
}

/// One POST; `Ok((status, Retry-After in ms))` once a response arrived.
fn post(t: &Target, body: &[u8]) -> Result<(u16, Option<u64>), String> {
    let mut headers = vec![(
        "content-type".to_string(),
        b"application/x-protobuf".to_vec(),
    )];
    if let Some(key) = &t.key {
        headers.push((t.header.clone(), key.as_bytes().to_vec()));
    }
    let fields = Fields::from_list(&headers).map_err(|e| format!("headers: {e:?}"))?;
    let request = OutgoingRequest::new(fields);
    request.set_method(&Method::Post).map_err(|()| "method")?;
    request.set_scheme(Some(&t.scheme)).map_err(|()| "scheme")?;
    request
        .set_authority(Some(&t.authority))
        .map_err(|()| "authority")?;
    request
        .set_path_with_query(Some(&t.path))
        .map_err(|()| "path")?;
    let outgoing = request.body().map_err(|()| "body")?;
    let response = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
    // If the request already failed (denied, refused), the body stream is closed: the
    // response future then holds the reason, which beats "stream closed".
    let written = (|| -> Result<(), String> {
        let stream = outgoing.write().map_err(|()| "body stream")?;
        for chunk in body.chunks(4096) {
            stream
                .blocking_write_and_flush(chunk)
                .map_err(|e| format!("writing the body: {e:?}"))?;
        }
        Ok(())
    })();
    let finished = OutgoingBody::finish(outgoing, None).map_err(|e| format!("{e:?}"));
    response.subscribe().block();
    match response.get() {
        Some(Ok(Err(code))) => Err(format!("{code:?}")),
        Some(Ok(Ok(r))) => {
            let retry_after = r
                .headers()
                .get("retry-after")
                .first()
                .and_then(|v| std::str::from_utf8(v).ok()?.trim().parse::<u64>().ok())
                .map(|s| s * 1000);
            written.and(finished).map(|()| (r.status(), retry_after))
        }
        other => written
            .and(finished)
            .and(Err(format!("no response: {other:?}"))),
    }
}

struct VendorHttp {
    target: Target,
    temporality: Temporality,
}

impl VendorHttp {
    /// The exporter of one signal, whose OTLP path is `default_path`.
    fn from(config: &Config, default_path: &str) -> Result<Self, String> {
        let endpoint = config
            .setting("endpoint")
            .ok_or("setting `endpoint` is required")?;
        let (scheme, authority, path) = parse_endpoint(endpoint, default_path)?;
        let key_env = config.setting("api_key_env").unwrap_or("VENDOR_API_KEY");
        let temporality = config.temporality()?;
        Ok(VendorHttp {
            target: Target {
                scheme,
                authority,
                path,
                header: config
                    .setting("api_key_header")
                    .unwrap_or("x-api-key")
                    .into(),
                key: std::env::var(key_env).ok(),
            },
            temporality,
        })
    }

    /// POSTs one request body: 2xx is done, 429 and 5xx (and connection failures) retryable,
    /// another 4xx rejected.
    fn send(&self, body: Option<&[u8]>) -> ExportResult {
        let t = &self.target;
        let body = body.ok_or("this exporter asked for OTLP protobuf batches")?;
        let failed =
            |status: &dyn std::fmt::Display| format!("{}{}: {status}", t.authority, t.path);
        match post(t, body) {
            Ok((status, _)) if (200..300).contains(&status) => Ok(()),
            // What a retry can fix: throttling and server errors. Another 4xx will not change.
            Ok((status, after)) if status == 429 || status >= 500 => {
                let message = failed(&format!("HTTP {status}"));
                Err(match after {
                    Some(ms) => ExportError::retry_after(message, Duration::from_millis(ms)),
                    None => ExportError::retryable(message),
                })
            }
            Ok((status, _)) => Err(ExportError::rejected(failed(&format!("HTTP {status}")))),
            Err(e) if e.contains("HttpRequestDenied") => Err(ExportError::rejected(format!(
                "{} is not in allowed_hosts",
                t.authority
            ))),
            Err(e) => Err(ExportError::retryable(failed(&e))),
        }
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
