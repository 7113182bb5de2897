//! Lens configuration: the TOML file shape, defaults and validation.
//!
//! Field names mirror NeMo Lens so Python and Rust ranks can share one configuration.
//! Every struct is strict (`deny_unknown_fields`): a misspelt key is an error naming the key and the
//! file, never silently ignored. Environment overrides live in [`mod@env`].

pub mod credentials;
pub mod env;
mod exporters;
pub mod guest_memory;
mod processors;
pub mod python;
pub mod secret;
mod spool;
mod watch;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use credentials::CredentialSpec;
pub use exporters::{
    BatchOverrides, ConsoleExporterSpec, EnvGrant, ExporterSpec, NoneExporterSpec,
    OtlpExporterSpec, OtlpProtocol, SetupFailurePolicy, VerifySpec, WasmExporterSpec, WasmPreopen,
};
pub use processors::{
    DEFAULT_PROCESSOR_CALL_TIMEOUT_MS, OnFault, ProcessorSpec, WasmProcessorSpec,
};
pub use secret::Secret;
pub use spool::{DEFAULT_SPOOL_MIB, MAX_SPOOL_MIB, SpoolSpec, WhenFull};
pub use watch::FileWatch;

use crate::error::LensError;
use crate::signal::Signal;

/// The whole Lens configuration. The keys NeMo Lens's `NemoLensConfig` has keep its names and
/// defaults (a rank configured only through NeMo Lens's environment variables behaves the same
/// under both); the others are Lens's own.
///
/// ```toml
/// enabled = true
/// service_name = "llama-pretrain"
/// export_strategy = "sampled"
/// export_sample_rate = 0.25
/// exporter = "otlp"
///
/// [otlp]
/// endpoint = "http://127.0.0.1:4317"
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LensConfig {
    /// Master switch; off by default, as in NeMo Lens: `enabled = false` installs no-op
    /// providers on every rank. Example: `enabled = true`.
    pub enabled: bool,
    /// `service.name` of the resource (`OTEL_SERVICE_NAME`). Default `"nemo"`.
    /// Example: `service_name = "llama-pretrain"`.
    pub service_name: String,
    /// `service.version` of the resource. Example: `service_version = "1.4.0"`.
    pub service_version: String,
    /// Which ranks export: `all_ranks`, `single_rank` (default), `sampled`,
    /// `first_rank_per_node`, or the name of a strategy registered with
    /// [`crate::register_export_strategy`]. Example: `export_strategy = "sampled"`.
    pub export_strategy: String,
    /// The rank that exports under `single_rank`; any negative value is the last rank, a rank
    /// outside the world means no rank exports. Default `-1`. Example: `export_rank = 0`.
    pub export_rank: i64,
    /// Fraction of ranks kept by `sampled` and by the rank-aware sampler, in `0..=1`.
    /// Example: `export_sample_rate = 0.125`.
    pub export_sample_rate: f64,
    /// Install the [`crate::RankAwareSampler`] (one keep/drop decision per rank); without it
    /// `OTEL_TRACES_SAMPLER` applies. Example: `sampler_enabled = true`.
    pub sampler_enabled: bool,
    /// Build the tracer provider. Example: `traces_enabled = false`.
    pub traces_enabled: bool,
    /// Build the meter provider. Example: `metrics_enabled = false`.
    pub metrics_enabled: bool,
    /// Build the logger provider (`NEMO_LENS_LOGS_ENABLED`): a batch log processor per
    /// `[[logs.exporters]]` entry, records from the `log` crate and `tracing` through the
    /// logging bridge. Off by default, as in NeMo Lens. Example: `logs_enabled = true`.
    pub logs_enabled: bool,
    /// Span groups enabled on exporting ranks: a preset (`default`, `per_step`, `all`) or
    /// group names, comma-separated. Example: `span_groups = "per_step"`.
    pub span_groups: String,
    /// Shorthand exporter for both signals when `[traces]` / `[metrics]` list none:
    /// `otlp` (default), `console`, and Lens's `none` or a path ending in `.wasm` (traces
    /// only). Checked when an exporting rank builds its exporters, as NeMo Lens does.
    /// Example: `exporter = "console"`.
    pub exporter: String,
    /// Run identifier shared by all ranks. Empty: `SLURM_JOB_ID`, else 12 random hex digits.
    /// Example: `run_id = "exp-42"`.
    pub run_id: String,
    /// The user or team running the job, `nemo.user.id` (`NEMO_LENS_USER_ID`).
    /// Example: `user = "pretraining-team"`.
    pub user: String,
    /// W&B entity, `wandb.entity` (`WANDB_ENTITY`). Example: `wandb_entity = "nvidia"`.
    pub wandb_entity: String,
    /// W&B project, `wandb.project` (`WANDB_PROJECT`). Example: `wandb_project = "llama"`.
    pub wandb_project: String,
    /// Period of the metric reader in milliseconds (`OTEL_METRIC_EXPORT_INTERVAL` overrides).
    /// Example: `metric_export_interval_ms = 10000`.
    pub metric_export_interval_ms: u64,
    /// Allow a second enabled setup in one process (tests, notebooks; NeMo Lens's
    /// `_allow_reinit`). Example: `allow_reinit = true`.
    pub allow_reinit: bool,
    /// End spans still open at shutdown, marked `nemo.span.truncated = true`, instead of
    /// losing them. Example: `close_open_spans_on_shutdown = true`.
    pub close_open_spans_on_shutdown: bool,
    /// Default OTLP settings for `otlp` exporters that do not set their own.
    pub otlp: OtlpExporterSpec,
    /// Default batch settings for every span exporter.
    pub batch: BatchConfig,
    /// Trace signal: its list of exporters (fan-out, each with its own batch processor).
    pub traces: SignalConfig,
    /// Metric signal: its list of exporters (each on its own periodic reader).
    pub metrics: SignalConfig,
    /// Log signal: its list of exporters (`otlp`, `console`, `none`; each with its own batch
    /// log processor). Empty: the `exporter` shorthand (`console` for `console`, none for a
    /// `.wasm` path, else that exporter).
    pub logs: SignalConfig,
    /// Default batch settings for every log exporter (`OTEL_BLRP_*` override them); the
    /// OpenTelemetry SDKs' log defaults: a 1 s delay, 2048 records queued, 512 per export.
    pub log_batch: BatchConfig,
    /// The on-disk compilation cache of `.wasm` exporters.
    pub wasm_cache: WasmCacheConfig,
    /// The most this rank's sandboxed entries may hold at worst, MiB: the sum over the wasm
    /// exporters and processors of lanes × (`memory_limit_mib` + `max_answer_mib`). A config
    /// over it is refused at setup, naming the sum and each entry. Default 8192 (a training
    /// node's share per rank). Example: `max_guest_memory_mib = 4096`.
    pub max_guest_memory_mib: u64,
    /// What reloads the exporters of a running installation (off by default).
    pub reload: ReloadConfig,
}

