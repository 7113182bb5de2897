//! Loading a `.wasm` component: stages 1 to 4 in order — read it ([`crate::wasm::source`]),
//! check it ([`crate::wasm::checks`]), map it from the artefact cache or compile it
//! ([`crate::wasm::artefact`]), and link it against the host's interfaces. Every check happens
//! here, before any span flows, and each failure is a [`LoadError`] saying what is wrong with
//! the file.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use wasmtime::Engine;
use wasmtime::component::{Component, InstancePre, Linker};

use super::HostState;
use super::interface::{GuestInterface, Role, Signal, WIT_VERSION};
use crate::config::WasmExporterSpec;
use crate::error::{LensError, LoadError, OciError, WasmSetupError};
use crate::signal::WIT_PACKAGE;
use crate::wasm::artefact::cache::{ArtifactCache, ReadFile};
use crate::wasm::artefact::compiler::{self, CompileBounds};
use crate::wasm::checks::{self, StructureLimits};
use crate::wasm::source::oci::{self, OciChecks};
use crate::wasm::source::{self, DEFAULT_MAX_FILE_MIB};

/// Interface packages the host provides (WASI 0.2 and `wasi:http`; grants decide what works),
/// and the exporter's own types interfaces (types only: nothing to provide).
const PROVIDED: [&str; 10] = [
    "lens:exporter/types@",
    "lens:exporter/metric-types@",
    "lens:exporter/log-types@",
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
    pub(crate) pre: InstancePre<HostState>,
    /// The exporter interfaces it exports (at least one).
    pub interfaces: Vec<GuestInterface>,
    /// Everything it exports, by name.
    pub exports: Vec<String>,
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

/// What a file must satisfy before it is compiled.
#[derive(Debug, Clone, Copy)]
pub struct LoadChecks<'a> {
    /// Refuse the file unless its SHA-256 (hex, any case) is this.
    pub sha256_pin: Option<&'a str>,
    /// Refuse files larger than this many bytes, before reading them.
    pub max_bytes: u64,
    /// Refuse files with more structure than this, before compiling them.
    pub structure: StructureLimits,
    /// Bounds of the compile itself (where it runs in a worker, [`compiler`]).
    pub compile: CompileBounds,
    /// What an `oci://` path may do (follow a tag, plain http).
    pub oci: OciChecks<'a>,
}

impl Default for LoadChecks<'_> {
    fn default() -> Self {
        Self {
            sha256_pin: None,
            max_bytes: DEFAULT_MAX_FILE_MIB << 20,
            structure: StructureLimits::default(),
            compile: CompileBounds::default(),
            oci: OciChecks::default(),
        }
    }
}

impl<'a> LoadChecks<'a> {
    /// The checks an exporter entry asks for (its pin, `max_file_mib`, `compile_memory_mib` and
    /// `compile_timeout_ms`).
    pub fn of(spec: &'a WasmExporterSpec) -> Self {
        Self {
            sha256_pin: spec.sha256.as_deref(),
            max_bytes: spec.max_file_mib.unwrap_or(DEFAULT_MAX_FILE_MIB) << 20,
            compile: CompileBounds {
                memory_mib: spec
                    .compile_memory_mib
                    .unwrap_or(compiler::DEFAULT_COMPILE_MEMORY_MIB),
                timeout: Duration::from_millis(
                    spec.compile_timeout_ms
                        .unwrap_or(compiler::DEFAULT_COMPILE_TIMEOUT_MS),
                ),
            },
            oci: OciChecks {
                allow_unpinned: spec.allow_unpinned.unwrap_or(false),
                insecure_registries: &spec.insecure_registries,
                verify_key: spec.verify.as_ref().map(|v| v.key.as_path()),
            },
            ..Self::default()
        }
    }
}

