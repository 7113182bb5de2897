//! Talking to a registry, through the ORAS project's `oci-client`: credentials (never printed),
//! https unless the registry is this machine or listed in the entry's `insecure_registries`, a
//! manifest checked against its digest and refused unless it is a Wasm component artifact, the
//! layer streamed with its size and digest checked as it arrives, and `lens push` in the layout
//! `wkg oci push` writes (Bytecode Alliance `oci-wasm`).
//!
//! Credentials go only to the registry they are for: `oci-client` sends them to the registry's
//! own host, and a blob redirected to storage elsewhere is fetched by `reqwest` without them
//! (it drops `Authorization` on a redirect to another host).

use std::io::Write;
use std::time::Duration;

use futures_util::StreamExt;
use oci_client::Client;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{DigestError, OciDistributionError, OciErrorCode};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use sha2::{Digest, Sha256};

use super::reference::OciReference;
use crate::error::OciError;

/// The manifest media types asked for: the OCI manifest a Wasm artifact is, and the others a
/// registry may answer with (refused with what they are).
const ACCEPTED: [&str; 4] = [
    oci_wasm::WASM_MANIFEST_MEDIA_TYPE,
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
];

/// The largest manifest accepted (a Wasm artifact's is under 1 KiB).
pub const MAX_MANIFEST_BYTES: usize = 1 << 20;

/// Variables holding registry credentials (both must be set).
pub const USERNAME_VAR: &str = "LENS_REGISTRY_USERNAME";
/// See [`USERNAME_VAR`].
pub const PASSWORD_VAR: &str = "LENS_REGISTRY_PASSWORD";

/// A client for one registry and the credentials for it.
pub(crate) struct Registry {
    client: Client,
    auth: RegistryAuth,
    /// Where credentials were looked for, for a refusal's message (never a value).
    looked: String,
    name: String,
    runtime: tokio::runtime::Runtime,
}

/// What a manifest names: its component layer.
pub(crate) struct Artifact {
    /// The manifest as sent (its digest checked).
    pub manifest: Vec<u8>,
    /// The layer's digest, hex.
    pub layer_digest: String,
    /// The layer's announced size.
    pub layer_size: u64,
}

