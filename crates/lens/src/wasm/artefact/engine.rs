//! One wasmtime `Engine` per process (two when some exporter asks for fuel) and an epoch
//! ticker for call deadlines. Compiled components are cached by [`crate::wasm::artefact::cache`].

use std::sync::OnceLock;
use std::time::Duration;

use wasmtime::{Config, Engine};

use crate::error::WasmSetupError;

/// Epoch period: call deadlines are rounded up to this.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

fn config(fuel: bool) -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    config.consume_fuel(fuel);
    // Features an exporter has no use for, off so that a module cannot use them to hold more
    // than the memory cap accounts for simply: several memories in one module, 64-bit memories.
    // (Every example guest builds without them; `docs/writing-an-exporter.md`, Limits.)
    config.wasm_multi_memory(false);
    config.wasm_memory64(false);
    config
}

fn build(fuel: bool) -> Result<Engine, String> {
    let engine = Engine::new(&config(fuel)).map_err(|e| format!("{e:#}"))?;
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

static PLAIN: OnceLock<Result<Engine, String>> = OnceLock::new();
static FUEL: OnceLock<Result<Engine, String>> = OnceLock::new();

/// The process's engine for exporters without (`fuel = false`) or with a fuel budget.
pub fn engine(fuel: bool) -> Result<&'static Engine, WasmSetupError> {
    let cell = if fuel { &FUEL } else { &PLAIN };
    // A failure is kept as its message: every later exporter reports the same one.
    cell.get_or_init(|| build(fuel))
        .as_ref()
        .map_err(|message| WasmSetupError::Engine {
            source: message.clone().into(),
        })
}

/// Whether `engine` is the process's fuel engine.
pub fn uses_fuel(engine: &Engine) -> bool {
    FUEL.get()
        .and_then(|built| built.as_ref().ok())
        .is_some_and(|fuel| Engine::same(fuel, engine))
}

/// An engine with the exporters' settings and no epoch ticker: what a compile worker
/// ([`crate::wasm::artefact::compiler`]) compiles with, so that its artefacts load in the ranks' engines;
/// with `functions`, Cranelift reuses the functions compiled before (the code is the same as
/// compiled afresh: only the work is saved).
pub fn compile_only_engine(
    fuel: bool,
    functions: Option<crate::wasm::artefact::cache::functions::FunctionCache>,
) -> Result<Engine, String> {
    let mut config = config(fuel);
    if let Some(store) = functions {
        config
            .enable_incremental_compilation(std::sync::Arc::new(store))
            .map_err(|e| format!("{e:#}"))?;
    }
    Engine::new(&config).map_err(|e| format!("{e:#}"))
}

/// Epoch ticks covering `timeout` (at least one).
pub fn ticks(timeout: Duration) -> u64 {
    (timeout.as_nanos().div_ceil(EPOCH_TICK.as_nanos()) as u64).max(1)
}
