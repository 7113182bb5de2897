//! Outbound HTTP of a guest (`wasi:http`): only to the entry's `allowed_hosts`, everything else
//! denied and logged.

use std::sync::Arc;

use wasmtime_wasi_http::WasiHttpHooks;

/// `wasi:http` policy: only `allowed_hosts`, everything else denied and logged.
pub(crate) struct HttpPolicy {
    allowed: Vec<String>,
    log_prefix: Arc<str>,
}

impl HttpPolicy {
    /// The policy of an instance granted `allowed` hosts, logging as `log_prefix`.
    pub(crate) fn new(allowed: Vec<String>, log_prefix: Arc<str>) -> Self {
        Self {
            allowed,
            log_prefix,
        }
    }
}

/// Whether `host` (and `port`) match an `allowed_hosts` entry (`host` = any port).
pub(crate) fn host_allowed(allowed: &[String], host: &str, port: u16) -> bool {
    allowed.iter().any(|entry| match entry.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => {
            h.eq_ignore_ascii_case(host) && p.parse() == Ok(port)
        }
        _ => entry.eq_ignore_ascii_case(host),
    })
}

type SendFuture = Box<
    dyn std::future::Future<
            Output = Result<
                (
                    http::Response<wasmtime_wasi_http::WasiBody>,
                    Box<
                        dyn std::future::Future<Output = Result<(), wasmtime_wasi_http::Error>>
                            + Send,
                    >,
                ),
                wasmtime_wasi_http::Error,
            >,
        > + Send,
>;

impl WasiHttpHooks for HttpPolicy {
    fn send_request(
        &mut self,
        request: http::Request<wasmtime_wasi_http::WasiBody>,
        options: Option<wasmtime_wasi_http::RequestOptions>,
        fut: Box<dyn std::future::Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
    ) -> SendFuture {
        let uri = request.uri();
        let host = uri.host().unwrap_or_default().to_string();
        let https = uri.scheme() == Some(&http::uri::Scheme::HTTPS);
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        if !host_allowed(&self.allowed, &host, port) {
            log::warn!(
                "{}: denied HTTP request to {}:{port} (not in allowed_hosts)",
                self.log_prefix,
                super::guest_output::escape(&host)
            );
            return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) });
        }
        let _ = fut;
        Box::new(async move {
            use http_body_util::BodyExt;
            let (res, io) = wasmtime_wasi_http::default_send_request(request, options).await?;
            Ok((
                res.map(BodyExt::boxed_unsync),
                Box::new(io) as Box<dyn std::future::Future<Output = _> + Send>,
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::host_allowed;

    #[test]
    fn allowed_hosts_match_host_and_port() {
        let allowed = vec![
            "ingest.example.com:443".to_string(),
            "127.0.0.1".to_string(),
        ];
        assert!(host_allowed(&allowed, "ingest.example.com", 443));
        assert!(host_allowed(&allowed, "INGEST.example.com", 443));
        assert!(!host_allowed(&allowed, "ingest.example.com", 80));
        assert!(!host_allowed(&allowed, "evil.example.com", 443));
        assert!(host_allowed(&allowed, "127.0.0.1", 4318));
        assert!(!host_allowed(&[], "127.0.0.1", 80), "empty = no hosts");
    }
}
