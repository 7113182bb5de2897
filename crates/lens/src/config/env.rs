//! Environment overrides, read as NeMo Lens reads them: its keys under `NEMO_LENS_*` (or a
//! library's prefix with `NEMO_LENS_*` as the fallback, [`EnvPrefix`]), then `LENS_*`; values
//! stripped, an empty value unset, numbers and booleans parsed as Python parses them; Lens's own
//! keys under `LENS_*`; and the standard `OTEL_*` variables. A value that does not parse is an
//! error naming the variable, never ignored.

use std::collections::HashMap;
use std::str::FromStr;

use super::{BatchConfig, LensConfig, OtlpProtocol, python};
use crate::error::LensError;
use crate::signal::Signal;

/// A source of environment variables (the process, or a map in tests).
pub trait EnvSource {
    /// The value of `name`, if set.
    fn get(&self, name: &str) -> Option<String>;
}

/// The process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl EnvSource for ProcessEnv {
    fn get(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

impl EnvSource for HashMap<String, String> {
    fn get(&self, name: &str) -> Option<String> {
        HashMap::get(self, name).cloned()
    }
}

impl<const N: usize> EnvSource for [(&str, &str); N] {
    fn get(&self, name: &str) -> Option<String> {
        self.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    }
}

/// Parses a boolean the way NeMo Lens does: 1/true/yes/on and 0/false/no/off, any case,
/// surrounding whitespace ignored.
pub fn parse_bool(value: &str) -> Option<bool> {
    python::bool(value)
}

/// The prefixes NeMo Lens's keys are read under: `<prefix>_KEY`, then `<fallback>_KEY`. NeMo
/// Lens reads `NEMO_LENS_*` alone by default; a library passes its own prefix with `NEMO_LENS`
/// as the fallback (`EnvPrefix::library("MEGATRON_OTEL")`). Lens then reads `LENS_*` as a last
/// resort, for its own users.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvPrefix {
    /// Read first, e.g. `MEGATRON_OTEL` (without the `_`).
    pub prefix: String,
    /// Read when the first is unset or empty, e.g. `NEMO_LENS`.
    pub fallback: Option<String>,
}

impl Default for EnvPrefix {
    /// `NEMO_LENS_*` alone, NeMo Lens's default.
    fn default() -> Self {
        Self {
            prefix: "NEMO_LENS".to_string(),
            fallback: None,
        }
    }
}

impl EnvPrefix {
    /// A library's own prefix, falling back to `NEMO_LENS_*`.
    pub fn library(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
            fallback: Some("NEMO_LENS".to_string()),
        }
    }
}

/// Lens's own prefix, read after NeMo Lens's for its keys, and alone for Lens's extra keys.
pub const LENS_PREFIX: &str = "LENS";

struct Reader<'a> {
    env: &'a dyn EnvSource,
    prefix: &'a EnvPrefix,
}

/// What an invalid boolean is told to be.
const BOOL: &str = "one of 1/true/yes/on or 0/false/no/off";

