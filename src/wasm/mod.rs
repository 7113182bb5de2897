//! Sandboxed WebAssembly component exporters (`kind = "wasm"`).
//!
//! The component contract is the WIT package in `wit/exporter.wit` (`lens:exporter@0.2.0`).
//!
//! - [`bindings`]: the host side generated from the WIT;
//! - [`builtin`]: the JSON-lines exporter embedded in the binary;
//! - [`encode`]: the two batch encodings (typed records, OTLP protobuf bytes); typed batches
//!   are lowered borrowing from the spans (`lower`), OTLP bytes written by [`otlp_bytes`];
//! - [`engine`]: one engine per process and its epoch deadlines;
//! - [`cache`]: compiled components on disk, mapped into memory on the next start;
//! - [`mod@load`]: validation of a `.wasm` file, with one clear error per problem;
//! - [`sandbox`]: what a guest may touch (deny by default) and its memory cap;
//! - [`exporter`]: the `SpanExporter` running a guest on its own thread, with restarts and backoff.

pub mod bindings;
pub mod builtin;
pub mod cache;
pub mod conformance;
pub mod encode;
pub mod engine;
pub mod exporter;
pub mod load;
mod lower;
pub mod otlp_bytes;
pub mod otlp_json;
pub mod sandbox;

use std::sync::Arc;
use std::time::Duration;

pub use exporter::{INSTANCE_PLACEHOLDER, WasmSpanExporter};
pub use load::{EXPORT_NAME, LoadedComponent, WORLD_NAME, load, load_with};

use crate::config::{BatchConfig, WasmExporterSpec};
use crate::error::LensError;
use crate::exporter::BuildContext;
use crate::trace::ExporterStats;
use sandbox::Grants;

/// Default linear memory cap: large enough for componentize-py/JS guests (~13 MiB at start).
pub const DEFAULT_MEMORY_LIMIT_MIB: u64 = 256;

impl WasmSpanExporter {
    /// Loads, links and initialises the exporter of a config entry; every error names the
    /// exporter and the file.
    pub(crate) fn from_spec(
        name: &str,
        spec: &WasmExporterSpec,
        batch: &BatchConfig,
        ctx: &BuildContext<'_>,
        stats: Arc<ExporterStats>,
    ) -> Result<Self, LensError> {
        let err = |message: String| LensError::WasmLoad {
            exporter: name.to_string(),
            path: spec.path.clone(),
            message,
        };
        let grants = grants(name, spec, ctx)?;
        let engine = engine::engine(spec.fuel_per_call.is_some()).map_err(err)?;
        let loaded = load(&spec.path, spec.sha256.as_deref(), engine).map_err(err)?;
        log::debug!(
            "wasm exporter `{name}`: {} ({} bytes, sha256 {}) loaded in {:?}; imports: {}",
            loaded.path.display(),
            loaded.size,
            loaded.sha256,
            loaded.load_time,
            loaded.imports.join(", ")
        );
        let rt = exporter::Runtime {
            name: name.into(),
            engine: engine.clone(),
            pre: loaded.pre,
            grants,
            settings: spec
                .settings
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            call_timeout: Duration::from_millis(
                spec.call_timeout_ms.unwrap_or(batch.export_timeout_ms),
            ),
            fuel: spec.fuel_per_call,
            stats,
            encoding: std::sync::Mutex::new(None),
        };
        let exporter =
            WasmSpanExporter::new(rt, ctx.resource.clone(), batch.max_concurrent_exports);
        exporter.start().map_err(err)?;
        Ok(exporter)
    }
}

impl WasmSpanExporter {
    /// Loads a `.wasm` exporter outside a telemetry installation (tests, `lens check`):
    /// process environment for `from_host` grants, rank 0, default batch settings.
    pub fn from_config(
        name: &str,
        spec: &WasmExporterSpec,
        resource: &opentelemetry_sdk::Resource,
    ) -> Result<(Self, Arc<ExporterStats>), LensError> {
        let config = crate::LensConfig::default();
        let env = crate::config::env::ProcessEnv;
        let rank = crate::RankInfo {
            rank: 0,
            world_size: 1,
            local_rank: 0,
        };
        let ctx = BuildContext::new(&config, &env, rank, resource.clone());
        let stats = Arc::new(ExporterStats::new(name));
        let exporter = Self::from_spec(name, spec, &config.batch, &ctx, stats.clone())?;
        Ok((exporter, stats))
    }
}

fn grants(
    name: &str,
    spec: &WasmExporterSpec,
    ctx: &BuildContext<'_>,
) -> Result<Grants, LensError> {
    let err = |message: String| LensError::WasmLoad {
        exporter: name.to_string(),
        path: spec.path.clone(),
        message,
    };
    let env = sandbox::resolve_env(&spec.env, ctx.env).map_err(err)?;
    let mut preopens = Vec::new();
    for p in &spec.preopens {
        if !p.host.is_dir() {
            return Err(err(format!(
                "pre-opened directory {} does not exist",
                p.host.display()
            )));
        }
        preopens.push((p.host.clone(), p.guest.clone(), p.read_only));
    }
    let memory_mib = spec.memory_limit_mib.unwrap_or(DEFAULT_MEMORY_LIMIT_MIB);
    Ok(Grants {
        env,
        preopens,
        allowed_hosts: spec.allowed_hosts.clone(),
        forward_stdio: spec.forward_stdio.unwrap_or(true),
        memory_limit: (memory_mib as usize).saturating_mul(1 << 20),
        log_prefix: format!("wasm exporter `{name}` rank {}", ctx.rank.rank).into(),
    })
}
