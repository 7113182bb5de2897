//! The connections the host opens for a guest's `wasi:http` requests, made so that a
//! credential can trust them: the host resolves the allowed host itself and connects only to
//! an address it checked (loopback, or a public address; private, link-local — cloud metadata
//! at 169.254.169.254 among them — and other special addresses only where the entry says
//! `allow_private_addresses = true`), follows no redirect (a 3xx goes back to the guest as it
//! came), verifies https against the Mozilla roots (webpki-roots), and caps the response body
//! a guest may read at `max_response_mib`.
//!
//! wasmtime-wasi-http's own sender resolves and connects by name, so a name that resolves to a
//! private address (or to another one between a check and the connection) would reach it;
//! this sender connects to the very address it checked.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use tokio::net::TcpStream;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

/// Default of `max_response_mib`: the largest response body a guest may read (an ingest
/// answers in bytes or kilobytes).
pub const DEFAULT_MAX_RESPONSE_MIB: u64 = 4;

/// How long resolving a name and connecting may take when the guest sets no connect timeout
/// (its call deadline bounds every request anyway).
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// What the host's connections for one entry may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Egress {
    /// Whether private, link-local and other special addresses may be reached.
    pub allow_private: bool,
    /// The largest response body a guest reads, bytes.
    pub max_response_bytes: u64,
}

/// Why `ip` is not reached unless the entry allows private addresses: `None` for loopback and
/// public addresses.
pub(crate) fn restricted(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => restricted_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => restricted_v4(v4),
            None => restricted_v6(v6),
        },
    }
}

fn restricted_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    if ip.is_loopback() {
        None
    } else if ip == Ipv4Addr::new(169, 254, 169, 254) {
        Some("cloud metadata")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if ip.is_private() {
        Some("private")
    } else if a == 100 && (64..128).contains(&b) {
        Some("shared (carrier-grade NAT)")
    } else if ip.is_unspecified() || a == 0 {
        Some("unspecified")
    } else if ip.is_multicast() || ip.is_broadcast() || a >= 240 {
        Some("multicast or reserved")
    } else if (a, b, c) == (192, 0, 0) || (a == 198 && (b == 18 || b == 19)) {
        Some("reserved")
    } else {
        None
    }
}

fn restricted_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    if ip.is_loopback() {
        None
    } else if ip.is_unspecified() {
        Some("unspecified")
    } else if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        Some("cloud metadata")
    } else if first & 0xffc0 == 0xfe80 {
        Some("link-local")
    } else if first & 0xfe00 == 0xfc00 {
        Some("private (unique local)")
    } else if ip.is_multicast() {
        Some("multicast or reserved")
    } else {
        None
    }
}

/// What [`send`] returns: the response and the connection's own future (driven by the caller
/// until the body is read).
pub(crate) type Sent = (
    http::Response<WasiBody>,
    Box<dyn std::future::Future<Output = Result<(), Error>> + Send>,
);

/// Sends `request` (already allowed by the entry's `allowed_hosts`) over a connection to an
/// address `egress` lets it reach. A refused address is logged under `log_prefix`.
pub(crate) async fn send(
    mut request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
    egress: Egress,
    log_prefix: &str,
) -> Result<Sent, Error> {
    let uri = request.uri().clone();
    let https = uri.scheme() == Some(&http::uri::Scheme::HTTPS);
    let host = uri
        .host()
        .ok_or(Error::HttpRequestUriInvalid)?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let connect_timeout = options
        .and_then(|o| o.connect_timeout)
        .unwrap_or(DEFAULT_CONNECT_TIMEOUT);
    let first_byte_timeout = options.and_then(|o| o.first_byte_timeout);

    let addrs = resolve(&host, port, connect_timeout).await?;
    let (allowed, refused): (Vec<SocketAddr>, Vec<SocketAddr>) = addrs
        .into_iter()
        .partition(|a| egress.allow_private || restricted(a.ip()).is_none());
    if allowed.is_empty() {
        if let Some(addr) = refused.first() {
            log::warn!(
                "{log_prefix}: denied HTTP request to {}:{port}: it resolves to {} (a {} address; \
                 `allow_private_addresses = true` on the entry allows it)",
                super::guest_output::escape(&host),
                addr.ip(),
                restricted(addr.ip()).unwrap_or("restricted")
            );
            return Err(Error::DestinationIpProhibited);
        }
        return Err(Error::DestinationNotFound);
    }
    let tcp = connect(&allowed, connect_timeout).await?;
    let io: Box<dyn Stream> = if https {
        let name = server_name(&host)?;
        let tls = tokio::time::timeout(connect_timeout, tls_connector().connect(name, tcp))
            .await
            .map_err(|_| Error::ConnectionTimeout)?
            .map_err(Error::Tls)?;
        Box::new(tls)
    } else {
        Box::new(tcp)
    };
    let (mut sender, conn) = tokio::time::timeout(
        connect_timeout,
        hyper::client::conn::http1::handshake(TokioIo::new(io)),
    )
    .await
    .map_err(|_| Error::ConnectionTimeout)??;

    // The request line carries the path only (the authority is the connection's, and the
    // `host` header says it): not a proxy request.
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    *request.uri_mut() = http::Uri::try_from(path).map_err(|_| Error::HttpRequestUriInvalid)?;

    let mut conn = Box::pin(conn);
    let mut conn_done = false;
    let exchange = async {
        let mut response = Box::pin(sender.send_request(request));
        loop {
            tokio::select! {
                r = &mut response => break r.map_err(Error::from),
                c = &mut conn, if !conn_done => {
                    conn_done = true;
                    c.map_err(Error::from)?;
                }
            }
        }
    };
    let response = match first_byte_timeout {
        Some(t) => tokio::time::timeout(t, exchange)
            .await
            .map_err(|_| Error::ConnectionReadTimeout)??,
        None => exchange.await?,
    };
    let limit = egress.max_response_bytes;
    let response = response.map(|body| {
        Capped {
            inner: body.map_err(Error::from),
            left: limit,
            limit,
        }
        .boxed_unsync()
    });
    let io = async move {
        if conn_done {
            Ok(())
        } else {
            conn.await.map_err(Error::from)
        }
    };
    Ok((response, Box::new(io)))
}

trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin> Stream for T {}

/// The addresses of `host` (an IP address is its own).
async fn resolve(host: &str, port: u16, timeout: Duration) -> Result<Vec<SocketAddr>, Error> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let found = tokio::time::timeout(timeout, tokio::net::lookup_host((host, port)))
        .await
        .map_err(|_| Error::DnsTimeout)?
        .map_err(|_| Error::DestinationNotFound)?;
    Ok(found.collect())
}

/// A connection to the first of `addrs` that answers.
async fn connect(addrs: &[SocketAddr], timeout: Duration) -> Result<TcpStream, Error> {
    let mut last = Error::DestinationUnavailable;
    for addr in addrs {
        match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                last = Error::ConnectionRefused
            }
            Ok(Err(e)) => last = Error::Connect(e),
            Err(_) => last = Error::ConnectionTimeout,
        }
    }
    Err(last)
}

/// The name the server's certificate must carry.
fn server_name(host: &str) -> Result<rustls::pki_types::ServerName<'static>, Error> {
    use rustls::pki_types::ServerName;
    match host.parse::<IpAddr>() {
        Ok(ip) => Ok(ServerName::from(ip)),
        Err(_) => ServerName::try_from(host.to_string()).map_err(Error::InvalidDnsNameError),
    }
}

/// One TLS client for the process: the Mozilla roots, no client certificate.
fn tls_connector() -> tokio_rustls::TlsConnector {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    let config = CONFIG.get_or_init(|| {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.into(),
        };
        Arc::new(
            rustls::ClientConfig::builder()
                .with_root_certificates(roots)
                .with_no_client_auth(),
        )
    });
    tokio_rustls::TlsConnector::from(config.clone())
}

/// A response body that fails once more than `limit` bytes have come.
struct Capped<B> {
    inner: B,
    left: u64,
    limit: u64,
}

impl<B: Body<Data = Bytes, Error = Error> + Unpin> Body for Capped<B> {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let frame = std::task::ready!(Pin::new(&mut self.inner).poll_frame(cx));
        if let Some(Ok(f)) = &frame
            && let Some(data) = f.data_ref()
        {
            let len = data.len() as u64;
            if len > self.left {
                self.left = 0;
                return Poll::Ready(Some(Err(Error::HttpResponseBodySize(Some(self.limit)))));
            }
            self.left -= len;
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_public_addresses_are_reached_the_rest_only_when_allowed() {
        for open in [
            "127.0.0.1",
            "127.8.9.10",
            "::1",
            "8.8.8.8",
            "2606:4700::1111",
        ] {
            assert_eq!(restricted(open.parse().unwrap()), None, "{open}");
        }
        for (ip, class) in [
            ("169.254.169.254", "cloud metadata"),
            ("fd00:ec2::254", "cloud metadata"),
            ("169.254.1.1", "link-local"),
            ("fe80::1", "link-local"),
            ("10.0.0.1", "private"),
            ("172.16.5.4", "private"),
            ("192.168.1.1", "private"),
            ("fd12:3456::1", "private (unique local)"),
            ("100.64.0.1", "shared (carrier-grade NAT)"),
            ("0.0.0.0", "unspecified"),
            ("::", "unspecified"),
            ("224.0.0.1", "multicast or reserved"),
            ("::ffff:10.1.2.3", "private"),
        ] {
            assert_eq!(restricted(ip.parse().unwrap()), Some(class), "{ip}");
        }
    }

    /// A body of ready chunks.
    struct Chunks(std::collections::VecDeque<Bytes>);

    impl Body for Chunks {
        type Data = Bytes;
        type Error = Error;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
            Poll::Ready(self.0.pop_front().map(|c| Ok(Frame::data(c))))
        }
    }

    #[test]
    fn a_body_past_its_cap_fails_and_one_at_it_passes() {
        let run = |chunks: &[&'static [u8]], limit: u64| {
            let inner = Chunks(chunks.iter().map(|c| Bytes::from_static(c)).collect());
            let capped = Capped {
                inner,
                left: limit,
                limit,
            };
            futures_executor::block_on(capped.collect()).map(|c| c.to_bytes().len())
        };
        assert_eq!(run(&[b"abcd", b"ef"], 6).unwrap(), 6);
        assert!(matches!(
            run(&[b"abcd", b"efg"], 6),
            Err(Error::HttpResponseBodySize(Some(6)))
        ));
    }
}
