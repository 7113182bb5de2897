//! The host of sandboxed WebAssembly component exporters (`kind = "wasm"`).
//!
//! The component contract is the WIT package in `wit/` (`lens:exporter@0.4.0`: span, metric
//! and log exporters, and processors; 0.3.0 exporters and 0.2.0 span exporters still load);
//! how batches are encoded for a guest is the crate's `encoding` module's business.
//!
//! - [`engine`]: one engine per process and its epoch deadlines;
//! - [`mod@load`]: validation of a `.wasm` file, with one [`LoadError`] per problem;
//! - [`structure`]: the shape of a component, counted and bounded before it is compiled;
//! - [`warm`]: a configuration's components compiled into the cache before ranks start;
//! - [`cache`]: compiled components on disk, mapped into memory on the next start;
//! - [`compiler`]: compiling, in a bounded child process where the program names one;
//! - `sandbox`: what a guest may touch (deny by default) and its memory cap (its limits are
//!   re-exported here: [`MAX_INSTANCES`], [`MAX_MEMORIES`], [`MAX_TABLES`]);
//! - `quota`: the write budget of writable pre-opens;
//! - [`guest_output`]: what a guest says (errors, stdout/stderr), escaped and cut before it is
//!   shown;
//! - [`interface`]: which exporter interfaces a component exports, and the calls into one;
//! - `instance`: one guest instance on its worker thread (start, serve calls);
//! - `exporter`: the lanes of instances serving one signal, with fault backoff, and when a
//!   batch the guest called retryable is sent again (`batch::retry`);
//! - [`reload`]: those lanes replaced by a new component's while batches flow (hot reload);
//! - [`span_exporter`], [`metric_exporter`], [`log_exporter`]: [`WasmSpanExporter`],
//!   [`WasmMetricExporter`], [`WasmLogExporter`], the SDK's exporter traits over the lanes;
//! - [`processor`]: [`WasmProcessor`], a span, metric or log processor run on each batch (or
//!   collection) before the exporters it applies to, and its answer checked and applied:
//!   [`edit`] (spans), [`metric_edit`] (metrics, on the OTLP request or the console's JSON),
//!   `log_edit` (log records).
//!
//! The host takes what it needs from the installation building it as a [`HostInputs`]; it
//! never sees the rest of the configuration.

pub(crate) mod backoff;
pub mod cache;
pub mod compiler;
pub mod edit;
pub mod engine;
pub(crate) mod exporter;
pub mod guest_output;
pub(crate) mod instance;
pub mod interface;
pub mod load;
pub(crate) mod log_edit;
pub mod log_exporter;
pub mod metric_edit;
pub mod metric_exporter;
pub mod processor;
pub(crate) mod quota;
pub mod reload;
pub(crate) mod sandbox;
pub mod span_exporter;
pub mod structure;
#[cfg(test)]
mod tests;
pub mod warm;

use std::sync::Arc;
use std::time::Duration;

use opentelemetry_sdk::Resource;

pub use crate::batch::retry::{FIRST_RETRY, MAX_RETRY_DELAY};
pub use backoff::{FIRST_BACKOFF, HEALTHY_PERIOD, MAX_BACKOFF};
pub use guest_output::{GuestOutputBuffer, GuestOutputCopy, GuestOutputFiles, GuestOutputSink};
pub use instance::{INSTANCE_PLACEHOLDER, MAX_GUEST_ERROR};
pub use interface::{GuestInterface, Role, Signal, WIT_VERSION};
pub use load::{DEFAULT_MAX_FILE_MIB, LoadChecks, LoadedComponent, load};
pub use log_exporter::WasmLogExporter;
pub use metric_exporter::WasmMetricExporter;
pub use processor::WasmProcessor;
pub use reload::Reloaded;
pub use sandbox::{
    MAX_INSTANCES, MAX_MEMORIES, MAX_TABLES, MemoryLimitExceeded, TABLE_ELEMENT_BYTES,
};
pub use span_exporter::WasmSpanExporter;
pub use structure::{Structure, StructureLimits};
pub use warm::{Warmed, warm_cache};

use crate::batch::ExporterStats;
use crate::config::env::{EnvSource, ProcessEnv};
use crate::config::{BatchConfig, WasmCacheConfig, WasmExporterSpec};
use crate::error::LensError;
pub use crate::error::{GrantError, LoadError, WasmSetupError};
use exporter::Lanes;
use instance::{InstanceFactory, StartError};
use reload::Reloadable;
use sandbox::Grants;

/// Default linear memory cap: large enough for componentize-py/JS guests (~13 MiB at start).
pub const DEFAULT_MEMORY_LIMIT_MIB: u64 = 256;

/// Default of `init_timeout_ms`: how long an instance's instantiation, then its `init`, may
/// each take.
pub const DEFAULT_INIT_TIMEOUT_MS: u64 = 5000;

