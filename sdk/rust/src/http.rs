//! HTTP for exporters (feature `http`): one POST over `wasi:http`, and its response mapped to
//! an [`ExportResult`] the way OTLP exporters do.
//!
//! ```no_run
//! # #[cfg(target_arch = "wasm32")]
//! # fn send(body: &[u8]) -> lens_exporter_sdk::ExportResult {
//! use std::time::Duration;
//! use lens_exporter_sdk::http;
//!
//! let sent = http::post(
//!     "https://ingest.example.com/v1/traces",
//!     body,
//!     &[("content-type", b"application/x-protobuf")],
//!     Some(Duration::from_secs(10)),
//! );
//! http::export_result("ingest.example.com", sent)
//! # }
//! ```
//!
//! The host must allow the request's host (`allowed_hosts`), or it fails with
//! [`HttpError::Denied`]. A vendor's key does not belong here: the platform team gives it to
//! the host as a `credentials` entry, and the host adds the header to the requests to that host
//! (the guest never sees it).
//!
//! What [`export_result`] maps: 2xx succeeds; 429, 502, 503 and 504 (with `Retry-After` in
//! seconds) and connection failures and timeouts are retryable (the host retries within the
//! export deadline, on its own backoff); any other status is rejected, naming it and the first
//! bytes of the body; a request the host denied is rejected.

use std::time::Duration;

use crate::export::{ExportError, ExportResult};

/// A response: status, headers (names lower case) and the whole body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status, e.g. `200`.
    pub status: u16,
    /// `(name, value)` pairs, names lower case.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    /// `Retry-After` as a delay, when it is a number of seconds.
    pub fn retry_after(&self) -> Option<Duration> {
        let text = std::str::from_utf8(self.header("retry-after")?).ok()?;
        text.trim().parse::<u64>().ok().map(Duration::from_secs)
    }
}

/// Why a request got no response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// The host refused it: its host is not in `allowed_hosts`, or it resolves to an address
    /// the entry may not reach.
    Denied(String),
    /// The connection failed (refused, reset, DNS, TLS) or timed out.
    Connection(String),
    /// The URL or a header cannot be sent.
    Invalid(String),
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::Denied(why) => write!(f, "denied by the host: {why}"),
            HttpError::Connection(why) => write!(f, "connection failed: {why}"),
            HttpError::Invalid(why) => write!(f, "invalid request: {why}"),
        }
    }
}

/// The parts of an `http://` or `https://` URL a request needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url<'a> {
    /// `true` for https.
    pub https: bool,
    /// `host` or `host:port`.
    pub authority: &'a str,
    /// The path and query, `/` when absent.
    pub path: &'a str,
}

/// `url` split for a request (`default_path` when it has none).
pub fn parse_url<'a>(url: &'a str, default_path: &'a str) -> Result<Url<'a>, HttpError> {
    let (https, rest) = if let Some(r) = url.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = url.strip_prefix("http://") {
        (false, r)
    } else {
        return Err(HttpError::Invalid(format!(
            "`{url}` must start with http:// or https://"
        )));
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, default_path),
    };
    if authority.is_empty() || authority.contains(['@', '?', '#']) {
        return Err(HttpError::Invalid(format!(
            "`{url}` has no host (or has a user, which goes in a header)"
        )));
    }
    Ok(Url {
        https,
        authority,
        path,
    })
}

/// The longest piece of a response body quoted in an error.
pub const QUOTED_BODY: usize = 200;

/// `sent` as OTLP exporters read it; `what` names the destination in messages (e.g. the
/// endpoint).
pub fn export_result(what: &str, sent: Result<Response, HttpError>) -> ExportResult {
    let r = match sent {
        Ok(r) => r,
        Err(HttpError::Connection(why)) => {
            return Err(ExportError::retryable(format!("{what}: {why}")));
        }
        Err(e) => return Err(ExportError::rejected(format!("{what}: {e}"))),
    };
    if (200..300).contains(&r.status) {
        return Ok(());
    }
    let mut message = format!("{what}: HTTP {}", r.status);
    if !r.body.is_empty() {
        let cut = r.body.len().min(QUOTED_BODY);
        let text = String::from_utf8_lossy(&r.body[..cut]);
        message += &format!(": {}", text.trim());
        if r.body.len() > cut {
            message += &format!("… ({} bytes)", r.body.len());
        }
    }
    match r.status {
        429 | 502 | 503 | 504 => Err(match r.retry_after() {
            Some(delay) => ExportError::retry_after(message, delay),
            None => ExportError::retryable(message),
        }),
        _ => Err(ExportError::rejected(message)),
    }
}

