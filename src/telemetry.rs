//! `setup_telemetry`: decide whether this rank exports, build the providers, install them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::Meter;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{MeterProviderBuilder, SdkMeterProvider, reader::MetricReader};
use opentelemetry_sdk::trace::{
    Sampler, SdkTracer, SdkTracerProvider, SpanExporter, SpanProcessor,
};

use crate::config::env::{EnvSource, ProcessEnv};
use crate::config::{BatchConfig, LensConfig};
use crate::error::LensError;
use crate::exporter::BuildContext;
use crate::rank::RankInfo;
use crate::resource::{ResourceInputs, build_resource, resolve_run_id};
use crate::strategy::decide_export;
use crate::trace::{
    BatchSpanProcessor, DeliveryStats, ExporterStats, FanOutCore, FanOutSpanProcessor,
    RankAwareSampler,
};

/// Whether a Lens installation currently owns the global providers.
static INSTALLED: AtomicBool = AtomicBool::new(false);

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
    /// deliveries are its own business and not in [`DeliveryStats`]).
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
        let Self { config, env, .. } = &self;
        config.validate(&crate::config::ConfigSource::Code)?;
        let rank = RankInfo::detect(self.rank, self.world_size, env.as_ref())?;
        let exporting = config.enabled && decide_export(&rank, config)?;
        let run_id = resolve_run_id(&config.run_id, env.as_ref());
        let resource = build_resource(
            &ResourceInputs {
                service_name: &config.service_name,
                service_version: &config.service_version,
                rank,
                run_id: &run_id,
                caller: &self.resource_attributes,
            },
            env.as_ref(),
        )?;
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
        let was_installed = self.install_global && INSTALLED.swap(true, Ordering::SeqCst);
        if was_installed && !config.allow_reinit {
            return Err(LensError::AlreadyInitialized);
        }
        let install_global = self.install_global;
        let metrics_enabled = self.config.metrics_enabled;
        let batch = self.config.batch;
        let built = self.build_providers(rank, exporting, sampler, resource.clone());
        let (tracer_provider, meter_provider, fanout) = match built {
            Ok(b) => b,
            Err(e) => {
                // Leave an earlier installation's claim on the globals in place.
                if install_global && !was_installed {
                    INSTALLED.store(false, Ordering::SeqCst);
                }
                return Err(e);
            }
        };
        let self_metrics = match &fanout {
            Some(core) if metrics_enabled => {
                use opentelemetry::metrics::MeterProvider as _;
                crate::trace::self_metrics::register(&meter_provider.meter("lens"), core.clone())
            }
            _ => Vec::new(),
        };
        if install_global {
            opentelemetry::global::set_tracer_provider(tracer_provider.clone());
            opentelemetry::global::set_meter_provider(meter_provider.clone());
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
                global: install_global,
                shutdown_timeout: Duration::from_millis(batch.shutdown_timeout_ms),
                _self_metrics: self_metrics,
            }),
        })
    }

    fn build_providers(
        self,
        rank: RankInfo,
        exporting: bool,
        sampler: Option<RankAwareSampler>,
        resource: Resource,
    ) -> Result<(SdkTracerProvider, SdkMeterProvider, Option<Arc<FanOutCore>>), LensError> {
        let config = &self.config;
        if !exporting {
            // No-op providers: no processors, no readers, nothing recorded.
            let tp = SdkTracerProvider::builder()
                .with_sampler(Sampler::AlwaysOff)
                .build();
            return Ok((tp, SdkMeterProvider::builder().build(), None));
        }
        let ctx = BuildContext::new(config, self.env.as_ref(), rank, resource.clone());
        let (tracer_provider, fanout) = if config.traces_enabled {
            let core = FanOutCore::new(config.close_open_spans_on_shutdown);
            if self.span_exporters.is_empty() {
                for spec in config.trace_exporters() {
                    let (processor, stats) = ctx.span_processor(&spec, &spec.display_name())?;
                    core.add(processor, Some(stats));
                }
            }
            for (name, factory) in self.span_exporters {
                let stats = Arc::new(ExporterStats::new(name));
                core.add(Box::new(factory(config.batch, stats.clone())), Some(stats));
            }
            for p in self.span_processors {
                core.add(p, None);
            }
            let mut builder = SdkTracerProvider::builder()
                .with_resource(resource.clone())
                .with_span_processor(FanOutSpanProcessor(core.clone()));
            builder = match sampler {
                Some(s) => builder.with_sampler(s),
                None => builder.with_sampler(Sampler::AlwaysOn),
            };
            (builder.build(), Some(core))
        } else {
            (
                SdkTracerProvider::builder()
                    .with_sampler(Sampler::AlwaysOff)
                    .build(),
                None,
            )
        };
        let mut meter_builder = SdkMeterProvider::builder().with_resource(resource);
        if config.metrics_enabled {
            if self.metric_readers.is_empty() {
                for spec in config.metric_exporters() {
                    if let Some(reader) = ctx.metric_reader(&spec, &spec.display_name())? {
                        meter_builder = meter_builder.with_reader(reader);
                    }
                }
            }
            for hook in self.metric_readers {
                meter_builder = hook(meter_builder);
            }
        }
        Ok((tracer_provider, meter_builder.build(), fanout))
    }
}

