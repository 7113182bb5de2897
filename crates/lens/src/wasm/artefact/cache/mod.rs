//! Compiled components on disk, mapped straight into memory on the next start.
//!
//! wasmtime's own cache hashes the whole `.wasm` on every load and decompresses the artefact,
//! which dominated the start-up of the large Python and JavaScript guests. This cache stores
//! what `Engine::precompile_component` produces, uncompressed, and loads it with
//! `Component::deserialize_file`, which maps the file (`docs/benchmarks.md`, start-up).
//!
//! Layout of the directory (`[wasm_cache] dir`, `LENS_WASM_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/lens/wasm`, else `~/.cache/lens/wasm`; `LENS_WASM_CACHE=off` disables it):
//! - `<sha256 of the .wasm>-<engine hash>.cwasm`: the compiled component. The engine hash
//!   covers wasmtime's version and every compilation setting, so a fuel engine and a plain one
//!   (or two Lens versions) never share an artefact.
//! - `index/<key>`: the SHA-256 of the `.wasm` file last seen at a path, keyed by that path
//!   and its device, inode, size, modification and change times. A file that was not touched
//!   is neither read nor hashed again; any write to it changes its change time (which no
//!   unprivileged process can set back), so the index can never hand out a stale SHA-256, and
//!   a `sha256` pin in the config is still checked against the file's content.
//!
//! - `index/<artefact name>.refused`: a compile that ran out of its memory or time bound,
//!   which the ranks waiting for the same entry then do not repeat (`refusal`).
//! - `functions/`: compiled functions the compile worker reuses across components that share
//!   code (`functions`), pruned to a quarter of `max_mb`.
//! - `index/<artefact name>.integrity`: the BLAKE3 digest and length of each artefact as
//!   written (`integrity`). An artefact is checked against it before it is mapped; one that
//!   differs is reported once (naming the file), compiled again and replaced.
//!
//! Artefacts are native code, run outside the sandbox: whoever can write the directory can run
//! code in every rank that uses it. So, as ssh does with a loose key, the cache is used only if
//! its directory (and its `index`) and each file read from it belong to this user and are not
//! writable by the group or others; otherwise the exporter is compiled without the cache and a
//! warning, once per directory, says how to fix it. The directory is created private (0700) and
//! files are written 0600. A cache shared by the nodes of a job (a shared file system) must
//! therefore belong to the user running the ranks. It is pruned to `max_mb`
//! (`LENS_WASM_CACHE_MAX_MB`, default 2048) after each new artefact, least recently used first.

mod files;
pub mod functions;
mod integrity;
mod refusal;

use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::config::WasmCacheConfig;
use crate::config::env::EnvSource;
use crate::error::LoadError;
use crate::wasm::artefact::compiler::CompileBounds;
pub use files::untrusted;
use files::{private_dir, untrusted_path, write_atomically};
use integrity::Verdict;
pub use integrity::file_digest;
pub use refusal::REFUSAL_TTL;

/// The on-disk cache of compiled components.
#[derive(Debug)]
pub struct ArtifactCache {
    dir: PathBuf,
    max_bytes: u64,
    hits: AtomicUsize,
    misses: AtomicUsize,
    /// Why the directory is not used, once checked (`None`: it is).
    distrust: OnceLock<Option<String>>,
    /// Compiles in progress, by artefact: a thread loading bytes another thread is compiling
    /// waits for it and maps its artefact, so that one process compiles the same bytes once.
    in_flight: Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>,
    /// Artefacts found altered, each reported once.
    altered: Mutex<HashSet<PathBuf>>,
}

/// A `.wasm` file read and checked, about to be compiled through the cache.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadFile<'a> {
    /// Its bytes.
    pub wasm: &'a [u8],
    /// Their SHA-256, hex.
    pub sha256: &'a str,
    /// Where it was read, and its metadata then (the index's key).
    pub path: &'a Path,
    /// Its metadata when read.
    pub meta: &'a fs::Metadata,
    /// The bounds of compiling it.
    pub bounds: CompileBounds,
}

