//! The providers of one installation: tracer (sampler, fan-out to the batch processors),
//! meter (readers) and logger (batch log processors), from the config's entries through
//! [`crate::pipeline`] or from what the application injected in code.

use std::sync::Arc;

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::SdkLoggerProvider;
use opentelemetry_sdk::metrics::{MeterProviderBuilder, SdkMeterProvider};
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider, SpanData, SpanProcessor};

use crate::batch::ExportStage;
use crate::batch::ExporterStats;
use crate::config::env::EnvSource;
use crate::config::{BatchConfig, LensConfig};
use crate::config::{ExporterSpec, NoneExporterSpec};
use crate::error::LensError;
use crate::exporter::ConsoleOut;
use crate::exporter::python_json::ResourceOrder;
use crate::logs::{BatchLogProcessor, FanOutLogProcessor, LogFanOut, Queued};
use crate::pipeline::BuildContext;
use crate::pipeline::metric_spool::MetricSpool;
use crate::pipeline::reload::{Running, RunningProcessor};
use crate::rank::RankInfo;
use crate::signal::Signal;
use crate::slots::StatsList;
use crate::trace::{BatchSpanProcessor, FanOutCore, FanOutSpanProcessor, RankAwareSampler};

/// Builds an injected exporter's batch processor `P` of items `T`, with the config's
/// processors that apply to it.
type Factory<P, T> =
    Box<dyn FnOnce(BatchConfig, Arc<ExporterStats>, Vec<Arc<dyn ExportStage<T>>>) -> P>;
pub(super) type SpanFactory = Factory<BatchSpanProcessor, SpanData>;
pub(super) type LogFactory = Factory<BatchLogProcessor, Queued>;
pub(super) type ReaderHook = Box<dyn FnOnce(MeterProviderBuilder) -> MeterProviderBuilder>;

/// What the application handed the builder in code, in place of the config's exporters.
#[derive(Default)]
pub(super) struct Injected {
    pub(super) span_exporters: Vec<(String, SpanFactory)>,
    pub(super) span_processors: Vec<Box<dyn SpanProcessor>>,
    pub(super) metric_readers: Vec<ReaderHook>,
    pub(super) log_exporters: Vec<(String, LogFactory)>,
    /// Where the console exporters built from the config write.
    pub(super) console_out: ConsoleOut,
    /// Where a copy of the wasm exporters' guest stdout/stderr goes.
    pub(super) guest_output: crate::wasm::GuestOutputCopy,
}

/// Who the providers are for: the rank, whether it exports, its resource and sampler.
pub(super) struct For<'a> {
    pub(super) rank: RankInfo,
    pub(super) exporting: bool,
    pub(super) resource: &'a Resource,
    /// The resource's keys in NeMo Lens's order, for the console exporters.
    pub(super) resource_order: &'a ResourceOrder,
    pub(super) sampler: Option<RankAwareSampler>,
}

/// The built providers, and what the handle needs of them.
pub(super) struct Providers {
    pub(super) tracer: SdkTracerProvider,
    pub(super) meter: SdkMeterProvider,
    pub(super) logger: SdkLoggerProvider,
    pub(super) fanout: Option<Arc<FanOutCore>>,
    pub(super) log_fanout: Option<Arc<LogFanOut>>,
    pub(super) log_stats: StatsList,
    /// The log processors' own statistics (`[[logs.processors]]`).
    pub(super) log_processor_stats: StatsList,
    /// The metric processors' own statistics.
    pub(super) metric_processor_stats: StatsList,
    pub(super) metric_stats: Vec<Arc<ExporterStats>>,
    /// The spools of metric entries that have one (a flush and a shutdown replay them).
    pub(super) metric_spools: Vec<Arc<MetricSpool>>,
    /// The entries built from the config, and the signals they are all of (what a reload
    /// changes).
    pub(super) running: Vec<Running>,
    /// The processors built from the config (what a reload can swap).
    pub(super) processors: Vec<RunningProcessor>,
    pub(super) signals: Vec<Signal>,
}

