//! Environment overrides: `LENS_*` (fallback prefix `NEMO_LENS_*`) and the standard `OTEL_*`
//! variables. Values that do not parse are errors naming the variable, never ignored.

use std::collections::HashMap;
use std::str::FromStr;

use super::{ExporterSpec, LensConfig, OtlpProtocol};
use crate::error::LensError;

/// Primary prefix of Lens variables.
pub const PREFIX: &str = "LENS_";
/// Fallback prefix, shared with NeMo Lens.
pub const FALLBACK_PREFIX: &str = "NEMO_LENS_";

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

/// Parses a boolean the way NeMo Lens does: 1/true/yes/on and 0/false/no/off, case-insensitive.
pub fn parse_bool(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

struct Reader<'a> {
    env: &'a dyn EnvSource,
}

impl Reader<'_> {
    /// `LENS_<key>`, else `NEMO_LENS_<key>`, with the variable's full name.
    fn lens(&self, key: &str) -> Option<(String, String)> {
        [PREFIX, FALLBACK_PREFIX].iter().find_map(|prefix| {
            let name = format!("{prefix}{key}");
            self.env.get(&name).map(|v| (name, v))
        })
    }

    fn raw(&self, name: &str) -> Option<(String, String)> {
        self.env.get(name).map(|v| (name.to_string(), v))
    }

    fn parse<T: FromStr>(
        found: Option<(String, String)>,
        what: &str,
    ) -> Result<Option<T>, LensError> {
        match found {
            None => Ok(None),
            Some((name, value)) => {
                value
                    .trim()
                    .parse::<T>()
                    .map(Some)
                    .map_err(|_| LensError::Env {
                        variable: name,
                        value,
                        expected: what.to_string(),
                    })
            }
        }
    }

    fn bool(&self, key: &str) -> Result<Option<bool>, LensError> {
        match self.lens(key) {
            None => Ok(None),
            Some((name, value)) => parse_bool(&value).map(Some).ok_or(LensError::Env {
                variable: name,
                value,
                expected: "one of 1/true/yes/on or 0/false/no/off".to_string(),
            }),
        }
    }
}

impl LensConfig {
    /// Applies environment overrides from `env`, then re-validates.
    pub fn apply_env(&mut self, env: &dyn EnvSource) -> Result<(), LensError> {
        let r = Reader { env };
        if let Some(v) = r.bool("ENABLED")? {
            self.enabled = v;
        }
        if let Some((_, v)) = r.raw("OTEL_SERVICE_NAME") {
            self.service_name = v;
        }
        if let Some((_, v)) = r.lens("SERVICE_NAME") {
            self.service_name = v;
        }
        if let Some((_, v)) = r.lens("SERVICE_VERSION") {
            self.service_version = v;
        }
        if let Some((_, v)) = r.lens("EXPORT_STRATEGY") {
            self.export_strategy = v;
        }
        if let Some(v) = Reader::parse(r.lens("EXPORT_RANK"), "an integer rank (-1 = last)")? {
            self.export_rank = v;
        }
        if let Some(v) = Reader::parse(r.lens("EXPORT_SAMPLE_RATE"), "a number between 0 and 1")? {
            self.export_sample_rate = v;
        }
        if let Some(v) = r.bool("SAMPLER_ENABLED")? {
            self.sampler_enabled = v;
        }
        if let Some(v) = r.bool("TRACES_ENABLED")? {
            self.traces_enabled = v;
        }
        if let Some(v) = r.bool("METRICS_ENABLED")? {
            self.metrics_enabled = v;
        }
        if let Some(v) = r.bool("ALLOW_REINIT")? {
            self.allow_reinit = v;
        }
        if let Some((name, v)) = r.lens("EXPORTER") {
            ExporterSpec::from_shorthand(&v).map_err(|expected| LensError::Env {
                variable: name,
                value: v.clone(),
                expected,
            })?;
            self.exporter = v;
        }
        if let Some((_, v)) = r.lens("RUN_ID") {
            self.run_id = v;
        }
        let millis = "a whole number of milliseconds";
        if let Some(v) = Reader::parse(r.raw("OTEL_METRIC_EXPORT_INTERVAL"), millis)? {
            self.metric_export_interval_ms = v;
        }
        let count = "a positive whole number";
        let b = &mut self.batch;
        if let Some(v) = Reader::parse(r.raw("OTEL_BSP_MAX_QUEUE_SIZE"), count)? {
            b.max_queue_size = v;
        }
        if let Some(v) = Reader::parse(r.raw("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"), count)? {
            b.max_export_batch_size = v;
        }
        if let Some(v) = Reader::parse(r.raw("OTEL_BSP_SCHEDULE_DELAY"), millis)? {
            b.scheduled_delay_ms = v;
        }
        if let Some(v) = Reader::parse(r.raw("OTEL_BSP_EXPORT_TIMEOUT"), millis)? {
            b.export_timeout_ms = v;
        }
        // The Rust SDK's name for its (experimental) setting of the same meaning.
        if let Some(v) = Reader::parse(r.raw("OTEL_BSP_MAX_CONCURRENT_EXPORTS"), count)? {
            b.max_concurrent_exports = v;
        }
        self.apply_otlp_env(&r)?;
        self.apply_wasm_cache_env(&r)?;
        self.validate(&super::ConfigSource::Code)
    }

