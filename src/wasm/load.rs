//! Loading a `.wasm` exporter: every check happens here, before any span flows, and each
//! failure says what is wrong with the file.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

use super::bindings::ExporterPre;
use super::cache::{self, ArtifactCache};
use super::sandbox::HostState;

/// The version of `wit/exporter.wit` this host implements.
macro_rules! wit_version {
    () => {
        "0.2.0"
    };
}

/// The interface every exporter must export.
pub const EXPORT_NAME: &str = concat!("lens:exporter/span-exporter@", wit_version!());
/// The world exporters target, as `lens check` reports it.
pub const WORLD_NAME: &str = concat!("lens:exporter/exporter@", wit_version!());

/// Interface packages the host provides (WASI 0.2 and `wasi:http`; grants decide what works).
const PROVIDED: [&str; 7] = [
    "wasi:io/",
    "wasi:clocks/",
    "wasi:random/",
    "wasi:cli/",
    "wasi:filesystem/",
    "wasi:sockets/",
    "wasi:http/",
];

/// A validated, compiled and linked component, ready to instantiate.
pub struct LoadedComponent {
    /// Pre-linked instance factory: every restart instantiates from it.
    pub pre: ExporterPre<HostState>,
    /// The file.
    pub path: PathBuf,
    /// SHA-256 of the file, hex.
    pub sha256: String,
    /// File size in bytes.
    pub size: usize,
    /// What the component imports (its capabilities), e.g. `wasi:filesystem/types@0.2.6`.
    pub imports: Vec<String>,
    /// Time to check, compile (or map from the cache) and link.
    pub load_time: Duration,
}

/// What is wrong with a file, one sentence.
pub type LoadError = String;

/// Reads, checks and compiles `path` for `engine`, through the process's compilation cache.
pub fn load(
    path: &Path,
    sha256_pin: Option<&str>,
    engine: &Engine,
) -> Result<LoadedComponent, LoadError> {
    load_with(path, sha256_pin, engine, cache::process_cache())
}

fn check_pin(sha256: &str, pin: Option<&str>) -> Result<(), LoadError> {
    match pin {
        Some(pin) if !pin.eq_ignore_ascii_case(sha256) => Err(format!(
            "sha256 is {sha256}, but the config pins {}: refusing to load it",
            pin.to_ascii_lowercase()
        )),
        _ => Ok(()),
    }
}

/// [`load`] with an explicit cache (`None`: always compile, e.g. to measure a cold start).
pub fn load_with(
    path: &Path,
    sha256_pin: Option<&str>,
    engine: &Engine,
    cache: Option<&ArtifactCache>,
) -> Result<LoadedComponent, LoadError> {
    let started = Instant::now();
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "file not found".to_string(),
        _ => format!("cannot read the file: {e}"),
    })?;
    if meta.is_dir() {
        return Err("is a directory, not a .wasm component file".into());
    }
    let invalid = |e: wasmtime::Error| format!("invalid component: {e:#}");
    // Fast path: an unmodified file whose compiled form is on disk is neither read nor hashed.
    let known = cache.and_then(|c| c.known_sha256(path, &meta));
    if let Some(sha) = &known {
        check_pin(sha, sha256_pin)?;
    }
    let mapped = cache
        .zip(known)
        .and_then(|(c, sha)| Some((c.get(&sha, engine)?, sha)));
    let (component, sha256) = match mapped {
        Some(found) => found,
        None => {
            let bytes = std::fs::read(path).map_err(|e| format!("cannot read the file: {e}"))?;
            let sha256 = hex::encode(Sha256::digest(&bytes));
            check_pin(&sha256, sha256_pin)?;
            check_header(&bytes)?;
            let component = match cache {
                Some(c) => match c.get(&sha256, engine) {
                    Some(component) => {
                        // Same content under a new path or timestamp: remember it.
                        let _ = c.remember(path, &meta, &sha256);
                        component
                    }
                    None => c
                        .compile(engine, &bytes, &sha256, path, &meta)
                        .map_err(invalid)?,
                },
                None => Component::new(engine, &bytes).map_err(invalid)?,
            };
            (component, sha256)
        }
    };
    let imports: Vec<String> = component
        .component_type()
        .imports(engine)
        .map(|(name, _)| name.to_string())
        .collect();
    let exports: Vec<String> = component
        .component_type()
        .exports(engine)
        .map(|(name, _)| name.to_string())
        .collect();
    let mut linker: Linker<HostState> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
        .map_err(|e| format!("host linker: {e:#}"))?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker)
        .map_err(|e| format!("host linker: {e:#}"))?;
    let instance_pre = linker.instantiate_pre(&component).map_err(|e| {
        let unknown: Vec<&String> =
            imports.iter().filter(|i| !PROVIDED.iter().any(|p| i.starts_with(p))).collect();
        if unknown.is_empty() {
            format!("imports the host cannot provide: {e:#}")
        } else {
            format!(
                "imports the host does not provide: {} (the host offers WASI 0.2 and wasi:http only)",
                unknown.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
            )
        }
    })?;
    let pre = ExporterPre::new(instance_pre).map_err(|e| missing_export(&exports, &e))?;
    Ok(LoadedComponent {
        pre,
        path: path.to_path_buf(),
        sha256,
        size: meta.len() as usize,
        imports,
        load_time: started.elapsed(),
    })
}

fn check_header(bytes: &[u8]) -> Result<(), LoadError> {
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return Err("not a WebAssembly file (no `\\0asm` header)".into());
    }
    match &bytes[4..8] {
        [1, 0, 0, 0] => Err(
            "is a core WebAssembly module, not a component: build it for \
             wasm32-wasip2, or wrap it with `wasm-tools component new`"
                .into(),
        ),
        [0x0d, 0, 1, 0] => Ok(()),
        other => Err(format!(
            "unsupported WebAssembly version/layer {other:02x?}"
        )),
    }
}

fn missing_export(exports: &[String], err: &wasmtime::Error) -> LoadError {
    let ours: Vec<&String> = exports
        .iter()
        .filter(|e| e.starts_with("lens:exporter/"))
        .collect();
    let listed = if exports.is_empty() {
        "nothing".to_string()
    } else {
        exports
            .iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if ours.is_empty() {
        format!(
            "does not export `{EXPORT_NAME}` (it exports {listed}); is it built for the `lens:exporter/exporter` world?"
        )
    } else if !ours.iter().any(|e| e.as_str() == EXPORT_NAME) {
        let older = ours.iter().any(|e| version(e) < version(EXPORT_NAME));
        let hint = if older {
            "; rebuild it against this host's `wit/exporter.wit` (the 0.1.0 records are unchanged)"
        } else {
            ""
        };
        format!("targets {listed}, but this host supports `{EXPORT_NAME}`{hint}")
    } else {
        format!("its `{EXPORT_NAME}` does not match the WIT this host was built with: {err:#}")
    }
}

/// The `major.minor.patch` numbers after the `@` of an export name (empty when absent).
fn version(name: &str) -> Vec<u64> {
    let v = name.rsplit_once('@').map_or("", |(_, v)| v);
    v.split('.').map_while(|n| n.parse().ok()).collect()
}
