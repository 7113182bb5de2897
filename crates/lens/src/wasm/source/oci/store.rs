//! The node's store of components pulled by digest: `<store>/sha256-<manifest digest>/` holds
//! the manifest as sent (`manifest.json`) and its layer (`component.wasm`), written only once
//! both are verified (a temporary directory renamed into place). A pull takes the digest's
//! lock (`sha256-<digest>.lock`), so the ranks of a node starting together download once and
//! the others find it there; a digest already stored needs no network at all.
//!
//! An entry with `verify = { key = … }` takes a component only if one of its signatures (cosign's
//! layout, `signature`) is by that key: checked before the layer is downloaded, and kept beside
//! it (`signatures.json`) so that a later start verifies offline; if the stored signatures do
//! not verify with the key (another key, or signed after it was stored), they are asked for
//! again.
//!
//! Where the store is, its caller says (the loader: in the compilation cache's directory,
//! `<cache>/oci`, with its ownership and mode rules).

use std::fs::{self, File};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::reference::OciReference;
use super::registry::{Artifact, MAX_MANIFEST_BYTES, Registry, wasm_layer};
use super::signature::{MAX_SIGNATURES, Signed, VerifyKey, signature_tag};
use crate::error::OciError;

/// A stored component.
#[derive(Debug, Clone)]
pub struct Stored {
    /// `component.wasm` in the store.
    pub path: PathBuf,
    /// Its SHA-256 (hex): the manifest's layer digest, which the loader then checks.
    pub sha256: String,
    /// Whether this call downloaded it (else it was in the store).
    pub pulled: bool,
}

