//! The resource every signal of a rank carries, compatible with NeMo Lens dashboards.

use opentelemetry::KeyValue;
use opentelemetry_sdk::Resource;

use crate::config::env::EnvSource;
use crate::error::LensError;
use crate::rank::RankInfo;

/// Resource key of the run id shared by all ranks of a job.
pub const RUN_ID_KEY: &str = "dl.run_id";

/// SLURM variables copied into the resource when present.
const SLURM_ATTRS: [(&str, &str); 7] = [
    ("SLURM_JOB_ID", "slurm.job.id"),
    ("SLURM_JOB_NAME", "slurm.job.name"),
    ("SLURM_JOB_NODELIST", "slurm.job.nodelist"),
    ("SLURM_NODEID", "slurm.node.id"),
    ("SLURM_PROCID", "slurm.procid"),
    ("SLURM_LOCALID", "slurm.localid"),
    ("SLURM_ARRAY_TASK_ID", "slurm.array_task.id"),
];

/// Kubernetes downward-API variables copied into the resource when in a pod.
const K8S_ATTRS: [(&str, &str); 4] = [
    ("POD_NAME", "k8s.pod.name"),
    ("POD_NAMESPACE", "k8s.namespace.name"),
    ("NODE_NAME", "k8s.node.name"),
    ("POD_UID", "k8s.pod.uid"),
];

/// The run id: `configured` when non-empty, else `SLURM_JOB_ID`, else a random 8-hex-digit id.
pub fn resolve_run_id(configured: &str, env: &dyn EnvSource) -> String {
    if !configured.is_empty() {
        return configured.to_string();
    }
    env.get("SLURM_JOB_ID")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| format!("{:08x}", rand::random::<u32>()))
}

/// Parses `OTEL_RESOURCE_ATTRIBUTES` (`k=v,k2=v2`, values percent-decoded).
pub fn parse_resource_attributes(value: &str) -> Result<Vec<KeyValue>, String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| format!("`{pair}` is not key=value"))?;
            Ok(KeyValue::new(
                k.trim().to_string(),
                percent_encoding::percent_decode_str(v.trim())
                    .decode_utf8_lossy()
                    .into_owned(),
            ))
        })
        .collect()
}

/// Everything the resource is built from.
pub struct ResourceInputs<'a> {
    /// `service.name`.
    pub service_name: &'a str,
    /// `service.version`.
    pub service_version: &'a str,
    /// Rank identity.
    pub rank: RankInfo,
    /// Resolved run id.
    pub run_id: &'a str,
    /// The caller's attributes (override the detected ones).
    pub caller: &'a [KeyValue],
}

/// Builds the resource: Lens attributes, host and process, SLURM and Kubernetes when detected,
/// then the caller's attributes, then `OTEL_RESOURCE_ATTRIBUTES` (later entries win).
pub fn build_resource(
    inputs: &ResourceInputs<'_>,
    env: &dyn EnvSource,
) -> Result<Resource, LensError> {
    let r = inputs.rank;
    let mut attrs = vec![
        KeyValue::new("service.name", inputs.service_name.to_string()),
        KeyValue::new("service.version", inputs.service_version.to_string()),
        KeyValue::new("dl.rank", i64::from(r.rank)),
        KeyValue::new("dl.world_size", i64::from(r.world_size)),
        KeyValue::new("dl.local_rank", i64::from(r.local_rank)),
        KeyValue::new(RUN_ID_KEY, inputs.run_id.to_string()),
        KeyValue::new(
            "service.instance.id",
            format!("{}-rank{}", inputs.run_id, r.rank),
        ),
        KeyValue::new(
            "host.name",
            gethostname::gethostname().to_string_lossy().into_owned(),
        ),
        KeyValue::new("process.pid", i64::from(std::process::id())),
        KeyValue::new("telemetry.sdk.name", "opentelemetry"),
        KeyValue::new("telemetry.sdk.language", "rust"),
        KeyValue::new("lens.version", env!("CARGO_PKG_VERSION")),
    ];
    for (var, key) in SLURM_ATTRS {
        if let Some(v) = env.get(var) {
            attrs.push(KeyValue::new(key, v));
        }
    }
    if env.get("KUBERNETES_SERVICE_HOST").is_some() {
        for (var, key) in K8S_ATTRS {
            if let Some(v) = env.get(var) {
                attrs.push(KeyValue::new(key, v));
            }
        }
        if env.get("POD_NAME").is_none()
            && let Some(h) = env.get("HOSTNAME")
        {
            attrs.push(KeyValue::new("k8s.pod.name", h));
        }
    }
    attrs.extend(inputs.caller.iter().cloned());
    if let Some(v) = env.get("OTEL_RESOURCE_ATTRIBUTES") {
        let parsed = parse_resource_attributes(&v).map_err(|expected| LensError::Env {
            variable: "OTEL_RESOURCE_ATTRIBUTES".into(),
            value: v.clone(),
            expected: format!("comma-separated key=value pairs ({expected})"),
        })?;
        attrs.extend(parsed);
    }
    // `Resource::builder_empty().with_attributes` keeps the last value of a repeated key.
    Ok(Resource::builder_empty().with_attributes(attrs).build())
}
