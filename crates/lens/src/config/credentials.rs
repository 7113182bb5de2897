//! Host-held credentials of a wasm entry: a header the host adds to the guest's outgoing
//! `wasi:http` requests to one scheme and authority, its value read by the host from a variable
//! or a file. The config names where the value is, never the value itself, so nothing here is
//! a secret: `lens config show` prints an entry's credentials as they are.

use std::net::IpAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A header the host adds to every outgoing request of the guest to `host`, and to no other
/// request. The guest never holds the value: not in its environment, settings or memory, nor in
/// the request's headers as it sees them.
///
/// ```toml
/// credentials = [
///   { host = "ingest.acme.com:443", header = "x-acme-key", from_env = "ACME_KEY" },
///   { host = "api.acme.com", header = "authorization", prefix = "Bearer ", from_file = "/run/secrets/acme" },
/// ]
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialSpec {
    /// Where the header goes: `host:port`, or `host` (port 443), over https; a loopback test
    /// server may be named `http://127.0.0.1:8080` (plain HTTP carries a credential to no other
    /// address). It must be in `allowed_hosts`. Example: `host = "ingest.acme.com:443"`.
    pub host: String,
    /// The header's name. Example: `header = "x-acme-key"`.
    pub header: String,
    /// The host variable holding the value, read at setup and at each reload. Example:
    /// `from_env = "ACME_KEY"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_env: Option<String>,
    /// The file holding the value (one line; a final newline is dropped), read at setup and at
    /// each reload; relative paths are relative to the config file. Example:
    /// `from_file = "/run/secrets/acme"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_file: Option<PathBuf>,
    /// Put before the value. Example: `prefix = "Bearer "` for an `authorization` header.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
}

/// Largest credential file read, bytes: a key or a token, not a document.
pub const MAX_CREDENTIAL_FILE_BYTES: u64 = 16 * 1024;

/// The scheme and authority a credential is sent to, parsed from its `host`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialTarget {
    /// `true` for https (every credential but a loopback test server's).
    pub https: bool,
    /// The host, lower case, without brackets around an IPv6 address.
    pub host: String,
    /// The port (443 for https, 80 for http when not given).
    pub port: u16,
}

impl std::fmt::Display for CredentialTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        if self.host.contains(':') {
            write!(f, "{scheme}://[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{scheme}://{}:{}", self.host, self.port)
        }
    }
}

impl CredentialTarget {
    /// Whether a request to `https`, `host` (as a URI gives it, brackets and any case) and
    /// `port` is to this target.
    pub fn matches(&self, https: bool, host: &str, port: u16) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        self.https == https && self.port == port && self.host.eq_ignore_ascii_case(host)
    }

    /// The `allowed_hosts` entry form, `host:port`.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Whether `host` names this machine: `localhost`, `127.0.0.0/8` or `::1`.
pub fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl CredentialSpec {
    /// Its target, or why `host` names none.
    pub fn target(&self) -> Result<CredentialTarget, String> {
        let (https, rest) = match self.host.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => (true, rest),
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => (false, rest),
            Some((scheme, _)) => return Err(format!("has scheme `{scheme}`: use https")),
            None => (true, self.host.as_str()),
        };
        if rest.is_empty()
            || rest.contains(['/', '?', '#', '@'])
            || rest.contains(char::is_whitespace)
        {
            return Err("is not `host` or `host:port` (no path, user or spaces)".into());
        }
        let (host, port) = split_host_port(rest)?;
        let port = port.unwrap_or(if https { 443 } else { 80 });
        if !https && !is_loopback_host(&host) {
            return Err(
                "uses plain http to an address that is not loopback: a credential travels over \
                 https only (plain http is for a test server on this machine)"
                    .into(),
            );
        }
        Ok(CredentialTarget {
            https,
            host: host.to_ascii_lowercase(),
            port,
        })
    }

    /// How it is shown (`lens check`, errors, reprs): the header and the target, never a value.
    pub fn describe(&self) -> String {
        let source = match (&self.from_env, &self.from_file) {
            (Some(var), _) => format!("from env {var}"),
            (None, Some(file)) => format!("from file {}", file.display()),
            (None, None) => "from nowhere".into(),
        };
        let target = self
            .target()
            .map_or_else(|_| self.host.clone(), |t| t.to_string());
        format!("`{}` for {target} ({source})", self.header)
    }

    /// Why this credential cannot be given, naming the key (`credentials[i].…`); `allowed` is
    /// the entry's `allowed_hosts`.
    pub(crate) fn validate(&self, i: usize, allowed: &[String]) -> Result<(), String> {
        let key = |k: &str| format!("`credentials[{i}].{k}`");
        let target = self
            .target()
            .map_err(|why| format!("{} = {:?} {why}", key("host"), self.host))?;
        let name = http::HeaderName::from_bytes(self.header.as_bytes()).map_err(|_| {
            format!(
                "{} = {:?} is not an HTTP header name",
                key("header"),
                self.header
            )
        })?;
        if wasmtime_wasi_http::DEFAULT_FORBIDDEN_HEADERS.contains(&name)
            || [http::header::HOST, http::header::CONTENT_LENGTH].contains(&name)
        {
            return Err(format!(
                "{} = {:?} is a header the HTTP connection itself sets",
                key("header"),
                self.header
            ));
        }
        if http::HeaderValue::from_str(&self.prefix).is_err() {
            return Err(format!(
                "{} holds a character a header value cannot (a control character or non-ASCII)",
                key("prefix")
            ));
        }
        match (&self.from_env, &self.from_file) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "{} and {} are both set: name one place for the value",
                    key("from_env"),
                    key("from_file")
                ));
            }
            (None, None) => {
                return Err(format!(
                    "needs {} (a host variable) or {} holding the value",
                    key("from_env"),
                    key("from_file")
                ));
            }
            (Some(var), None) if var.is_empty() || var.contains(['=', '\0']) => {
                return Err(format!(
                    "{} = {var:?} is not a variable name",
                    key("from_env")
                ));
            }
            _ => {}
        }
        let host = target.host.as_str();
        if !host_allowed(allowed, host, target.port) {
            return Err(format!(
                "{} = {:?} is not in `allowed_hosts`: add \"{}\" there (a credential goes only \
                 where the guest may send)",
                key("host"),
                self.host,
                target.authority()
            ));
        }
        Ok(())
    }
}

