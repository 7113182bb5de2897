//! The providers of one installation: tracer (sampler, fan-out to the batch processors),
//! meter (readers) and logger (batch log processors), from the config's entries through
//! [`crate::pipeline`] or from what the application injected in code.

use std::sync::Arc;

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::SdkLoggerProvider;
use opentelemetry_sdk::metrics::{MeterProviderBuilder, SdkMeterProvider};
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider, SpanProcessor};

use crate::batch::ExporterStats;
use crate::config::env::EnvSource;
use crate::config::{BatchConfig, LensConfig};
use crate::error::LensError;
use crate::exporter::ConsoleOut;
use crate::exporter::python_json::ResourceOrder;
use crate::logs::BatchLogProcessor;
use crate::pipeline::BuildContext;
use crate::rank::RankInfo;
use crate::trace::{BatchSpanProcessor, FanOutCore, FanOutSpanProcessor, RankAwareSampler};

pub(super) type SpanFactory =
    Box<dyn FnOnce(BatchConfig, Arc<ExporterStats>) -> BatchSpanProcessor>;
pub(super) type LogFactory = Box<dyn FnOnce(BatchConfig, Arc<ExporterStats>) -> BatchLogProcessor>;
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
    pub(super) log_stats: Vec<Arc<ExporterStats>>,
    pub(super) metric_stats: Vec<Arc<ExporterStats>>,
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
            log_stats: Vec::new(),
            metric_stats: Vec::new(),
        });
    }
    let ctx = BuildContext::new(config, env, who.rank, who.resource.clone())
        .with_console(injected.console_out.clone(), who.resource_order.clone())
        .with_guest_output(injected.guest_output.clone());
    let (tracer, fanout) = tracer_provider(
        &ctx,
        config,
        env,
        &who,
        injected.span_exporters,
        injected.span_processors,
    )?;
    let (meter, metric_stats) =
        meter_provider(&ctx, config, who.resource, injected.metric_readers)?;
    let (logger, log_stats) = logger_provider(&ctx, config, who.resource, injected.log_exporters)?;
    Ok(Providers {
        tracer,
        meter,
        logger,
        fanout,
        log_stats,
        metric_stats,
    })
}

/// The tracer provider of an exporting rank: the sampler, then the fan-out to one batch
/// processor per exporter (the injected ones, else the config's) and the added processors.
fn tracer_provider(
    ctx: &BuildContext<'_>,
    config: &LensConfig,
    env: &dyn EnvSource,
    who: &For<'_>,
    span_exporters: Vec<(String, SpanFactory)>,
    span_processors: Vec<Box<dyn SpanProcessor>>,
) -> Result<(SdkTracerProvider, Option<Arc<FanOutCore>>), LensError> {
    if !config.traces_enabled {
        return Ok((off_tracer_provider(), None));
    }
    let core = FanOutCore::new(config.close_open_spans_on_shutdown);
    if span_exporters.is_empty() {
        for spec in config.trace_exporters() {
            let (processor, stats) = ctx.span_processor(&spec, &spec.display_name())?;
            core.add(processor, Some(stats));
        }
    }
    for (name, factory) in span_exporters {
        let stats = Arc::new(ExporterStats::new(name));
        core.add(Box::new(factory(config.batch, stats.clone())), Some(stats));
    }
    for p in span_processors {
        core.add(p, None);
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
    ctx: &BuildContext<'_>,
    config: &LensConfig,
    resource: &Resource,
    metric_readers: Vec<ReaderHook>,
) -> Result<(SdkMeterProvider, Vec<Arc<ExporterStats>>), LensError> {
    let mut builder = SdkMeterProvider::builder().with_resource(resource.clone());
    let mut all_stats = Vec::new();
    if !config.metrics_enabled {
        return Ok((builder.build(), all_stats));
    }
    if metric_readers.is_empty() {
        for spec in config.metric_exporters() {
            let (reader, stats) = ctx.metric_reader(&spec, &spec.display_name())?;
            if let Some(reader) = reader {
                builder = builder.with_reader(reader);
            }
            all_stats.extend(stats);
        }
    }
    for hook in metric_readers {
        builder = hook(builder);
    }
    Ok((builder.build(), all_stats))
}

/// The logger provider of an exporting rank with `logs_enabled`: one batch log processor per
/// exporter (the injected ones, else the config's), each with its statistics.
fn logger_provider(
    ctx: &BuildContext<'_>,
    config: &LensConfig,
    resource: &Resource,
    log_exporters: Vec<(String, LogFactory)>,
) -> Result<(SdkLoggerProvider, Vec<Arc<ExporterStats>>), LensError> {
    let mut builder = SdkLoggerProvider::builder().with_resource(resource.clone());
    let mut all_stats = Vec::new();
    if !config.logs_enabled {
        return Ok((builder.build(), all_stats));
    }
    if log_exporters.is_empty() {
        for spec in config.log_exporters() {
            let (processor, stats) = ctx.log_processor(&spec, &spec.display_name())?;
            builder = builder.with_log_processor(processor);
            all_stats.push(stats);
        }
    }
    for (name, factory) in log_exporters {
        let stats = Arc::new(ExporterStats::new(name));
        builder = builder.with_log_processor(factory(config.log_batch, stats.clone()));
        all_stats.push(stats);
    }
    Ok((builder.build(), all_stats))
}

pub(super) fn off_tracer_provider() -> SdkTracerProvider {
    SdkTracerProvider::builder()
        .with_sampler(Sampler::AlwaysOff)
        .build()
}
