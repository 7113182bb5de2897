//! Assembly: how the entries of a config become span processors, metric readers and log
//! processors. Above both
//! the native exporters ([`crate::exporter`]) and the wasm host ([`crate::wasm`]), which know
//! nothing of each other or of the configuration as a whole; [`metrics`] counts the data
//! points of every metric entry.

pub(crate) mod chains;
pub mod metric_spool;
pub mod metrics;
pub(crate) mod reload;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::PeriodicReader;
use opentelemetry_sdk::trace::{SpanData, SpanProcessor};

use crate::batch::Spooling;
use crate::config::env::EnvSource;
use crate::config::{
    ExporterSpec, LensConfig, ProcessorSpec, SetupFailurePolicy, WasmExporterSpec,
};
use crate::error::{LensError, WasmSetupError};
use crate::exporter::otlp::{self, OtlpRequestSender, OtlpSettings};
use crate::exporter::python_json::ResourceOrder;
use crate::exporter::{
    ConsoleLogExporter, ConsoleMetricExporter, ConsoleOut, ConsoleSpanExporter, NoopLogExporter,
    NoopSpanExporter, OtlpLogExporter, OtlpMetricExporter, OtlpSpanExporter,
};
use crate::logs::{BatchLogProcessor, Queued};
use crate::rank::RankInfo;
use crate::signal::Signal;
use crate::spool::{Opened, Spool};
use crate::trace::{BatchSpanProcessor, DisabledSpanProcessor, ExportStage, ExporterStats};
use crate::wasm::reload::Reloadable;
use crate::wasm::{
    HostInputs, WasmLogExporter, WasmMetricExporter, WasmProcessor, WasmSpanExporter,
};
use metrics::{CountedMetricExporter, MetricExporterKind};

/// A wasm exporter that failed at setup: a failure of the guest's own (`init` refusing,
/// faulting or hanging) disables it when its policy says so (`Ok` with the error, logged),
/// and the rank trains; anything the config is to blame for fails setup.
fn disable_or_fail(
    spec: &WasmExporterSpec,
    error: LensError,
    signal: Signal,
    reloading: bool,
) -> Result<LensError, LensError> {
    // A reload refuses what fails and keeps what runs: it never disables an entry.
    let guest_failed = !reloading
        && matches!(
            &error,
            LensError::WasmLoad {
                source: WasmSetupError::InitRefused(_) | WasmSetupError::Start { .. },
                ..
            }
        );
    if !guest_failed || spec.on_setup_failure.unwrap_or_default() == SetupFailurePolicy::Fail {
        return Err(error);
    }
    log::warn!(
        "{error}; the exporter is disabled (on_setup_failure = \"disable\"): its {} are counted as dropped",
        signal.items()
    );
    Ok(error)
}

/// What flushing a log exporter without buffered work of its own does.
fn no_flush<E>(_: &E) -> opentelemetry_sdk::error::OTelSdkResult {
    Ok(())
}

/// A metric entry's reader, with the statistics of its exporter.
pub(crate) type MetricReader = PeriodicReader<CountedMetricExporter>;

/// A metric entry's reader, with its exporter's statistics.
pub(crate) type BuiltReader = (
    Built<MetricReader>,
    Arc<ExporterStats>,
    Option<Arc<metric_spool::MetricSpool>>,
);

/// What one config entry became: its processor (or reader), and the running instances of its
/// wasm exporter when it has one (what a reload swaps in place).
pub(crate) struct Built<P> {
    pub processor: P,
    pub wasm: Option<Arc<Reloadable>>,
    /// Its spool, if it has one (a reload rebuilding the entry hands it to the new processor).
    pub spool: Option<Arc<Spooling>>,
    /// The processors before its exporter (what a reload changing them replaces).
    pub chain: Option<chains::ChainHandle>,
}

impl<P> Built<P> {
    fn native(processor: P) -> Self {
        Self {
            processor,
            wasm: None,
            spool: None,
            chain: None,
        }
    }
}

