//! [`TelemetryBuilder`] and [`setup_telemetry`]: decide whether this rank exports, build the
//! providers, install them.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::LogExporter;
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::trace::{SpanExporter, SpanProcessor};

use super::INSTALLED;
use super::handle::{HandleInner, TelemetryHandle};
use super::providers::{self, For, Injected, Providers};
use super::reload::ReloadState;
use crate::config::env::{EnvSource, ProcessEnv};
use crate::config::{ConfigSource, LensConfig};
use crate::error::LensError;
use crate::exporter::ConsoleOut;
use crate::exporter::python_json::ResourceOrder;
use crate::logs::BatchLogProcessor;
use crate::pipeline::reload::Registry;
use crate::rank::RankInfo;
use crate::resource::{ResourceInputs, resolve_run_id, resource_attributes};
use crate::strategy::decide_export;
use crate::trace::{
    BatchSpanProcessor, LensTracerProvider, RankAwareSampler, SpanGroups, set_enabled_span_groups,
};

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
            injected: Injected::default(),
            env: Arc::new(ProcessEnv),
            install_global: true,
            config_file: None,
        }
    }
}

/// Builder of a telemetry installation (the Rust form of NeMo Lens's `setup_telemetry`).
pub struct TelemetryBuilder {
    config: LensConfig,
    rank: Option<u32>,
    world_size: Option<u32>,
    resource_attributes: Vec<KeyValue>,
    injected: Injected,
    env: Arc<dyn EnvSource + Send + Sync>,
    install_global: bool,
    /// The file `config` was read from, watched from its content when it was named.
    config_file: Option<crate::config::FileWatch>,
}

