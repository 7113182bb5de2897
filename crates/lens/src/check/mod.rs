//! What `lens check` runs against an exporter component: validation, capabilities, timings,
//! and a conformance suite for each exporter interface it exports (`suites`) and for each
//! processor interface (`processors`, `metric_processors`, `log_processors`), independent of
//! any guest SDK (feature `testing`: its spans, metrics and log records are
//! [`crate::testing`]'s).

mod log_processors;
mod metric_processors;
mod processors;
mod suites;

use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry::KeyValue;
use opentelemetry_sdk::Resource;

use crate::batch::ExporterStats;
use crate::config::WasmExporterSpec;
use crate::config::env::ProcessEnv;
use crate::error::LensError;
use crate::wasm::artefact::{cache, engine};
use crate::wasm::sandbox::guest_output::CopyBuffer;
use crate::wasm::sandbox::instance::{Job, Outcome, Payload, StartError};
use crate::wasm::sandbox::interface::Preferences;
use crate::wasm::{
    GuestInterface, GuestOutputBuffer, GuestOutputCopy, HostInputs, LoadChecks, Signal, load,
};

/// One conformance case and how it went.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// What was checked.
    pub name: &'static str,
    /// Time taken, or what went wrong.
    pub outcome: Result<Duration, String>,
    /// What the guest wrote to stdout during the case, as written (bounded).
    pub stdout: CopyBuffer,
    /// What the guest wrote to stderr during the case.
    pub stderr: CopyBuffer,
}

impl CaseResult {
    /// A case and what `output` caught during it.
    fn new(
        name: &'static str,
        outcome: Result<Duration, String>,
        output: &GuestOutputBuffer,
    ) -> Self {
        let [stdout, stderr] = output.take();
        Self {
            name,
            outcome,
            stdout,
            stderr,
        }
    }
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
    /// Compile time without any cache; `None` when [`CheckOptions::cold_compile`] was off and
    /// the cache already held the component.
    pub cold_compile: Option<Duration>,
    /// Load time through the on-disk cache (after one load populated it).
    pub cached_load: Duration,
    /// Whether that load was served from the cache.
    pub cache_hit: bool,
    /// What the component is made of, as counted against the host's limits before compiling.
    pub structure: crate::wasm::Structure,
    /// One suite per exporter interface the component exports, in signal order.
    pub signals: Vec<SignalReport>,
}

/// The conformance suite of one exporter interface.
#[derive(Debug, Clone)]
pub struct SignalReport {
    /// The interface, e.g. `lens:exporter/metric-exporter@0.4.0`.
    pub interface: String,
    /// The signal it exports.
    pub signal: Signal,
    /// The encoding the guest asked for.
    pub encoding: Option<&'static str>,
    /// The cases, in order.
    pub cases: Vec<CaseResult>,
    /// Mean cost per item (span, data point, log record) over the bulk case, nanoseconds.
    pub per_item_ns: Option<f64>,
    /// Peak memory of an instance (all its memories and tables), bytes.
    pub peak_memory_bytes: u64,
}

impl CheckReport {
    /// The failed cases, with the interface of each.
    pub fn failures(&self) -> Vec<(&str, &CaseResult)> {
        self.signals
            .iter()
            .flat_map(|s| s.cases.iter().map(move |c| (s.interface.as_str(), c)))
            .filter(|(_, c)| c.outcome.is_err())
            .collect()
    }
}

/// Capability group of an import name.
pub fn capability(import: &str) -> &'static str {
    let groups = [
        ("lens:exporter/", "lens types"),
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

/// What [`check_with`] measures beyond the conformance suites.
#[derive(Debug, Clone, Copy)]
pub struct CheckOptions<'a> {
    /// Time a compile without the cache even when the cache holds the component (a second
    /// compile: seconds for a 20 MB Python guest). Default on; `lens check --quick` turns it
    /// off for an edit–check loop.
    pub cold_compile: bool,
    /// Send a batch again while the guest answers `retryable`, as a rank does (within the
    /// export timeout, 30 s by default). Default off: a case ends at the first `retryable`
    /// answer, reported as such (a failing backend does not hold each case for 30 s);
    /// `lens check --retry` turns it on.
    pub retry: bool,
    /// Settings of one signal's suite over the entry's (`lens check --setting
    /// traces:endpoint=…`): a multi-signal component's endpoints differ by signal.
    pub signal_settings: &'a [(Signal, String, String)],
}