/// What building exporters needs, shared across the entries of one installation.
pub(crate) struct BuildContext<'a> {
    config: &'a LensConfig,
    pub(crate) env: &'a dyn EnvSource,
    rank: RankInfo,
    resource: Resource,
    /// Where console exporters write, and the resource's key order they write.
    console: ConsoleOut,
    resource_order: ResourceOrder,
    /// Where a copy of the wasm exporters' guest output goes.
    guest_output: crate::wasm::GuestOutputCopy,
    /// The runtime of the gRPC exporters, started by the first one.
    runtime: OnceLock<Arc<tokio::runtime::Runtime>>,
    /// Building for a reload: a wasm entry that fails is an error, never disabled.
    reloading: bool,
    /// The sandboxed processors of each signal, built before the exporters they apply to.
    processors: Vec<(Signal, ProcessorSpec, Arc<WasmProcessor>)>,
    /// Spools open in the running installation that a reload's rebuilt entries take on
    /// instead of opening them again (their lock is held by the processor being replaced).
    offered: std::sync::Mutex<Vec<Arc<Spooling>>>,
    /// The spool directories opened for this installation so far, by entry (`signal`, name).
    claimed: std::sync::Mutex<Vec<(std::path::PathBuf, Signal, String)>>,
}

impl<'a> BuildContext<'a> {
    pub(crate) fn new(
        config: &'a LensConfig,
        env: &'a dyn EnvSource,
        rank: RankInfo,
        resource: Resource,
    ) -> Self {
        Self {
            config,
            env,
            rank,
            resource,
            console: ConsoleOut::Stdout,
            resource_order: ResourceOrder::default(),
            guest_output: crate::wasm::GuestOutputCopy::None,
            runtime: OnceLock::new(),
            reloading: false,
            processors: Vec::new(),
            offered: std::sync::Mutex::default(),
            claimed: std::sync::Mutex::default(),
        }
    }

    /// Builds the config's processors of `signal` (`[[traces.processors]]`,
    /// `[[logs.processors]]`), before the signal's exporters: each gets one instance per batch
    /// that may be exported at once through it (the `max_concurrent_exports` of each exporter
    /// it applies to, at most [`MAX_CONCURRENT_EXPORTS`](crate::config::MAX_CONCURRENT_EXPORTS)).
    /// A guest failing at setup disables the processor when its `on_setup_failure` says so
    /// (its batches then meet its `on_fault`).
    pub(crate) fn build_processors(
        &mut self,
        signal: Signal,
        exporters: &[ExporterSpec],
    ) -> Result<Vec<Arc<ExporterStats>>, LensError> {
        let built = self.build_processors_reusing(signal, exporters, &|_| None, &|name| {
            Arc::new(ExporterStats::new(name))
        })?;
        Ok(built.iter().map(|(_, p, _)| p.stats().clone()).collect())
    }

    /// [`build_processors`](Self::build_processors) for a reload: a processor `reuse` gives
    /// (the running one, when its entry did not change) is taken as it is, the others built
    /// counting into `stats_for(name)`. Returns each entry with its processor, and whether it
    /// was built (not reused), in the config's order.
    pub(crate) fn build_processors_reusing(
        &mut self,
        signal: Signal,
        exporters: &[ExporterSpec],
        reuse: &dyn Fn(&ProcessorSpec) -> Option<Arc<WasmProcessor>>,
        stats_for: &dyn Fn(&str) -> Arc<ExporterStats>,
    ) -> Result<Vec<(ProcessorSpec, Arc<WasmProcessor>, bool)>, LensError> {
        let mut all = Vec::new();
        let defaults = self.config.batch_for(signal);
        for spec in &self.config.signal(signal).processors {
            let name = spec.display_name();
            if let Some(running) = reuse(spec) {
                all.push((spec.clone(), running.clone(), false));
                self.processors.push((signal, spec.clone(), running));
                continue;
            }
            let stats = stats_for(&name);
            let lanes =
                crate::config::guest_memory::processor_lanes(signal, spec, exporters, defaults);
            let inputs = self.host_inputs();
            let built = WasmProcessor::build(&name, spec, signal, lanes, &inputs, stats.clone());
            let processor = match built {
                Ok(p) => p,
                Err(source) => {
                    let error =
                        crate::wasm::sandbox::link::setup_error(&name, spec.component(), source);
                    let error = disable_or_fail(spec.component(), error, signal, self.reloading)?;
                    let (why, on_fault) = (error.to_string(), spec.on_fault());
                    WasmProcessor::disabled(&name, signal, on_fault, stats.clone(), why)
                }
            };
            let processor = Arc::new(processor);
            all.push((spec.clone(), processor.clone(), true));
            self.processors.push((signal, spec.clone(), processor));
        }
        Ok(all)
    }