/// POSTs `body` to `url` with `headers`, waiting for the whole response; `timeout` bounds the
/// connection and each wait for the response's bytes (the host's call deadline bounds the
/// whole call anyway).
#[cfg(target_arch = "wasm32")]
pub fn post(
    url: &str,
    body: &[u8],
    headers: &[(&str, &[u8])],
    timeout: Option<Duration>,
) -> Result<Response, HttpError> {
    wasi::post(url, body, headers, timeout)
}

#[cfg(target_arch = "wasm32")]
mod wasi {
    use std::time::Duration;

    use wasip2::http::outgoing_handler::{self, RequestOptions};
    use wasip2::http::types::{
        ErrorCode, Fields, IncomingBody, Method, OutgoingBody, OutgoingRequest, Scheme,
    };
    use wasip2::io::streams::StreamError;

    use super::{HttpError, Response, parse_url};

    fn classify(code: ErrorCode) -> HttpError {
        let text = format!("{code:?}");
        match code {
            ErrorCode::HttpRequestDenied => {
                HttpError::Denied(format!("{text}: its host is not in `allowed_hosts`"))
            }
            ErrorCode::DestinationIpProhibited => HttpError::Denied(format!(
                "{text}: it resolves to an address the entry may not reach \
                 (`allow_private_addresses`)"
            )),
            ErrorCode::HttpRequestUriInvalid
            | ErrorCode::HttpRequestMethodInvalid
            | ErrorCode::HttpRequestHeaderSize(_) => HttpError::Invalid(text),
            _ => HttpError::Connection(text),
        }
    }

