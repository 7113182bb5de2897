//! Outbound HTTP of a guest (`wasi:http`): only to the entry's `allowed_hosts` (everything else
//! denied and logged), over connections the host makes itself (`egress`), with the entry's
//! host-held credentials added to the requests they are for.
//!
//! A credential is added after the guest has handed its request over: the guest's own view of
//! the request (its `fields`) never holds it. A request whose scheme, host and port are exactly
//! a credential's target gets its header; a guest that set that header itself has it replaced,
//! with a warning once per instance. No other request gets it, redirects are not followed, and
//! plain http carries a credential only to loopback (checked with the config).

use std::sync::{Arc, Mutex};

use http::{HeaderName, HeaderValue};
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use super::egress::{self, Egress};
use super::guest_output::escape;
use crate::config::CredentialSpec;
use crate::config::credentials::{CredentialTarget, MAX_CREDENTIAL_FILE_BYTES};
use crate::config::env::EnvSource;
use crate::error::GrantError;

/// A credential resolved at setup: its header and value, and what it is shown as.
#[derive(Clone)]
pub(crate) struct HostCredential {
    /// Where it goes.
    pub target: CredentialTarget,
    /// Its header.
    pub header: HeaderName,
    /// Its value (marked sensitive: `Debug` prints no value, HTTP/2 would not index it).
    pub value: HeaderValue,
    /// How it is named in logs: header and target, never the value.
    pub shown: Arc<str>,
}

impl std::fmt::Debug for HostCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostCredential({})", self.shown)
    }
}

/// The last HTTP exchange of an instance's current call, when it went wrong: `401 Unauthorized
/// from 127.0.0.1:18401`, `connection refused (127.0.0.1:18402)`, `the host denied a request
/// to …: not in the entry's allowed_hosts`. Set by the host as it answers the guest's requests (a later success clears
/// it), read after the call for the exporter's last error: what the server said, in the
/// host's words, whatever the guest makes of it.
#[derive(Debug, Clone, Default)]
pub(crate) struct HttpAnswer(Arc<Mutex<Option<String>>>);

impl HttpAnswer {
    fn set(&self, answer: Option<String>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = answer;
    }

    /// The answer since the last `take`.
    pub(crate) fn take(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// The `wasi:http` policy of one instance.
pub(crate) struct HttpPolicy {
    allowed: Vec<String>,
    credentials: Arc<[HostCredential]>,
    egress: Egress,
    log_prefix: Arc<str>,
    /// Whether this instance was warned of setting a credential's header itself.
    warned_replaced: bool,
    /// What the last exchange that went wrong was.
    answer: HttpAnswer,
}

impl HttpPolicy {
    /// The policy of an instance granted `allowed` hosts and `credentials`, reaching what
    /// `egress` allows, logging as `log_prefix`, noting exchanges that go wrong in `answer`.
    pub(crate) fn new(
        allowed: Vec<String>,
        credentials: Arc<[HostCredential]>,
        egress: Egress,
        log_prefix: Arc<str>,
        answer: HttpAnswer,
    ) -> Self {
        Self {
            allowed,
            credentials,
            egress,
            log_prefix,
            warned_replaced: false,
            answer,
        }
    }

    /// Adds to `request` the credentials for its scheme and authority (replacing what the
    /// guest set under the same header).
    fn add_credentials(
        &mut self,
        request: &mut http::Request<WasiBody>,
        https: bool,
        host: &str,
        port: u16,
    ) {
        for c in self
            .credentials
            .iter()
            .filter(|c| c.target.matches(https, host, port))
        {
            let headers = request.headers_mut();
            if headers.contains_key(&c.header) && !self.warned_replaced {
                self.warned_replaced = true;
                log::warn!(
                    "{}: the guest set header `{}` itself on a request to {}; replaced by the \
                     host-held credential {} (warned once per instance)",
                    self.log_prefix,
                    c.header,
                    c.target,
                    c.shown
                );
            }
            headers.insert(c.header.clone(), c.value.clone());
        }
    }
}

/// Whether `host` (and `port`) match an `allowed_hosts` entry (`host` = any port).
pub(crate) use crate::config::credentials::host_allowed;

/// Reads the values of an entry's credentials (`from_env` from `env`, `from_file` from disk):
/// at setup and at each reload. An error names the credential and where its value was to
/// come from, never the value.
pub(crate) fn resolve_credentials(
    specs: &[CredentialSpec],
    allowed_hosts: &[String],
    env: &dyn EnvSource,
) -> Result<Arc<[HostCredential]>, GrantError> {
    specs
        .iter()
        .enumerate()
        .map(|(i, spec)| resolve(i, spec, allowed_hosts, env))
        .collect()
}

fn resolve(
    i: usize,
    spec: &CredentialSpec,
    allowed_hosts: &[String],
    env: &dyn EnvSource,
) -> Result<HostCredential, GrantError> {
    let credential = spec.describe();
    let invalid = |why: &str| GrantError::InvalidCredential {
        credential: credential.clone(),
        why: why.to_string(),
    };
    // Checked with a config file; an entry built in code (the Rust API, Python, `lens check`)
    // gets the same checks here.
    let refused = |why: String| GrantError::RefusedCredential {
        credential: credential.clone(),
        why,
    };
    spec.validate(i, allowed_hosts).map_err(refused)?;
    let target = spec.target().map_err(refused)?;
    let header =
        HeaderName::from_bytes(spec.header.as_bytes()).map_err(|e| refused(e.to_string()))?;
    let value = match (&spec.from_env, &spec.from_file) {
        (Some(var), _) => env
            .get(var)
            .ok_or_else(|| GrantError::MissingCredentialVariable {
                credential: credential.clone(),
                from_env: var.clone(),
            })?,
        (None, Some(path)) => {
            read_file(path).map_err(|source| GrantError::UnreadableCredentialFile {
                credential: credential.clone(),
                path: path.clone(),
                source,
            })?
        }
        (None, None) => unreachable!("refused by validate"),
    };
    let value = value.strip_suffix('\n').unwrap_or(&value);
    let value = value.strip_suffix('\r').unwrap_or(value);
    if value.is_empty() {
        return Err(invalid("is empty"));
    }
    let mut value = HeaderValue::from_str(&format!("{}{value}", spec.prefix)).map_err(|_| {
        invalid("holds a character a header cannot carry (a control character, a line break or non-ASCII)")
    })?;
    value.set_sensitive(true);
    Ok(HostCredential {
        target,
        header,
        value,
        shown: credential.into(),
    })
}

/// A credential file's text: at most [`MAX_CREDENTIAL_FILE_BYTES`], UTF-8.
fn read_file(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(MAX_CREDENTIAL_FILE_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_CREDENTIAL_FILE_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {MAX_CREDENTIAL_FILE_BYTES} bytes: a credential file holds one value"
        )));
    }
    Ok(text)
}

