//! The process's TLS provider for the HTTP clients Lens builds with `reqwest` (the OTLP/HTTP
//! exporter, the registry client): ring, as the sandbox's own egress uses. `reqwest` is built
//! without a provider of its own (`rustls-no-provider`, no second crypto library to compile), so
//! one must be the process default before a client is built; an application that installed
//! another keeps it.

/// Makes ring the process's default TLS provider unless one is installed already.
pub(crate) fn ensure_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