/// Hits and misses of the compilation cache so far, and where it lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheStats {
    /// Loads served from a compiled artefact on disk.
    pub hits: usize,
    /// Loads that compiled (and then stored the artefact).
    pub misses: usize,
    /// The cache directory.
    pub directory: PathBuf,
}

/// The cache `config` describes, shared by every exporter of the process that uses the same
/// directory; `None` when disabled or when no directory can be found (no `HOME`).
pub fn shared(config: &WasmCacheConfig, env: &dyn EnvSource) -> Option<&'static ArtifactCache> {
    static CACHES: Mutex<Vec<&'static ArtifactCache>> = Mutex::new(Vec::new());
    if !config.enabled {
        return None;
    }
    let Some(dir) = config.directory(env) else {
        static WARNED: std::sync::Once = std::sync::Once::new();
        WARNED.call_once(|| {
            log::warn!("no HOME: the wasm compilation cache is off, compiling every start")
        });
        return None;
    };
    let max_bytes = config.max_mb.saturating_mul(1 << 20);
    let mut caches = CACHES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(c) = caches.iter().find(|c| c.dir == dir) {
        return Some(*c);
    }
    // One per directory for the life of the process (a handful at most): leaked on purpose so
    // that loads can hold it without reference counting.
    let cache: &'static ArtifactCache = Box::leak(Box::new(ArtifactCache::new(dir, max_bytes)));
    caches.push(cache);
    Some(cache)
}