impl Registry {
    /// A client for `reference`'s registry: plain http if it is this machine or in
    /// `insecure`, https otherwise.
    pub(crate) fn new(reference: &OciReference, insecure: &[String]) -> Result<Self, OciError> {
        crate::tls::ensure_provider();
        let plain = reference.is_loopback() || insecure.contains(&reference.registry);
        let config = ClientConfig {
            protocol: if plain {
                ClientProtocol::HttpsExcept(vec![reference.registry.clone()])
            } else {
                ClientProtocol::Https
            },
            connect_timeout: Some(Duration::from_secs(10)),
            read_timeout: Some(Duration::from_secs(60)),
            platform_resolver: None,
            user_agent: concat!("lens/", env!("CARGO_PKG_VERSION")),
            ..ClientConfig::default()
        };
        let (auth, looked) = credentials(&reference.registry);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| OciError::Registry {
                registry: reference.registry.clone(),
                message: format!("cannot start an I/O runtime: {e}"),
            })?;
        Ok(Self {
            client: Client::new(config),
            auth,
            looked,
            name: reference.registry.clone(),
            runtime,
        })
    }

    /// Runs `f` on this client's runtime, on a thread of its own (the caller may itself be
    /// inside an async runtime).
    fn run<T: Send>(&self, f: impl Future<Output = T> + Send) -> T {
        std::thread::scope(|s| {
            s.spawn(|| self.runtime.block_on(f))
                .join()
                .expect("a registry request panicked")
        })
    }

    /// The digest (hex) `reference`'s tag resolves to now.
    pub(crate) fn resolve_tag(&self, reference: &OciReference) -> Result<String, OciError> {
        let r = reference.client_reference();
        let digest = self
            .run(self.client.fetch_manifest_digest(&r, &self.auth))
            .map_err(|e| self.error(e))?;
        Ok(digest.trim_start_matches("sha256:").to_string())
    }

    /// The manifest `reference` (pinned) names, checked against its digest, and its one
    /// component layer; at most `max_bytes` for the layer.
    pub(crate) fn manifest(
        &self,
        reference: &OciReference,
        max_bytes: u64,
    ) -> Result<Artifact, OciError> {
        let expected = reference.digest.clone().unwrap_or_default();
        let r = reference.client_reference();
        let (bytes, _) = self
            .run(self.client.pull_manifest_raw(&r, &self.auth, &ACCEPTED))
            .map_err(|e| self.error(e))?;
        let not_wasm = |what: String| OciError::NotWasmArtifact {
            reference: reference.to_string(),
            what,
        };
        if bytes.len() > MAX_MANIFEST_BYTES {
            return Err(not_wasm(format!(
                "its manifest is {} bytes, over {MAX_MANIFEST_BYTES}",
                bytes.len()
            )));
        }
        let actual = hex::encode(Sha256::digest(&bytes));
        if actual != expected {
            return Err(OciError::DigestMismatch {
                reference: reference.to_string(),
                what: "the manifest",
                expected: format!("sha256:{expected}"),
                actual: format!("sha256:{actual}"),
            });
        }
        let manifest: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| not_wasm(format!("its manifest is not JSON ({e})")))?;
        let layer = wasm_layer(&manifest).map_err(not_wasm)?;
        let digest = layer
            .digest
            .strip_prefix("sha256:")
            .filter(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| not_wasm(format!("its layer digest `{}` is not sha256", layer.digest)))?
            .to_ascii_lowercase();
        let size = u64::try_from(layer.size).unwrap_or(u64::MAX);
        if size > max_bytes {
            return Err(OciError::TooLarge {
                reference: reference.to_string(),
                size,
                limit: max_bytes,
            });
        }
        Ok(Artifact {
            manifest: bytes.to_vec(),
            layer_digest: digest,
            layer_size: size,
        })
    }

    /// Streams the layer of `artifact` into `out`, counting and hashing as it arrives: refused
    /// past `max_bytes` or its announced size, and unless its digest is the manifest's.
    pub(crate) fn pull_layer(
        &self,
        reference: &OciReference,
        artifact: &Artifact,
        max_bytes: u64,
        out: &mut (impl Write + Send),
    ) -> Result<(), OciError> {
        let r = reference.client_reference();
        let layer = OciDescriptor {
            media_type: oci_wasm::WASM_LAYER_MEDIA_TYPE.to_string(),
            digest: format!("sha256:{}", artifact.layer_digest),
            size: artifact.layer_size as i64,
            ..OciDescriptor::default()
        };
        let limit = max_bytes.min(artifact.layer_size);
        let too_large = |size| OciError::TooLarge {
            reference: reference.to_string(),
            size,
            limit,
        };
        let store = |e: std::io::Error| OciError::Registry {
            registry: self.name.clone(),
            message: format!("writing the layer: {e}"),
        };
        self.run(async {
            let mut stream = self
                .client
                .pull_blob_stream(&r, &layer)
                .await
                .map_err(|e| self.error(e))?;
            if let Some(announced) = stream.content_length.filter(|n| *n > limit) {
                return Err(too_large(announced));
            }
            let mut hasher = Sha256::new();
            let mut seen = 0u64;
            while let Some(chunk) = stream.next().await {
                let chunk = match chunk {
                    Ok(chunk) => chunk,
                    // The client checks the digest at the end of the stream too (against the
                    // registry's digest header and the layer's): said as Lens says it.
                    Err(e) if is_digest_error(&e) => {
                        return Err(OciError::DigestMismatch {
                            reference: reference.to_string(),
                            what: "the component layer",
                            expected: format!("sha256:{}", artifact.layer_digest),
                            actual: format!("sha256:{}", hex::encode(hasher.finalize())),
                        });
                    }
                    Err(e) => {
                        return Err(OciError::Registry {
                            registry: self.name.clone(),
                            message: format!("reading the layer: {e}"),
                        });
                    }
                };
                seen += chunk.len() as u64;
                if seen > limit {
                    return Err(too_large(seen));
                }
                hasher.update(&chunk);
                out.write_all(&chunk).map_err(store)?;
            }
            let actual = hex::encode(hasher.finalize());
            if actual != artifact.layer_digest {
                return Err(OciError::DigestMismatch {
                    reference: reference.to_string(),
                    what: "the component layer",
                    expected: format!("sha256:{}", artifact.layer_digest),
                    actual: format!("sha256:{actual}"),
                });
            }
            Ok(())
        })
    }

    /// Pushes `component` to `reference` (a tag) in the layout `wkg oci push` writes; returns
    /// the manifest's digest (hex) as the registry now serves it.
    pub(crate) fn push(
        &self,
        reference: &OciReference,
        component: Vec<u8>,
    ) -> Result<String, OciError> {
        let (config, layer) =
            oci_wasm::WasmConfig::from_raw_component(component, None).map_err(|e| {
                OciError::NotWasmArtifact {
                    reference: reference.to_string(),
                    what: format!("the file is not a component `oci-wasm` can describe ({e})"),
                }
            })?;
        let r = reference.client_reference();
        let wasm = oci_wasm::WasmClient::new(self.client.clone());
        self.run(wasm.push(&r, &self.auth, layer, config, None))
            .map_err(|e| match e.downcast::<OciDistributionError>() {
                Ok(e) => self.error(e),
                Err(e) => OciError::Registry {
                    registry: self.name.clone(),
                    message: format!("{e:#}"),
                },
            })?;
        self.resolve_tag(reference)
    }

    /// The client's error, as Lens says it: a refusal of credentials names where they were
    /// looked for.
    fn error(&self, e: OciDistributionError) -> OciError {
        let denied = |status: &str| OciError::Denied {
            registry: self.name.clone(),
            status: status.to_string(),
            looked: self.looked.clone(),
        };
        let message = match &e {
            OciDistributionError::AuthenticationFailure(_)
            | OciDistributionError::UnauthorizedError { .. } => return denied("401 Unauthorized"),
            OciDistributionError::ServerError { code: 401, .. } => {
                return denied("401 Unauthorized");
            }
            OciDistributionError::ServerError { code: 403, .. } => return denied("403 Forbidden"),
            OciDistributionError::RegistryError { envelope, .. } => {
                if envelope
                    .errors
                    .iter()
                    .any(|x| matches!(x.code, OciErrorCode::Unauthorized))
                {
                    return denied("401 Unauthorized");
                }
                if envelope
                    .errors
                    .iter()
                    .any(|x| matches!(x.code, OciErrorCode::Denied))
                {
                    return denied("403 Forbidden");
                }
                let said: Vec<String> = envelope
                    .errors
                    .iter()
                    .map(|x| format!("{:?}: {}", x.code, x.message))
                    .collect();
                said.join("; ")
            }
            OciDistributionError::ServerError { code, message, .. } => {
                format!("HTTP {code}: {message}")
            }
            OciDistributionError::ImageManifestNotFoundError(m) => format!("not found: {m}"),
            OciDistributionError::RequestError(r) if r.is_connect() || r.is_timeout() => {
                format!(
                    "cannot reach it ({})",
                    crate::batch::last_error::one_line(&chain(r))
                )
            }
            other => chain(other),
        };
        OciError::Registry {
            registry: self.name.clone(),
            message: crate::batch::last_error::one_line(&message),
        }
    }
}

