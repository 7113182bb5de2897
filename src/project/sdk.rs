//! The guest SDKs and the WIT they implement, carried inside the `lens` binary and installed
//! once per user and version, so that a project made by `lens new` builds anywhere: outside this
//! repository, on a machine without a checkout of it.
//!
//! Installed under `<lens home>/sdk/<version>-<digest>/` with the repository's own layout (`wit/`,
//! `sdk/python`, `sdk/js`, `sdk/rust`: the Rust SDK finds its WIT at `../../wit`), plus what the
//! HTTP worlds of `wit/http` resolve under `wit/http/deps/`: `lens:exporter` and the WASI
//! packages (`build.rs` takes those from the `wasmtime-wasi-http` this binary links). The digest
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
    file!("wit/http/worlds.wit"),
    file!("sdk/python/pyproject.toml"),
    file!("sdk/python/requirements.txt"),
    file!("sdk/python/lens_exporter_sdk/__init__.py"),
    file!("sdk/python/lens_exporter_sdk/_otlp.py"),
    file!("sdk/python/lens_exporter_sdk/_process.py"),
    file!("sdk/python/lens_exporter_sdk/_results.py"),
    file!("sdk/python/lens_exporter_sdk/http.py"),
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

/// A WASI package the HTTP worlds import, as `(file name, contents)`: copied by `build.rs` from
/// the `wasmtime-wasi-http` crate the host links.
macro_rules! wasi {
    ($file:literal) => {
        (
            $file,
            include_str!(concat!(env!("OUT_DIR"), "/wasi-wit/", $file)),
        )
    };
}

/// The WASI packages of `wit/http` (installed under `wit/http/deps/`).
const WASI: &[(&str, &str)] = &[
    wasi!("cli.wit"),
    wasi!("clocks.wit"),
    wasi!("filesystem.wit"),
    wasi!("http.wit"),
    wasi!("io.wit"),
    wasi!("random.wit"),
    wasi!("sockets.wit"),
];

/// The files of the installed SDK that are not a repository file of the same path: the HTTP
/// worlds' dependencies, `lens:exporter` (the repository's `wit/*.wit`) and the WASI packages,
/// laid out under `wit/http/deps/` as WIT tools resolve them.
fn generated() -> Vec<(String, &'static str)> {
    let lens = FILES
        .iter()
        .filter(|(path, _)| path.starts_with("wit/") && !path["wit/".len()..].contains('/'))
        .map(|(path, text)| {
            (
                format!("wit/http/deps/lens-exporter/{}", &path["wit/".len()..]),
                *text,
            )
        });
    let wasi = WASI
        .iter()
        .map(|(file, text)| (format!("wit/http/deps/{file}"), *text));
    lens.chain(wasi).collect()
}

/// Every installed file: [`FILES`], then the generated ones, as `(path, contents)`.
fn all_files() -> Vec<(String, &'static str)> {
    FILES
        .iter()
        .map(|(path, text)| (path.to_string(), *text))
        .chain(generated())
        .collect()
}

/// The digest of [`FILES`] and the generated files (paths and contents), hex, 12 characters.
pub fn digest() -> String {
    let mut h = Sha256::new();
    for (path, text) in all_files() {
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

    /// The HTTP worlds' package (`lens:exporter-http`), its dependencies under `deps/`.
    pub fn wit_http(&self) -> PathBuf {
        self.root.join("wit/http")
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
        for (path, text) in all_files() {
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