impl Reader<'_> {
    /// The first of `names` that is set and not empty after stripping, with its stripped value.
    fn first(&self, names: impl IntoIterator<Item = String>) -> Option<(String, String)> {
        names.into_iter().find_map(|name| {
            let value = self.env.get(&name)?;
            let value = python::strip(&value);
            (!value.is_empty()).then(|| (name, value.to_string()))
        })
    }

    /// A NeMo Lens key: `<prefix>_KEY`, `<fallback>_KEY`, then `LENS_KEY`.
    fn nemo(&self, key: &str) -> Option<(String, String)> {
        let p = self.prefix;
        let names = std::iter::once(&p.prefix)
            .chain(&p.fallback)
            .map(String::as_str)
            .chain([LENS_PREFIX]);
        self.first(names.map(|prefix| format!("{prefix}_{key}")))
    }

    /// A key only Lens has: `LENS_KEY`.
    fn lens_only(&self, key: &str) -> Option<(String, String)> {
        self.first([format!("{LENS_PREFIX}_{key}")])
    }

    /// A variable by its full name, stripped; empty counts as unset.
    fn var(&self, name: &str) -> Option<(String, String)> {
        self.first([name.to_string()])
    }

    fn typed<T>(
        found: Option<(String, String)>,
        parse: impl Fn(&str) -> Option<T>,
        expected: &str,
    ) -> Result<Option<T>, LensError> {
        found
            .map(|(variable, value)| {
                parse(&value).ok_or_else(|| LensError::Env {
                    variable,
                    value,
                    expected: expected.to_string(),
                })
            })
            .transpose()
    }

    fn bool(found: Option<(String, String)>) -> Result<Option<bool>, LensError> {
        Self::typed(found, python::bool, BOOL)
    }

    /// A count in Rust's own syntax (the `OTEL_BSP_*` and Lens's own numbers).
    fn parse<T: FromStr>(
        found: Option<(String, String)>,
        what: &str,
    ) -> Result<Option<T>, LensError> {
        Self::typed(found, |v| v.parse().ok(), what)
    }
}

impl LensConfig {
    /// Applies environment overrides from `env` (NeMo Lens's keys under `NEMO_LENS_*`), then
    /// re-validates.
    pub fn apply_env(&mut self, env: &dyn EnvSource) -> Result<(), LensError> {
        self.apply_env_with_prefix(env, &EnvPrefix::default())
    }

    /// Applies environment overrides with NeMo Lens's keys read under `prefix` (as NeMo Lens's
    /// `NemoLensConfig.from_env(prefix, fallback_prefix)`), then re-validates.
    pub fn apply_env_with_prefix(
        &mut self,
        env: &dyn EnvSource,
        prefix: &EnvPrefix,
    ) -> Result<(), LensError> {
        let r = Reader { env, prefix };
        self.apply_nemo_env(&r)?;
        self.apply_lens_env(&r)?;
        self.apply_batch_env(&r)?;
        self.apply_otlp_env(&r)?;
        self.apply_wasm_cache_env(&r)?;
        self.validate(&super::ConfigSource::Code)
    }

    /// NeMo Lens's keys, read and parsed as `NemoLensConfig.from_env` reads them.
    fn apply_nemo_env(&mut self, r: &Reader<'_>) -> Result<(), LensError> {
        let bools: [(&str, &mut bool); 5] = [
            ("ENABLED", &mut self.enabled),
            ("SAMPLER_ENABLED", &mut self.sampler_enabled),
            ("TRACES_ENABLED", &mut self.traces_enabled),
            ("METRICS_ENABLED", &mut self.metrics_enabled),
            ("LOGS_ENABLED", &mut self.logs_enabled),
        ];
        for (key, field) in bools {
            if let Some(v) = Reader::bool(r.nemo(key))? {
                *field = v;
            }
        }
        let strings: [(&str, &mut String); 5] = [
            ("EXPORT_STRATEGY", &mut self.export_strategy),
            ("SPAN_GROUPS", &mut self.span_groups),
            ("EXPORTER", &mut self.exporter),
            ("RUN_ID", &mut self.run_id),
            ("USER_ID", &mut self.user),
        ];
        for (key, field) in strings {
            if let Some((_, v)) = r.nemo(key) {
                *field = v;
            }
        }
        if let Some(v) = Reader::typed(r.nemo("EXPORT_RANK"), python::int, "an integer")? {
            self.export_rank = v;
        }
        // Out of [0, 1] (NaN included) NeMo Lens's dataclass refuses it: named here.
        let rate = Reader::typed(
            r.nemo("EXPORT_SAMPLE_RATE"),
            |v| python::float(v).filter(|f| (0.0..=1.0).contains(f)),
            "a number between 0 and 1",
        )?;
        if let Some(v) = rate {
            self.export_sample_rate = v;
        }
        if let Some((_, v)) = r.var("OTEL_SERVICE_NAME") {
            self.service_name = v;
        }
        // Read as they are, unstripped (as NeMo Lens does).
        for (name, field) in [
            ("WANDB_ENTITY", &mut self.wandb_entity),
            ("WANDB_PROJECT", &mut self.wandb_project),
        ] {
            if let Some(v) = r.env.get(name) {
                *field = v;
            }
        }
        Ok(())
    }