    pub(super) fn post(
        url: &str,
        body: &[u8],
        headers: &[(&str, &[u8])],
        timeout: Option<Duration>,
    ) -> Result<Response, HttpError> {
        let url = parse_url(url, "/")?;
        let mut list: Vec<(String, Vec<u8>)> = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_vec()))
            .collect();
        // A length, not chunks: every server reads it, and the host checks the body against it.
        if !list
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        {
            list.push(("content-length".into(), body.len().to_string().into_bytes()));
        }
        let fields =
            Fields::from_list(&list).map_err(|e| HttpError::Invalid(format!("headers: {e:?}")))?;
        let request = OutgoingRequest::new(fields);
        let invalid = |what: &str| HttpError::Invalid(what.to_string());
        request
            .set_method(&Method::Post)
            .map_err(|()| invalid("method"))?;
        let scheme = if url.https {
            Scheme::Https
        } else {
            Scheme::Http
        };
        request
            .set_scheme(Some(&scheme))
            .map_err(|()| invalid("scheme"))?;
        request
            .set_authority(Some(url.authority))
            .map_err(|()| invalid("authority"))?;
        request
            .set_path_with_query(Some(url.path))
            .map_err(|()| invalid("path"))?;
        let options = timeout.map(|t| {
            let o = RequestOptions::new();
            let ns = u64::try_from(t.as_nanos()).unwrap_or(u64::MAX);
            let _ = o.set_connect_timeout(Some(ns));
            let _ = o.set_first_byte_timeout(Some(ns));
            let _ = o.set_between_bytes_timeout(Some(ns));
            o
        });
        let outgoing = request.body().map_err(|()| invalid("body"))?;
        let pending = outgoing_handler::handle(request, options).map_err(classify)?;
        // A request the host already failed (denied, refused) closes the body stream: the
        // response then says why, which beats "stream closed".
        let written = (|| -> Result<(), String> {
            let stream = outgoing.write().map_err(|()| "body stream")?;
            for chunk in body.chunks(4096) {
                stream
                    .blocking_write_and_flush(chunk)
                    .map_err(|e| format!("writing the body: {e:?}"))?;
            }
            Ok(())
        })();
        let finished = OutgoingBody::finish(outgoing, None);
        pending.subscribe().block();
        let response = match pending.get() {
            Some(Ok(Ok(r))) => r,
            Some(Ok(Err(code))) => return Err(classify(code)),
            other => return Err(HttpError::Connection(format!("no response: {other:?}"))),
        };
        written.map_err(HttpError::Connection)?;
        finished.map_err(classify)?;
        let status = response.status();
        let headers = response.headers().entries();
        let incoming = response
            .consume()
            .map_err(|()| HttpError::Connection("no body".into()))?;
        let body = read_body(&incoming)?;
        IncomingBody::finish(incoming);
        Ok(Response {
            status,
            headers: headers
                .into_iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), v))
                .collect(),
            body,
        })
    }

    fn read_body(incoming: &IncomingBody) -> Result<Vec<u8>, HttpError> {
        let stream = incoming
            .stream()
            .map_err(|()| HttpError::Connection("no body stream".into()))?;
        let mut body = Vec::new();
        loop {
            match stream.blocking_read(64 * 1024) {
                Ok(chunk) => body.extend(chunk),
                Err(StreamError::Closed) => return Ok(body),
                Err(StreamError::LastOperationFailed(e)) => {
                    return Err(HttpError::Connection(format!(
                        "reading the body: {}",
                        e.to_debug_string()
                    )));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(status: u16, headers: &[(&str, &str)], body: &str) -> Response {
        Response {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
                .collect(),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn a_response_maps_to_an_export_result_as_otlp_does() {
        let map = |r: Response| export_result("acme", Ok(r));
        assert_eq!(map(response(200, &[], "")), Ok(()));
        assert_eq!(map(response(204, &[], "")), Ok(()));
        for status in [429, 502, 503, 504] {
            assert!(matches!(
                map(response(status, &[], "")),
                Err(ExportError::Retryable { delay: None, .. })
            ));
        }
        assert_eq!(
            map(response(429, &[("retry-after", " 7 ")], "slow down")),
            Err(ExportError::retry_after(
                "acme: HTTP 429: slow down",
                Duration::from_secs(7)
            ))
        );
        assert_eq!(
            map(response(401, &[], "{\"error\":\"invalid api key\"}\n")),
            Err(ExportError::rejected(
                "acme: HTTP 401: {\"error\":\"invalid api key\"}"
            ))
        );
        assert!(matches!(
            map(response(500, &[], "")),
            Err(ExportError::Rejected(_))
        ));
        let long = "x".repeat(1000);
        let Err(ExportError::Rejected(m)) = map(response(400, &[], &long)) else {
            panic!()
        };
        assert!(
            m.ends_with(&format!("{}… (1000 bytes)", "x".repeat(QUOTED_BODY))),
            "{m}"
        );
    }

    #[test]
    fn failures_without_a_response_are_retryable_unless_the_host_denied_them() {
        assert!(matches!(
            export_result("acme", Err(HttpError::Connection("refused".into()))),
            Err(ExportError::Retryable { .. })
        ));
        assert_eq!(
            export_result("acme", Err(HttpError::Denied("HttpRequestDenied".into()))),
            Err(ExportError::rejected(
                "acme: denied by the host: HttpRequestDenied"
            ))
        );
    }

    #[test]
    fn urls_split_into_scheme_authority_and_path() {
        assert_eq!(
            parse_url("https://ingest.acme.com/v1/traces", "/x"),
            Ok(Url {
                https: true,
                authority: "ingest.acme.com",
                path: "/v1/traces"
            })
        );
        assert_eq!(
            parse_url("http://127.0.0.1:4318", "/v1/logs").unwrap().path,
            "/v1/logs"
        );
        assert_eq!(parse_url("http://h/a?x=1", "/").unwrap().path, "/a?x=1");
        assert!(parse_url("http://h?x=1", "/").is_err());
        assert!(parse_url("ftp://h", "/").is_err());
        assert!(parse_url("https://user:pw@h/", "/").is_err());
        assert!(parse_url("https:///v1", "/").is_err());
    }
}