impl Default for LensConfig {
    /// NeMo Lens's defaults (off, `single_rank` from the last rank, service `nemo`), and
    /// Lens's own.
    fn default() -> Self {
        Self {
            enabled: false,
            service_name: "nemo".to_string(),
            service_version: env!("CARGO_PKG_VERSION").to_string(),
            export_strategy: "single_rank".to_string(),
            export_rank: -1,
            export_sample_rate: 1.0,
            sampler_enabled: false,
            traces_enabled: true,
            metrics_enabled: true,
            logs_enabled: false,
            span_groups: "default".to_string(),
            exporter: "otlp".to_string(),
            run_id: String::new(),
            user: String::new(),
            wandb_entity: String::new(),
            wandb_project: String::new(),
            metric_export_interval_ms: 10_000,
            allow_reinit: false,
            close_open_spans_on_shutdown: true,
            otlp: OtlpExporterSpec::default(),
            batch: BatchConfig::default(),
            traces: SignalConfig::default(),
            metrics: SignalConfig::default(),
            logs: SignalConfig::default(),
            log_batch: BatchConfig::for_logs(),
            wasm_cache: WasmCacheConfig::default(),
            max_guest_memory_mib: guest_memory::DEFAULT_MAX_GUEST_MEMORY_MIB,
            reload: ReloadConfig::default(),
        }
    }
}

/// The largest config file Lens reads (a config is a few KiB; this bounds what a file that is
/// not one can cost).
pub const MAX_CONFIG_FILE_BYTES: u64 = 16 << 20;