    fn apply_wasm_cache_env(&mut self, r: &Reader<'_>) -> Result<(), LensError> {
        let cache = &mut self.wasm_cache;
        if let Some((name, value)) = r.raw("LENS_WASM_CACHE") {
            cache.enabled = parse_bool(&value).ok_or(LensError::Env {
                variable: name,
                value,
                expected: "one of 1/true/yes/on or 0/false/no/off".to_string(),
            })?;
        }
        if let Some((_, dir)) = r.raw("LENS_WASM_CACHE_DIR") {
            cache.dir = Some(dir.into());
        }
        let mib = "a whole number of MiB, at least 1";
        match Reader::parse::<u64>(r.raw("LENS_WASM_CACHE_MAX_MB"), mib)? {
            Some(0) => {
                return Err(LensError::Env {
                    variable: "LENS_WASM_CACHE_MAX_MB".into(),
                    value: "0".into(),
                    expected: mib.into(),
                });
            }
            Some(v) => cache.max_mb = v,
            None => {}
        }
        Ok(())
    }

    fn apply_otlp_env(&mut self, r: &Reader<'_>) -> Result<(), LensError> {
        let otlp = &mut self.otlp;
        // The endpoint is resolved per signal when the exporter is built: see [`otlp_endpoint`].
        if let Some((name, value)) = r.raw("OTEL_EXPORTER_OTLP_PROTOCOL") {
            otlp.protocol =
                Some(
                    OtlpProtocol::from_str(value.trim()).map_err(|expected| LensError::Env {
                        variable: name,
                        value,
                        expected,
                    })?,
                );
        }
        if let Some(v) = Reader::parse(r.raw("OTEL_EXPORTER_OTLP_TIMEOUT"), "milliseconds")? {
            otlp.timeout_ms = Some(v);
        }
        if let Some((name, value)) = r.raw("OTEL_EXPORTER_OTLP_HEADERS") {
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

/// The endpoint an OTLP exporter of `signal` (`traces` / `metrics`) uses when its config sets none:
/// the signal-specific variable (verbatim), then the generic one (with `/v1/<signal>` appended for
/// HTTP), then the protocol's default on localhost.
pub fn otlp_endpoint(env: &dyn EnvSource, protocol: OtlpProtocol, signal: &str) -> String {
    let specific = format!(
        "OTEL_EXPORTER_OTLP_{}_ENDPOINT",
        signal.to_ascii_uppercase()
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