    /// The processors of `signal` that apply to the exporter called `name`, in the config's
    /// order.
    pub(crate) fn processors_for<T: 'static>(
        &self,
        signal: Signal,
        name: &str,
    ) -> Vec<Arc<dyn ExportStage<T>>>
    where
        WasmProcessor: ExportStage<T>,
    {
        self.processors
            .iter()
            .filter(|(s, spec, _)| *s == signal && spec.applies_to(name))
            .map(|(_, _, p)| p.clone() as Arc<dyn ExportStage<T>>)
            .collect()
    }

    /// The metric processors that apply to the exporter called `name`, in the config's order.
    fn metric_processors(&self, name: &str) -> Vec<Arc<WasmProcessor>> {
        self.processors
            .iter()
            .filter(|(s, spec, _)| *s == Signal::Metrics && spec.applies_to(name))
            .map(|(_, _, p)| p.clone())
            .collect()
    }

    /// The processors built, as a reload's registry lists them.
    pub(crate) fn running_processors(&self) -> Vec<reload::RunningProcessor> {
        self.processors
            .iter()
            .map(|(signal, spec, p)| reload::RunningProcessor {
                signal: *signal,
                name: spec.display_name(),
                processor: p.clone(),
            })
            .collect()
    }

    /// Builds for a reload (see `reloading`).
    pub(crate) fn for_reload(mut self) -> Self {
        self.reloading = true;
        self
    }

    fn runtime(&self) -> Result<Arc<tokio::runtime::Runtime>, LensError> {
        if let Some(rt) = self.runtime.get() {
            return Ok(rt.clone());
        }
        let rt = otlp::grpc_runtime()?;
        Ok(self.runtime.get_or_init(|| rt).clone())
    }

    /// A batch processor for a span exporter entry, counting into `stats`.
    pub(crate) fn span_processor(
        &self,
        spec: &ExporterSpec,
        name: &str,
        stats: &Arc<ExporterStats>,
    ) -> Result<Built<Box<dyn SpanProcessor>>, LensError> {
        let batch = spec.batch_config(&self.config.batch);
        let edits = self.processors_for::<SpanData>(Signal::Traces, name);
        let processor = match spec {
            ExporterSpec::Otlp(o) => {
                let settings =
                    OtlpSettings::resolve(o, &self.config.otlp, Signal::Traces, self.env);
                let exporter = OtlpSpanExporter::build(name, &settings, &|| self.runtime())?
                    .with_stats(stats.clone());
                let spool = self.open_spool(spec, name, Signal::Traces, stats)?;
                let processor =
                    BatchSpanProcessor::with_spooling(exporter, edits, batch, stats.clone(), spool);
                return Ok(Built {
                    spool: processor.spooling(),
                    chain: Some(chains::ChainHandle::Spans(processor.chain())),
                    processor: Box::new(processor),
                    wasm: None,
                });
            }
            ExporterSpec::Console(_) => BatchSpanProcessor::with_processors(
                self.console_span_exporter(),
                edits,
                batch,
                stats.clone(),
            ),
            ExporterSpec::None(_) => {
                BatchSpanProcessor::with_processors(NoopSpanExporter, edits, batch, stats.clone())
            }
            ExporterSpec::Wasm(w) => {
                match WasmSpanExporter::build(name, w, &batch, &self.host_inputs(), stats.clone()) {
                    Ok(exporter) => {
                        let wasm = Some(exporter.reloadable());
                        let spool = self.open_spool(spec, name, Signal::Traces, stats)?;
                        let processor = BatchSpanProcessor::with_spooling(
                            exporter,
                            edits,
                            batch,
                            stats.clone(),
                            spool,
                        );
                        return Ok(Built {
                            spool: processor.spooling(),
                            chain: Some(chains::ChainHandle::Spans(processor.chain())),
                            processor: Box::new(processor),
                            wasm,
                        });
                    }
                    Err(source) => {
                        let error = crate::wasm::sandbox::link::setup_error(name, w, source);
                        let error = disable_or_fail(w, error, Signal::Traces, self.reloading)?;
                        let processor =
                            DisabledSpanProcessor::new(stats.clone(), error.to_string());
                        return Ok(Built::native(Box::new(processor)));
                    }
                }
            }
        };
        Ok(Built {
            chain: Some(chains::ChainHandle::Spans(processor.chain())),
            ..Built::native(Box::new(processor))
        })
    }

    /// Offers a running entry's spool to the entries built next (a reload rebuilding it).
    pub(crate) fn offer_spool(&self, spooling: Arc<Spooling>) {
        self.offered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(spooling);
    }

    /// The spool of an entry that has one: the running one in its directory when a reload
    /// offered it (taken on with this entry's bounds), else opened (taking its lock) in its
    /// directory for this rank; a directory that cannot hold one fails the setup, naming it.
    fn open_spool(
        &self,
        spec: &ExporterSpec,
        name: &str,
        signal: Signal,
        stats: &ExporterStats,
    ) -> Result<Option<Arc<Spooling>>, LensError> {
        let Some(s) = spec.spool() else {
            return Ok(None);
        };
        let dir = self.spool_dir(s, name, signal);
        let offered = self.offered.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(running) = offered.iter().find(|o| o.dir() == dir) {
            running.set_limits(s.limits());
            return Ok(Some(running.adopt()));
        }
        drop(offered);
        let (spool, opened) = self.open_spool_dir(s, &dir, name, signal)?;
        Ok(Some(Arc::new(Spooling::new(spool, opened, stats))))
    }

    /// The directory of the spool `s` of the entry `name` of `signal` on this rank.
    fn spool_dir(
        &self,
        s: &crate::config::SpoolSpec,
        name: &str,
        signal: Signal,
    ) -> std::path::PathBuf {
        s.resolved_dir(
            self.env,
            &self.config.service_name,
            self.rank.rank,
            name,
            signal,
        )
    }

    /// Opens the spool at `dir` for the entry `name` of `signal`, unless another entry of this
    /// installation has it (an error naming both: its lock would only say "this process").
    fn open_spool_dir(
        &self,
        s: &crate::config::SpoolSpec,
        dir: &std::path::Path,
        name: &str,
        signal: Signal,
    ) -> Result<(Spool, Opened), LensError> {
        let mut claimed = self.claimed.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, other, other_name)) = claimed.iter().find(|(d, _, _)| d == dir) {
            return Err(LensError::exporter(
                name,
                "cannot open its spool",
                format!(
                    "spool directory {} is also that of {other} exporter `{other_name}`: each \
                     exporter needs its own (put `{{signal}}` and `{{exporter}}` in `dir`, as \
                     the default does)",
                    dir.display()
                ),
            ));
        }
        let opened = Spool::open(dir, signal, s.limits())
            .map_err(|e| LensError::exporter(name, "cannot open its spool", e))?;
        claimed.push((dir.to_path_buf(), signal, name.to_string()));
        Ok(opened)
    }

    /// A periodic reader for a metric exporter entry, with its statistics (neither for
    /// `kind = "none"`).
    pub(crate) fn metric_reader(
        &self,
        spec: &ExporterSpec,
        name: &str,
    ) -> Result<Option<BuiltReader>, LensError> {
        // Checked first: a bad period fails the setup before any exporter starts.
        let interval = Duration::from_millis(crate::config::env::metric_export_interval(
            self.env,
            self.config.metric_export_interval_ms,
        )?);
        let stats = Arc::new(ExporterStats::new(name));
        let processors = self.metric_processors(name);
        let mut requests = None;
        let mut wasm = None;
        let mut sink = None;
        let exporter = match spec {
            ExporterSpec::Otlp(o) => {
                let settings =
                    OtlpSettings::resolve(o, &self.config.otlp, Signal::Metrics, self.env);
                let exporter = OtlpMetricExporter::build(name, &settings, &|| self.runtime())?
                    .with_stats(stats.clone());
                if spec.spool().is_some() {
                    sink = Some(metric_spool::RequestSink::otlp(OtlpRequestSender::build(
                        name,
                        &settings,
                        &|| self.runtime(),
                        stats.clone(),
                    )?));
                } else {
                    // Also without processors now: a reload may give it some.
                    requests = Some(OtlpRequestSender::build(
                        name,
                        &settings,
                        &|| self.runtime(),
                        stats.clone(),
                    )?);
                }
                MetricExporterKind::Otlp(Box::new(exporter))
            }
            ExporterSpec::Console(_) => MetricExporterKind::Console(
                ConsoleMetricExporter::new(self.console.clone())
                    .with_resource_order(self.resource_order.clone()),
            ),
            ExporterSpec::None(_) => return Ok(None),
            ExporterSpec::Wasm(w) => {
                let batch = spec.batch_config(&self.config.batch);
                let built =
                    WasmMetricExporter::build(name, w, &batch, &self.host_inputs(), stats.clone());
                match built {
                    Ok(exporter) => {
                        wasm = Some(exporter.reloadable());
                        sink = Some(metric_spool::RequestSink::wasm(exporter.reloadable()));
                        MetricExporterKind::Wasm(exporter)
                    }
                    Err(source) => {
                        let error = crate::wasm::sandbox::link::setup_error(name, w, source);
                        let error = disable_or_fail(w, error, Signal::Metrics, self.reloading)?;
                        stats.record_disabled(error.to_string());
                        MetricExporterKind::Disabled
                    }
                }
            }
        };
        let mut exporter = CountedMetricExporter::new(exporter, stats.clone())
            .with_processors(processors, requests);
        let mut spool = None;
        if let Some(sink) = sink
            && let Some(s) = spec.spool()
        {
            let dir = self.spool_dir(s, name, Signal::Metrics);
            let opened = self.open_spool_dir(s, &dir, name, Signal::Metrics)?;
            let s = Arc::new(metric_spool::MetricSpool::new(
                opened,
                sink,
                stats.clone(),
                interval,
            ));
            exporter = exporter.with_spool(s.clone());
            spool = Some(s);
        }
        let chain = Some(chains::ChainHandle::Metrics(exporter.chain()));
        let reader = PeriodicReader::builder(exporter)
            .with_interval(interval)
            .build();
        Ok(Some((
            Built {
                processor: reader,
                wasm,
                spool: None,
                chain,
            },
            stats,
            spool,
        )))
    }

    /// Console exporters write to `console` (default stdout), the resource's keys in `order`.
    pub(crate) fn with_console(mut self, console: ConsoleOut, order: ResourceOrder) -> Self {
        self.console = console;
        self.resource_order = order;
        self
    }

    /// Wasm exporters copy their guest's stdout/stderr into `copy`.
    pub(crate) fn with_guest_output(mut self, copy: crate::wasm::GuestOutputCopy) -> Self {
        self.guest_output = copy;
        self
    }

    fn console_span_exporter(&self) -> ConsoleSpanExporter {
        ConsoleSpanExporter::new(self.console.clone())
            .with_resource_order(self.resource_order.clone())
    }

    /// What the wasm host needs from this installation.
    fn host_inputs(&self) -> HostInputs<'_> {
        HostInputs {
            env: self.env,
            rank: self.rank.rank,
            resource: &self.resource,
            cache: &self.config.wasm_cache,
            output: self.guest_output.clone(),
        }
    }

    /// A batch log processor for a log exporter entry, counting into `stats`.
    pub(crate) fn log_processor(
        &self,
        spec: &ExporterSpec,
        name: &str,
        stats: &Arc<ExporterStats>,
    ) -> Result<Built<BatchLogProcessor>, LensError> {
        let batch = spec.batch_config(&self.config.log_batch);
        let edits = self.processors_for::<Queued>(Signal::Logs, name);
        let mut wasm = None;
        let processor = match spec {
            ExporterSpec::Otlp(o) => {
                let settings = OtlpSettings::resolve(o, &self.config.otlp, Signal::Logs, self.env);
                let exporter = OtlpLogExporter::build(name, &settings, &|| self.runtime())?
                    .with_stats(stats.clone());
                let spool = self.open_spool(spec, name, Signal::Logs, stats)?;
                BatchLogProcessor::with_spooling(
                    exporter,
                    no_flush,
                    edits,
                    batch,
                    stats.clone(),
                    spool,
                )
            }
            ExporterSpec::Console(_) => BatchLogProcessor::with_processors(
                ConsoleLogExporter::new(self.console.clone())
                    .with_resource_order(self.resource_order.clone()),
                no_flush,
                edits,
                batch,
                stats.clone(),
            ),
            ExporterSpec::None(_) => BatchLogProcessor::with_processors(
                NoopLogExporter,
                no_flush,
                edits,
                batch,
                stats.clone(),
            ),
            ExporterSpec::Wasm(w) => {
                match WasmLogExporter::build(name, w, &batch, &self.host_inputs(), stats.clone()) {
                    Ok(exporter) => {
                        wasm = Some(exporter.reloadable());
                        let spool = self.open_spool(spec, name, Signal::Logs, stats)?;
                        BatchLogProcessor::with_spooling(
                            exporter,
                            WasmLogExporter::force_flush,
                            edits,
                            batch,
                            stats.clone(),
                            spool,
                        )
                    }
                    Err(source) => {
                        let error = crate::wasm::sandbox::link::setup_error(name, w, source);
                        let error = disable_or_fail(w, error, Signal::Logs, self.reloading)?;
                        BatchLogProcessor::disabled(stats.clone(), error.to_string())
                    }
                }
            }
        };
        Ok(Built {
            spool: processor.spooling(),
            chain: processor.chain().map(chains::ChainHandle::Logs),
            processor,
            wasm,
        })
    }
}