/// The text of a config file, at most [`MAX_CONFIG_FILE_BYTES`].
pub(crate) fn read_config_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(MAX_CONFIG_FILE_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_CONFIG_FILE_BYTES {
        return Err(std::io::Error::other(format!(
            "it is larger than {} MiB, the most a config file may be",
            MAX_CONFIG_FILE_BYTES >> 20
        )));
    }
    Ok(text)
}

/// Triggers of a hot reload of the exporters, for processes whose code a user does not
/// control (`TelemetryHandle::reload_exporters` needs none of them). Off by default. A reload
/// reads the file again (with the environment's overrides, as at setup) and applies its
/// exporter entries; see `docs/reload.md`.
///
/// ```toml
/// [reload]
/// watch = true
/// sighup = true
/// poll_interval_ms = 1000
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReloadConfig {
    /// Watch the config file: when its content changes, it is read again and its exporters
    /// reloaded. The file is `file`, else the one the installation was set up from
    /// (`TelemetryBuilder::config_file`). Example: `watch = true`.
    pub watch: bool,
    /// Reload from that file when the process gets SIGHUP (Unix only; the handler is
    /// installed at setup and removed at shutdown). Example: `sighup = true`.
    pub sighup: bool,
    /// The file to reload from, relative to this config file's folder. Example:
    /// `file = "lens-exporters.toml"`.
    pub file: Option<PathBuf>,
    /// How often the watched file is checked, in ms (50 to 3 600 000). Example:
    /// `poll_interval_ms = 500`.
    pub poll_interval_ms: u64,
}

impl Default for ReloadConfig {
    fn default() -> Self {
        Self {
            watch: false,
            sighup: false,
            file: None,
            poll_interval_ms: 1000,
        }
    }
}

/// The compilation cache of `.wasm` exporters: compiled code on disk, mapped on the next start
/// (one cache per directory and process). `LENS_WASM_CACHE`, `LENS_WASM_CACHE_DIR` and
/// `LENS_WASM_CACHE_MAX_MB` override these.
///
/// ```toml
/// [wasm_cache]
/// enabled = true
/// dir = "/scratch/lens-wasm-cache"
/// max_mb = 2048
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WasmCacheConfig {
    /// Use the cache. `false`: compile every `.wasm` at every start. Example: `enabled = false`.
    pub enabled: bool,
    /// Its directory (created private to the user). Unset: `$XDG_CACHE_HOME/lens/wasm`, else
    /// `~/.cache/lens/wasm`. Example: `dir = "/scratch/lens-wasm-cache"`.
    pub dir: Option<PathBuf>,
    /// Size limit in MiB; the least recently used artefacts are removed beyond it (the compiled
    /// functions the compile worker reuses, `functions/`, have a quarter of it besides).
    /// Example: `max_mb = 4096`.
    pub max_mb: u64,
}

impl Default for WasmCacheConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            dir: None,
            max_mb: 2048,
        }
    }
}

impl WasmCacheConfig {
    /// The directory: `dir`, else `$XDG_CACHE_HOME/lens/wasm`, else `$HOME/.cache/lens/wasm`
    /// from `env`; `None` without any of them.
    pub fn directory(&self, env: &dyn env::EnvSource) -> Option<PathBuf> {
        self.dir
            .clone()
            .or_else(|| {
                env.get("XDG_CACHE_HOME")
                    .map(|d| PathBuf::from(d).join("lens/wasm"))
            })
            .or_else(|| {
                env.get("HOME")
                    .map(|h| PathBuf::from(h).join(".cache/lens/wasm"))
            })
    }
}

/// Settings of one signal.
///
/// ```toml
/// [[traces.exporters]]
/// kind = "console"
/// [[traces.exporters]]
/// kind = "otlp"
/// endpoint = "http://127.0.0.1:4318/v1/traces"
/// protocol = "http/protobuf"
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SignalConfig {
    /// Exporters of this signal. Empty: the top-level `exporter` shorthand.
    pub exporters: Vec<ExporterSpec>,
    /// Sandboxed processors run on every batch before the exporters they apply to, in this
    /// order (spans and log records; refused under `[metrics]`). Empty (default): none.
    pub processors: Vec<ProcessorSpec>,
}

