//! Components from an OCI registry: a real one (Debian's `docker-registry`, on loopback), pushed
//! to with `lens push`, loaded through every entry point (a config, `lens check`, `lens pull`,
//! the Rust API), once per node and offline after that; each bad case refused with its message
//! and nothing unverified kept.

mod pull;
mod refusals;

use std::path::Path;
use std::process::{Command, Output};

use lens_test_support::registry::Registry;

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
    let pinned = said
        .lines()
        .find_map(|l| l.trim().strip_prefix("path = \""))
        .and_then(|l| l.strip_suffix('"'))
        .unwrap_or_else(|| panic!("no config line in: {said}"))
        .to_string();
    assert!(
        pinned.starts_with(&format!("{reference}@sha256:")),
        "{said}"
    );
    pinned
}

/// The SHA-256 (hex) of a file.
fn sha256_of(path: &Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(std::fs::read(path).unwrap()))
}
