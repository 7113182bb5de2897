//! [`TelemetryBuilder`] and [`setup_telemetry`]: decide whether this rank exports, build the
//! providers, install them.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{MeterProviderBuilder, SdkMeterProvider, reader::MetricReader};
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider, SpanExporter, SpanProcessor};

use super::INSTALLED;
use super::handle::{HandleInner, TelemetryHandle};
use crate::config::env::{EnvSource, ProcessEnv};
use crate::config::{BatchConfig, ConfigSource, LensConfig};
use crate::error::LensError;
use crate::pipeline::BuildContext;
use crate::rank::RankInfo;
use crate::resource::{ResourceInputs, build_resource, resolve_run_id};
use crate::strategy::decide_export;
use crate::trace::{
    BatchSpanProcessor, ExporterStats, FanOutCore, FanOutSpanProcessor, LensTracerProvider,
    RankAwareSampler,
};

type ExporterFactory = Box<dyn FnOnce(BatchConfig, Arc<ExporterStats>) -> BatchSpanProcessor>;
type ReaderHook = Box<dyn FnOnce(MeterProviderBuilder) -> MeterProviderBuilder>;

/// Entry point; see [`Telemetry::builder`].
pub struct Telemetry;

impl Telemetry {
    /// Starts configuring telemetry for one rank.
    pub fn builder(config: LensConfig) -> TelemetryBuilder {
        TelemetryBuilder {
            config,
            rank: None,
            world_size: None,
            resource_attributes: Vec::new(),
            span_exporters: Vec::new(),
            span_processors: Vec::new(),
            metric_readers: Vec::new(),
            env: Box::new(ProcessEnv),
            install_global: true,
        }
    }
}

/// Builder of a telemetry installation (the Rust form of NeMo Lens's `setup_telemetry`).
pub struct TelemetryBuilder {
    config: LensConfig,
    rank: Option<u32>,
    world_size: Option<u32>,
    resource_attributes: Vec<KeyValue>,
    span_exporters: Vec<(String, ExporterFactory)>,
    span_processors: Vec<Box<dyn SpanProcessor>>,
    metric_readers: Vec<ReaderHook>,
    env: Box<dyn EnvSource>,
    install_global: bool,
}

impl TelemetryBuilder {
    /// This process's global rank (default: `RANK`, then `SLURM_PROCID`, else 0).
    pub fn rank(mut self, rank: u32) -> Self {
        self.rank = Some(rank);
        self
    }

    /// The job's world size (default: `WORLD_SIZE`, then `SLURM_NTASKS`, else 1).
    pub fn world_size(mut self, world_size: u32) -> Self {
        self.world_size = Some(world_size);
        self
    }

    /// Extra resource attributes (override the detected ones).
    pub fn resource_attributes(mut self, attrs: impl IntoIterator<Item = KeyValue>) -> Self {
        self.resource_attributes.extend(attrs);
        self
    }