/// Default of `forward_stdio`: the guest's stdout/stderr lines go to the host's log (the
/// Python package's keyword has the same default).
pub const DEFAULT_FORWARD_STDIO: bool = true;

/// `spec` with every unset key at the value the host uses (`lens config show` prints these):
/// `batch` is the entry's effective batch settings, whose `export_timeout_ms` is the call
/// deadline's default.
pub fn with_defaults(spec: &WasmExporterSpec, batch: &BatchConfig) -> WasmExporterSpec {
    let mut s = spec.clone();
    s.memory_limit_mib.get_or_insert(DEFAULT_MEMORY_LIMIT_MIB);
    s.call_timeout_ms.get_or_insert(batch.export_timeout_ms);
    s.init_timeout_ms.get_or_insert(DEFAULT_INIT_TIMEOUT_MS);
    s.forward_stdio.get_or_insert(DEFAULT_FORWARD_STDIO);
    s.max_file_mib.get_or_insert(DEFAULT_MAX_FILE_MIB);
    s.compile_memory_mib
        .get_or_insert(compiler::DEFAULT_COMPILE_MEMORY_MIB);
    s.compile_timeout_ms
        .get_or_insert(compiler::DEFAULT_COMPILE_TIMEOUT_MS);
    s.on_setup_failure.get_or_insert_default();
    s
}

/// What the host needs from the installation that builds an exporter.
pub struct HostInputs<'a> {
    /// Where `env = { X = { from_host = "Y" } }` grants read `Y`.
    pub env: &'a dyn EnvSource,
    /// This process's rank, for the log prefix of the guest's output.
    pub rank: u32,
    /// The resource of the spans, handed to the guest's `init`.
    pub resource: &'a Resource,
    /// The compilation cache to load through.
    pub cache: &'a WasmCacheConfig,
    /// Where a copy of the guests' stdout/stderr goes, besides the log.
    pub output: GuestOutputCopy,
}

impl<'a> HostInputs<'a> {
    /// What a component built outside a telemetry installation (tests, benchmarks, tools,
    /// the Python package) starts from: the process environment for `from_host` grants,
    /// `cache`, rank 0.
    pub(crate) fn standalone(
        resource: &'a Resource,
        cache: &'a WasmCacheConfig,
        output: GuestOutputCopy,
    ) -> Self {
        Self {
            env: &ProcessEnv,
            rank: 0,
            resource,
            cache,
            output,
        }
    }
}

/// Loads, links and starts the instances serving `signal` for a config entry: as many as
/// `batch.max_concurrent_exports` (one for metrics, which the periodic reader exports one
/// collection at a time), each initialised before this returns.
pub(crate) fn start_lanes(
    name: &str,
    spec: &WasmExporterSpec,
    signal: Signal,
    batch: &BatchConfig,
    inputs: &HostInputs<'_>,
    stats: Arc<ExporterStats>,
) -> Result<Lanes, WasmSetupError> {
    let count = match signal {
        Signal::Metrics => 1,
        Signal::Traces | Signal::Logs => batch.max_concurrent_exports,
    };
    start_role_lanes(
        name,
        spec,
        (signal, Role::Exporter),
        count,
        batch,
        inputs,
        stats,
    )
}

/// Loads, links and starts `count` instances serving `signal` in `role`, each initialised
/// before this returns.
pub(crate) fn start_role_lanes(
    name: &str,
    spec: &WasmExporterSpec,
    (signal, role): (Signal, Role),
    count: usize,
    batch: &BatchConfig,
    inputs: &HostInputs<'_>,
    stats: Arc<ExporterStats>,
) -> Result<Lanes, WasmSetupError> {
    let factory = factory(name, spec, (signal, role), batch, inputs, stats)?;
    let expected = factory.interface.name();
    let lanes = Lanes::new(
        factory,
        inputs.resource.clone(),
        count,
        Duration::from_millis(batch.export_timeout_ms),
    );
    lanes.start().map_err(|e| match e {
        StartError::Refused(msg) => WasmSetupError::InitRefused(msg),
        StartError::Fault(f) => WasmSetupError::Start {
            kind: f.kind,
            detail: f.detail,
        },
        StartError::Mismatch(detail) => {
            WasmSetupError::Load(LoadError::ExportMismatch { expected, detail })
        }
    })?;
    Ok(lanes)
}