/// Whether a stream's error is the client's digest check failing.
fn is_digest_error(e: &std::io::Error) -> bool {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<DigestError>())
        .is_some_and(|d| matches!(d, DigestError::VerificationError { .. }))
}

/// An error and its causes, on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text = format!("{text}: {c}");
        cause = c.source();
    }
    text
}

/// The one `application/wasm` layer of a Wasm artifact's manifest, or what the manifest is
/// instead.
pub(super) fn wasm_layer(manifest: &serde_json::Value) -> Result<OciDescriptor, String> {
    let media = manifest["mediaType"].as_str().unwrap_or_default();
    if manifest.get("manifests").is_some() || media.contains("index") || media.contains("list") {
        return Err("it is an image index (several manifests), not one artifact".into());
    }
    if media == "application/vnd.docker.distribution.manifest.v2+json" {
        return Err("it is a Docker image manifest".into());
    }
    if manifest["schemaVersion"].as_i64() != Some(2) || manifest.get("layers").is_none() {
        return Err("its manifest is not an OCI image manifest".into());
    }
    let config = manifest["config"]["mediaType"].as_str().unwrap_or_default();
    if config != oci_wasm::WASM_MANIFEST_CONFIG_MEDIA_TYPE {
        return Err(format!(
            "its config media type is `{config}` (a container image or another artifact)"
        ));
    }
    let layers = manifest["layers"].as_array().cloned().unwrap_or_default();
    let [layer] = layers.as_slice() else {
        return Err(format!("it has {} layers, not one", layers.len()));
    };
    let layer: OciDescriptor = serde_json::from_value(layer.clone())
        .map_err(|e| format!("its layer is not a descriptor ({e})"))?;
    if layer.media_type != oci_wasm::WASM_LAYER_MEDIA_TYPE {
        return Err(format!("its layer's media type is `{}`", layer.media_type));
    }
    Ok(layer)
}

/// The credentials for `registry`: `LENS_REGISTRY_USERNAME`/`_PASSWORD` when both are set,
/// else the Docker config's (`DOCKER_CONFIG`, else `~/.docker/config.json`, credential helpers
/// included), else anonymous; and where they were looked for.
fn credentials(registry: &str) -> (RegistryAuth, String) {
    if let (Ok(user), Ok(password)) = (std::env::var(USERNAME_VAR), std::env::var(PASSWORD_VAR)) {
        return (
            RegistryAuth::Basic(user, password),
            format!("{USERNAME_VAR}/{PASSWORD_VAR} (set; the registry refused them)"),
        );
    }
    let env = format!("{USERNAME_VAR}/{PASSWORD_VAR} (unset)");
    match docker_credential::get_credential(registry) {
        Ok(docker_credential::DockerCredential::UsernamePassword(user, password)) => (
            RegistryAuth::Basic(user, password),
            format!("{env}, then the Docker config (an entry for {registry}, refused)"),
        ),
        Ok(docker_credential::DockerCredential::IdentityToken(token)) => (
            RegistryAuth::Bearer(token),
            format!("{env}, then the Docker config (a token for {registry}, refused)"),
        ),
        Err(e) => (
            RegistryAuth::Anonymous,
            format!("{env}, then the Docker config ({e}); so anonymously"),
        ),
    }
}