    /// Keys only Lens has, under `LENS_*` alone.
    fn apply_lens_env(&mut self, r: &Reader<'_>) -> Result<(), LensError> {
        if let Some(v) = Reader::bool(r.lens_only("ALLOW_REINIT"))? {
            self.allow_reinit = v;
        }
        if let Some((_, v)) = r.lens_only("SERVICE_NAME") {
            self.service_name = v;
        }
        if let Some((_, v)) = r.lens_only("SERVICE_VERSION") {
            self.service_version = v;
        }
        // Taken here when valid, so that `lens config show` shows it; an invalid value is an
        // error only where NeMo Lens reads it: where a metric reader is built
        // ([`metric_export_interval`]).
        if let Some(v) = r
            .env
            .get(METRIC_EXPORT_INTERVAL)
            .as_deref()
            .and_then(interval_ms)
        {
            self.metric_export_interval_ms = v;
        }
        Ok(())
    }

    /// The standard `OTEL_BSP_*` variables for spans (and the Rust SDK's concurrency one), and
    /// `OTEL_BLRP_*` for log records.
    fn apply_batch_env(&mut self, r: &Reader<'_>) -> Result<(), LensError> {
        apply_batch_vars(&mut self.batch, r, "BSP")?;
        apply_batch_vars(&mut self.log_batch, r, "BLRP")
    }

    fn apply_wasm_cache_env(&mut self, r: &Reader<'_>) -> Result<(), LensError> {
        let cache = &mut self.wasm_cache;
        if let Some(v) = Reader::bool(r.lens_only("WASM_CACHE"))? {
            cache.enabled = v;
        }
        if let Some((_, dir)) = r.lens_only("WASM_CACHE_DIR") {
            cache.dir = Some(dir.into());
        }
        let mib = "a whole number of MiB, at least 1";
        let max = Reader::typed(
            r.lens_only("WASM_CACHE_MAX_MB"),
            |v| v.parse::<u64>().ok().filter(|n| *n > 0),
            mib,
        )?;
        if let Some(v) = max {
            cache.max_mb = v;
        }
        Ok(())
    }

    fn apply_otlp_env(&mut self, r: &Reader<'_>) -> Result<(), LensError> {
        let otlp = &mut self.otlp;
        // The endpoint and the per-signal protocol are resolved per signal when the exporter is
        // built: see [`otlp_endpoint`] and [`otlp_protocol`].
        if let Some((_, value)) = r.var("OTEL_EXPORTER_OTLP_PROTOCOL") {
            otlp.protocol = Some(OtlpProtocol::lenient(&value));
        }
        if let Some(v) = Reader::parse(r.var("OTEL_EXPORTER_OTLP_TIMEOUT"), "milliseconds")? {
            otlp.timeout_ms = Some(v);
        }
        if let Some((name, value)) = r.var("OTEL_EXPORTER_OTLP_HEADERS") {
            for pair in value.split(',').filter(|p| !p.trim().is_empty()) {
                // The value holds header values (credentials): the error never shows it.
                let (k, v) = pair.split_once('=').ok_or_else(|| LensError::Env {
                    variable: name.clone(),
                    value: super::secret::REDACTED.to_string(),
                    expected: "comma-separated key=value pairs".to_string(),
                })?;
                otlp.headers.insert(k.trim().to_string(), v.trim().into());
            }
        }
        Ok(())
    }
}

/// The variable of the metric readers' period, in milliseconds.
pub const METRIC_EXPORT_INTERVAL: &str = "OTEL_METRIC_EXPORT_INTERVAL";

/// `int(value)` when positive: the periods NeMo Lens's reader accepts.
fn interval_ms(value: &str) -> Option<u64> {
    python::int(value)
        .and_then(|i| u64::try_from(i).ok())
        .filter(|ms| *ms > 0)
}

