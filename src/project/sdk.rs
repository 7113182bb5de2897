//! The guest SDKs and the WIT they implement, carried inside the `lens` binary and installed
//! once per user and version, so that a project made by `lens new` builds anywhere: outside this
//! repository, on a machine without a checkout of it.
//!
//! Installed under `<lens home>/sdk/<version>-<digest>/` with the repository's own layout (`wit/`,
//! `sdk/python`, `sdk/js`, `sdk/rust`: the Rust SDK finds its WIT at `../../wit`). The digest
//! covers every file, so a `lens` built from changed SDK sources installs beside, never over, what
//! projects already depend on; a directory is complete only once renamed into place.

use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The SDKs' version (the WIT package's): what `lens-exporter.toml`'s `sdk` pins.
pub const SDK_VERSION: &str = "0.4.0";

/// A repository file, as `(path, contents)`.
macro_rules! file {
    ($path:literal) => {
        ($path, include_str!(concat!("../../", $path)))
    };
}

/// Every file of the SDKs a project needs (their tests stay in the repository). A test
/// (`tests/all/project`) checks the list against the repository's directories.
pub const FILES: &[(&str, &str)] = &[
    file!("wit/exporter.wit"),
    file!("wit/processors.wit"),
    file!("wit/metrics.wit"),
    file!("wit/logs.wit"),
    file!("sdk/python/pyproject.toml"),
    file!("sdk/python/requirements.txt"),
    file!("sdk/python/lens_exporter_sdk/__init__.py"),
    file!("sdk/python/lens_exporter_sdk/_otlp.py"),
    file!("sdk/python/lens_exporter_sdk/_process.py"),
    file!("sdk/python/lens_exporter_sdk/_sandbox.py"),
    file!("sdk/js/package.json"),
    file!("sdk/js/lens-exporter-sdk.js"),
    file!("sdk/rust/Cargo.toml"),
    file!("sdk/rust/src/adapter.rs"),
    file!("sdk/rust/src/bindings.rs"),
    file!("sdk/rust/src/context.rs"),
    file!("sdk/rust/src/export.rs"),
    file!("sdk/rust/src/http.rs"),
    file!("sdk/rust/src/lib.rs"),
    file!("sdk/rust/src/logs.rs"),
    file!("sdk/rust/src/metrics.rs"),
    file!("sdk/rust/src/process.rs"),
    file!("sdk/rust/src/serialize.rs"),
    file!("sdk/rust/src/span.rs"),
    file!("sdk/rust/src/tests.rs"),
    file!("sdk/rust/src/trace.rs"),
    file!("sdk/rust/src/value.rs"),
    file!("sdk/rust/src/wire.rs"),
];

/// The digest of [`FILES`] (paths and contents), hex, 12 characters.
pub fn digest() -> String {
    let mut h = Sha256::new();
    for (path, text) in FILES {
        h.update(path.as_bytes());
        h.update([0]);
        h.update((text.len() as u64).to_le_bytes());
        h.update(text.as_bytes());
    }
    hex::encode(h.finalize())[..12].to_string()
}

/// The installed SDKs: `<home>/sdk/<version>-<digest>`.
#[derive(Debug, Clone)]
pub struct InstalledSdk {
    /// The root, laid out as the repository (`wit/`, `sdk/…`).
    pub root: PathBuf,
}

impl InstalledSdk {
    /// The WIT package's directory.
    pub fn wit(&self) -> PathBuf {
        self.root.join("wit")
    }

    /// One SDK's directory: `python`, `js` or `rust`.
    pub fn sdk(&self, language: &str) -> PathBuf {
        self.root.join("sdk").join(language)
    }
}

/// Installs the SDKs under `home` unless they are there already; returns where they are.
pub fn install(home: &Path) -> io::Result<InstalledSdk> {
    let root = home.join("sdk").join(format!("{SDK_VERSION}-{}", digest()));
    if !root.is_dir() {
        std::fs::create_dir_all(home.join("sdk"))?;
        let staging = tempfile::Builder::new()
            .prefix(".installing-")
            .tempdir_in(home.join("sdk"))?;
        for (path, text) in FILES {
            let to = staging.path().join(path);
            std::fs::create_dir_all(to.parent().expect("a file in a directory"))?;
            std::fs::write(&to, text)?;
        }
        // Another `lens` may have installed the same files meanwhile: theirs is as good.
        if let Err(e) = std::fs::rename(staging.path(), &root)
            && !root.is_dir()
        {
            return Err(e);
        }
    }
    Ok(InstalledSdk { root })
}
