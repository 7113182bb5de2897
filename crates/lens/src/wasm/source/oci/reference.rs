//! `oci://HOST[:PORT]/REPOSITORY[:TAG][@sha256:DIGEST]`: what a config, a command line or the
//! Python classes write where a `.wasm` path goes. Parsed strictly (the grammar of the OCI
//! distribution spec, lowercase hex digests only), so that what reaches the registry client and
//! the store's file names is known to be well-formed.

use std::fmt;
use std::net::IpAddr;

use crate::error::OciError;

/// The scheme that marks a reference where a path is accepted.
pub const SCHEME: &str = "oci://";

/// A parsed reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciReference {
    /// `HOST[:PORT]`.
    pub registry: String,
    /// `acme/exporter`.
    pub repository: String,
    /// `1.2.0`, if given.
    pub tag: Option<String>,
    /// The manifest's digest, lowercase hex without `sha256:`, if given.
    pub digest: Option<String>,
}

/// Whether `path` (as written in a config or on a command line) is an OCI reference.
pub fn is_reference(path: &std::path::Path) -> bool {
    path.to_str().is_some_and(|p| p.starts_with(SCHEME))
}

impl OciReference {
    /// Parses `text`, which starts with [`SCHEME`].
    pub fn parse(text: &str) -> Result<Self, OciError> {
        let bad = |why: &str| OciError::Reference {
            reference: text.to_string(),
            why: why.to_string(),
        };
        let rest = text
            .strip_prefix(SCHEME)
            .ok_or_else(|| bad("it does not start with oci://"))?;
        if text.len() > 1024 {
            return Err(bad("longer than 1024 characters"));
        }
        let (rest, digest) = match rest.split_once('@') {
            Some((r, d)) => {
                let hex = d
                    .strip_prefix("sha256:")
                    .ok_or_else(|| bad("the digest must be sha256:<64 hex digits>"))?;
                if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
                    return Err(bad(
                        "the digest must be sha256: and 64 lowercase hex digits",
                    ));
                }
                (r, Some(hex.to_string()))
            }
            None => (rest, None),
        };
        let (registry, path) = rest
            .split_once('/')
            .ok_or_else(|| bad("no repository after the registry"))?;
        check_registry(registry).map_err(|why| bad(&why))?;
        // A tag follows the last `:` of the last path component.
        let (repository, tag) = match path.rsplit_once(':') {
            Some((repo, tag)) if !tag.contains('/') => (repo, Some(tag.to_string())),
            _ => (path, None),
        };
        check_repository(repository).map_err(|why| bad(&why))?;
        if let Some(tag) = &tag {
            let ok = !tag.is_empty()
                && tag.len() <= 128
                && tag
                    .bytes()
                    .next()
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
                && tag
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
            if !ok {
                return Err(bad(
                    "a tag is up to 128 of letters, digits, `_`, `.` and `-`, not starting \
                     with `.` or `-`",
                ));
            }
        }
        if tag.is_none() && digest.is_none() {
            return Err(bad("it names neither a tag nor a digest"));
        }
        Ok(Self {
            registry: registry.to_string(),
            repository: repository.to_string(),
            tag,
            digest,
        })
    }

    /// This reference pinned to `digest` (hex), its tag kept.
    pub fn pinned(&self, digest: &str) -> Self {
        Self {
            digest: Some(digest.to_string()),
            ..self.clone()
        }
    }

    /// The host without its port.
    pub fn host(&self) -> &str {
        match self.registry.rsplit_once(':') {
            Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
            _ => &self.registry,
        }
    }

    /// Whether the registry is this machine (plain http is allowed to it).
    pub fn is_loopback(&self) -> bool {
        let host = self.host();
        host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }

    /// The client's form of it: by digest when pinned, else by tag.
    pub(super) fn client_reference(&self) -> oci_client::Reference {
        match (&self.digest, &self.tag) {
            (Some(d), _) => oci_client::Reference::with_digest(
                self.registry.clone(),
                self.repository.clone(),
                format!("sha256:{d}"),
            ),
            (None, tag) => oci_client::Reference::with_tag(
                self.registry.clone(),
                self.repository.clone(),
                tag.clone().unwrap_or_default(),
            ),
        }
    }
}

impl fmt::Display for OciReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@sha256:{digest}")?;
        }
        Ok(())
    }
}

/// `HOST[:PORT]`: a DNS name or an IPv4 address (letters, digits, `.`, `-`), a port of digits.
fn check_registry(registry: &str) -> Result<(), String> {
    let (host, port) = match registry.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (registry, None),
    };
    let host_ok = !host.is_empty()
        && host.len() <= 253
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-'))
        && !host.starts_with(['.', '-']);
    if !host_ok {
        return Err(format!("`{host}` is not a registry host name"));
    }
    if let Some(port) = port
        && port.parse::<u16>().map_or(true, |p| p == 0)
    {
        return Err(format!("`{port}` is not a port"));
    }
    Ok(())
}

/// Path components of lowercase letters and digits joined by `.`, `_`, `__` or dashes.
fn check_repository(repository: &str) -> Result<(), String> {
    let component_ok = |c: &str| {
        let b = c.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter().all(|x| {
                x.is_ascii_lowercase() || x.is_ascii_digit() || matches!(x, b'.' | b'_' | b'-')
            })
            && !c.contains("..")
    };
    if repository.len() > 255 || !repository.split('/').all(component_ok) {
        return Err(format!(
            "`{repository}` is not a repository (lowercase letters and digits, separated by \
             `/`, `.`, `_` or `-`)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn a_reference_parses_into_its_parts_and_prints_back() {
        let text = format!("oci://127.0.0.1:5000/acme/exporter:1.2.0@sha256:{D}");
        let r = OciReference::parse(&text).unwrap();
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str(), r.tag.as_deref()),
            ("127.0.0.1:5000", "acme/exporter", Some("1.2.0"))
        );
        assert_eq!(r.digest.as_deref(), Some(D));
        assert_eq!(r.to_string(), text);
        assert!(r.is_loopback());
        let r = OciReference::parse("oci://ghcr.io/acme/exporter:latest").unwrap();
        assert_eq!((r.host(), r.digest.as_deref()), ("ghcr.io", None));
        assert!(!r.is_loopback());
    }

    #[test]
    fn malformed_references_are_refused_saying_why() {
        for (text, why) in [
            ("oci://ghcr.io", "no repository"),
            ("oci://ghcr.io/acme/x", "neither a tag nor a digest"),
            ("oci://ghcr.io/Acme/x:1", "not a repository"),
            ("oci://ghcr.io/acme/x@sha256:abc", "64 lowercase hex"),
            ("oci://ghcr.io/acme/x@md5:abc", "sha256:<64 hex digits>"),
            ("oci://gh cr.io/acme/x:1", "not a registry host"),
            ("oci://ghcr.io:0/acme/x:1", "not a port"),
            ("oci://ghcr.io/acme/x:-1", "a tag is"),
            ("oci://ghcr.io/acme/../x:1", "not a repository"),
        ] {
            let e = OciReference::parse(text).unwrap_err().to_string();
            assert!(e.contains(why), "{text}: {e}");
        }
    }
}