/// The plain function for the common case: ranks from the environment when `None`.
///
/// ```
/// let config = lens::LensConfig { exporter: "none".into(), allow_reinit: true, ..Default::default() };
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

struct HandleInner {
    tracer_provider: SdkTracerProvider,
    meter_provider: SdkMeterProvider,
    fanout: Option<Arc<FanOutCore>>,
    rank: RankInfo,
    exporting: bool,
    sampler_keeps: bool,
    run_id: String,
    resource: Resource,
    batch: BatchConfig,
    shutdown: Mutex<Option<Result<(), String>>>,
    global: bool,
    shutdown_timeout: Duration,
    _self_metrics: crate::trace::self_metrics::Instruments,
}

impl Drop for HandleInner {
    fn drop(&mut self) {
        let _ = shutdown_inner(self, self.shutdown_timeout);
    }
}

/// The installed telemetry of one rank. Cloning shares it; dropping the last clone shuts it down.
#[derive(Clone)]
pub struct TelemetryHandle {
    inner: Arc<HandleInner>,
}

impl std::fmt::Debug for TelemetryHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelemetryHandle")
            .field("rank", &self.inner.rank)
            .field("exporting", &self.inner.exporting)
            .field("run_id", &self.inner.run_id)
            .finish()
    }
}

impl TelemetryHandle {
    /// A tracer from this installation's provider.
    pub fn tracer(&self, name: impl Into<std::borrow::Cow<'static, str>>) -> SdkTracer {
        self.inner.tracer_provider.tracer(name)
    }

    /// A meter from this installation's provider.
    pub fn meter(&self, name: &'static str) -> Meter {
        use opentelemetry::metrics::MeterProvider as _;
        self.inner.meter_provider.meter(name)
    }

    /// The tracer provider (for code that wants to build its own tracers).
    pub fn tracer_provider(&self) -> &SdkTracerProvider {
        &self.inner.tracer_provider
    }

    /// The meter provider.
    pub fn meter_provider(&self) -> &SdkMeterProvider {
        &self.inner.meter_provider
    }

    /// Whether this rank exports (strategy decision and `enabled`).
    pub fn is_exporting(&self) -> bool {
        self.inner.exporting
    }

    /// Whether the rank-aware sampler keeps this rank's spans (`is_exporting` when no sampler).
    pub fn sampler_keeps(&self) -> bool {
        self.inner.sampler_keeps
    }

    /// This rank's identity.
    pub fn rank(&self) -> RankInfo {
        self.inner.rank
    }

    /// The run id shared by the job's ranks.
    pub fn run_id(&self) -> &str {
        &self.inner.run_id
    }

    /// The resource every signal carries.
    pub fn resource(&self) -> &Resource {
        &self.inner.resource
    }

    /// Delivery statistics: spans produced, and per exporter exported and dropped.
    pub fn stats(&self) -> DeliveryStats {
        self.inner
            .fanout
            .as_ref()
            .map(|f| f.stats())
            .unwrap_or_default()
    }