/// The period of a metric reader built from the config: `OTEL_METRIC_EXPORT_INTERVAL` when set,
/// else `configured`. As in NeMo Lens, which reads it with `int()` when it builds its reader (an
/// exporting rank, metrics on, no injected reader), a value that is not a positive integer
/// (empty included) is an error there, naming the variable.
pub fn metric_export_interval(env: &dyn EnvSource, configured: u64) -> Result<u64, LensError> {
    match env.get(METRIC_EXPORT_INTERVAL) {
        None => Ok(configured.max(1)),
        Some(value) => interval_ms(&value).ok_or_else(|| LensError::Env {
            variable: METRIC_EXPORT_INTERVAL.to_string(),
            value,
            expected: "a whole number of milliseconds, larger than zero".to_string(),
        }),
    }
}

/// The protocol of an OTLP exporter of `signal` whose entry sets
/// none: `OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL` when set and not empty, then the `[otlp]`
/// table's (which `OTEL_EXPORTER_OTLP_PROTOCOL` sets), then gRPC, as NeMo Lens resolves it (a
/// signal variable of blanks counts as set, and as an unknown protocol: gRPC).
pub fn otlp_protocol(
    env: &dyn EnvSource,
    defaults: Option<OtlpProtocol>,
    signal: Signal,
) -> OtlpProtocol {
    let specific = format!(
        "OTEL_EXPORTER_OTLP_{}_PROTOCOL",
        signal.as_str().to_ascii_uppercase()
    );
    env.get(&specific)
        .filter(|v| !v.is_empty())
        .map(|v| OtlpProtocol::lenient(&v))
        .or(defaults)
        .unwrap_or_default()
}

/// The endpoint an OTLP exporter of `signal` uses when its config sets none:
/// the signal-specific variable (verbatim), then the generic one (with `/v1/<signal>` appended for
/// HTTP), then the protocol's default on localhost.
pub fn otlp_endpoint(env: &dyn EnvSource, protocol: OtlpProtocol, signal: Signal) -> String {
    let specific = format!(
        "OTEL_EXPORTER_OTLP_{}_ENDPOINT",
        signal.as_str().to_ascii_uppercase()
    );
    if let Some(v) = env.get(&specific) {
        return v;
    }
    let base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT");
    match protocol {
        OtlpProtocol::Grpc => base.unwrap_or_else(|| "http://localhost:4317".to_string()),
        OtlpProtocol::HttpProtobuf => {
            let base = base.unwrap_or_else(|| "http://localhost:4318".to_string());
            format!("{}/v1/{signal}", base.trim_end_matches('/'))
        }
    }
}

/// `OTEL_{kind}_*` onto one batch config (`kind`: `BSP` spans, `BLRP` log records).
fn apply_batch_vars(b: &mut BatchConfig, r: &Reader<'_>, kind: &str) -> Result<(), LensError> {
    let millis = "a whole number of milliseconds";
    let count = "a positive whole number";
    let var = |name: &str| r.var(&format!("OTEL_{kind}_{name}"));
    if let Some(v) = Reader::parse(var("MAX_QUEUE_SIZE"), count)? {
        b.max_queue_size = v;
    }
    if let Some(v) = Reader::parse(var("MAX_EXPORT_BATCH_SIZE"), count)? {
        b.max_export_batch_size = v;
    }
    if let Some(v) = Reader::parse(var("SCHEDULE_DELAY"), millis)? {
        b.scheduled_delay_ms = v;
    }
    if let Some(v) = Reader::parse(var("EXPORT_TIMEOUT"), millis)? {
        b.export_timeout_ms = v;
    }
    // The Rust SDK's name for its (experimental) setting of the same meaning.
    if let Some(v) = Reader::parse(var("MAX_CONCURRENT_EXPORTS"), count)? {
        b.max_concurrent_exports = v;
    }
    Ok(())
}
