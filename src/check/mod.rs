//! What `lens check` runs against an exporter component: validation, capabilities, timings,
//! and a conformance suite independent of any guest SDK (feature `testing`: its spans are
//! [`crate::testing`]'s).

use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry::KeyValue;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

use crate::batch::ExporterStats;
use crate::config::WasmExporterSpec;
use crate::config::env::ProcessEnv;
use crate::error::LensError;
use crate::testing::spans;
use crate::wasm::instance::{Job, Outcome, StartError};
use crate::wasm::{
    DEFAULT_MAX_FILE_MIB, HostInputs, LoadChecks, WasmSpanExporter, cache, engine, load,
};

/// One conformance case and how it went.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// What was checked.
    pub name: &'static str,
    /// Time taken, or what went wrong.
    pub outcome: Result<Duration, String>,
}

/// Everything `lens check` reports.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// File size in bytes.
    pub size: usize,
    /// SHA-256 of the file.
    pub sha256: String,
    /// Imports grouped by capability (`files`, `environment`, `http`, …).
    pub capabilities: Vec<(&'static str, Vec<String>)>,
    /// Compile time without any cache.
    pub cold_compile: Duration,
    /// Load time through the on-disk cache (after one load populated it).
    pub cached_load: Duration,
    /// Whether that load was served from the cache.
    pub cache_hit: bool,
    /// The encoding the guest asked for.
    pub encoding: Option<&'static str>,
    /// The cases, in order.
    pub cases: Vec<CaseResult>,
    /// Mean cost per span over the 10k-span case, nanoseconds.
    pub per_span_ns: Option<f64>,
    /// Peak linear memory of the instance, bytes.
    pub peak_memory_bytes: u64,
}

impl CheckReport {
    /// The failed cases.
    pub fn failures(&self) -> Vec<&CaseResult> {
        self.cases.iter().filter(|c| c.outcome.is_err()).collect()
    }
}

/// Capability group of an import name.
pub fn capability(import: &str) -> &'static str {
    let groups = [
        ("wasi:filesystem/", "files"),
        ("wasi:cli/environment", "environment"),
        ("wasi:http/", "http"),
        ("wasi:sockets/", "sockets"),
        ("wasi:clocks/", "clocks"),
        ("wasi:random/", "random"),
        ("wasi:cli/std", "stdio"),
        ("wasi:cli/terminal", "stdio"),
        ("wasi:cli/exit", "exit"),
        ("wasi:io/", "streams"),
    ];
    groups
        .iter()
        .find(|(prefix, _)| import.starts_with(prefix))
        .map(|(_, g)| *g)
        .unwrap_or("other")
}

const NAME: &str = "check";

fn run(e: &WasmSpanExporter, batch: Vec<SpanData>) -> Result<Duration, String> {
    let started = Instant::now();
    futures_executor::block_on(e.export(batch))
        .map(|()| started.elapsed())
        .map_err(|e| e.to_string())
}