    /// Adds a span processor after setup (the Rust equivalent of the seed's
    /// `provider.add_span_processor(...)`): it receives every span ended from now on.
    /// A no-op on a non-exporting rank.
    pub fn add_span_processor(&self, processor: impl SpanProcessor + 'static) {
        if let Some(f) = &self.inner.fanout {
            f.add(Box::new(processor), None);
        }
    }

    /// Adds a span exporter after setup, on its own Lens batch processor with statistics.
    pub fn add_span_exporter<E: SpanExporter + 'static>(
        &self,
        name: impl Into<String>,
        exporter: E,
    ) {
        if let Some(f) = &self.inner.fanout {
            let stats = Arc::new(ExporterStats::new(name));
            f.add(
                Box::new(BatchSpanProcessor::new(
                    exporter,
                    self.inner.batch,
                    stats.clone(),
                )),
                Some(stats),
            );
        }
    }

    /// Exports everything ended so far, waiting at most `timeout`.
    pub fn force_flush(&self, timeout: Duration) -> Result<(), LensError> {
        let inner = self.inner.clone();
        let (tx, rx) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || {
            let traces = inner
                .tracer_provider
                .force_flush()
                .map_err(|e| format!("traces: {e}"));
            let metrics = inner
                .meter_provider
                .force_flush()
                .map_err(|e| format!("metrics: {e}"));
            let _ = tx.send(traces.and(metrics));
        });
        match rx.recv_timeout(timeout) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(details)) => Err(LensError::Incomplete {
                operation: "force_flush",
                details,
            }),
            Err(_) => Err(LensError::Incomplete {
                operation: "force_flush",
                details: format!("timed out after {timeout:?}"),
            }),
        }
    }

    /// Flushes and shuts down, waiting at most `timeout`; idempotent (later calls return the
    /// first call's outcome). Logs the delivery statistics.
    pub fn shutdown(&self, timeout: Duration) -> Result<(), LensError> {
        shutdown_inner(&self.inner, timeout)
    }

    /// A `tracing` layer sending `tracing` spans (e.g. from `#[instrument]`) to this
    /// installation's tracer.
    #[cfg(feature = "tracing")]
    pub fn tracing_layer<S>(&self) -> tracing_opentelemetry::OpenTelemetryLayer<S, SdkTracer>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        tracing_opentelemetry::layer().with_tracer(self.tracer("lens.tracing"))
    }
}

fn shutdown_inner(inner: &HandleInner, timeout: Duration) -> Result<(), LensError> {
    let mut done = inner.shutdown.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(outcome) = done.as_ref() {
        return outcome.clone().map_err(|details| LensError::Incomplete {
            operation: "shutdown",
            details,
        });
    }
    let mut errors = Vec::new();
    if inner.fanout.is_some()
        && let Err(e) = inner.tracer_provider.shutdown_with_timeout(timeout)
    {
        errors.push(format!("traces: {e}"));
    }
    if let Err(e) = inner.meter_provider.shutdown_with_timeout(timeout)
        && !matches!(e, opentelemetry_sdk::error::OTelSdkError::AlreadyShutdown)
        && inner.exporting
    {
        errors.push(format!("metrics: {e}"));
    }
    if let Some(f) = &inner.fanout {
        log_stats(inner.rank.rank, &f.stats());
    }
    if inner.global {
        INSTALLED.store(false, Ordering::SeqCst);
    }
    let outcome = if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    };
    *done = Some(outcome.clone());
    outcome.map_err(|details| LensError::Incomplete {
        operation: "shutdown",
        details,
    })
}

fn log_stats(rank: u32, stats: &DeliveryStats) {
    for e in &stats.exporters {
        let line = format!(
            "rank {rank} exporter `{}`: {} spans received, {} exported, {} dropped (queue full {}, export failed {}, shutdown {})",
            e.name,
            e.received,
            e.exported,
            e.dropped(),
            e.dropped_queue_full,
            e.dropped_export_failed,
            e.dropped_shutdown
        );
        if e.dropped() > 0 {
            log::warn!("{line}");
        } else {
            log::info!("{line}");
        }
    }
}