/// Batch processor settings: `[batch]` for spans (`OTEL_BSP_*` override the defaults),
/// `[log_batch]` for log records (`OTEL_BLRP_*`).
///
/// ```toml
/// [batch]
/// max_queue_size = 16384
/// max_export_batch_size = 512
/// scheduled_delay_ms = 5000
/// export_timeout_ms = 30000
/// shutdown_timeout_ms = 10000
/// max_concurrent_exports = 1
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BatchConfig {
    /// Spans (log records) buffered per exporter before new ones are dropped (and counted).
    /// Example: `max_queue_size = 16384`.
    pub max_queue_size: usize,
    /// Spans (log records) per export call. Example: `max_export_batch_size = 512`.
    pub max_export_batch_size: usize,
    /// Longest wait before a partial batch is exported.
    pub scheduled_delay_ms: u64,
    /// Deadline of one export call (also the wasm guest's call deadline by default).
    pub export_timeout_ms: u64,
    /// Longest wait for `force_flush` and `shutdown` of one exporter.
    pub shutdown_timeout_ms: u64,
    /// Batches exported at once (1 to 64), as in the SDK's `with_max_concurrent_exports`.
    /// A wasm exporter runs one sandboxed instance per concurrent export, each with its own
    /// memory limit, `init` and fault backoff; they share nothing, so `{lens.instance}` in a
    /// `settings` value becomes the instance's number (e.g. a `path` per instance). Example:
    /// `max_concurrent_exports = 2` for an exporter slower than the application.
    pub max_concurrent_exports: usize,
}

impl Default for BatchConfig {
    fn default() -> Self {
        Self {
            // Deeper than the SDK's 2048: at 50k spans/s a 65 ms export hiccup (p99 measured
            // with gRPC to a local collector on 2 cores) is 3.3k spans. ~6 MB at most per exporter.
            max_queue_size: 16_384,
            max_export_batch_size: 512,
            scheduled_delay_ms: 5000,
            export_timeout_ms: 30_000,
            shutdown_timeout_ms: 10_000,
            max_concurrent_exports: 1,
        }
    }
}

impl BatchConfig {
    /// The log signal's defaults: the OpenTelemetry SDKs' batch log record processor's
    /// (`OTEL_BLRP_*`), with Lens's shutdown bound.
    pub fn for_logs() -> Self {
        Self {
            max_queue_size: 2048,
            max_export_batch_size: 512,
            scheduled_delay_ms: 1000,
            ..Self::default()
        }
    }

    /// This config with the non-empty fields of `overrides` applied.
    pub fn with_overrides(mut self, overrides: &BatchOverrides) -> Self {
        let o = overrides;
        self.max_queue_size = o.max_queue_size.unwrap_or(self.max_queue_size);
        self.max_export_batch_size = o
            .max_export_batch_size
            .unwrap_or(self.max_export_batch_size);
        self.scheduled_delay_ms = o.scheduled_delay_ms.unwrap_or(self.scheduled_delay_ms);
        self.export_timeout_ms = o.export_timeout_ms.unwrap_or(self.export_timeout_ms);
        self.shutdown_timeout_ms = o.shutdown_timeout_ms.unwrap_or(self.shutdown_timeout_ms);
        self.max_concurrent_exports = o
            .max_concurrent_exports
            .unwrap_or(self.max_concurrent_exports);
        self
    }
}

/// Where a configuration came from, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigSource {
    /// A TOML file.
    File(PathBuf),
    /// Built in code or from defaults.
    Code,
    /// The environment variable that set the value in question.
    Variable(String),
}

impl std::fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigSource::File(p) => write!(f, "{}", p.display()),
            ConfigSource::Code => f.write_str("<config>"),
            ConfigSource::Variable(name) => write!(f, "from environment variable {name}"),
        }
    }
}

impl LensConfig {
    /// Parses a TOML document; `origin` names it in errors. Validates the result, the `exporter`
    /// shorthand included: a file is Lens's own input and is checked whole when read, so a typo
    /// fails every rank at once (values from code or the environment are checked as NeMo Lens
    /// checks them, on the ranks that build exporters).
    pub fn from_toml_str(text: &str, origin: &ConfigSource) -> Result<Self, LensError> {
        let config: LensConfig = toml::from_str(text).map_err(|e| LensError::Config {
            source_name: origin.to_string(),
            message: e.to_string().trim_end().to_string(),
            source: Some(Box::new(e)),
        })?;
        config.validate(origin)?;
        config.check_exporter_shorthand(origin)?;
        Ok(config)
    }

