//! How many requests an OTLP export took: opentelemetry-otlp retries inside its `export`
//! (`RetryPolicy`) and says nothing of it, so Lens counts the requests themselves — a tonic
//! interceptor sees every gRPC call, a wrapper of the HTTP client every POST — and turns the
//! count into the exporter's `retries` and "export failed after N attempts".

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

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
        let mut export = Some(export);
        // Without a deadline there is no second attempt.
        self.export_retrying(stats, None, || export.take().expect("one attempt"))
            .await
    }

    /// As [`Attempts::export`], the export made again by `attempt` while it fails with a
    /// connection lost below gRPC ([`lost_connection`]) and `retry_until` (the exporter's
    /// timeout from the start) leaves time, after the crate's backoff.
    pub(crate) async fn export_retrying<F: std::future::Future<Output = OTelSdkResult>>(
        &self,
        stats: Option<&ExporterStats>,
        retry_until: Option<Instant>,
        mut attempt: impl FnMut() -> F,
    ) -> OTelSdkResult {
        let before = self.count();
        let mut delay = FIRST_DELAY;
        let result = loop {
            let result = attempt().await;
            match (&result, retry_until) {
                (Err(e), Some(until)) if lost_connection(e) && Instant::now() + delay < until => {
                    // The export runs blocking on its exporter's worker (`drive`).
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(MAX_DELAY);
                }
                _ => break result,
            }
        };
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

/// The retry policy's first delay and its cap (`super::retry_policy`).
pub(crate) const FIRST_DELAY: Duration = Duration::from_millis(100);
pub(crate) const MAX_DELAY: Duration = Duration::from_secs(5);

/// A gRPC export that failed below gRPC, with no answer from the server: the connection lost
/// in the middle of a call (a collector killed or restarted). tonic reports it as `UNKNOWN` or
/// `INTERNAL` with the transport error as its source, which opentelemetry-otlp does not retry;
/// gRPC's other clients (the Python SDK's among them) see `UNAVAILABLE` and retry. A status the
/// server sent has no source, so its message ends at the code and is not retried.
pub(crate) fn lost_connection(e: &OTelSdkError) -> bool {
    let OTelSdkError::InternalFailure(message) = e else {
        return false;
    };
    ["gRPC code: Unknown: ", "gRPC code: Internal: "]
        .iter()
        .any(|code| message.contains(code))
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

    fn failure(message: &str) -> OTelSdkResult {
        Err(OTelSdkError::InternalFailure(message.into()))
    }

    #[test]
    fn a_connection_lost_mid_call_is_exported_again_and_a_server_s_status_is_not() {
        let attempts = Attempts::default();
        let stats = ExporterStats::new("otlp");
        let lost = "TonicTracesClient export failed with gRPC code: Unknown: transport error: \
                    connection closed before message completed";
        let mut answers = vec![Ok(()), failure(lost), failure(lost)];
        let until = Some(Instant::now() + Duration::from_secs(10));
        let result =
            futures_executor::block_on(attempts.export_retrying(Some(&stats), until, || {
                sending(&attempts, 1, answers.pop().unwrap())
            }));
        assert!(result.is_ok() && answers.is_empty());
        assert_eq!(stats.snapshot().retries, 2);
        // The server's own UNKNOWN (no source) and a refusal are final.
        let answered = "TonicTracesClient export failed with gRPC code: Unknown";
        let refused = "TonicTracesClient export failed with gRPC code: InvalidArgument";
        for message in [answered, refused] {
            let mut calls = 0;
            let result = futures_executor::block_on(attempts.export_retrying(None, until, || {
                calls += 1;
                sending(&attempts, 1, failure(message))
            }));
            assert!(result.is_err() && calls == 1, "{message}");
        }
        // Out of time: the last failure stands.
        let mut calls = 0;
        let past = Some(Instant::now());
        let result = futures_executor::block_on(attempts.export_retrying(None, past, || {
            calls += 1;
            sending(&attempts, 1, failure(lost))
        }));
        assert!(result.is_err() && calls == 1);
    }
}