/// The component `reference` (pinned) names, from `store` or pulled into it under its lock.
pub(crate) fn fetch(
    store: &Path,
    reference: &OciReference,
    max_bytes: u64,
    insecure: &[String],
    verify: Option<&VerifyKey>,
) -> Result<Stored, OciError> {
    let digest = reference.digest.as_deref().unwrap_or_default();
    let io = |source| OciError::Store {
        dir: store.to_path_buf(),
        source,
    };
    crate::wasm::source::private_dir(store).map_err(io)?;
    let lock = {
        use std::os::unix::fs::OpenOptionsExt;
        File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(store.join(format!("sha256-{digest}.lock")))
            .map_err(io)?
    };
    lock.lock().map_err(io)?;
    let dir = store.join(format!("sha256-{digest}"));
    if let Some(stored) = stored(&dir, digest) {
        if let Some(key) = verify
            && key.verify(digest, &stored_signatures(&dir)).is_err()
        {
            // Signed since it was stored, or by another key than the stored signatures: asked
            // for again, and kept once one verifies.
            let registry = Registry::new(reference, insecure)?;
            let signatures = verified_signatures(&registry, reference, key)?;
            write_signatures(&dir, &signatures, store).map_err(io)?;
        }
        return Ok(stored);
    }
    let registry = Registry::new(reference, insecure)?;
    // Checked before the layer is downloaded: an unsigned component is never fetched.
    let signatures = match verify {
        Some(key) => Some(verified_signatures(&registry, reference, key)?),
        None => None,
    };
    let artifact = registry.manifest(reference, max_bytes)?;
    let tmp = store.join(format!(".sha256-{digest}.tmp{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    crate::wasm::source::private_dir(&tmp).map_err(io)?;
    let written =
        write(&tmp, &registry, reference, &artifact, max_bytes).and_then(|()| match &signatures {
            Some(s) => write_signatures(&tmp, s, store).map_err(io),
            None => Ok(()),
        });
    if let Err(e) = written {
        let _ = fs::remove_dir_all(&tmp);
        return Err(e);
    }
    let _ = fs::remove_dir_all(&dir);
    fs::rename(&tmp, &dir).map_err(io)?;
    Ok(Stored {
        path: dir.join("component.wasm"),
        sha256: artifact.layer_digest,
        pulled: true,
    })
}

/// The signatures of `reference`'s artifact in the registry, if one of them is `key`'s.
fn verified_signatures(
    registry: &Registry,
    reference: &OciReference,
    key: &VerifyKey,
) -> Result<Vec<Signed>, OciError> {
    let digest = reference.digest.as_deref().unwrap_or_default();
    let signatures = registry.signatures(reference)?;
    key.verify(digest, &signatures)
        .map_err(|why| OciError::Signature {
            reference: reference.to_string(),
            key: key.path().to_path_buf(),
            tag: signature_tag(digest),
            why,
        })?;
    Ok(signatures)
}

/// The signatures stored beside a component (`signatures.json`; none if absent or unreadable:
/// then asked for again).
fn stored_signatures(dir: &Path) -> Vec<Signed> {
    let mut text = Vec::new();
    let read = File::open(dir.join(SIGNATURES))
        .and_then(|f| f.take(SIGNATURES_MAX_BYTES + 1).read_to_end(&mut text));
    if read.is_err() || text.len() as u64 > SIGNATURES_MAX_BYTES {
        return Vec::new();
    }
    let mut all: Vec<Signed> = serde_json::from_slice(&text).unwrap_or_default();
    all.truncate(MAX_SIGNATURES);
    all
}

/// Writes `signatures` as `dir/signatures.json`, whole or not at all (a temporary file in
/// `store` renamed into place).
fn write_signatures(dir: &Path, signatures: &[Signed], store: &Path) -> std::io::Result<()> {
    let tmp = store.join(format!(".signatures.tmp{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    let mut file = private_file(&tmp)?;
    file.write_all(&serde_json::to_vec(signatures).map_err(std::io::Error::other)?)?;
    file.sync_all()?;
    fs::rename(&tmp, dir.join(SIGNATURES))
}

/// The file beside a component holding its signatures as the registry served them.
const SIGNATURES: &str = "signatures.json";
/// The most read of it: [`MAX_SIGNATURES`] payloads of at most 64 KiB, base64.
const SIGNATURES_MAX_BYTES: u64 = (MAX_SIGNATURES as u64) * (100 << 10);

/// Pulls the layer into `tmp/component.wasm` and writes the manifest beside it.
fn write(
    tmp: &Path,
    registry: &Registry,
    reference: &OciReference,
    artifact: &Artifact,
    max_bytes: u64,
) -> Result<(), OciError> {
    let io = |source| OciError::Store {
        dir: tmp.to_path_buf(),
        source,
    };
    let file = private_file(&tmp.join("component.wasm")).map_err(io)?;
    let mut out = BufWriter::new(file);
    registry.pull_layer(reference, artifact, max_bytes, &mut out)?;
    let file = out.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    let mut manifest = private_file(&tmp.join("manifest.json")).map_err(io)?;
    manifest.write_all(&artifact.manifest).map_err(io)?;
    manifest.sync_all().map_err(io)
}

fn private_file(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    File::options()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

/// The component stored under `dir` for `digest`, if its manifest is there, is the one of that
/// digest and names a layer of the stored file's size (the loader then checks its SHA-256
/// against the layer digest: a changed file is refused, never run).
fn stored(dir: &Path, digest: &str) -> Option<Stored> {
    let mut manifest = Vec::new();
    File::open(dir.join("manifest.json"))
        .ok()?
        .take(MAX_MANIFEST_BYTES as u64 + 1)
        .read_to_end(&mut manifest)
        .ok()?;
    if hex::encode(Sha256::digest(&manifest)) != digest {
        return None;
    }
    let json: serde_json::Value = serde_json::from_slice(&manifest).ok()?;
    // Checked as when it was pulled (the same manifest, so the same answer).
    let layer = wasm_layer(&json).ok()?;
    let sha256 = layer.digest.strip_prefix("sha256:")?.to_string();
    let path = dir.join("component.wasm");
    let size = fs::metadata(&path).ok()?.len();
    (u64::try_from(layer.size).ok() == Some(size)).then_some(Stored {
        path,
        sha256,
        pulled: false,
    })
}