/// Reads, checks and compiles `path` for `engine`, through `cache` (`None`: always compile,
/// e.g. to measure a cold start), then links it against the host's interfaces. Only a regular
/// file within the size limit is opened, and only a WebAssembly component's header lets it be
/// read whole: a FIFO, a device or a huge file is refused at once.
pub fn load(
    path: &Path,
    checks: LoadChecks<'_>,
    engine: &Engine,
    cache: Option<&ArtifactCache>,
) -> Result<LoadedComponent, LoadError> {
    let started = Instant::now();
    let stored = stored(path, &checks, cache)?;
    let (path, checks) = match &stored {
        Some(s) => (
            s.path.as_path(),
            LoadChecks {
                sha256_pin: Some(s.sha256.as_str()),
                ..checks
            },
        ),
        None => (path, checks),
    };
    let meta = source::checked_meta(path, checks.max_bytes)?;
    let (component, sha256) = compile(path, &meta, checks, engine, cache)?;
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
    // What it needs from the host is checked first: a component with foreign imports is
    // refused for them, whatever it exports.
    let pre = link(&component, engine, &imports)?;
    let interfaces = GuestInterface::detect(&exports);
    if interfaces.is_empty() {
        return Err(missing_export(exports));
    }
    Ok(LoadedComponent {
        pre,
        interfaces,
        exports,
        path: path.to_path_buf(),
        sha256,
        size: meta.len() as usize,
        imports,
        load_time: started.elapsed(),
    })
}

/// For an `oci://` path, the component it names, from the node's store (pulled into it if it
/// is not there yet); its layer digest must agree with the entry's `sha256` pin.
fn stored(
    path: &Path,
    checks: &LoadChecks<'_>,
    cache: Option<&ArtifactCache>,
) -> Result<Option<oci::Stored>, LoadError> {
    if !oci::is_reference(path) {
        return Ok(None);
    }
    let text = path.to_string_lossy();
    let (reference, stored) = oci::resolve(&text, checks.oci, checks.max_bytes, &store_dir(cache))?;
    if let Some(pin) = checks.sha256_pin
        && !pin.eq_ignore_ascii_case(&stored.sha256)
    {
        return Err(OciError::PinMismatch {
            reference: reference.to_string(),
            layer: stored.sha256,
            pinned: pin.to_ascii_lowercase(),
        }
        .into());
    }
    Ok(Some(stored))
}

/// Where components pulled from registries are stored: `<cache>/oci` when the compilation
/// cache is on and trusted (its ownership and mode rules), else a private folder per user
/// under the system's temporary directory.
fn store_dir(cache: Option<&ArtifactCache>) -> PathBuf {
    match cache.and_then(ArtifactCache::trusted_dir) {
        Some(dir) => dir.join("oci"),
        // SAFETY: getuid has no preconditions and cannot fail.
        None => std::env::temp_dir().join(format!("lens-oci-{}", unsafe { libc::getuid() })),
    }
}

/// The SHA-256 (hex) of the component file at `path`, with the checks [`load`] makes before
/// reading (a regular file within `max_bytes`, a component's header): from `cache`'s index
/// when the file is known and unmodified (not read), else read and hashed.
pub(crate) fn file_sha256(
    path: &Path,
    checks: LoadChecks<'_>,
    cache: Option<&ArtifactCache>,
) -> Result<String, LoadError> {
    // An `oci://` path: its store's layer digest (no network once stored).
    if let Some(stored) = stored(path, &checks, cache)? {
        return Ok(stored.sha256);
    }
    let max_bytes = checks.max_bytes;
    let meta = source::checked_meta(path, max_bytes)?;
    if let Some(sha) = cache.and_then(|c| c.known_sha256(path, &meta)) {
        return Ok(sha);
    }
    Ok(checks::sha256(&source::read(
        path,
        max_bytes,
        checks::header,
    )?))
}