/// How the file loads: without a cache, then through the cache; its imports by capability.
struct LoadReport {
    size: usize,
    sha256: String,
    capabilities: Vec<(&'static str, Vec<String>)>,
    cold_compile: Duration,
    cached_load: Duration,
    cache_hit: bool,
}

fn load_report(
    spec: &WasmExporterSpec,
    config: &crate::LensConfig,
) -> Result<LoadReport, LensError> {
    let err = |source: crate::error::WasmSetupError| crate::wasm::setup_error(NAME, spec, source);
    let engine = engine::engine(spec.fuel_per_call.is_some()).map_err(err)?;
    let checks = LoadChecks {
        sha256_pin: spec.sha256.as_deref(),
        max_bytes: spec.max_file_mib.unwrap_or(DEFAULT_MAX_FILE_MIB) << 20,
    };
    let load = |cache| load(&spec.path, checks, engine, cache).map_err(|e| err(e.into()));
    let cold = Instant::now();
    let loaded = load(None)?;
    let cold_compile = cold.elapsed();
    let cache = cache::shared(&config.wasm_cache, &ProcessEnv);
    load(cache)?; // populates the cache
    let hits = || cache.map(|c| c.stats().hits).unwrap_or(0);
    let hits_before = hits();
    let warm = Instant::now();
    load(cache)?;
    let cached_load = warm.elapsed();
    let mut capabilities: Vec<(&'static str, Vec<String>)> = Vec::new();
    for import in &loaded.imports {
        let group = capability(import);
        match capabilities.iter_mut().find(|(g, _)| *g == group) {
            Some((_, list)) => list.push(import.clone()),
            None => capabilities.push((group, vec![import.clone()])),
        }
    }
    Ok(LoadReport {
        size: loaded.size,
        sha256: loaded.sha256,
        capabilities,
        cold_compile,
        cached_load,
        cache_hit: hits() > hits_before,
    })
}

/// The suite's cases on one exporter, in order; the mean cost per span of the bulk case.
fn run_cases(exporter: &WasmSpanExporter) -> (Vec<CaseResult>, Option<f64>) {
    let mut cases = vec![CaseResult {
        name: "init with the given settings",
        outcome: Ok(Duration::ZERO),
    }];
    let mut case = |name: &'static str, outcome: Result<Duration, String>| {
        cases.push(CaseResult { name, outcome })
    };
    case("empty batch", run(exporter, Vec::new()));
    case("one span", run(exporter, spans::one()));
    case(
        "every attribute value type",
        run(exporter, spans::every_value_type()),
    );
    case("unicode names and values", run(exporter, spans::unicode()));
    case(
        "events, links and status",
        run(exporter, spans::events_links_status()),
    );
    let bulk = spans::many(10_240);
    let started = Instant::now();
    let bulk_result = bulk
        .chunks(512)
        .try_for_each(|chunk| run(exporter, chunk.to_vec()).map(drop));
    let bulk_time = started.elapsed();
    let per_span_ns = bulk_result
        .is_ok()
        .then(|| bulk_time.as_nanos() as f64 / bulk.len() as f64);
    case(
        "10k spans in batches of 512",
        bulk_result.map(|()| bulk_time),
    );
    let flush = Instant::now();
    case(
        "force-flush",
        exporter
            .force_flush()
            .map(|()| flush.elapsed())
            .map_err(|e| e.to_string()),
    );
    (cases, per_span_ns)
}

/// Shuts a fresh instance down, then sends it a batch anyway (bypassing the host's own
/// refusal): the guest must answer with an error, neither accept it nor trap.
fn export_after_shutdown(
    spec: &WasmExporterSpec,
    config: &crate::LensConfig,
    resource: &Resource,
) -> Result<Duration, String> {
    let started = Instant::now();
    let inputs = HostInputs {
        env: &ProcessEnv,
        rank: 0,
        resource,
        cache: &config.wasm_cache,
    };
    let stats = Arc::new(ExporterStats::new(NAME));
    let factory = crate::wasm::factory(NAME, spec, &config.batch, &inputs, stats)
        .map_err(|e| e.to_string())?;
    let worker = Arc::new(factory).start(resource, 0).map_err(|e| match e {
        StartError::Refused(msg) => format!("init failed: {msg}"),
        StartError::Fault(f) => format!("{}: {}", f.kind, f.detail),
    })?;
    match worker.call(Job::Shutdown) {
        Outcome::Ok => {}
        Outcome::GuestError(msg) => return Err(format!("shutdown failed: {msg}")),
        Outcome::Fault(f) => return Err(format!("shutdown failed: {}: {}", f.kind, f.detail)),
    }
    match worker.call(Job::Export(spans::one())) {
        Outcome::GuestError(_) => Ok(started.elapsed()),
        Outcome::Ok => Err("the guest accepted an export after shutdown".into()),
        Outcome::Fault(f) => Err(format!(
            "trapped instead of returning an error: {}: {}",
            f.kind, f.detail
        )),
    }
}

/// Validates `spec.path` and runs the suite against it with `spec`'s grants and settings.
pub fn check(spec: &WasmExporterSpec) -> Result<CheckReport, LensError> {
    let config = crate::LensConfig::from_env()?;
    let loaded = load_report(spec, &config)?;
    let resource = Resource::builder_empty()
        .with_attributes([
            KeyValue::new("service.name", "lens-check"),
            KeyValue::new("dl.rank", 0),
        ])
        .build();
    let (exporter, stats) = WasmSpanExporter::from_config(NAME, spec, &resource)?;
    let (mut cases, per_span_ns) = run_cases(&exporter);
    cases.push(CaseResult {
        name: "shutdown, then an export fails cleanly",
        outcome: export_after_shutdown(spec, &config, &resource),
    });
    let encoding = exporter.encoding();
    let _ = exporter.shutdown();
    let snapshot = stats.snapshot();
    if !snapshot.traps.is_empty() {
        cases.push(CaseResult {
            name: "no traps",
            outcome: Err(format!(
                "traps: {}",
                snapshot
                    .traps
                    .iter()
                    .map(|(kind, n)| format!("{kind} ×{n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        });
    }
    Ok(CheckReport {
        size: loaded.size,
        sha256: loaded.sha256,
        capabilities: loaded.capabilities,
        cold_compile: loaded.cold_compile,
        cached_load: loaded.cached_load,
        cache_hit: loaded.cache_hit,
        encoding,
        cases,
        per_span_ns,
        peak_memory_bytes: snapshot.peak_memory_bytes,
    })
}