type SendFuture = Box<dyn std::future::Future<Output = Result<egress::Sent, Error>> + Send>;

impl WasiHttpHooks for HttpPolicy {
    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn std::future::Future<Output = Result<(), Error>> + Send>,
    ) -> SendFuture {
        let uri = request.uri();
        let host = uri.host().unwrap_or_default().to_string();
        let https = uri.scheme() == Some(&http::uri::Scheme::HTTPS);
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let authority = format!("{}:{port}", escape(&host));
        if !host_allowed(&self.allowed, &host, port) {
            log::warn!(
                "{}: denied HTTP request to {authority} (not in allowed_hosts)",
                self.log_prefix,
            );
            self.answer.set(Some(format!(
                "the host denied a request to {authority}: not in the entry's allowed_hosts"
            )));
            return Box::new(async { Err(Error::HttpRequestDenied) });
        }
        self.add_credentials(&mut request, https, &host, port);
        let _ = fut;
        let egress = self.egress;
        let log_prefix = self.log_prefix.clone();
        let answer = self.answer.clone();
        Box::new(async move {
            let sent = egress::send(request, options, egress, &log_prefix).await;
            answer.set(match &sent {
                Ok((response, _)) => went_wrong(response.status(), &authority),
                Err(e) => Some(format!("{e} ({authority})")),
            });
            sent
        })
    }
}

/// `401 Unauthorized from 127.0.0.1:18401` for a response with an error status; `None` for
/// any other.
fn went_wrong(status: http::StatusCode, authority: &str) -> Option<String> {
    (status.is_client_error() || status.is_server_error()).then(|| {
        let reason = status.canonical_reason().unwrap_or("");
        format!("{} {reason} from {authority}", status.as_str()).replace("  ", " ")
    })
}

#[cfg(test)]
mod tests {
    use super::host_allowed;

    #[test]
    fn allowed_hosts_match_host_and_port() {
        let allowed = vec![
            "ingest.example.com:443".to_string(),
            "127.0.0.1".to_string(),
            "[::1]:8080".to_string(),
        ];
        assert!(host_allowed(&allowed, "ingest.example.com", 443));
        assert!(host_allowed(&allowed, "INGEST.example.com", 443));
        assert!(!host_allowed(&allowed, "ingest.example.com", 80));
        assert!(!host_allowed(&allowed, "evil.example.com", 443));
        assert!(host_allowed(&allowed, "127.0.0.1", 4318));
        assert!(host_allowed(&allowed, "[::1]", 8080));
        assert!(!host_allowed(&allowed, "[::1]", 8081));
        assert!(!host_allowed(&[], "127.0.0.1", 80), "empty = no hosts");
    }
}

#[cfg(test)]
mod resolve_tests {
    use super::*;

    fn spec(prefix: &str) -> CredentialSpec {
        CredentialSpec {
            host: "ingest.acme.com".into(),
            header: "Authorization".into(),
            from_env: Some("ACME_TOKEN".into()),
            from_file: None,
            prefix: prefix.into(),
        }
    }

    #[test]
    fn a_credential_is_read_from_its_variable_with_its_prefix_and_kept_sensitive() {
        let allowed = vec!["ingest.acme.com:443".to_string()];
        let env = [("ACME_TOKEN", "t0k3n\n")];
        let resolved = resolve_credentials(&[spec("Bearer ")], &allowed, &env).unwrap();
        let c = &resolved[0];
        assert_eq!(c.value, "Bearer t0k3n");
        assert!(c.value.is_sensitive());
        assert_eq!(c.header, http::header::AUTHORIZATION);
        assert!(!format!("{c:?}").contains("t0k3n"), "{c:?}");
        let err = resolve_credentials(&[spec("")], &[], &env).unwrap_err();
        assert!(
            matches!(err, GrantError::RefusedCredential { ref why, .. } if why.contains("allowed_hosts")),
            "{err}"
        );
        let empty = [("ACME_TOKEN", "\n")];
        let err = resolve_credentials(&[spec("")], &allowed, &empty).unwrap_err();
        assert!(err.to_string().ends_with("its value is empty"), "{err}");
    }
}