impl TelemetryBuilder {
    /// The file `config` was read from: what [`TelemetryHandle::reload_config_file`] and the
    /// `[reload]` triggers (watched file, SIGHUP) read again, unless `[reload] file` names
    /// another.
    ///
    /// Name it right after reading it: `[reload] watch` compares the file with its content at
    /// this call (a change made between the read and this call is not seen).
    pub fn config_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.config_file = Some(crate::config::FileWatch::new(path));
        self
    }

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

    /// Where the console exporters built from the config (`exporter = "console"`, `kind =
    /// "console"`) write: stdout by default, or any writer.
    pub fn console_out(mut self, out: ConsoleOut) -> Self {
        self.injected.console_out = out;
        self
    }

    /// Where a copy of the wasm exporters' guest stdout and stderr goes, byte for byte, besides
    /// the log: e.g. `GuestOutputCopy::dir(run_dir)` writes `<exporter>.stdout` and
    /// `<exporter>.stderr` there (what `lens demo` does per rank). Default: none.
    pub fn guest_output(mut self, copy: crate::wasm::GuestOutputCopy) -> Self {
        self.injected.guest_output = copy;
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
        let name = match self.injected.span_exporters.len() {
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
        self.injected.span_exporters.push((
            name.into(),
            Box::new(move |batch, stats, stages| {
                BatchSpanProcessor::with_processors(exporter, stages, batch, stats)
            }),
        ));
        self
    }

    /// A span processor added beside the exporters (it sees every recorded span; its
    /// deliveries are its own business and not in [`DeliveryStats`](crate::DeliveryStats)).
    pub fn span_processor(mut self, processor: impl SpanProcessor + 'static) -> Self {
        self.injected.span_processors.push(Box::new(processor));
        self
    }

    /// A metric reader replacing the config's metric exporters. May be called several times.
    pub fn metric_reader<R: MetricReader>(mut self, reader: R) -> Self {
        self.injected
            .metric_readers
            .push(Box::new(move |b| b.with_reader(reader)));
        self
    }

    /// A log exporter replacing the config's log exporters (used when `logs_enabled`). May be
    /// called several times; each gets its own batch log processor and statistics under the
    /// name `custom`, `custom-2`, …
    pub fn log_exporter<E: LogExporter + 'static>(self, exporter: E) -> Self {
        let name = match self.injected.log_exporters.len() {
            0 => "custom".to_string(),
            n => format!("custom-{}", n + 1),
        };
        self.named_log_exporter(name, exporter)
    }

    /// Like [`log_exporter`](Self::log_exporter), with the name used in statistics and logs.
    pub fn named_log_exporter<E: LogExporter + 'static>(
        mut self,
        name: impl Into<String>,
        exporter: E,
    ) -> Self {
        self.injected.log_exporters.push((
            name.into(),
            Box::new(move |batch, stats, stages| {
                BatchLogProcessor::with_processors(exporter, |_| Ok(()), stages, batch, stats)
            }),
        ));
        self
    }

    /// Read the launcher variables and `OTEL_RESOURCE_ATTRIBUTES` from `env` instead of the
    /// process environment (tests, embedding).
    pub fn env(mut self, env: impl EnvSource + Send + Sync + 'static) -> Self {
        self.env = Arc::new(env);
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
        let Self {
            config,
            injected,
            env,
            install_global,
            config_file,
            ..
        } = self;
        let console = injected.console_out.clone();
        let guest_output = injected.guest_output.clone();
        // `[reload] file` is watched from its content now; the setup's file from its content
        // when it was named.
        let reload_file = match &config.reload.file {
            Some(file) => Some(crate::config::FileWatch::new(file)),
            None => config_file,
        };
        if decision.exporting
            && (config.reload.watch || config.reload.sighup)
            && reload_file.is_none()
        {
            return Err(LensError::Config {
                source_name: ConfigSource::Code.to_string(),
                message: "`reload.watch`/`reload.sighup`: no file to reload from; set `[reload] \
                          file`, or give the installation its file with \
                          TelemetryBuilder::config_file"
                    .into(),
                source: None,
            });
        }
        let Providers {
            tracer,
            meter: meter_provider,
            logger: logger_provider,
            fanout,
            log_fanout,
            log_stats,
            log_processor_stats,
            metric_processor_stats,
            metric_stats,
            metric_spools,
            running,
            processors,
            signals,
        } = providers::build(
            &config,
            env.as_ref(),
            For {
                rank: decision.rank,
                exporting: decision.exporting,
                resource: &decision.resource,
                resource_order: &decision.resource_order,
                sampler: decision.sampler,
            },
            injected,
        )?;
        let self_metrics = match &fanout {
            Some(core) if config.metrics_enabled => {
                use opentelemetry::metrics::MeterProvider as _;
                let source = super::handle::stats_source(
                    core.clone(),
                    log_stats.clone(),
                    log_processor_stats.clone(),
                    metric_processor_stats.clone(),
                    metric_stats.clone(),
                );
                crate::trace::self_metrics::register(&meter_provider.meter("lens"), source)
            }
            _ => Vec::new(),
        };
        let Decision {
            rank,
            exporting,
            run_id,
            resource,
            resource_order,
            sampler,
            launcher,
            groups,
            ..
        } = decision;
        let built_any = fanout.is_some() || log_fanout.is_some() || !signals.is_empty();
        let reload = built_any.then(|| ReloadState {
            registry: Mutex::new(Registry {
                config: config.clone(),
                entries: running,
                processors,
                signals,
            }),
            env: env.clone(),
            rank,
            resource: resource.clone(),
            console,
            resource_order,
            guest_output,
            file: reload_file.as_ref().map(|w| w.path().to_path_buf()),
            stop: Arc::default(),
        });
        let open_spans = fanout.as_ref().and_then(|f| f.open_spans());
        let tracer_provider = LensTracerProvider::new(tracer, open_spans, launcher, groups.clone());
        if install_global {
            // NeMo Lens sets the module's groups at every setup (none when it does not export).
            set_enabled_span_groups(groups);
        }
        if claim.keep() {
            opentelemetry::global::set_tracer_provider(tracer_provider.clone());
            opentelemetry::global::set_meter_provider(meter_provider.clone());
            if exporting {
                crate::propagation::install_global_propagator();
            }
        }
        let inner = Arc::new(HandleInner {
            tracer_provider,
            meter_provider,
            logger_provider,
            log_stats,
            log_processor_stats,
            metric_processor_stats,
            metric_stats,
            metric_spools,
            fanout,
            log_fanout,
            reload,
            rank,
            exporting,
            sampler_keeps: sampler.map(|s| s.keeps()).unwrap_or(exporting),
            run_id,
            resource,
            batch: config.batch,
            shutdown: Mutex::new(None),
            shutdown_timeout: Duration::from_millis(config.batch.shutdown_timeout_ms),
            _self_metrics: self_metrics,
        });
        super::reload::start_triggers(&inner, &config.reload, reload_file)?;
        Ok(TelemetryHandle { inner })
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
                [
                    config.traces_enabled
                        && config.traces.exporters.is_empty()
                        && self.injected.span_exporters.is_empty(),
                    config.metrics_enabled
                        && config.metrics.exporters.is_empty()
                        && self.injected.metric_readers.is_empty(),
                    config.logs_enabled
                        && config.logs.exporters.is_empty()
                        && self.injected.log_exporters.is_empty(),
                ],
                &value_origin("EXPORTER", &config.exporter, env.as_ref()),
            )?;
        }
        // As in NeMo Lens, only an exporting rank resolves the groups (and fails on a bad one).
        let groups = if exporting {
            SpanGroups::resolve(&config.span_groups).map_err(|message| LensError::Config {
                source_name: value_origin("SPAN_GROUPS", &config.span_groups, env.as_ref())
                    .to_string(),
                message: format!("`span_groups`: {message}"),
                source: None,
            })?
        } else {
            SpanGroups::none()
        };
        let run_id = resolve_run_id(&config.run_id, env.as_ref());
        let attributes = resource_attributes(
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
        let resource_order = ResourceOrder::new(attributes.iter().map(|kv| kv.key.clone()));
        let resource = Resource::builder_empty()
            .with_attributes(attributes)
            .build();
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
            resource_order,
            sampler,
            launcher,
            groups,
        })
    }
}

/// What [`TelemetryBuilder::install`] decided before building anything.
struct Decision {
    rank: RankInfo,
    exporting: bool,
    run_id: String,
    resource: Resource,
    resource_order: ResourceOrder,
    sampler: Option<RankAwareSampler>,
    /// The launcher's trace (`TRACEPARENT`), parent of this rank's root spans.
    launcher: Option<opentelemetry::Context>,
    /// What this rank records: the config's groups when it exports, none otherwise.
    groups: SpanGroups,
}

/// Where a value checked at setup came from, for its error: the variable holding that value
/// when NeMo Lens's or Lens's (`key`: `EXPORTER`, `SPAN_GROUPS`) holds it (a library's own
/// prefix is not known here).
fn value_origin(key: &str, value: &str, env: &dyn EnvSource) -> ConfigSource {
    [format!("NEMO_LENS_{key}"), format!("LENS_{key}")]
        .into_iter()
        .find(|name| {
            env.get(name)
                .is_some_and(|v| crate::config::python::strip(&v) == value)
        })
        .map_or(ConfigSource::Code, ConfigSource::Variable)
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