/// Builds the three providers: no-op ones (no processors, no readers, nothing recorded) on a
/// rank that does not export or under `OTEL_SDK_DISABLED`.
pub(super) fn build(
    config: &LensConfig,
    env: &dyn EnvSource,
    who: For<'_>,
    injected: Injected,
) -> Result<Providers, LensError> {
    if !who.exporting || crate::trace::sdk_disabled(env) {
        return Ok(Providers {
            tracer: off_tracer_provider(),
            meter: SdkMeterProvider::builder().build(),
            logger: SdkLoggerProvider::builder().build(),
            fanout: None,
            log_fanout: None,
            log_stats: StatsList::default(),
            log_processor_stats: StatsList::default(),
            metric_processor_stats: StatsList::default(),
            metric_stats: Vec::new(),
            metric_spools: Vec::new(),
            running: Vec::new(),
            processors: Vec::new(),
            signals: Vec::new(),
        });
    }
    let mut ctx = BuildContext::new(config, env, who.rank, who.resource.clone())
        .with_console(injected.console_out.clone(), who.resource_order.clone())
        .with_guest_output(injected.guest_output.clone());
    let mut running = Entries::default();
    let (tracer, fanout) = tracer_provider(
        &mut ctx,
        config,
        env,
        &who,
        injected.span_exporters,
        injected.span_processors,
        &mut running,
    )?;
    let metric_processor_stats = StatsList::default();
    let (meter, metric_stats, metric_spools) = meter_provider(
        &mut ctx,
        &metric_processor_stats,
        config,
        who.resource,
        injected.metric_readers,
        &mut running,
    )?;
    let log_processor_stats = StatsList::default();
    let (logger, log_fanout, log_stats) = logger_provider(
        &mut ctx,
        &log_processor_stats,
        config,
        who.resource,
        injected.log_exporters,
        &mut running,
    )?;
    Ok(Providers {
        tracer,
        meter,
        logger,
        fanout,
        log_fanout,
        log_stats,
        log_processor_stats,
        metric_processor_stats,
        metric_stats,
        metric_spools,
        running: running.entries,
        processors: ctx.running_processors(),
        signals: running.signals,
    })
}

/// The entries built from the config, and the signals built from it.
#[derive(Default)]
struct Entries {
    entries: Vec<Running>,
    signals: Vec<Signal>,
}

/// The tracer provider of an exporting rank: the sampler, then the fan-out to one batch
/// processor per exporter (the injected ones, else the config's) and the added processors.
fn tracer_provider(
    ctx: &mut BuildContext<'_>,
    config: &LensConfig,
    env: &dyn EnvSource,
    who: &For<'_>,
    span_exporters: Vec<(String, SpanFactory)>,
    span_processors: Vec<Box<dyn SpanProcessor>>,
    running: &mut Entries,
) -> Result<(SdkTracerProvider, Option<Arc<FanOutCore>>), LensError> {
    if !config.traces_enabled {
        return Ok((off_tracer_provider(), None));
    }
    let core = FanOutCore::new(config.close_open_spans_on_shutdown);
    if span_exporters.is_empty() {
        running.signals.push(Signal::Traces);
        let exporters = config.trace_exporters();
        for stats in ctx.build_processors(Signal::Traces, &exporters)? {
            core.processor_stats().add(stats);
        }
        for spec in exporters {
            let name = spec.display_name();
            let stats = Arc::new(ExporterStats::new(&name));
            let built = ctx.span_processor(&spec, &name, &stats)?;
            core.add(Some(name), built.processor, Some(stats.clone()));
            let entry = Running::new(Signal::Traces, spec, config, stats, built.wasm)
                .with_parts(built.spool, built.chain);
            running.entries.push(entry);
        }
    }
    if !span_exporters.is_empty() {
        let names: Vec<&str> = span_exporters.iter().map(|(n, _)| n.as_str()).collect();
        for stats in injected_processors(ctx, config, Signal::Traces, &names)? {
            core.processor_stats().add(stats);
        }
    }
    for (name, factory) in span_exporters {
        let stats = Arc::new(ExporterStats::new(&name));
        let stages = ctx.processors_for::<SpanData>(Signal::Traces, &name);
        let processor = Box::new(factory(config.batch, stats.clone(), stages));
        core.add(None, processor, Some(stats));
    }
    for p in span_processors {
        core.add(None, p, None);
    }
    let builder = SdkTracerProvider::builder()
        .with_resource(who.resource.clone())
        .with_span_processor(FanOutSpanProcessor(core.clone()));
    let builder = match who.sampler {
        Some(s) => builder.with_sampler(s),
        None => builder.with_sampler(crate::trace::sampler_from_env(env)),
    };
    Ok((builder.build(), Some(core)))
}

