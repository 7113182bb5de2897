//! How many requests an OTLP export took: opentelemetry-otlp retries inside its `export`
//! (`RetryPolicy`) and says nothing of it, so Lens counts the requests themselves — a tonic
//! interceptor sees every gRPC call, a wrapper of the HTTP client every POST — and turns the
//! count into the exporter's `retries` and "export failed after N attempts".

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};

use crate::batch::ExporterStats;

/// Requests sent by one exporter, every retry included.
#[derive(Debug, Clone, Default)]
pub(crate) struct Attempts(Arc<AtomicU64>);

impl Attempts {
    pub(crate) fn sent(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// The gRPC interceptor counting each call (it changes nothing in the request).
    pub(crate) fn interceptor(
        &self,
    ) -> impl FnMut(tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status>
    + Clone
    + Send
    + Sync
    + 'static {
        let attempts = self.clone();
        move |request| {
            attempts.sent();
            Ok(request)
        }
    }

    /// Runs one export, then records its retries into `stats` (when the exporter has them):
    /// requests beyond the first are retries; an export failing after retries says how many
    /// attempts it made. Exports on one exporter run one at a time (a batch processor's worker,
    /// a periodic reader), so the count between start and end is this export's.
    pub(crate) async fn export(
        &self,
        stats: Option<&ExporterStats>,
        export: impl std::future::Future<Output = OTelSdkResult>,
    ) -> OTelSdkResult {
        let before = self.count();
        let result = export.await;
        let attempts = self.count().saturating_sub(before).max(1);
        if let Some(stats) = stats {
            stats.record_retries(attempts - 1);
        }
        match result {
            Err(e) if attempts > 1 => {
                if let Some(stats) = stats {
                    stats.record_retries_exhausted();
                }
                Err(OTelSdkError::InternalFailure(format!(
                    "export failed after {attempts} attempts: {e}"
                )))
            }
            other => other,
        }
    }
}

/// The blocking reqwest client opentelemetry-otlp would build, counting each request.
#[derive(Debug)]
pub(crate) struct CountingClient {
    inner: reqwest::blocking::Client,
    attempts: Attempts,
}

impl CountingClient {
    /// A client with the exporter's `timeout`, built off any async runtime (reqwest's
    /// blocking client refuses to be built inside one).
    pub(crate) fn new(timeout: std::time::Duration, attempts: Attempts) -> Result<Self, String> {
        crate::tls::ensure_provider();
        let inner = std::thread::spawn(move || {
            reqwest::blocking::Client::builder()
                .timeout(timeout)
                .build()
        })
        .join()
        .map_err(|_| "the thread building the HTTP client panicked".to_string())?
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Self { inner, attempts })
    }
}

#[async_trait]
impl HttpClient for CountingClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        self.attempts.sent();
        self.inner.send_bytes(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An export that sends `requests` requests and ends with `result`.
    async fn sending(attempts: &Attempts, requests: u64, result: OTelSdkResult) -> OTelSdkResult {
        for _ in 0..requests {
            attempts.sent();
        }
        result
    }

    #[test]
    fn requests_beyond_the_first_are_retries_and_a_failure_says_how_many() {
        let attempts = Attempts::default();
        let stats = ExporterStats::new("otlp");
        let run = |n, result| {
            futures_executor::block_on(attempts.export(Some(&stats), sending(&attempts, n, result)))
        };
        assert!(run(1, Ok(())).is_ok());
        assert!(run(3, Ok(())).is_ok());
        let refused = || Err(OTelSdkError::InternalFailure("HTTP 400".into()));
        assert_eq!(
            run(1, refused()).unwrap_err().to_string(),
            "Operation failed: HTTP 400"
        );
        assert_eq!(
            run(4, Err(OTelSdkError::InternalFailure("HTTP 503".into())))
                .unwrap_err()
                .to_string(),
            "Operation failed: export failed after 4 attempts: Operation failed: HTTP 503"
        );
        // No request at all (refused before sending) counts as one attempt.
        assert!(run(0, Ok(())).is_ok());
        let s = stats.snapshot();
        assert_eq!((s.retries, s.retries_exhausted), (2 + 3, 1));
    }
}