/// The compiled component of the file and its SHA-256: mapped from the cache when the file is
/// known and unmodified (neither read nor hashed), else read, checked and compiled.
fn compile(
    path: &Path,
    meta: &std::fs::Metadata,
    checks: LoadChecks<'_>,
    engine: &Engine,
    cache: Option<&ArtifactCache>,
) -> Result<(Component, String), LoadError> {
    let known = cache.and_then(|c| c.known_sha256(path, meta));
    if let Some(sha) = &known {
        checks::pin(sha, checks.sha256_pin)?;
    }
    if let Some(found) = cache
        .zip(known)
        .and_then(|(c, sha)| Some((c.get(&sha, engine)?, sha)))
    {
        return Ok(found);
    }
    let bytes = source::read(path, checks.max_bytes, checks::header)?;
    let sha256 = checks::sha256(&bytes);
    checks::pin(&sha256, checks.sha256_pin)?;
    checks::structure::measure(&bytes, &checks.structure)?;
    let component = match cache {
        // Known content under a new path or timestamp is remembered; new content compiled.
        Some(c) => c.get_or_compile(
            engine,
            &ReadFile {
                wasm: &bytes,
                sha256: &sha256,
                path,
                meta,
                bounds: checks.compile,
            },
        )?,
        None => compiler::compile(engine, &bytes, checks.compile)?,
    };
    Ok((component, sha256))
}

/// Links `component` against WASI 0.2 and `wasi:http`.
fn link(
    component: &Component,
    engine: &Engine,
    imports: &[String],
) -> Result<InstancePre<HostState>, LoadError> {
    let host_error = |e: wasmtime::Error| LoadError::Link { source: e.into() };
    let mut linker: Linker<HostState> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(host_error)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker).map_err(host_error)?;
    super::quota::add_to_linker(&mut linker).map_err(host_error)?;
    super::sockets::add_to_linker(&mut linker).map_err(host_error)?;
    linker.instantiate_pre(component).map_err(|e| {
        let unknown: Vec<String> = imports
            .iter()
            .filter(|i| !PROVIDED.iter().any(|p| i.starts_with(p)))
            .cloned()
            .collect();
        if unknown.is_empty() {
            host_error(e)
        } else {
            LoadError::UnknownImports { imports: unknown }
        }
    })
}

/// Why a component exporting none of the exporter interfaces this host serves is refused.
fn missing_export(exports: Vec<String>) -> LoadError {
    let ours: Vec<&String> = exports
        .iter()
        .filter(|e| {
            e.strip_prefix(WIT_PACKAGE)
                .is_some_and(|rest| rest.starts_with('/'))
        })
        .collect();
    if ours.is_empty() {
        LoadError::MissingExport {
            expected: expected_exports(),
            exports,
        }
    } else {
        let older = ours
            .iter()
            .any(|e| version(e) < version(&format!("@{WIT_VERSION}")));
        LoadError::WrongVersion {
            expected: expected_exports(),
            exports,
            older,
        }
    }
}

/// What `missing_export` asks for: `lens:exporter/span-exporter@0.4.0`, `metric-exporter@0.4.0`
/// or `log-exporter@0.4.0` (between the backquotes of the messages).
fn expected_exports() -> String {
    let [traces, metrics, logs] = Signal::ALL;
    format!(
        "{}`, `{}@{WIT_VERSION}` or `{}@{WIT_VERSION}",
        traces.interface_name(WIT_VERSION),
        metrics.interface(),
        logs.interface()
    )
}

impl LoadedComponent {
    /// The exporter interface serving `signal` (the newest version exported), or why there is
    /// none.
    pub fn interface(&self, signal: Signal) -> Result<GuestInterface, LoadError> {
        self.interface_of(signal, Role::Exporter)
    }

    /// The interface of `role` for `signal`, or why there is none.
    pub fn interface_of(&self, signal: Signal, role: Role) -> Result<GuestInterface, LoadError> {
        self.interfaces
            .iter()
            .find(|i| i.signal == signal && i.role == role)
            .copied()
            .ok_or_else(|| LoadError::SignalNotExported {
                signal,
                role,
                exports: self.exports.clone(),
            })
    }
}

/// The `major.minor.patch` numbers after the `@` of an export name (empty when absent).
fn version(name: &str) -> Vec<u64> {
    let v = name.rsplit_once('@').map_or("", |(_, v)| v);
    v.split('.').map_while(|n| n.parse().ok()).collect()
}

/// `source` as the [`LensError`] naming the exporter (or processor) and its file.
pub(crate) fn setup_error(
    name: &str,
    spec: &WasmExporterSpec,
    source: WasmSetupError,
) -> LensError {
    LensError::WasmLoad {
        exporter: name.to_string(),
        path: spec.path.clone(),
        source,
    }
}
