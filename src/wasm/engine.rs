//! One wasmtime `Engine` per process (two when some exporter asks for fuel), an epoch ticker
//! for call deadlines, and wasmtime's on-disk compilation cache.

use std::sync::OnceLock;
use std::time::Duration;

use wasmtime::{Cache, CacheConfig, Config, Engine};

/// Epoch period: call deadlines are rounded up to this.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// The process's compilation cache, shared by its engines (`None`: disabled or unavailable).
fn cache() -> Option<Cache> {
    static CACHE: OnceLock<Option<Cache>> = OnceLock::new();
    CACHE.get_or_init(open_cache).clone()
}

/// Hits and misses of the compilation cache so far, and where it lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheStats {
    /// Compilations served from disk.
    pub hits: usize,
    /// Compilations done and written to disk.
    pub misses: usize,
    /// The cache directory.
    pub directory: std::path::PathBuf,
}

/// Statistics of the compilation cache, `None` when it is disabled.
pub fn cache_stats() -> Option<CacheStats> {
    cache().map(|c| CacheStats {
        hits: c.cache_hits(),
        misses: c.cache_misses(),
        directory: c.directory().clone(),
    })
}

/// `LENS_WASM_CACHE_DIR` overrides the cache directory; `LENS_WASM_CACHE=off` disables it.
fn open_cache() -> Option<Cache> {
    if std::env::var("LENS_WASM_CACHE").is_ok_and(|v| v == "off" || v == "0") {
        return None;
    }
    let mut config = CacheConfig::new();
    if let Ok(dir) = std::env::var("LENS_WASM_CACHE_DIR") {
        config.with_directory(dir);
    }
    match Cache::new(config) {
        Ok(c) => Some(c),
        Err(e) => {
            log::warn!("wasm compilation cache unavailable, compiling every start: {e:#}");
            None
        }
    }
}

fn config(fuel: bool) -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    config.consume_fuel(fuel);
    config
}

/// A separate engine with the same settings and no cache, to measure a cold compile.
pub fn uncached_engine() -> Result<Engine, String> {
    let mut config = config(false);
    config.cache(None);
    Engine::new(&config).map_err(|e| format!("cannot create the wasm engine: {e:#}"))
}

fn build(fuel: bool) -> Result<Engine, String> {
    let mut config = config(fuel);
    config.cache(cache());
    let engine =
        Engine::new(&config).map_err(|e| format!("cannot create the wasm engine: {e:#}"))?;
    let ticker = engine.weak();
    std::thread::Builder::new()
        .name("lens-wasm-epoch".into())
        .spawn(move || {
            while let Some(engine) = ticker.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        })
        .map_err(|e| format!("cannot start the epoch ticker: {e}"))?;
    Ok(engine)
}

/// The process's engine for exporters without (`fuel = false`) or with a fuel budget.
pub fn engine(fuel: bool) -> Result<&'static Engine, String> {
    static PLAIN: OnceLock<Result<Engine, String>> = OnceLock::new();
    static FUEL: OnceLock<Result<Engine, String>> = OnceLock::new();
    let cell = if fuel { &FUEL } else { &PLAIN };
    cell.get_or_init(|| build(fuel))
        .as_ref()
        .map_err(Clone::clone)
}

/// Epoch ticks covering `timeout` (at least one).
pub fn ticks(timeout: Duration) -> u64 {
    (timeout.as_nanos().div_ceil(EPOCH_TICK.as_nanos()) as u64).max(1)
}