/// What a `.wasm` exporter built outside a telemetry installation (tests, benchmarks, tools)
/// starts from: the process environment for `from_host` grants, the cache and the batch
/// defaults of the signal (with the entry's own `batch` overrides), rank 0. Errors name the
/// exporter and the file.
pub(crate) fn reloadable_from_config(
    name: &str,
    spec: &WasmExporterSpec,
    signal: Signal,
    resource: &Resource,
    output: GuestOutputCopy,
) -> Result<(Reloadable, Arc<ExporterStats>), LensError> {
    let config = crate::LensConfig::from_env()?;
    let inputs = HostInputs::standalone(resource, &config.wasm_cache, output);
    let stats = Arc::new(ExporterStats::new(name));
    let batch = checked_batch(name, spec, signal, &config)?;
    let exporter = reload::reloadable(name, spec, signal, &batch, &inputs, stats.clone())
        .map_err(|source| setup_error(name, spec, source))?;
    Ok((exporter, stats))
}

/// The effective batch settings of an entry built in code, after the checks a config file
/// gets.
fn checked_batch(
    name: &str,
    spec: &WasmExporterSpec,
    signal: Signal,
    config: &crate::LensConfig,
) -> Result<BatchConfig, LensError> {
    let defaults = *config.batch_for(signal);
    crate::config::ExporterSpec::Wasm(spec.clone())
        .validate(&defaults)
        .map_err(|message| LensError::Config {
            source_name: format!("wasm exporter `{name}`"),
            message,
            source: None,
        })?;
    Ok(defaults.with_overrides(&spec.batch))
}

/// Reloads a `.wasm` exporter built outside a telemetry installation with the entry `spec`:
/// checked as at setup, its grants from the process environment, compiled through the cache
/// of the environment's configuration.
pub(crate) fn reload_from_config(
    exporter: &Arc<Reloadable>,
    spec: &WasmExporterSpec,
    signal: Signal,
) -> Result<Reloaded, LensError> {
    let config = crate::LensConfig::from_env()?;
    checked_batch(exporter.name(), spec, signal, &config)?;
    exporter.reload(spec, &ProcessEnv, &config.wasm_cache)
}

/// `source` as the [`LensError`] naming the exporter and its file.
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

/// Loads the component of `spec` and resolves its grants: what every instance starts from.
pub(crate) fn factory(
    name: &str,
    spec: &WasmExporterSpec,
    (signal, role): (Signal, Role),
    batch: &BatchConfig,
    inputs: &HostInputs<'_>,
    stats: Arc<ExporterStats>,
) -> Result<InstanceFactory, WasmSetupError> {
    let grants = grants(name, role, spec, inputs)?;
    let engine = engine::engine(spec.fuel_per_call.is_some())?;
    let cache = cache::shared(inputs.cache, inputs.env);
    let checks = LoadChecks::of(spec);
    let loaded = load(&spec.path, checks, engine, cache)?;
    let interface = loaded.interface_of(signal, role)?;
    log::debug!(
        "wasm {role} `{name}`: {} ({} bytes, sha256 {}) loaded in {:?}; imports: {}",
        loaded.path.display(),
        loaded.size,
        loaded.sha256,
        loaded.load_time,
        loaded.imports.join(", ")
    );
    Ok(InstanceFactory {
        name: name.into(),
        sha256: loaded.sha256.clone(),
        engine: engine.clone(),
        pre: loaded.pre,
        interface,
        grants,
        settings: spec
            .settings
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        call_timeout: Duration::from_millis(
            spec.call_timeout_ms.unwrap_or(batch.export_timeout_ms),
        ),
        init_timeout: Duration::from_millis(
            spec.init_timeout_ms.unwrap_or(DEFAULT_INIT_TIMEOUT_MS),
        ),
        fuel: spec.fuel_per_call,
        stats,
        preferences: std::sync::Mutex::new(None),
    })
}

fn grants(
    name: &str,
    role: Role,
    spec: &WasmExporterSpec,
    inputs: &HostInputs<'_>,
) -> Result<Grants, GrantError> {
    let env = sandbox::resolve_env(&spec.env, inputs.env)?;
    let mut preopens = Vec::new();
    for p in &spec.preopens {
        if !p.host.is_dir() {
            return Err(GrantError::MissingDirectory {
                path: p.host.clone(),
            });
        }
        preopens.push((p.host.clone(), p.guest.clone(), p.read_only));
    }
    let memory_mib = spec.memory_limit_mib.unwrap_or(DEFAULT_MEMORY_LIMIT_MIB);
    Ok(Grants {
        env,
        preopens,
        allowed_hosts: spec.allowed_hosts.clone(),
        forward_stdio: spec.forward_stdio.unwrap_or(DEFAULT_FORWARD_STDIO),
        output_copy: inputs.output.sink().map(|sink| (Arc::from(name), sink)),
        memory_limit: (memory_mib as usize).saturating_mul(1 << 20),
        log_prefix: format!("wasm {role} `{name}` rank {}", inputs.rank).into(),
        stderr_warnings: Arc::default(),
        write_budget: spec
            .max_write_mib
            .map(|mib| Arc::new(quota::WriteBudget::new(mib.saturating_mul(1 << 20)))),
    })
}