/// Identity of a file as last written: what the index is keyed by.
fn stat_key(path: &Path, meta: &fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    let canonical = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let identity = format!(
        "{}\0{}\0{}\0{}\0{}.{}\0{}.{}",
        canonical.display(),
        meta.dev(),
        meta.ino(),
        meta.size(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec()
    );
    hex::encode(&Sha256::digest(identity.as_bytes())[..16])
}

fn engine_hash(engine: &Engine) -> u64 {
    let mut h = DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    h.finish()
}

impl ArtifactCache {
    /// A cache in `dir`, pruned to `max_bytes`.
    pub fn new(dir: impl Into<PathBuf>, max_bytes: u64) -> Self {
        Self {
            dir: dir.into(),
            max_bytes,
            hits: AtomicUsize::new(0),
            misses: AtomicUsize::new(0),
            distrust: OnceLock::new(),
            in_flight: Mutex::default(),
            altered: Mutex::default(),
        }
    }

    /// Whether the directory may be used: it does not exist yet (it will be created private),
    /// or it and its `index` belong to this user and nobody else may write them. Checked once;
    /// a refusal is logged once.
    /// The cache's directory, if it is used (owned by this user, not writable by others).
    pub(crate) fn trusted_dir(&self) -> Option<&Path> {
        self.trusted().then_some(self.dir.as_path())
    }

    fn trusted(&self) -> bool {
        let distrust = self.distrust.get_or_init(|| {
            let why = [self.dir.clone(), self.dir.join("index")]
                .iter()
                .find_map(|p| untrusted_path(p, true).map(|why| (p.clone(), why)));
            if let Some((path, why)) = &why {
                log::warn!(
                    "wasm cache: not using {}: {why}; compiled code there would run outside the \
                     sandbox. Exporters are compiled on every start until it is fixed \
                     (`chmod go-w {}` and owned by this user, or another `LENS_WASM_CACHE_DIR`)",
                    path.display(),
                    path.display()
                );
            }
            why.map(|(_, why)| why)
        });
        distrust.is_none()
    }

    /// Whether a file of the cache may be read (see [`untrusted`]); a refusal is logged.
    fn file_trusted(&self, path: &Path) -> bool {
        match untrusted_path(path, false) {
            None => true,
            Some(why) => {
                log::warn!(
                    "wasm cache: not using {}: {why}; compiling instead",
                    path.display()
                );
                false
            }
        }
    }

    /// Counts so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Relaxed),
            misses: self.misses.load(Relaxed),
            directory: self.dir.clone(),
        }
    }

    fn artifact(&self, sha256: &str, engine: &Engine) -> PathBuf {
        self.dir
            .join(format!("{sha256}-{:016x}.cwasm", engine_hash(engine)))
    }

    /// The SHA-256 recorded for this exact file, if it was not modified since.
    pub(crate) fn known_sha256(&self, path: &Path, meta: &fs::Metadata) -> Option<String> {
        if !self.trusted() {
            return None;
        }
        let entry = self.dir.join("index").join(stat_key(path, meta));
        if !entry.is_file() || !self.file_trusted(&entry) {
            return None;
        }
        let recorded = fs::read_to_string(entry).ok()?;
        let sha = recorded.trim();
        (sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit())).then(|| sha.to_string())
    }

    /// The compiled component for `sha256`, mapped from disk once checked against its
    /// integrity record; `None` when absent, unrecorded, altered or unusable (the caller then
    /// compiles and the artefact is replaced). Quiet: an artefact that differs from its record
    /// may be one another process is replacing, so only [`Self::get_or_compile`], holding the
    /// entry's lock, reports it.
    pub(crate) fn get(&self, sha256: &str, engine: &Engine) -> Option<Component> {
        self.lookup(sha256, engine, false)
    }

    fn lookup(&self, sha256: &str, engine: &Engine, report: bool) -> Option<Component> {
        let path = self.artifact(sha256, engine);
        if !self.trusted() || !path.is_file() || !self.file_trusted(&path) {
            return None;
        }
        match integrity::verify(&self.dir.join("index"), &path) {
            Verdict::Intact => {}
            Verdict::Unrecorded => {
                log::debug!(
                    "wasm cache: {} has no integrity record; compiling again",
                    path.display()
                );
                return None;
            }
            Verdict::Altered(why) => {
                if report
                    && self
                        .altered
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(path.clone())
                {
                    log::warn!(
                        "wasm cache: {} was altered after it was written ({why}); it is not \
                         loaded: compiling again and replacing it",
                        path.display()
                    );
                }
                return None;
            }
        }
        // SAFETY: the file and its directory belong to this user and nobody else may write
        // them, and its content is what `store` wrote from `Engine::precompile_component` for
        // an engine with the same compatibility hash (both checked just above); wasmtime checks
        // its header and engine settings again before using it. Mapping can fail where the
        // directory is mounted `noexec`: then the bytes are read instead.
        let loaded = unsafe { Component::deserialize_file(engine, &path) }.or_else(|mapped| {
            let bytes = fs::read(&path)?;
            log::debug!(
                "wasm cache: cannot map {} ({mapped:#}), read instead",
                path.display()
            );
            // SAFETY: the same artefact as above, read instead of mapped.
            unsafe { Component::deserialize(engine, &bytes) }
        });
        match loaded {
            Ok(c) => {
                self.hits.fetch_add(1, Relaxed);
                // Recently used: the pruning removes the oldest artefacts first.
                if let Ok(f) = File::options().append(true).open(&path) {
                    let _ = f.set_modified(SystemTime::now());
                }
                Some(c)
            }
            Err(e) => {
                log::warn!(
                    "wasm cache: discarding {} ({e:#}); compiling again",
                    path.display()
                );
                let _ = fs::remove_file(&path);
                integrity::remove_record(&self.dir.join("index"), &path);
                None
            }
        }
    }

    /// The component of `wasm`: compiled here, or, when another thread or process was
    /// compiling the same bytes for the same engine, mapped from the artefact it stored. The
    /// first compiles under a lock on the entry (`flock` on `<artefact>.cwasm.lock`, which the
    /// kernel releases when its holder exits, dead or alive); the others wait for it.
    pub(crate) fn get_or_compile(
        &self,
        engine: &Engine,
        file: &ReadFile<'_>,
    ) -> Result<Component, LoadError> {
        let key = self.artifact(file.sha256, engine);
        let slot = self
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(key.clone())
            .or_default()
            .clone();
        let compiled = {
            let _turn = slot.lock().unwrap_or_else(|p| p.into_inner());
            let _entry = self.lock_entry(&key);
            match self.lookup(file.sha256, engine, true) {
                Some(component) => {
                    let _ = self.remember(file.path, file.meta, file.sha256);
                    Ok(component)
                }
                None => self.compile(engine, file),
            }
        };
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key);
        compiled
    }

    /// Holds the lock of the artefact at `artifact` across processes until dropped; `None`
    /// where the cache is not used or the lock cannot be taken (then this process compiles
    /// without waiting: a lost lock costs a duplicate compile, never a wrong artefact, as
    /// artefacts are written through a rename).
    fn lock_entry(&self, artifact: &Path) -> Option<File> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        if !self.trusted() {
            return None;
        }
        private_dir(&self.dir).ok()?;
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(artifact.with_extension("cwasm.lock"))
            .ok()?;
        // SAFETY: `flock` on a descriptor this function owns; no memory is involved.
        let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0;
        locked.then_some(file)
    }

    /// Compiles `wasm` once, stores the artefact and the file's index entry, and returns the
    /// component. A cache that cannot be written only costs the next start its compile.
    fn compile(&self, engine: &Engine, file: &ReadFile<'_>) -> Result<Component, LoadError> {
        let index = self.dir.join("index");
        let artifact = self.artifact(file.sha256, engine);
        if self.trusted()
            && let Some(refused) = refusal::recorded(&index, &artifact, file.bounds)
        {
            log::debug!(
                "wasm cache: {} was refused by a compile moments ago; not compiling again",
                artifact.display()
            );
            return Err(refused.into());
        }
        self.misses.fetch_add(1, Relaxed);
        let functions = self.trusted().then(|| functions::dir(&self.dir));
        let (component, compiled) = crate::wasm::artefact::compiler::precompile_reusing(
            engine,
            file.wasm,
            file.bounds,
            functions.as_deref(),
        )
        .inspect_err(|e| {
            if self.trusted() && private_dir(&index).is_ok() {
                refusal::record(&index, &artifact, e);
            }
        })
        .map_err(LoadError::from)
        .and_then(|artefact| crate::wasm::artefact::compiler::load_artefact(engine, artefact))?;
        if let Some(functions) = &functions {
            refusal::clear(&index, &artifact);
            functions::prune(functions, self.max_bytes / 4);
        }
        if let Err(e) = self.store(&artifact, &compiled, file) {
            log::warn!(
                "wasm cache: cannot write to {}: {e}; the next start compiles again",
                self.dir.display()
            );
        }
        Ok(component)
    }

    /// Stores `compiled` as `artifact`, with its integrity record and the file's index entry.
    fn store(&self, artifact: &Path, compiled: &[u8], file: &ReadFile<'_>) -> std::io::Result<()> {
        if !self.trusted() {
            return Ok(()); // said once already; nothing is written there
        }
        let index = self.dir.join("index");
        private_dir(&index)?;
        // The record first: a reader never finds a new artefact with no record, and one that
        // finds the old artefact with the new record waits for this writer's lock.
        integrity::write_record(&index, artifact, compiled)?;
        write_atomically(artifact, compiled)?;
        self.remember(file.path, file.meta, file.sha256)?;
        self.prune(artifact);
        Ok(())
    }

    /// Records that the file at `path`, as it is now, has this SHA-256.
    pub(crate) fn remember(
        &self,
        path: &Path,
        meta: &fs::Metadata,
        sha256: &str,
    ) -> std::io::Result<()> {
        let index = self.dir.join("index");
        if !index.is_dir() || !self.trusted() {
            return Ok(()); // nothing compiled here yet, or not a directory to write to
        }
        write_atomically(&index.join(stat_key(path, meta)), sha256.as_bytes())
    }

    /// Removes the least recently used artefacts beyond the size limit, never `keep` (the one
    /// just written).
    fn prune(&self, keep: &Path) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        let mut artifacts: Vec<(SystemTime, u64, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
            .filter_map(|e| {
                let m = e.metadata().ok()?;
                Some((m.modified().ok()?, m.len(), e.path()))
            })
            .collect();
        let mut total: u64 = artifacts.iter().map(|a| a.1).sum();
        artifacts.sort();
        for (_, len, path) in artifacts {
            if total <= self.max_bytes {
                break;
            }
            if path == keep {
                continue;
            }
            if fs::remove_file(&path).is_ok() {
                integrity::remove_record(&self.dir.join("index"), &path);
                total -= len;
                log::debug!("wasm cache: pruned {}", path.display());
            }
        }
    }
}