/// The meter provider of an exporting rank: the injected readers, else the config's (with
/// the statistics of their exporters).
fn meter_provider(
    ctx: &mut BuildContext<'_>,
    processor_stats: &StatsList,
    config: &LensConfig,
    resource: &Resource,
    metric_readers: Vec<ReaderHook>,
    running: &mut Entries,
) -> Result<MeterProviderParts, LensError> {
    let mut builder = SdkMeterProvider::builder().with_resource(resource.clone());
    let mut all_stats = Vec::new();
    let mut metric_spools = Vec::new();
    if !config.metrics_enabled {
        return Ok((builder.build(), all_stats, metric_spools));
    }
    if !metric_readers.is_empty() && !config.metrics.processors.is_empty() {
        // A reader is the application's own pipeline: Lens sees no exporter behind it.
        log::warn!(
            "[[metrics.processors]] do not apply to a metric reader injected in code (Lens \
             sees no exporter behind it): its collections reach it unprocessed; list the \
             exporter in [[metrics.exporters]] instead, or keep the processors for the \
             config's exporters"
        );
    }
    if metric_readers.is_empty() {
        running.signals.push(Signal::Metrics);
        let exporters = config.metric_exporters();
        for stats in ctx.build_processors(Signal::Metrics, &exporters)? {
            processor_stats.add(stats);
        }
        for spec in exporters {
            let name = spec.display_name();
            let Some((built, stats, spool)) = ctx.metric_reader(&spec, &name)? else {
                // `kind = "none"`: no reader; a reload keeps it, or refuses to change it.
                let stats = Arc::new(ExporterStats::new(&name));
                running
                    .entries
                    .push(Running::new(Signal::Metrics, spec, config, stats, None));
                continue;
            };
            builder = builder.with_reader(built.processor);
            all_stats.push(stats.clone());
            metric_spools.extend(spool);
            let entry = Running::new(Signal::Metrics, spec, config, stats, built.wasm)
                .with_parts(None, built.chain);
            running.entries.push(entry);
        }
    }
    for hook in metric_readers {
        builder = hook(builder);
    }
    Ok((builder.build(), all_stats, metric_spools))
}

/// A meter provider, its exporters' statistics and their spools.
type MeterProviderParts = (
    SdkMeterProvider,
    Vec<Arc<ExporterStats>>,
    Vec<Arc<MetricSpool>>,
);

/// The logger provider of an exporting rank with `logs_enabled`: one batch log processor per
/// exporter (the injected ones, else the config's), each with its statistics.
fn logger_provider(
    ctx: &mut BuildContext<'_>,
    processor_stats: &StatsList,
    config: &LensConfig,
    resource: &Resource,
    log_exporters: Vec<(String, LogFactory)>,
    running: &mut Entries,
) -> Result<(SdkLoggerProvider, Option<Arc<LogFanOut>>, StatsList), LensError> {
    let builder = SdkLoggerProvider::builder().with_resource(resource.clone());
    let all_stats = StatsList::default();
    if !config.logs_enabled {
        return Ok((builder.build(), None, all_stats));
    }
    let fanout = Arc::new(LogFanOut::default());
    if log_exporters.is_empty() {
        running.signals.push(Signal::Logs);
        let exporters = config.log_exporters();
        for stats in ctx.build_processors(Signal::Logs, &exporters)? {
            processor_stats.add(stats);
        }
        for spec in exporters {
            let name = spec.display_name();
            let stats = Arc::new(ExporterStats::new(&name));
            let built = ctx.log_processor(&spec, &name, &stats)?;
            fanout.add(Some(name), built.processor);
            all_stats.add(stats.clone());
            let entry = Running::new(Signal::Logs, spec, config, stats, built.wasm)
                .with_parts(built.spool, built.chain);
            running.entries.push(entry);
        }
    }
    if !log_exporters.is_empty() {
        let names: Vec<&str> = log_exporters.iter().map(|(n, _)| n.as_str()).collect();
        for stats in injected_processors(ctx, config, Signal::Logs, &names)? {
            processor_stats.add(stats);
        }
    }
    for (name, factory) in log_exporters {
        let stats = Arc::new(ExporterStats::new(&name));
        let stages = ctx.processors_for::<Queued>(Signal::Logs, &name);
        fanout.add(None, factory(config.log_batch, stats.clone(), stages));
        all_stats.add(stats);
    }
    let provider = builder
        .with_log_processor(FanOutLogProcessor(fanout.clone()))
        .build();
    Ok((provider, Some(fanout), all_stats))
}

/// The config's processors of `signal`, built for the exporters injected in code (`names`) in
/// place of the config's: a processor applying to every exporter applies to them; one naming
/// only the config's exporters (which they replace) applies to none, and says so.
fn injected_processors(
    ctx: &mut BuildContext<'_>,
    config: &LensConfig,
    signal: Signal,
    names: &[&str],
) -> Result<Vec<Arc<ExporterStats>>, LensError> {
    let table = signal.as_str();
    for spec in &config.signal(signal).processors {
        if !names.iter().any(|n| spec.applies_to(n)) {
            log::warn!(
                "[[{table}.processors]] `{}` applies to {:?}, which the {table} exporters \
                 injected in code ({}) replace: it runs for none of them (an empty `exporters` \
                 applies to every exporter, injected ones included)",
                spec.display_name(),
                spec.exporters(),
                names.join(", ")
            );
        }
    }
    // Stand-ins with the injected exporters' names: what a processor's lanes and `exporters`
    // are checked against.
    let exporters: Vec<ExporterSpec> = names
        .iter()
        .map(|n| {
            ExporterSpec::None(NoneExporterSpec {
                name: Some((*n).to_string()),
            })
        })
        .collect();
    ctx.build_processors(signal, &exporters)
}

pub(super) fn off_tracer_provider() -> SdkTracerProvider {
    SdkTracerProvider::builder()
        .with_sampler(Sampler::AlwaysOff)
        .build()
}