    /// Reads and validates a TOML file (no environment overrides); a file larger than
    /// [`MAX_CONFIG_FILE_BYTES`] is refused.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, LensError> {
        let path = path.as_ref();
        let text = read_config_file(path).map_err(|e| LensError::Config {
            source_name: path.display().to_string(),
            message: format!("cannot read the file: {e}"),
            source: Some(Box::new(e)),
        })?;
        let mut config = Self::from_toml_str(&text, &ConfigSource::File(path.to_path_buf()))?;
        config.resolve_relative_paths(path.parent().unwrap_or(Path::new(".")));
        Ok(config)
    }

    /// Defaults with the process environment applied (`NEMO_LENS_*`, then `LENS_*`, and
    /// `OTEL_*`): NeMo Lens's `NemoLensConfig.from_env()`.
    pub fn from_env() -> Result<Self, LensError> {
        Self::from_env_with_prefix(&env::EnvPrefix::default())
    }

    /// Defaults with the process environment applied, NeMo Lens's keys read under `prefix`:
    /// NeMo Lens's `NemoLensConfig.from_env(prefix, fallback_prefix)`.
    pub fn from_env_with_prefix(prefix: &env::EnvPrefix) -> Result<Self, LensError> {
        let mut config = Self::default();
        config.apply_env_with_prefix(&env::ProcessEnv, prefix)?;
        Ok(config)
    }

    /// Checks the `exporter` shorthand when a signal uses it: NeMo Lens checks it only on a rank
    /// that builds exporters; a file is checked when read.
    pub fn check_exporter_shorthand(&self, origin: &ConfigSource) -> Result<(), LensError> {
        self.check_shorthand_for(
            [
                self.traces.exporters.is_empty(),
                self.metrics.exporters.is_empty(),
                self.logs.exporters.is_empty(),
            ],
            origin,
        )
    }

    /// Checks the `exporter` shorthand when a signal builds exporters from it: the signal is
    /// enabled, has no exporter list, and the application injected none (NeMo Lens builds the
    /// config's exporter only for a signal without an injected one). `use_it`: traces,
    /// metrics, logs. (NeMo Lens sends logs over OTLP for any value but `console` and never
    /// checks it for them; Lens refuses a misspelt value whichever signal reads it.)
    pub(crate) fn check_shorthand_for(
        &self,
        use_it: [bool; 3],
        origin: &ConfigSource,
    ) -> Result<(), LensError> {
        if use_it.contains(&true) {
            ExporterSpec::from_shorthand(&self.exporter).map_err(|m| LensError::Config {
                source_name: origin.to_string(),
                message: format!("`exporter`: {m}"),
                source: None,
            })?;
        }
        Ok(())
    }

    /// A file (when given) with the process environment applied on top: what `lens` runs.
    pub fn load(path: Option<&Path>) -> Result<Self, LensError> {
        let mut config = match path {
            Some(p) => Self::from_file(p)?,
            None => Self::default(),
        };
        config.apply_env(&env::ProcessEnv)?;
        Ok(config)
    }

    /// Checks value ranges and cross-field rules; errors name the key and `origin`.
    pub fn validate(&self, origin: &ConfigSource) -> Result<(), LensError> {
        let bad = |key: &str, message: String| LensError::Config {
            source_name: origin.to_string(),
            message: format!("`{key}`: {message}"),
            source: None,
        };
        if !(0.0..=1.0).contains(&self.export_sample_rate) || self.export_sample_rate.is_nan() {
            return Err(bad(
                "export_sample_rate",
                format!("{} is not between 0 and 1", self.export_sample_rate),
            ));
        }
        check_batch(&self.batch).map_err(|m| bad("batch", m))?;
        check_batch(&self.log_batch).map_err(|m| bad("log_batch", m))?;
        if self.metric_export_interval_ms == 0 {
            return Err(bad(
                "metric_export_interval_ms",
                "must be at least 1".to_string(),
            ));
        }
        if self.wasm_cache.max_mb == 0 {
            return Err(bad("wasm_cache.max_mb", "must be at least 1".to_string()));
        }
        if !(50..=3_600_000).contains(&self.reload.poll_interval_ms) {
            return Err(bad(
                "reload.poll_interval_ms",
                format!(
                    "{} is not between 50 and 3600000",
                    self.reload.poll_interval_ms
                ),
            ));
        }
        for (signal, i, spec) in self.exporter_entries() {
            spec.validate(self.batch_for(signal))
                .map_err(|m| bad(&format!("{signal}.exporters[{i}]"), m))?;
        }
        self.validate_processors()
            .map_err(|(key, m)| bad(&key, m))?;
        self.check_guest_memory()
            .map_err(|m| bad("max_guest_memory_mib", m))
    }

    /// The processor entries: names unique, the exporters they name known.
    fn validate_processors(&self) -> Result<(), (String, String)> {
        for signal in Signal::ALL {
            let processors = &self.signal(signal).processors;
            let exporters = self
                .exporters_of(signal)
                .iter()
                .map(ExporterSpec::display_name)
                .collect();
            let mut names = std::collections::BTreeSet::new();
            for (i, p) in processors.iter().enumerate() {
                let key = format!("{signal}.processors[{i}]");
                p.validate(&exporters).map_err(|m| (key.clone(), m))?;
                let name = p.display_name();
                if !names.insert(name.clone()) {
                    return Err((
                        key,
                        format!(
                            "the name `{name}` is taken by an earlier processor: give each a \
                             distinct `name`"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Every entry of the three signals' exporter lists (`[[traces.exporters]]`,
    /// `[[metrics.exporters]]`, `[[logs.exporters]]`), with its signal and its index in its list.
    pub fn exporter_entries(&self) -> impl Iterator<Item = (Signal, usize, &ExporterSpec)> {
        Signal::ALL.into_iter().flat_map(move |signal| {
            self.signal(signal)
                .exporters
                .iter()
                .enumerate()
                .map(move |(i, spec)| (signal, i, spec))
        })
    }

    /// Every sandboxed component of the config, with its entry's display name: the `.wasm`
    /// exporters of the three signals, then the processors.
    pub fn wasm_entries(&self) -> Vec<(String, &WasmExporterSpec)> {
        let exporters = self.exporter_entries().filter_map(|(_, _, e)| match e {
            ExporterSpec::Wasm(w) => Some((e.display_name(), w)),
            _ => None,
        });
        let processors = Signal::ALL.into_iter().flat_map(|signal| {
            self.signal(signal)
                .processors
                .iter()
                .map(|p| (p.display_name(), p.component()))
        });
        exporters.chain(processors).collect()
    }

    /// [`exporter_entries`](Self::exporter_entries), mutable.
    fn exporter_entries_mut(&mut self) -> impl Iterator<Item = &mut ExporterSpec> {
        self.traces
            .exporters
            .iter_mut()
            .chain(&mut self.metrics.exporters)
            .chain(&mut self.logs.exporters)
    }

    /// The section of `signal`: `[traces]`, `[metrics]` or `[logs]`.
    pub fn signal(&self, signal: Signal) -> &SignalConfig {
        match signal {
            Signal::Traces => &self.traces,
            Signal::Metrics => &self.metrics,
            Signal::Logs => &self.logs,
        }
    }

    /// The batch defaults of `signal`'s exporters: `[log_batch]` for logs, else `[batch]` (a
    /// metric exporter's `export_timeout_ms` bounds each export).
    pub fn batch_for(&self, signal: Signal) -> &BatchConfig {
        match signal {
            Signal::Logs => &self.log_batch,
            Signal::Traces | Signal::Metrics => &self.batch,
        }
    }

    /// Span exporters of this config: the `[traces]` list, else the `exporter` shorthand.
    pub fn trace_exporters(&self) -> Vec<ExporterSpec> {
        signal_exporters(&self.traces, &self.exporter, true)
    }

    /// Metric exporters of this config: the `[metrics]` list, else the `exporter` shorthand
    /// (a `.wasm` shorthand names a span exporter: it gives metrics none; list a wasm metric
    /// exporter under `[[metrics.exporters]]`).
    pub fn metric_exporters(&self) -> Vec<ExporterSpec> {
        signal_exporters(&self.metrics, &self.exporter, false)
    }

    /// Log exporters of this config: the `[logs]` list, else the `exporter` shorthand (a
    /// `.wasm` shorthand gives logs none).
    pub fn log_exporters(&self) -> Vec<ExporterSpec> {
        signal_exporters(&self.logs, &self.exporter, false)
    }

    /// The exporters of `signal`: [`trace_exporters`](Self::trace_exporters),
    /// [`metric_exporters`](Self::metric_exporters) or [`log_exporters`](Self::log_exporters).
    pub fn exporters_of(&self, signal: Signal) -> Vec<ExporterSpec> {
        match signal {
            Signal::Traces => self.trace_exporters(),
            Signal::Metrics => self.metric_exporters(),
            Signal::Logs => self.log_exporters(),
        }
    }

    /// Makes the relative `.wasm` paths and pre-opened directories of a file relative to it,
    /// under every signal.
    fn resolve_relative_paths(&mut self, base: &Path) {
        if self.exporter.ends_with(".wasm") && Path::new(&self.exporter).is_relative() {
            self.exporter = base.join(&self.exporter).display().to_string();
        }
        for spec in self.exporter_entries_mut() {
            if let ExporterSpec::Wasm(w) = spec {
                w.resolve_relative_paths(base);
            } else if let Some(spool) = spec.spool_mut() {
                spool.resolve_relative_paths(base);
            }
        }
        for p in self.processor_entries_mut() {
            p.component_mut().resolve_relative_paths(base);
        }
        for path in [self.wasm_cache.dir.as_mut(), self.reload.file.as_mut()]
            .into_iter()
            .flatten()
        {
            if path.is_relative() {
                *path = base.join(&*path);
            }
        }
    }

    /// The effective config as TOML, every secret (header values, explicit `env` values,
    /// credential-named `settings`, URL passwords) written `[REDACTED]`: what `lens config show`
    /// prints, safe for logs.
    pub fn to_toml(&self) -> String {
        self.redacted().to_toml_with_secrets()
    }

    /// The effective config as TOML, secrets included (it parses back into the same config).
    pub fn to_toml_with_secrets(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# cannot render: {e}\n"))
    }

    /// This config with every secret replaced by `[REDACTED]`.
    pub fn redacted(&self) -> Self {
        let mut c = self.clone();
        c.otlp = c.otlp.redacted();
        for spec in c.exporter_entries_mut() {
            match spec {
                ExporterSpec::Otlp(o) => *o = o.redacted(),
                ExporterSpec::Wasm(w) => *w = w.redacted(),
                ExporterSpec::Console(_) | ExporterSpec::None(_) => {}
            }
        }
        for p in c.processor_entries_mut() {
            *p = p.redacted();
        }
        c
    }

    /// The processor entries of every signal, mutable.
    fn processor_entries_mut(&mut self) -> impl Iterator<Item = &mut ProcessorSpec> {
        self.traces
            .processors
            .iter_mut()
            .chain(&mut self.metrics.processors)
            .chain(&mut self.logs.processors)
    }
}

/// Upper bound of `max_concurrent_exports`: each concurrent export is a thread (and, for a
/// wasm exporter, an instance with its own memory).
pub const MAX_CONCURRENT_EXPORTS: usize = 64;

pub(crate) fn check_batch(b: &BatchConfig) -> Result<(), String> {
    let (queue, batch) = (b.max_queue_size, b.max_export_batch_size);
    if !(1..=MAX_CONCURRENT_EXPORTS).contains(&b.max_concurrent_exports) {
        return Err(format!(
            "max_concurrent_exports ({}) must be between 1 and {MAX_CONCURRENT_EXPORTS}",
            b.max_concurrent_exports
        ));
    }
    if queue == 0 || batch == 0 {
        return Err("max_queue_size and max_export_batch_size must be at least 1".to_string());
    }
    if batch > queue {
        return Err(format!(
            "max_export_batch_size ({batch}) is larger than max_queue_size ({queue})"
        ));
    }
    Ok(())
}

/// A signal's exporters: its own list, else the shorthand (a `.wasm` shorthand only when
/// `wasm_shorthand`).
fn signal_exporters(
    signal: &SignalConfig,
    shorthand: &str,
    wasm_shorthand: bool,
) -> Vec<ExporterSpec> {
    if !signal.exporters.is_empty() {
        return signal.exporters.clone();
    }
    ExporterSpec::from_shorthand(shorthand)
        .into_iter()
        .filter(|s| wasm_shorthand || !matches!(s, ExporterSpec::Wasm(_)))
        .collect()
}