impl Default for CheckOptions<'_> {
    fn default() -> Self {
        Self {
            cold_compile: true,
            retry: false,
            signal_settings: &[],
        }
    }
}

impl<'a> CheckOptions<'a> {
    /// Whether to send a batch again while the guest answers `retryable`.
    pub fn with_retry(mut self, on: bool) -> Self {
        self.retry = on;
        self
    }

    /// Settings for one signal's suite, over the entry's own.
    pub fn with_signal_settings(mut self, settings: &'a [(Signal, String, String)]) -> Self {
        self.signal_settings = settings;
        self
    }

    /// The entry a suite of `signal` runs with: its settings for that signal, and no time to
    /// retry in unless [`retry`](Self::retry).
    fn spec_for(
        &self,
        spec: &WasmExporterSpec,
        signal: Signal,
        config: &crate::LensConfig,
    ) -> WasmExporterSpec {
        let mut spec = spec.clone();
        for (_, key, value) in self.signal_settings.iter().filter(|(s, ..)| *s == signal) {
            spec.settings.insert(key.clone(), value.clone());
        }
        if !self.retry {
            // The call deadline defaults to the export timeout: keep it.
            let batch = config.batch_for(signal).with_overrides(&spec.batch);
            spec.call_timeout_ms.get_or_insert(batch.export_timeout_ms);
            spec.batch.export_timeout_ms = Some(0);
        }
        spec
    }
    /// Whether to time a cold compile when the cache already holds the component.
    pub fn with_cold_compile(mut self, on: bool) -> Self {
        self.cold_compile = on;
        self
    }
}

/// How the file loads: without a cache, then through the cache; its imports by capability.
struct LoadReport {
    size: usize,
    sha256: String,
    capabilities: Vec<(&'static str, Vec<String>)>,
    cold_compile: Option<Duration>,
    cached_load: Duration,
    cache_hit: bool,
    structure: crate::wasm::Structure,
    interfaces: Vec<GuestInterface>,
}

fn load_report(
    spec: &WasmExporterSpec,
    config: &crate::LensConfig,
    options: CheckOptions<'_>,
) -> Result<LoadReport, LensError> {
    let err = |source: crate::error::WasmSetupError| {
        crate::wasm::sandbox::link::setup_error(NAME, spec, source)
    };
    let engine = engine::engine(spec.fuel_per_call.is_some()).map_err(err)?;
    let checks = LoadChecks::of(spec);
    let load = |cache| load(&spec.path, checks, engine, cache).map_err(|e| err(e.into()));
    let cache = cache::shared(&config.wasm_cache, &ProcessEnv);
    let misses = || cache.map(|c| c.stats().misses);
    let misses_before = misses();
    let first = Instant::now();
    let mut loaded = load(cache)?;
    let mut cold_compile = Some(first.elapsed());
    if cache.is_some() && misses() == misses_before {
        // Served from the cache: compile once without it, to measure. (When the cache missed,
        // that load was the cold compile, and it populated the cache: a large guest is not
        // compiled twice.)
        cold_compile = None;
        if options.cold_compile {
            let cold = Instant::now();
            loaded = load(None)?;
            cold_compile = Some(cold.elapsed());
        }
    }
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
        // The load checked it already (or the cache held it, checked when compiled).
        // (From the file read: for an `oci://` path, the stored one.)
        structure: std::fs::read(&loaded.path)
            .ok()
            .and_then(|bytes| {
                crate::wasm::checks::structure::measure(&bytes, &checks.structure).ok()
            })
            .unwrap_or_default(),
        interfaces: loaded.interfaces,
    })
}

