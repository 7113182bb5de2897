//! Values that must not be printed: OTLP header values, explicit values of a guest's `env`
//! grants, the password of an endpoint URL, and `settings` whose key names a credential.
//!
//! A [`Secret`] serializes as its value (the config round-trips), but its `Debug` and `Display`
//! are `[REDACTED]`, and [`LensConfig::to_toml`](super::LensConfig::to_toml) (what `lens config
//! show` prints) writes every secret as `[REDACTED]`, as the Collector's `configopaque` does.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What is printed in place of a secret.
pub const REDACTED: &str = "[REDACTED]";

/// A string that is never printed.
#[derive(Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// The value, for the one place that uses it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for Secret {
    fn from(s: String) -> Self {
        Self(s)
    }
}

impl From<&str> for Secret {
    fn from(s: &str) -> Self {
        Self(s.to_string())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// Parts of a setting's key that say its value is a credential (case-insensitive).
const SECRET_KEY_PARTS: [&str; 8] = [
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "auth",
    "credential",
    "cookie",
];

/// Whether a setting named `key` holds a credential, by its name.
pub fn secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    SECRET_KEY_PARTS.iter().any(|part| key.contains(part))
}

/// `url` with the password of its user info (`scheme://user:password@host`) redacted.
pub fn redact_url(url: &str) -> std::borrow::Cow<'_, str> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.into();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.into();
    };
    let user = rest[..at].split(':').next().unwrap_or("");
    format!("{scheme}://{user}:{REDACTED}{}", &rest[at..]).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print_but_round_trip() {
        let s = Secret::from("Bearer abc");
        assert_eq!(format!("{s} {s:?}"), "[REDACTED] [REDACTED]");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"Bearer abc\"");
        assert_eq!(s.expose(), "Bearer abc");
    }

    #[test]
    fn a_url_s_password_is_redacted() {
        assert_eq!(
            redact_url("https://bob:hunter2@ingest.example.com:443/v1/traces"),
            "https://bob:[REDACTED]@ingest.example.com:443/v1/traces"
        );
        assert_eq!(redact_url("http://127.0.0.1:4317"), "http://127.0.0.1:4317");
        assert_eq!(redact_url("http://host/a@b"), "http://host/a@b");
    }

    #[test]
    fn credential_names_are_recognised() {
        for k in [
            "api_key",
            "API-KEY",
            "token",
            "authorization",
            "dd_secret",
            "password",
        ] {
            assert!(secret_key(k), "{k}");
        }
        for k in ["path", "dataset", "include_resource", "endpoint"] {
            assert!(!secret_key(k), "{k}");
        }
    }
}