/// Whether `host` (and `port`) match an `allowed_hosts` entry (`host` = any port).
pub(crate) fn host_allowed(allowed: &[String], host: &str, port: u16) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    allowed.iter().any(|entry| match split_host_port(entry) {
        Ok((h, Some(p))) => h.eq_ignore_ascii_case(host) && p == port,
        Ok((h, None)) => h.eq_ignore_ascii_case(host),
        Err(_) => false,
    })
}

/// `host` and its port, if given, from `host`, `host:port`, `[v6]` or `[v6]:port`.
fn split_host_port(s: &str) -> Result<(String, Option<u16>), String> {
    let bad_port = |p: &str| format!("has port `{p}`, not a number from 1 to 65535");
    let parse_port = |p: &str| match p.parse::<u16>() {
        Ok(0) | Err(_) => Err(bad_port(p)),
        Ok(n) => Ok(n),
    };
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| "has `[` without `]`".to_string())?;
        if host.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!("has `[{host}]`, not an IPv6 address"));
        }
        return match after {
            "" => Ok((host.to_string(), None)),
            p => match p.strip_prefix(':') {
                Some(p) => Ok((host.to_string(), Some(parse_port(p)?))),
                None => Err("has text after `]`".into()),
            },
        };
    }
    match s.rsplit_once(':') {
        Some((host, _)) if host.contains(':') => {
            Err("is an IPv6 address without brackets: write `[::1]:443`".into())
        }
        Some((host, p)) if !host.is_empty() => Ok((host.to_string(), Some(parse_port(p)?))),
        Some(_) => Err("has no host".into()),
        None => Ok((s.to_string(), None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(host: &str) -> CredentialSpec {
        CredentialSpec {
            host: host.into(),
            header: "x-acme-key".into(),
            from_env: Some("ACME_KEY".into()),
            from_file: None,
            prefix: String::new(),
        }
    }

    #[test]
    fn a_host_names_one_scheme_host_and_port() {
        let t = |h: &str| spec(h).target();
        let https = |host: &str, port| CredentialTarget {
            https: true,
            host: host.into(),
            port,
        };
        assert_eq!(t("ingest.acme.com"), Ok(https("ingest.acme.com", 443)));
        assert_eq!(
            t("Ingest.ACME.com:8443"),
            Ok(https("ingest.acme.com", 8443))
        );
        assert_eq!(t("https://[2001:db8::1]"), Ok(https("2001:db8::1", 443)));
        let local = t("http://127.0.0.1:8080").unwrap();
        assert!(!local.https && local.port == 8080);
        assert_eq!(t("http://localhost").unwrap().port, 80);
        assert!(
            t("http://ingest.acme.com")
                .unwrap_err()
                .contains("plain http")
        );
        assert!(t("ftp://x").unwrap_err().contains("scheme `ftp`"));
        assert!(t("acme.com/v1").unwrap_err().contains("no path"));
        assert!(t("user@acme.com").unwrap_err().contains("no path, user"));
        assert!(t("acme.com:0").unwrap_err().contains("port `0`"));
        assert!(t("::1").unwrap_err().contains("without brackets"));
    }

    #[test]
    fn a_target_matches_only_its_own_scheme_host_and_port() {
        let t = spec("ingest.acme.com:443").target().unwrap();
        assert!(t.matches(true, "INGEST.acme.com", 443));
        assert!(!t.matches(false, "ingest.acme.com", 443), "http");
        assert!(!t.matches(true, "ingest.acme.com", 8443), "another port");
        assert!(!t.matches(true, "evil.ingest.acme.com", 443), "a subdomain");
        let v6 = spec("[::1]:9").target().unwrap();
        assert!(v6.matches(true, "[::1]", 9));
        assert_eq!(v6.authority(), "[::1]:9");
    }

    #[test]
    fn a_credential_shows_its_header_target_and_source_never_a_value() {
        let mut s = spec("ingest.acme.com");
        assert_eq!(
            s.describe(),
            "`x-acme-key` for https://ingest.acme.com:443 (from env ACME_KEY)"
        );
        s.from_env = None;
        s.from_file = Some("/run/secrets/acme".into());
        assert!(s.describe().ends_with("(from file /run/secrets/acme)"));
    }

    #[test]
    fn allowed_hosts_and_credential_hosts_agree_on_ports() {
        let allowed = vec!["ingest.acme.com".to_string(), "127.0.0.1:4318".to_string()];
        assert!(spec("ingest.acme.com:8443").validate(0, &allowed).is_ok());
        assert!(spec("http://127.0.0.1:4318").validate(0, &allowed).is_ok());
        let err = spec("http://127.0.0.1:4319")
            .validate(2, &allowed)
            .unwrap_err();
        assert!(err.starts_with("`credentials[2].host`"), "{err}");
    }
}