    /// A span exporter replacing the config's trace exporters. May be called several times
    /// (fan-out); each gets its own batch processor and statistics under the name `custom`,
    /// `custom-2`, …
    pub fn span_exporter<E: SpanExporter + 'static>(self, exporter: E) -> Self {
        let name = match self.span_exporters.len() {
            0 => "custom".to_string(),
            n => format!("custom-{}", n + 1),
        };
        self.named_span_exporter(name, exporter)
    }

    /// Like [`span_exporter`](Self::span_exporter), with the name used in statistics and logs.
    pub fn named_span_exporter<E: SpanExporter + 'static>(
        mut self,
        name: impl Into<String>,
        exporter: E,
    ) -> Self {
        self.span_exporters.push((
            name.into(),
            Box::new(move |batch, stats| BatchSpanProcessor::new(exporter, batch, stats)),
        ));
        self
    }

    /// A span processor added beside the exporters (it sees every recorded span; its
    /// deliveries are its own business and not in [`DeliveryStats`](crate::DeliveryStats)).
    pub fn span_processor(mut self, processor: impl SpanProcessor + 'static) -> Self {
        self.span_processors.push(Box::new(processor));
        self
    }

    /// A metric reader replacing the config's metric exporters. May be called several times.
    pub fn metric_reader<R: MetricReader>(mut self, reader: R) -> Self {
        self.metric_readers
            .push(Box::new(move |b| b.with_reader(reader)));
        self
    }

    /// Read the launcher variables and `OTEL_RESOURCE_ATTRIBUTES` from `env` instead of the
    /// process environment (tests, embedding).
    pub fn env(mut self, env: impl EnvSource + 'static) -> Self {
        self.env = Box::new(env);
        self
    }

    /// Whether to install the providers as the process's global ones (default `true`).
    /// Only global installations count towards the one-setup-per-process rule.
    pub fn install_global(mut self, yes: bool) -> Self {
        self.install_global = yes;
        self
    }

    /// Builds and installs the pipeline.
    pub fn install(self) -> Result<TelemetryHandle, LensError> {
        // Only an enabled setup counts towards NeMo Lens's one-setup-per-process rule; it is
        // checked before anything else, as there.
        let claim = GlobalClaim::take(
            self.install_global && self.config.enabled,
            self.config.allow_reinit,
        )?;
        let decision = self.decide()?;
        let metrics_enabled = self.config.metrics_enabled;
        let batch = self.config.batch;
        let (tracer_provider, meter_provider, fanout) = self.build_providers(&decision)?;
        let self_metrics = match &fanout {
            Some(core) if metrics_enabled => {
                use opentelemetry::metrics::MeterProvider as _;
                crate::trace::self_metrics::register(&meter_provider.meter("lens"), core.clone())
            }
            _ => Vec::new(),
        };
        let Decision {
            rank,
            exporting,
            run_id,
            resource,
            sampler,
            launcher,
        } = decision;
        let open_spans = fanout.as_ref().and_then(|f| f.open_spans());
        let tracer_provider = LensTracerProvider::new(tracer_provider, open_spans, launcher);
        if claim.keep() {
            opentelemetry::global::set_tracer_provider(tracer_provider.clone());
            opentelemetry::global::set_meter_provider(meter_provider.clone());
            if exporting {
                crate::propagation::install_global_propagator();
            }
        }
        Ok(TelemetryHandle {
            inner: Arc::new(HandleInner {
                tracer_provider,
                meter_provider,
                fanout,
                rank,
                exporting,
                sampler_keeps: sampler.map(|s| s.keeps()).unwrap_or(exporting),
                run_id,
                resource,
                batch,
                shutdown: Mutex::new(None),
                shutdown_timeout: Duration::from_millis(batch.shutdown_timeout_ms),
                _self_metrics: self_metrics,
            }),
        })
    }

    /// Who this rank is, whether it exports, and the resource its signals carry.
    fn decide(&self) -> Result<Decision, LensError> {
        let Self { config, env, .. } = self;
        config.validate(&ConfigSource::Code)?;
        let rank = RankInfo::detect(self.rank, self.world_size, env.as_ref())?;
        // As in NeMo Lens, the strategy runs (and an unknown one is an error) even when
        // telemetry is disabled.
        let exporting = if config.export_strategy == "first_rank_per_node" {
            // NeMo Lens reads `LOCAL_RANK` itself here, with Python's `int()`.
            crate::rank::local_rank_from_env(env.as_ref())? == 0
        } else {
            decide_export(&rank, config)?
        } && config.enabled;
        if exporting {
            config.check_shorthand_for(
                config.traces_enabled
                    && config.traces.exporters.is_empty()
                    && self.span_exporters.is_empty(),
                config.metrics_enabled
                    && config.metrics.exporters.is_empty()
                    && self.metric_readers.is_empty(),
                &shorthand_origin(&config.exporter, env.as_ref()),
            )?;
        }
        if exporting && config.logs_enabled {
            log::warn!(
                "logs_enabled: Lens exports no logs signal; no logger provider is built (traces and metrics are)"
            );
        }
        let run_id = resolve_run_id(&config.run_id, env.as_ref());
        let resource = build_resource(
            &ResourceInputs {
                service_name: &config.service_name,
                service_version: &config.service_version,
                rank,
                run_id: &run_id,
                user: &config.user,
                wandb_entity: &config.wandb_entity,
                wandb_project: &config.wandb_project,
                caller: &self.resource_attributes,
            },
            env.as_ref(),
        );
        let sampler = (exporting && config.sampler_enabled)
            .then(|| RankAwareSampler::new(rank.rank, config.export_sample_rate));
        if let Some(s) = &sampler
            && !s.keeps()
            && config.export_strategy == "single_rank"
        {
            log::warn!(
                "rank {}: the only exporting rank (single_rank) is dropped by the rank-aware sampler at rate {}: no spans will be exported",
                rank.rank,
                config.export_sample_rate
            );
        }
        let launcher = exporting
            .then(|| crate::propagation::launcher_context(env.as_ref()))
            .flatten();
        Ok(Decision {
            rank,
            exporting,
            run_id,
            resource,
            sampler,
            launcher,
        })
    }

    fn build_providers(
        mut self,
        decision: &Decision,
    ) -> Result<(SdkTracerProvider, SdkMeterProvider, Option<Arc<FanOutCore>>), LensError> {
        if !decision.exporting || crate::trace::sdk_disabled(self.env.as_ref()) {
            // No-op providers: no processors, no readers, nothing recorded.
            return Ok((
                off_tracer_provider(),
                SdkMeterProvider::builder().build(),
                None,
            ));
        }
        let injected = Injected {
            span_exporters: std::mem::take(&mut self.span_exporters),
            span_processors: std::mem::take(&mut self.span_processors),
            metric_readers: std::mem::take(&mut self.metric_readers),
        };
        let ctx = BuildContext::new(
            &self.config,
            self.env.as_ref(),
            decision.rank,
            decision.resource.clone(),
        );
        let (tracer_provider, fanout) = self.tracer_provider(
            &ctx,
            decision,
            injected.span_exporters,
            injected.span_processors,
        )?;
        let meter_provider =
            self.meter_provider(&ctx, &decision.resource, injected.metric_readers)?;
        Ok((tracer_provider, meter_provider, fanout))
    }

    /// The tracer provider of an exporting rank: the sampler, then the fan-out to one batch
    /// processor per exporter (the injected ones, else the config's) and the added processors.
    fn tracer_provider(
        &self,
        ctx: &BuildContext<'_>,
        decision: &Decision,
        span_exporters: Vec<(String, ExporterFactory)>,
        span_processors: Vec<Box<dyn SpanProcessor>>,
    ) -> Result<(SdkTracerProvider, Option<Arc<FanOutCore>>), LensError> {
        let config = &self.config;
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
            .with_resource(decision.resource.clone())
            .with_span_processor(FanOutSpanProcessor(core.clone()));
        let builder = match decision.sampler {
            Some(s) => builder.with_sampler(s),
            None => builder.with_sampler(crate::trace::sampler_from_env(self.env.as_ref())),
        };
        Ok((builder.build(), Some(core)))
    }

    /// The meter provider of an exporting rank: the injected readers, else the config's.
    fn meter_provider(
        &self,
        ctx: &BuildContext<'_>,
        resource: &Resource,
        metric_readers: Vec<ReaderHook>,
    ) -> Result<SdkMeterProvider, LensError> {
        let mut builder = SdkMeterProvider::builder().with_resource(resource.clone());
        if !self.config.metrics_enabled {
            return Ok(builder.build());
        }
        if metric_readers.is_empty() {
            for spec in self.config.metric_exporters() {
                if let Some(reader) = ctx.metric_reader(&spec, &spec.display_name())? {
                    builder = builder.with_reader(reader);
                }
            }
        }
        for hook in metric_readers {
            builder = hook(builder);
        }
        Ok(builder.build())
    }
}

