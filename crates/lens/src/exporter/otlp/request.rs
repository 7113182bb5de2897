//! Sending a metrics request Lens built itself: a collection edited by the processors of
//! `[[metrics.processors]]`. The SDK's collections cannot be edited, so opentelemetry-otlp's
//! exporter (which takes only those) cannot send the result; this sends the edited
//! `ExportMetricsServiceRequest` with the exporter's own settings: the same endpoint, headers,
//! timeout and protocol — gRPC through opentelemetry-proto's tonic client on the shared
//! runtime, HTTP/protobuf through the same blocking reqwest client — and the same retries:
//! what opentelemetry-otlp classifies as retryable, backed off by [`RetrySchedule`] (100 ms
//! doubling to 5 s, jittered) and honouring `Retry-After` / `RetryInfo` up to 600 s, every
//! attempt starting within the exporter's timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry_http::{Bytes, HttpClient};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_client::MetricsServiceClient;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use prost::Message;
use tonic::transport::Channel;

use super::attempts::{Attempts, CountingClient};
use super::{OtlpSettings, header_map, metadata, protocol_name};
use crate::batch::ExporterStats;
use crate::batch::retry::RetrySchedule;
use crate::config::OtlpProtocol;
use crate::error::LensError;

/// The longest server-asked wait honoured (opentelemetry-otlp's bound).
const MAX_SERVER_DELAY: Duration = Duration::from_secs(600);

/// How one attempt ended.
enum Attempt {
    Sent,
    /// Worth another attempt, after at least the server's delay when it gave one.
    Retry(String, Option<Duration>),
    Failed(String),
}

enum Transport {
    Grpc {
        client: MetricsServiceClient<Channel>,
        metadata: tonic::metadata::MetadataMap,
        runtime: Arc<tokio::runtime::Runtime>,
    },
    Http {
        client: CountingClient,
        endpoint: http::Uri,
        headers: http::HeaderMap,
    },
}

/// Sends `ExportMetricsServiceRequest`s to one OTLP exporter's endpoint (see the module).
pub(crate) struct OtlpRequestSender {
    transport: Transport,
    timeout: Duration,
    attempts: Attempts,
    stats: Arc<ExporterStats>,
}

impl std::fmt::Debug for OtlpRequestSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpRequestSender")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl OtlpRequestSender {
    /// A sender for the exporter `name` with `s`, counting its retries into `stats`; errors
    /// name the exporter and its endpoint.
    pub(crate) fn build(
        name: &str,
        s: &OtlpSettings,
        runtime: &dyn Fn() -> Result<Arc<tokio::runtime::Runtime>, LensError>,
        stats: Arc<ExporterStats>,
    ) -> Result<Self, LensError> {
        let err = |e: String| {
            LensError::exporter(
                name,
                format!(
                    "{} ({})",
                    crate::config::secret::redact_url(&s.endpoint),
                    protocol_name(s.protocol)
                ),
                e,
            )
        };
        let attempts = Attempts::default();
        let transport = match s.protocol {
            OtlpProtocol::Grpc => {
                let runtime = runtime()?;
                let _guard = runtime.enter();
                let channel = tonic::transport::Endpoint::from_shared(s.endpoint.clone())
                    .map_err(|e| err(format!("invalid endpoint: {e}")))?
                    .timeout(s.timeout)
                    .connect_lazy();
                Transport::Grpc {
                    client: MetricsServiceClient::new(channel),
                    metadata: metadata(&s.headers).map_err(err)?,
                    runtime,
                }
            }
            OtlpProtocol::HttpProtobuf => Transport::Http {
                client: CountingClient::new(s.timeout, attempts.clone()).map_err(err)?,
                endpoint: s
                    .endpoint
                    .parse()
                    .map_err(|e| err(format!("invalid endpoint: {e}")))?,
                headers: header_map(&s.headers).map_err(err)?,
            },
        };
        Ok(Self {
            transport,
            timeout: s.timeout,
            attempts,
            stats,
        })
    }

    /// Sends `request` until it is accepted, refused for good, or no retry can start within
    /// the timeout (retries counted as the exporter's).
    /// Sleeps between attempts: it runs on the periodic reader's own thread.
    pub(crate) async fn send(&self, request: &ExportMetricsServiceRequest) -> OTelSdkResult {
        let export = async {
            let body = Bytes::from(request.encode_to_vec());
            let mut schedule = RetrySchedule::new(Instant::now(), self.timeout);
            loop {
                let (why, hint) = match self.attempt(request, &body).await {
                    Attempt::Sent => return Ok(()),
                    Attempt::Failed(why) => return Err(OTelSdkError::InternalFailure(why)),
                    Attempt::Retry(why, hint) => (why, hint),
                };
                let hint = hint.map(|h| h.min(MAX_SERVER_DELAY));
                match schedule.next(Instant::now(), hint, rand::random()) {
                    Some(wait) => std::thread::sleep(wait),
                    None => return Err(OTelSdkError::InternalFailure(why)),
                }
            }
        };
        self.attempts.export(Some(&self.stats), export).await
    }

    async fn attempt(&self, request: &ExportMetricsServiceRequest, body: &Bytes) -> Attempt {
        match &self.transport {
            Transport::Grpc {
                client,
                metadata,
                runtime,
            } => {
                self.attempts.sent();
                let mut call = tonic::Request::new(request.clone());
                *call.metadata_mut() = metadata.clone();
                call.set_timeout(self.timeout);
                let mut client = client.clone();
                match runtime.block_on(client.export(call)) {
                    Ok(_) => Attempt::Sent,
                    Err(status) => grpc_failure(&status),
                }
            }
            Transport::Http {
                client,
                endpoint,
                headers,
            } => {
                let mut call = http::Request::new(body.clone());
                *call.method_mut() = http::Method::POST;
                *call.uri_mut() = endpoint.clone();
                *call.headers_mut() = headers.clone();
                call.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    http::HeaderValue::from_static("application/x-protobuf"),
                );
                match client.send_bytes(call).await {
                    Err(_) => Attempt::Retry("HTTP export failed: network error".into(), None),
                    Ok(response) => http_outcome(
                        response.status().as_u16(),
                        response
                            .headers()
                            .get(http::header::RETRY_AFTER)
                            .and_then(|v| v.to_str().ok()),
                    ),
                }
            }
        }
    }
}

