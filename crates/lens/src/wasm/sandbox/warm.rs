//! Compiling a configuration's components into the cache before the ranks start.
//!
//! Ranks of a node starting with a cold cache would each wait for the first to compile (one
//! compile per component, under the entry's lock, [`crate::wasm::artefact::cache`]); a launcher that warms the
//! cache first (`lens compile`, `lens demo`) makes every rank's load a cached one, and reports
//! a bad file once, before any rank starts.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::LensConfig;
use crate::config::env::EnvSource;
use crate::config::{ExporterSpec, SignalConfig, WasmExporterSpec};
use crate::error::{LensError, WasmSetupError};
use crate::wasm::artefact::{cache, engine};
use crate::wasm::sandbox::link::{LoadChecks, load};

/// What warming did for one component (one file, one engine), used by the named exporters.
#[derive(Debug)]
pub struct Warmed {
    /// The component file.
    pub path: PathBuf,
    /// The exporters (and processors) using it, by display name.
    pub exporters: Vec<String>,
    /// Whether the cache held it already (`Ok(false)`: compiled now), or why it does not load.
    pub outcome: Result<bool, LensError>,
    /// Time to load it.
    pub elapsed: Duration,
}

/// Loads every wasm exporter and processor of `config` once through its compilation cache (`env` names the
/// cache directory as the ranks would see it). `Err` when the cache is disabled: nothing would
/// be kept for the ranks.
pub fn warm_cache(config: &LensConfig, env: &dyn EnvSource) -> Result<Vec<Warmed>, String> {
    let Some(shared) = cache::shared(&config.wasm_cache, env) else {
        return Err(String::from(
            "the compilation cache is off (`[wasm_cache] enabled = false`, \
             LENS_WASM_CACHE=off or no HOME): nothing to warm",
        ));
    };
    let mut warmed: Vec<(bool, Warmed)> = Vec::new();
    for (name, spec) in config.wasm_entries() {
        let fuel = spec.fuel_per_call.is_some();
        if let Some((_, w)) = warmed
            .iter_mut()
            .find(|(f, w)| *f == fuel && w.path == spec.path)
        {
            if !w.exporters.contains(&name) {
                w.exporters.push(name);
            }
            continue;
        }
        let started = Instant::now();
        let hits = shared.stats().hits;
        let setup_error =
            |source: WasmSetupError| crate::wasm::sandbox::link::setup_error(&name, spec, source);
        let outcome = engine::engine(fuel)
            .map_err(setup_error)
            .and_then(|engine| {
                load(&spec.path, LoadChecks::of(spec), engine, Some(shared))
                    .map_err(|e| setup_error(e.into()))
            })
            .map(|_| shared.stats().hits > hits);
        warmed.push((
            fuel,
            Warmed {
                path: spec.path.clone(),
                exporters: vec![name],
                outcome,
                elapsed: started.elapsed(),
            },
        ));
    }
    Ok(warmed.into_iter().map(|(_, w)| w).collect())
}

/// [`warm_cache`] for a file: a `.wasm` component (by its header) or an `oci://` reference
/// (pulled into the node's store first), loaded as `entry` says (for exporters with a fuel
/// budget when it has `fuel_per_call`, whose engine differs; `allow_unpinned`,
/// `insecure_registries`), or a config file, every wasm exporter it names. The cache is the one
/// the environment's configuration (or the file's) names.
pub fn warm_file(
    file: &Path,
    entry: &WasmExporterSpec,
    env: &dyn EnvSource,
) -> Result<Vec<Warmed>, String> {
    use std::io::Read;
    let mut magic = [0u8; 4];
    let is_wasm = crate::wasm::source::oci::is_reference(file)
        || std::fs::File::open(file)
            .and_then(|mut f| f.read_exact(&mut magic))
            .is_ok()
            && &magic == b"\0asm";
    let config = if is_wasm {
        let mut config = LensConfig::default();
        config.apply_env(env).map_err(|e| e.to_string())?;
        config.traces = SignalConfig {
            exporters: vec![ExporterSpec::Wasm(WasmExporterSpec {
                path: file.to_path_buf(),
                ..entry.clone()
            })],
            processors: Vec::new(),
        };
        config.metrics.exporters.clear();
        config.logs.exporters.clear();
        config
    } else {
        let mut config = LensConfig::from_file(file).map_err(|e| e.to_string())?;
        config.apply_env(env).map_err(|e| e.to_string())?;
        config
    };
    warm_cache(&config, env)
}
