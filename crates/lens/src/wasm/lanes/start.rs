//! Starting an entry's lanes: its component loaded (stages 1 to 4, [`crate::wasm::sandbox::link`]),
//! its grants resolved from the entry and the installation's [`HostInputs`], and as many
//! instances started and `init`-ed as it has lanes.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry_sdk::Resource;

use super::Lanes;
use crate::batch::ExporterStats;
use crate::config::env::{EnvSource, ProcessEnv};
use crate::config::{BatchConfig, WasmCacheConfig, WasmExporterSpec};
use crate::error::{GrantError, LoadError, WasmSetupError};
use crate::wasm::artefact::{cache, engine};
use crate::wasm::sandbox::egress::{DEFAULT_MAX_RESPONSE_MIB, Egress};
use crate::wasm::sandbox::guest_output::{DEFAULT_FORWARD_STDIO, GuestOutputCopy};
use crate::wasm::sandbox::http::resolve_credentials;
use crate::wasm::sandbox::instance::{DEFAULT_INIT_TIMEOUT_MS, InstanceFactory, StartError};
use crate::wasm::sandbox::interface::{Role, Signal};
use crate::wasm::sandbox::limits::DEFAULT_MEMORY_LIMIT_MIB;
use crate::wasm::sandbox::link::{LoadChecks, load};
use crate::wasm::sandbox::{Grants, quota, resolve_env};

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
    let env = resolve_env(&spec.env, inputs.env)?;
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
        credentials: resolve_credentials(&spec.credentials, &spec.allowed_hosts, inputs.env)?,
        egress: Egress {
            allow_private: spec.allow_private_addresses.unwrap_or(false),
            max_response_bytes: spec
                .max_response_mib
                .unwrap_or(DEFAULT_MAX_RESPONSE_MIB)
                .saturating_mul(1 << 20),
        },
        forward_stdio: spec.forward_stdio.unwrap_or(DEFAULT_FORWARD_STDIO),
        output_copy: inputs.output.sink().map(|sink| (Arc::from(name), sink)),
        memory_limit: (memory_mib as usize).saturating_mul(1 << 20),
        max_answer: (spec.answer_mib() as usize).saturating_mul(1 << 20),
        log_prefix: format!("wasm {role} `{name}` rank {}", inputs.rank).into(),
        stderr_warnings: Arc::default(),
        write_budget: spec
            .max_write_mib
            .map(|mib| Arc::new(quota::WriteBudget::new(mib.saturating_mul(1 << 20)))),
    })
}
