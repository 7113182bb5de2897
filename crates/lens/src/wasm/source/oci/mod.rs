//! Stage 1, source, from a registry: a component named `oci://HOST[:PORT]/REPOSITORY[:TAG]
//! @sha256:DIGEST` wherever a `.wasm` path is accepted, resolved to a verified file in the
//! node's store before the rest of the host sees it (then read, checked and compiled as any
//! file, the layer's digest as its `sha256` pin).
//!
//! Owns: the reference's grammar (`reference`), the registry client (`registry`), the store
//! (`store`, in a directory the caller names). May call: nothing else of the wasm host.

mod reference;
mod registry;
mod signature;
mod store;

use std::path::Path;

pub use reference::{OciReference, SCHEME, is_reference};
pub use registry::{MAX_MANIFEST_BYTES, PASSWORD_VAR, USERNAME_VAR};
pub use signature::{
    MAX_KEY_BYTES, MAX_PAYLOAD_BYTES, MAX_SIGNATURES, PASSWORD_VAR as SIGN_PASSWORD_VAR, SignKey,
    Signed, VerifyKey, payload, signature_tag,
};
pub use store::Stored;

use crate::error::OciError;

/// What an entry says about its reference.
#[derive(Debug, Clone, Copy, Default)]
pub struct OciChecks<'a> {
    /// Follow a tag without a digest (`allow_unpinned = true`).
    pub allow_unpinned: bool,
    /// Registries reached over plain http although not this machine (`insecure_registries`).
    pub insecure_registries: &'a [String],
    /// Use the component only if it carries a valid signature by this public key
    /// (`verify = { key = … }`).
    pub verify_key: Option<&'a Path>,
}

/// The stored component `text` names (pulled into the store if it is not there yet), and its
/// SHA-256. A reference without a digest is refused, with the digest its tag resolves to now,
/// unless `checks.allow_unpinned`; the layer may be at most `max_bytes`.
pub fn resolve(
    text: &str,
    checks: OciChecks<'_>,
    max_bytes: u64,
    store: &Path,
) -> Result<(OciReference, Stored), OciError> {
    let reference = OciReference::parse(text)?;
    // Read first: a key that cannot be used is said before any network.
    let key = checks.verify_key.map(VerifyKey::read).transpose()?;
    let pinned = match &reference.digest {
        Some(_) => reference,
        None => {
            let registry = registry::Registry::new(&reference, checks.insecure_registries)?;
            let digest = registry.resolve_tag(&reference)?;
            if !checks.allow_unpinned {
                return Err(OciError::Unpinned {
                    pinned: reference.pinned(&digest).to_string(),
                    digest: format!("sha256:{digest}"),
                    reference: reference.to_string(),
                });
            }
            reference.pinned(&digest)
        }
    };
    let stored = store::fetch(
        store,
        &pinned,
        max_bytes,
        checks.insecure_registries,
        key.as_ref(),
    )?;
    Ok((pinned, stored))
}

/// Uploads the component file at `file` to `text` (a tag) in the layout `wkg oci push` writes,
/// and signs it with `sign` if given (cosign's layout); returns the reference pinned to the
/// manifest's digest.
pub fn push(
    file: &Path,
    text: &str,
    insecure_registries: &[String],
    max_bytes: u64,
    sign: Option<&SignKey>,
) -> Result<OciReference, OciError> {
    let reference = OciReference::parse(text)?;
    if reference.digest.is_some() || reference.tag.is_none() {
        return Err(OciError::Reference {
            reference: text.to_string(),
            why: "a push names a tag and no digest (the registry computes it)".into(),
        });
    }
    // No header check of its own: `oci-wasm` refuses what is not a component.
    let bytes =
        super::read(file, max_bytes, |_| Ok(())).map_err(|e| OciError::NotWasmArtifact {
            reference: file.display().to_string(),
            what: e.to_string(),
        })?;
    let registry = registry::Registry::new(&reference, insecure_registries)?;
    let digest = registry.push(&reference, bytes)?;
    let pinned = reference.pinned(&digest);
    if let Some(key) = sign {
        registry.push_signature(&pinned, key.sign(&payload(&pinned, &digest))?)?;
    }
    Ok(pinned)
}
