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

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use futures_util::StreamExt;
use oci_client::Client;
use oci_client::client::{ClientConfig, ClientProtocol, ImageLayer};
use oci_client::errors::{DigestError, OciDistributionError, OciErrorCode};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use sha2::{Digest, Sha256};

use super::reference::OciReference;
use super::signature::{
    MAX_PAYLOAD_BYTES, MAX_SIGNATURES, PAYLOAD_MEDIA_TYPE, SIGNATURE_ANNOTATION, Signed,
    signature_tag,
};
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
    /// Manifests are read with this client, not `oci-client`'s (which reads a body whole):
    /// counted as they arrive, refused past [`MAX_MANIFEST_BYTES`].
    http: reqwest::Client,
    /// `http` or `https`.
    scheme: &'static str,
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
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(60))
            .user_agent(concat!("lens/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| OciError::Registry {
                registry: reference.registry.clone(),
                message: format!("cannot build an HTTP client: {e}"),
            })?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| OciError::Registry {
                registry: reference.registry.clone(),
                message: format!("cannot start an I/O runtime: {e}"),
            })?;
        Ok(Self {
            client: Client::new(config),
            http,
            scheme: if plain { "http" } else { "https" },
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
        let not_wasm = |what: String| OciError::NotWasmArtifact {
            reference: reference.to_string(),
            what,
        };
        let bytes = self
            .run(self.manifest_bytes(&r, &ACCEPTED))
            .map_err(|e| self.fetch_error(e))?
            .map_err(|size| {
                not_wasm(format!(
                    "its manifest is {size} bytes or more, over {MAX_MANIFEST_BYTES}: refused \
                     while it arrived"
                ))
            })?;
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

    /// The manifest `r` names, read as it arrives: `Ok(Err(size))` once it passes
    /// [`MAX_MANIFEST_BYTES`] (the announced size, or what arrived so far), nothing more read.
    /// Authenticated as `oci-client` would (its token exchange, or the credentials as basic
    /// auth), for the registry's own host only (`reqwest` drops them on a redirect elsewhere).
    async fn manifest_bytes(
        &self,
        r: &oci_client::Reference,
        accept: &[&str],
    ) -> Result<Result<Vec<u8>, u64>, ManifestFetch> {
        let token = self
            .client
            .auth(r, &self.auth, oci_client::RegistryOperation::Pull)
            .await
            .map_err(ManifestFetch::Client)?;
        let url = format!(
            "{}://{}/v2/{}/manifests/{}",
            self.scheme,
            r.resolve_registry(),
            r.repository(),
            r.digest().or(r.tag()).unwrap_or("latest")
        );
        let mut request = self
            .http
            .get(&url)
            .header(reqwest::header::ACCEPT, accept.join(", "));
        request = match (&token, &self.auth) {
            (Some(token), _) | (None, RegistryAuth::Bearer(token)) => request.bearer_auth(token),
            (None, RegistryAuth::Basic(user, password)) => request.basic_auth(user, Some(password)),
            (None, _) => request,
        };
        let mut response = request.send().await.map_err(ManifestFetch::Http)?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Err(ManifestFetch::NotFound);
        }
        if !status.is_success() {
            // An error's body is read as far as one line of message needs (a body that fails
            // to arrive leaves the status alone to say it).
            let said = read_bounded(&mut response, 4096)
                .await
                .map(|(said, _)| said)
                .unwrap_or_default();
            return Err(ManifestFetch::Status(
                status.as_u16(),
                String::from_utf8_lossy(&said).into_owned(),
            ));
        }
        let limit = MAX_MANIFEST_BYTES as u64;
        if let Some(announced) = response.content_length().filter(|n| *n > limit) {
            return Ok(Err(announced));
        }
        match read_bounded(&mut response, MAX_MANIFEST_BYTES)
            .await
            .map_err(ManifestFetch::Http)?
        {
            (bytes, None) => Ok(Ok(bytes)),
            (_, Some(arrived)) => Ok(Err(arrived)),
        }
    }

    /// A manifest fetch's failure, as Lens says it.
    fn fetch_error(&self, e: ManifestFetch) -> OciError {
        let denied = |status: &str| OciError::Denied {
            registry: self.name.clone(),
            status: status.to_string(),
            looked: self.looked.clone(),
        };
        let message = match e {
            ManifestFetch::Client(e) => return self.error(e),
            ManifestFetch::Status(401, _) => return denied("401 Unauthorized"),
            ManifestFetch::Status(403, _) => return denied("403 Forbidden"),
            ManifestFetch::NotFound => "not found: no such manifest".to_string(),
            ManifestFetch::Status(code, body) => format!("HTTP {code}: {body}"),
            ManifestFetch::Http(e) if e.is_connect() || e.is_timeout() => {
                format!("cannot reach it ({})", chain(&e))
            }
            ManifestFetch::Http(e) => chain(&e),
        };
        OciError::Registry {
            registry: self.name.clone(),
            message: crate::batch::last_error::one_line(&message),
        }
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
        let mismatch = |actual: String| OciError::DigestMismatch {
            reference: reference.to_string(),
            what: "the component layer",
            expected: format!("sha256:{}", artifact.layer_digest),
            actual: format!("sha256:{actual}"),
        };
        let actual = self
            .run(self.stream(&r, &layer, limit, out))
            .map_err(|e| match e {
                Streamed::TooLarge(size) => OciError::TooLarge {
                    reference: reference.to_string(),
                    size,
                    limit,
                },
                Streamed::Digest(actual) => mismatch(actual),
                Streamed::Failed(e) => e,
            })?;
        if actual != artifact.layer_digest {
            return Err(mismatch(actual));
        }
        Ok(())
    }

    /// Streams the blob `layer` of `r` into `out`, counting and hashing as it arrives: stopped
    /// past `limit`; returns its SHA-256 (hex).
    async fn stream(
        &self,
        r: &oci_client::Reference,
        layer: &OciDescriptor,
        limit: u64,
        out: &mut (impl Write + Send),
    ) -> Result<String, Streamed> {
        let mut stream = self
            .client
            .pull_blob_stream(r, layer)
            .await
            .map_err(|e| Streamed::Failed(self.error(e)))?;
        if let Some(announced) = stream.content_length.filter(|n| *n > limit) {
            return Err(Streamed::TooLarge(announced));
        }
        let mut hasher = Sha256::new();
        let mut seen = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                // The client checks the digest at the end of the stream too (against the
                // registry's digest header and the layer's): said as Lens says it.
                Err(e) if is_digest_error(&e) => {
                    return Err(Streamed::Digest(hex::encode(hasher.finalize())));
                }
                Err(e) => {
                    return Err(Streamed::Failed(OciError::Registry {
                        registry: self.name.clone(),
                        message: format!("reading {}: {e}", layer.digest),
                    }));
                }
            };
            seen += chunk.len() as u64;
            if seen > limit {
                return Err(Streamed::TooLarge(seen));
            }
            hasher.update(&chunk);
            out.write_all(&chunk).map_err(|e| {
                Streamed::Failed(OciError::Registry {
                    registry: self.name.clone(),
                    message: format!("writing {}: {e}", layer.digest),
                })
            })?;
        }
        Ok(hex::encode(hasher.finalize()))
    }

    /// The signatures of the artifact `reference` (pinned) names, in cosign's layout: the
    /// payload layers of the manifest tagged `sha256-DIGEST.sig`; none if there is no such tag.
    pub(crate) fn signatures(&self, reference: &OciReference) -> Result<Vec<Signed>, OciError> {
        let r = signature_reference(reference);
        let bad = |message: String| OciError::Registry {
            registry: self.name.clone(),
            message: format!(
                "the signatures at {}: {message}",
                r.tag().unwrap_or_default()
            ),
        };
        let bytes = match self.run(self.manifest_bytes(&r, &SIGNATURE_MANIFESTS)) {
            Err(ManifestFetch::NotFound) => return Ok(Vec::new()),
            Err(e) => return Err(self.fetch_error(e)),
            Ok(Err(size)) => {
                return Err(bad(format!(
                    "a manifest of {size} bytes or more, over {MAX_MANIFEST_BYTES}"
                )));
            }
            Ok(Ok(bytes)) => bytes,
        };
        let manifest: oci_client::manifest::OciImageManifest = serde_json::from_slice(&bytes)
            .map_err(|e| bad(format!("not an image manifest ({e})")))?;
        let mut found = Vec::new();
        for layer in manifest
            .layers
            .iter()
            .filter(|l| l.media_type == PAYLOAD_MEDIA_TYPE)
        {
            if found.len() == MAX_SIGNATURES {
                log::warn!(
                    "{reference}: more than {MAX_SIGNATURES} signatures; the rest are not read"
                );
                break;
            }
            let Some(signature) = layer
                .annotations
                .as_ref()
                .and_then(|a| a.get(SIGNATURE_ANNOTATION))
            else {
                continue;
            };
            let expected = layer.digest.strip_prefix("sha256:").unwrap_or_default();
            let mut payload = Vec::new();
            let actual = self
                .run(self.stream(&r, layer, MAX_PAYLOAD_BYTES, &mut payload))
                .map_err(|e| match e {
                    Streamed::TooLarge(n) => bad(format!(
                        "a payload of {n} bytes or more, over {MAX_PAYLOAD_BYTES}"
                    )),
                    Streamed::Digest(_) => bad(format!("payload {} damaged", layer.digest)),
                    Streamed::Failed(e) => e,
                })?;
            if actual != expected {
                return Err(bad(format!(
                    "payload {} arrived with digest sha256:{actual}",
                    layer.digest
                )));
            }
            found.push(Signed {
                payload: BASE64.encode(&payload),
                signature: signature.clone(),
            });
        }
        Ok(found)
    }

    /// Adds `signed` to the signatures of the artifact `reference` (pinned) names, keeping
    /// those already there (cosign's layout, as `cosign sign` appends).
    pub(crate) fn push_signature(
        &self,
        reference: &OciReference,
        signed: Signed,
    ) -> Result<(), OciError> {
        let mut all = self.signatures(reference)?;
        if !all.contains(&signed) {
            all.push(signed);
        }
        let layers: Vec<ImageLayer> = all
            .iter()
            .map(|s| ImageLayer {
                data: BASE64.decode(&s.payload).unwrap_or_default().into(),
                media_type: PAYLOAD_MEDIA_TYPE.to_string(),
                annotations: Some([(SIGNATURE_ANNOTATION.to_string(), s.signature.clone())].into()),
            })
            .collect();
        let diff_ids: Vec<String> = layers.iter().map(|l| l.sha256_digest()).collect();
        // The config cosign writes for a signature image.
        let config = serde_json::json!({
            "architecture": "",
            "created": "0001-01-01T00:00:00Z",
            "history": [{ "created": "0001-01-01T00:00:00Z" }],
            "os": "",
            "rootfs": { "type": "layers", "diff_ids": diff_ids },
            "config": {},
        });
        let config = oci_client::client::Config {
            data: serde_json::to_vec(&config).expect("JSON").into(),
            media_type: oci_client::manifest::IMAGE_CONFIG_MEDIA_TYPE.to_string(),
            annotations: None,
        };
        let manifest = oci_client::manifest::OciImageManifest::build(&layers, &config, None);
        let r = signature_reference(reference);
        self.run(
            self.client
                .push(&r, &layers, config, &self.auth, Some(manifest)),
        )
        .map_err(|e| self.error(e))?;
        Ok(())
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

/// How fetching a manifest failed.
enum ManifestFetch {
    /// The registry has none of that name.
    NotFound,
    /// Another answer than success: its status and the start of its body.
    Status(u16, String),
    /// The request failed.
    Http(reqwest::Error),
    /// `oci-client`'s token exchange failed.
    Client(OciDistributionError),
}

/// How streaming a blob ended, short of its bytes.
enum Streamed {
    /// Past the limit: the size announced or counted so far.
    TooLarge(u64),
    /// The client's own digest check failed: the digest of what arrived so far.
    Digest(String),
    /// Any other error, as Lens says it.
    Failed(OciError),
}

/// The manifest types a signature tag may hold (cosign writes OCI's; older cosign Docker's).
const SIGNATURE_MANIFESTS: [&str; 2] = [
    oci_client::manifest::OCI_IMAGE_MEDIA_TYPE,
    "application/vnd.docker.distribution.manifest.v2+json",
];

/// The tag holding the signatures of `reference`'s (pinned) artifact, in its repository.
fn signature_reference(reference: &OciReference) -> oci_client::Reference {
    oci_client::Reference::with_tag(
        reference.registry.clone(),
        reference.repository.clone(),
        signature_tag(reference.digest.as_deref().unwrap_or_default()),
    )
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

/// `response`'s body as it arrives, at most `limit` bytes of it: the bytes, and `Some(n)` once
/// more than `limit` arrived (`n` bytes so far; nothing more is read, the bytes are the first
/// `limit`).
async fn read_bounded(
    response: &mut reqwest::Response,
    limit: usize,
) -> Result<(Vec<u8>, Option<u64>), reqwest::Error> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        bytes.extend_from_slice(&chunk);
        if bytes.len() > limit {
            let arrived = bytes.len() as u64;
            bytes.truncate(limit);
            return Ok((bytes, Some(arrived)));
        }
    }
    Ok((bytes, None))
}
