//! Components from an OCI registry: a real one (Debian's `docker-registry`, on loopback), pushed
//! to with `lens push`, loaded through every entry point (a config, `lens check`, `lens pull`,
//! the Rust API), once per node and offline after that; each bad case refused with its message
//! and nothing unverified kept.

mod pull;
mod refusals;
mod signatures;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output};

use lens_test_support::registry::Registry;
use sha2::Digest;

/// `lens` using `cache` as its compilation cache (and so its component store).
fn lens_with(cache: &Path) -> Command {
    let mut c = crate::lens();
    c.env("LENS_WASM_CACHE_DIR", cache)
        .env_remove("LENS_REGISTRY_USERNAME")
        .env_remove("LENS_REGISTRY_PASSWORD")
        .env("DOCKER_CONFIG", cache.join("no-docker-config"));
    c
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `lens push FILE REF` to `registry` as `repository:tag`; the pinned reference it printed.
fn push(registry: &Registry, file: &Path, repository: &str, tag: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let reference = registry.reference(repository, tag);
    let out = lens_with(dir.path())
        .arg("push")
        .arg(file)
        .arg(&reference)
        .output()
        .unwrap();
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    let pinned = pinned_line(&said);
    assert!(
        pinned.starts_with(&format!("{reference}@sha256:")),
        "{said}"
    );
    pinned
}

/// The pinned reference in the config line `lens push` printed in `said`.
fn pinned_line(said: &str) -> String {
    said.lines()
        .find_map(|l| l.trim().strip_prefix("path = \""))
        .and_then(|l| l.strip_suffix('"'))
        .unwrap_or_else(|| panic!("no config line in: {said}"))
        .to_string()
}

/// The SHA-256 (hex) of a file.
fn sha256_of(path: &Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

/// One HTTP/1.1 request to `registry`; the status and the `Location` header of the answer.
pub(super) fn request(
    registry: &Registry,
    method: &str,
    target: &str,
    content_type: &str,
    body: &[u8],
) -> (u16, Option<String>) {
    let mut s = TcpStream::connect(registry.authority()).unwrap();
    write!(
        s,
        "{method} {target} HTTP/1.1\r\nHost: {}\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        registry.authority(),
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let location = answer
        .lines()
        .find_map(|l| l.strip_prefix("Location: "))
        .map(|l| l.trim().to_string());
    (status, location)
}

/// Uploads `bytes` as a blob of `repository`; its digest.
pub(super) fn put_blob(registry: &Registry, repository: &str, bytes: &[u8]) -> String {
    let digest = format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)));
    let (status, location) = request(
        registry,
        "POST",
        &format!("/v2/{repository}/blobs/uploads/"),
        "application/octet-stream",
        b"",
    );
    assert_eq!(status, 202);
    let location = location.unwrap();
    let path = location
        .split_once(&registry.authority())
        .map_or(location.as_str(), |(_, p)| p);
    let sep = if path.contains('?') { '&' } else { '?' };
    let (status, _) = request(
        registry,
        "PUT",
        &format!("{path}{sep}digest={digest}"),
        "application/octet-stream",
        bytes,
    );
    assert_eq!(status, 201);
    digest
}

/// Puts `manifest` (of the media type it says) under `repository:tag`; its digest, and the
/// reference pinned to it.
pub(super) fn put_manifest(
    registry: &Registry,
    repository: &str,
    tag: &str,
    manifest: &serde_json::Value,
) -> (String, String) {
    let body = serde_json::to_vec(manifest).unwrap();
    let (status, _) = request(
        registry,
        "PUT",
        &format!("/v2/{repository}/manifests/{tag}"),
        manifest["mediaType"].as_str().unwrap(),
        &body,
    );
    assert_eq!(status, 201, "{}", registry.log_text());
    let digest = hex::encode(sha2::Sha256::digest(&body));
    let reference = format!("{}@sha256:{digest}", registry.reference(repository, tag));
    (digest, reference)
}