/// An HTTP answer as opentelemetry-otlp classifies it.
fn http_outcome(status: u16, retry_after: Option<&str>) -> Attempt {
    if (200..300).contains(&status) {
        return Attempt::Sent;
    }
    let why = format!("HTTP export failed with status code: {status}");
    match status {
        429 | 503 => Attempt::Retry(
            why,
            retry_after
                .and_then(|s| s.trim().parse::<u64>().ok())
                .map(Duration::from_secs),
        ),
        502 | 504 => Attempt::Retry(why, None),
        _ => Attempt::Failed(why),
    }
}

/// A gRPC status as opentelemetry-otlp classifies it, the server's `RetryInfo` read from its
/// details: `RESOURCE_EXHAUSTED` is retried only with one (after its delay), `UNAVAILABLE`
/// after its delay when it gives one, the other retryable codes on the host's schedule.
fn grpc_failure(status: &tonic::Status) -> Attempt {
    use tonic::Code;
    use tonic_types::StatusExt as _;
    let why = format!(
        "gRPC export failed: {}: {}",
        status.code(),
        status.message()
    );
    let asked = status
        .get_details_retry_info()
        .and_then(|info| info.retry_delay)
        .map(|d| d.min(MAX_SERVER_DELAY));
    match status.code() {
        Code::ResourceExhausted => match asked {
            Some(delay) => Attempt::Retry(why, Some(delay)),
            None => Attempt::Failed(why),
        },
        Code::Unavailable => Attempt::Retry(why, asked.filter(|d| !d.is_zero())),
        Code::Cancelled
        | Code::DeadlineExceeded
        | Code::Aborted
        | Code::OutOfRange
        | Code::DataLoss => Attempt::Retry(why, None),
        _ => Attempt::Failed(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retried(a: Attempt) -> Option<Option<Duration>> {
        match a {
            Attempt::Retry(_, hint) => Some(hint),
            _ => None,
        }
    }

    #[test]
    fn http_answers_are_classified_as_opentelemetry_otlp_does() {
        assert!(matches!(http_outcome(200, None), Attempt::Sent));
        assert!(matches!(http_outcome(400, None), Attempt::Failed(_)));
        assert_eq!(retried(http_outcome(502, None)), Some(None));
        assert_eq!(
            retried(http_outcome(429, Some(" 7 "))),
            Some(Some(Duration::from_secs(7)))
        );
        assert_eq!(retried(http_outcome(503, Some("soon"))), Some(None));
    }

    #[test]
    fn grpc_codes_are_classified_as_opentelemetry_otlp_does() {
        assert!(retried(grpc_failure(&tonic::Status::unavailable("down"))).is_some());
        assert!(retried(grpc_failure(&tonic::Status::invalid_argument("bad"))).is_none());
        assert!(retried(grpc_failure(&tonic::Status::resource_exhausted("full"))).is_none());
    }

    #[test]
    fn a_grpc_retry_info_is_honoured_as_opentelemetry_otlp_honours_it() {
        use tonic_types::{ErrorDetails, StatusExt as _};
        let with_delay = |code, secs| {
            tonic::Status::with_error_details(
                code,
                "slow down",
                ErrorDetails::with_retry_info(Some(Duration::from_secs(secs))),
            )
        };
        // Resource exhausted: retried only when the server says when.
        assert_eq!(
            retried(grpc_failure(&with_delay(tonic::Code::ResourceExhausted, 7))),
            Some(Some(Duration::from_secs(7)))
        );
        assert_eq!(
            retried(grpc_failure(&with_delay(tonic::Code::Unavailable, 3))),
            Some(Some(Duration::from_secs(3)))
        );
        // Capped at opentelemetry-otlp's 600 s; a zero delay is the host's schedule.
        assert_eq!(
            retried(grpc_failure(&with_delay(tonic::Code::Unavailable, 86_400))),
            Some(Some(MAX_SERVER_DELAY))
        );
        assert_eq!(
            retried(grpc_failure(&with_delay(tonic::Code::Unavailable, 0))),
            Some(None)
        );
        // A code that is not retryable stays so, whatever the details say.
        assert!(retried(grpc_failure(&with_delay(tonic::Code::InvalidArgument, 1))).is_none());
    }
}