/// Shuts a fresh instance serving `signal` down, then sends it `payload` anyway (bypassing
/// the host's own refusal): the guest must answer with an error, neither accept it nor trap.
fn export_after_shutdown(
    spec: &WasmExporterSpec,
    config: &crate::LensConfig,
    resource: &Resource,
    signal: Signal,
    make: fn(&Preferences, &Resource) -> Payload,
    output: &Arc<GuestOutputBuffer>,
) -> Result<Duration, String> {
    let started = Instant::now();
    let copy = GuestOutputCopy::Sink(output.clone());
    let inputs = HostInputs::standalone(resource, &config.wasm_cache, copy);
    let stats = Arc::new(ExporterStats::new(NAME));
    let factory = crate::wasm::lanes::start::factory(
        NAME,
        spec,
        (signal, crate::wasm::Role::Exporter),
        &config.batch,
        &inputs,
        stats,
    )
    .map_err(|e| e.to_string())?;
    let worker = Arc::new(factory).start(resource, 0).map_err(|e| match e {
        StartError::Refused(msg) => format!("init failed: {msg}"),
        StartError::Fault(f) => format!("{}: {}", f.kind, f.detail),
        StartError::Mismatch(detail) => detail,
    })?;
    match worker.call(Job::Shutdown) {
        Outcome::Fault(f) => return Err(format!("shutdown failed: {}: {}", f.kind, f.detail)),
        Outcome::GuestError(msg) => return Err(format!("shutdown failed: {msg}")),
        _ => {}
    }
    match worker.call(Job::Export(make(&worker.preferences, resource))) {
        Outcome::GuestError(_) => Ok(started.elapsed()),
        Outcome::Fault(f) => Err(format!(
            "trapped instead of returning an error: {}: {}",
            f.kind, f.detail
        )),
        Outcome::Retryable { .. } => {
            Err("answered `retryable` after shutdown: it must be `rejected`".into())
        }
        Outcome::Ok | Outcome::Partial { .. } | Outcome::Edits(_) => {
            Err("the guest accepted an export after shutdown".into())
        }
    }
}

/// The resource every suite's batches carry.
fn check_resource() -> Resource {
    Resource::builder_empty()
        .with_attributes([
            KeyValue::new("service.name", "lens-check"),
            KeyValue::new("dl.rank", 0),
        ])
        .build()
}

/// Validates `spec.path` and runs the suite of every exporter interface it exports, with
/// `spec`'s grants and settings.
pub fn check(spec: &WasmExporterSpec) -> Result<CheckReport, LensError> {
    check_with(spec, CheckOptions::default())
}

/// [`check`] with `options`.
pub fn check_with(
    spec: &WasmExporterSpec,
    options: CheckOptions<'_>,
) -> Result<CheckReport, LensError> {
    let config = crate::LensConfig::from_env()?;
    let loaded = load_report(spec, &config, options)?;
    let resource = check_resource();
    let mut signals = Vec::new();
    for interface in &loaded.interfaces {
        let output = Arc::new(GuestOutputBuffer::default());
        let spec = &options.spec_for(spec, interface.signal, &config);
        if interface.role == crate::wasm::Role::Processor {
            let report = match interface.signal {
                Signal::Traces => processors::span_processor(spec, &resource, &output)?,
                Signal::Metrics => metric_processors::metric_processor(spec, &resource, &output)?,
                Signal::Logs => log_processors::log_processor(spec, &resource, &output)?,
            };
            signals.push(SignalReport {
                interface: interface.name(),
                ..report
            });
            continue;
        }
        let mut report = match interface.signal {
            Signal::Traces => suites::spans(spec, &resource, &output, options.retry)?,
            Signal::Metrics => suites::metrics(spec, &resource, &output, options.retry)?,
            Signal::Logs => suites::logs(spec, &resource, &output, options.retry)?,
        };
        report.interface = interface.name();
        let outcome = export_after_shutdown(
            spec,
            &config,
            &resource,
            interface.signal,
            suites::one_item(interface.signal),
            &output,
        );
        report.cases.push(CaseResult::new(
            "shutdown, then an export fails cleanly",
            outcome,
            &output,
        ));
        signals.push(report);
    }
    Ok(CheckReport {
        size: loaded.size,
        sha256: loaded.sha256,
        capabilities: loaded.capabilities,
        cold_compile: loaded.cold_compile,
        cached_load: loaded.cached_load,
        cache_hit: loaded.cache_hit,
        structure: loaded.structure,
        signals,
    })
}