/// What the application handed the builder in code, in place of the config's exporters.
struct Injected {
    span_exporters: Vec<(String, ExporterFactory)>,
    span_processors: Vec<Box<dyn SpanProcessor>>,
    metric_readers: Vec<ReaderHook>,
}

/// What [`TelemetryBuilder::install`] decided before building anything.
struct Decision {
    rank: RankInfo,
    exporting: bool,
    run_id: String,
    resource: Resource,
    sampler: Option<RankAwareSampler>,
    /// The launcher's trace (`TRACEPARENT`), parent of this rank's root spans.
    launcher: Option<opentelemetry::Context>,
}

/// Where the `exporter` shorthand came from, for its error: the variable holding that value
/// when NeMo Lens's or Lens's holds it (a library's own prefix is not known here).
fn shorthand_origin(exporter: &str, env: &dyn EnvSource) -> ConfigSource {
    ["NEMO_LENS_EXPORTER", "LENS_EXPORTER"]
        .into_iter()
        .find(|name| {
            env.get(name)
                .is_some_and(|v| crate::config::python::strip(&v) == exporter)
        })
        .map_or(ConfigSource::Code, |name| {
            ConfigSource::Variable(name.to_string())
        })
}

fn off_tracer_provider() -> SdkTracerProvider {
    SdkTracerProvider::builder()
        .with_sampler(Sampler::AlwaysOff)
        .build()
}

/// A global installation's claim on the process's providers: released again when setup fails,
/// unless an earlier installation held it.
struct GlobalClaim {
    global: bool,
    /// The claim was taken here (not held by an earlier installation).
    fresh: bool,
    kept: bool,
}

impl GlobalClaim {
    fn take(global: bool, allow_reinit: bool) -> Result<Self, LensError> {
        let was_installed = global && INSTALLED.swap(true, Ordering::SeqCst);
        if was_installed && !allow_reinit {
            return Err(LensError::AlreadyInitialized);
        }
        Ok(Self {
            global,
            fresh: global && !was_installed,
            kept: false,
        })
    }

    /// Setup succeeded; whether the installation is global.
    fn keep(mut self) -> bool {
        self.kept = true;
        self.global
    }
}

impl Drop for GlobalClaim {
    fn drop(&mut self) {
        if !self.kept && self.fresh {
            INSTALLED.store(false, Ordering::SeqCst);
        }
    }
}

/// The plain function for the common case: ranks from the environment when `None`.
///
/// ```
/// // The defaults are NeMo Lens's: disabled, and only the last rank exports.
/// let config = lens::LensConfig { enabled: true, exporter: "none".into(), ..Default::default() };
/// let handle = lens::setup_telemetry(config, Some(0), Some(1), Vec::new()).unwrap();
/// assert!(handle.is_exporting());
/// handle.shutdown(std::time::Duration::from_secs(5)).unwrap();
/// ```
pub fn setup_telemetry(
    config: LensConfig,
    rank: Option<u32>,
    world_size: Option<u32>,
    resource_attributes: Vec<KeyValue>,
) -> Result<TelemetryHandle, LensError> {
    let mut b = Telemetry::builder(config).resource_attributes(resource_attributes);
    if let Some(r) = rank {
        b = b.rank(r);
    }
    if let Some(w) = world_size {
        b = b.world_size(w);
    }
    b.install()
}
