//! The resource every signal of a rank carries: the attributes NeMo Lens sets, with the same
//! names, values and precedence (checked against the real package in `tests/all/parity`), so that
//! dashboards built for NeMo Lens work on Lens ranks unchanged.
//!
//! Precedence, lowest first: the SDK's `telemetry.sdk.*`; `OTEL_RESOURCE_ATTRIBUTES`; then the
//! attributes the setup sets — the rank's own (`service.*`, `dl.*`, `nemo.run.id`, user, W&B,
//! deployment environment), the caller's over them, and what is detected (host, process, GPUs,
//! SLURM, Kubernetes) over the caller's.

use std::path::Path;

use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::Resource;

use crate::config::env::EnvSource;
use crate::config::python;
use crate::rank::RankInfo;
use crate::semconv;

/// Resource key of the run id shared by all ranks of a job (NeMo Lens's dashboards filter on it).
pub const RUN_ID_KEY: &str = semconv::NEMO_RUN_ID;

/// SLURM variables copied into the resource, when `SLURM_JOB_ID` is set.
const SLURM_ATTRS: [(&str, &str); 6] = [
    ("SLURM_JOB_NAME", semconv::SLURM_JOB_NAME),
    ("SLURM_NODELIST", semconv::SLURM_NODELIST),
    ("SLURM_NNODES", semconv::SLURM_NNODES),
    ("SLURM_NTASKS", semconv::SLURM_NTASKS),
    ("SLURM_PARTITION", semconv::SLURM_PARTITION),
    ("SLURM_CLUSTER_NAME", semconv::SLURM_CLUSTER_NAME),
];

/// Kubernetes variables copied into the resource in a pod; the first set wins for a key
/// (`HOSTNAME` is the pod name when `K8S_POD_NAME` is not set).
const K8S_ATTRS: [(&str, &str); 7] = [
    ("K8S_NAMESPACE", semconv::K8S_NAMESPACE_NAME),
    ("K8S_POD_NAME", semconv::K8S_POD_NAME),
    ("K8S_POD_UID", semconv::K8S_POD_UID),
    ("K8S_NODE_NAME", semconv::K8S_NODE_NAME),
    ("K8S_CONTAINER_NAME", semconv::K8S_CONTAINER_NAME),
    ("K8S_JOB_NAME", semconv::K8S_JOB_NAME),
    ("HOSTNAME", semconv::K8S_POD_NAME),
];

/// Where a pod's service account is mounted: in a pod even when `KUBERNETES_SERVICE_HOST` is not.
const K8S_SECRETS: &str = "/var/run/secrets/kubernetes.io";

/// The run id: `configured` when non-empty, else `SLURM_JOB_ID`, else 12 random hex digits.
pub fn resolve_run_id(configured: &str, env: &dyn EnvSource) -> String {
    if !configured.is_empty() {
        return configured.to_string();
    }
    env.get("SLURM_JOB_ID")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| format!("{:012x}", rand::random::<u64>() >> 16))
}

/// Parses `OTEL_RESOURCE_ATTRIBUTES` as the Python SDK does: `k=v` pairs separated by commas,
/// keys and values stripped, values percent-decoded; a pair without `=` is skipped (and logged).
pub fn parse_resource_attributes(value: &str) -> Vec<KeyValue> {
    value
        .split(',')
        .filter_map(|pair| {
            let Some((k, v)) = pair.split_once('=') else {
                log::warn!("OTEL_RESOURCE_ATTRIBUTES: `{pair}` is not key=value: skipped");
                return None;
            };
            let v = percent_encoding::percent_decode_str(python::strip(v)).decode_utf8_lossy();
            Some(KeyValue::new(python::strip(k).to_string(), v.into_owned()))
        })
        .filter(|kv| {
            // The Python SDK drops an attribute with an empty key (and says so).
            let keep = !kv.key.as_str().is_empty();
            if !keep {
                log::warn!("OTEL_RESOURCE_ATTRIBUTES: an attribute with an empty key: dropped");
            }
            keep
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
    /// `nemo.user.id` (left out when empty).
    pub user: &'a str,
    /// `wandb.entity` (left out when empty).
    pub wandb_entity: &'a str,
    /// `wandb.project` (left out when empty).
    pub wandb_project: &'a str,
    /// The caller's attributes (over the rank's own, under the detected ones).
    pub caller: &'a [KeyValue],
}

/// Attributes merged as Python merges resources (a `dict` update): a later value replaces an
/// earlier one of the same key, which keeps its place.
#[derive(Default)]
struct Attributes(Vec<KeyValue>);

impl Attributes {
    fn set(&mut self, key: &'static str, value: impl Into<Value>) {
        self.push(KeyValue::new(key, value));
    }

    fn push(&mut self, kv: KeyValue) {
        match self.0.iter_mut().find(|e| e.key == kv.key) {
            Some(e) => e.value = kv.value,
            None => self.0.push(kv),
        }
    }

    fn extend(&mut self, kvs: impl IntoIterator<Item = KeyValue>) {
        kvs.into_iter().for_each(|kv| self.push(kv));
    }

    /// A string attribute, left out when `value` is empty (as NeMo Lens does).
    fn set_nonempty(&mut self, key: &'static str, value: &str) {
        if !value.is_empty() {
            self.set(key, value.to_string());
        }
    }
}

/// `deployment.environment`: `DEPLOYMENT_ENV`, else `ENVIRONMENT` (a set but empty
/// `DEPLOYMENT_ENV` hides `ENVIRONMENT`, as in NeMo Lens).
fn deployment_environment(env: &dyn EnvSource) -> String {
    env.get("DEPLOYMENT_ENV")
        .or_else(|| env.get("ENVIRONMENT"))
        .unwrap_or_default()
}

/// GPUs of this host: `CUDA_VISIBLE_DEVICES` (empty: none; else its comma-separated entries),
/// else the lines `nvidia-smi` lists, else unknown.
fn gpu_count(env: &dyn EnvSource) -> Option<i64> {
    if let Some(visible) = env.get("CUDA_VISIBLE_DEVICES") {
        return Some(if python::strip(&visible).is_empty() {
            0
        } else {
            visible.split(',').count() as i64
        });
    }
    // Asked once per process: the GPUs of a host do not change under a running job.
    static LISTED: std::sync::OnceLock<Option<i64>> = std::sync::OnceLock::new();
    *LISTED.get_or_init(nvidia_smi_gpus)
}

/// The GPUs `nvidia-smi` lists, if it runs within 5 s.
fn nvidia_smi_gpus() -> Option<i64> {
    let mut child = std::process::Command::new("nvidia-smi")
        .args(["--query-gpu=count", "--format=csv,noheader"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match child.try_wait().ok()? {
            Some(status) if status.success() => break,
            Some(_) => return None,
            None if std::time::Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            None => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
    let lines = out.lines().filter(|l| !l.trim().is_empty()).count();
    (lines > 0).then_some(lines as i64)
}

/// What is detected about where the rank runs: host, process, GPUs, SLURM, Kubernetes.
fn detected(env: &dyn EnvSource, attrs: &mut Attributes) {
    attrs.set(
        "host.name",
        gethostname::gethostname().to_string_lossy().into_owned(),
    );
    attrs.set("process.pid", i64::from(std::process::id()));
    if let Some(gpus) = gpu_count(env) {
        attrs.set("host.gpu.count", gpus);
    }
    if let Some(job) = env.get("SLURM_JOB_ID").filter(|j| !j.is_empty()) {
        attrs.set(semconv::SLURM_JOB_ID, job);
        for (var, key) in SLURM_ATTRS {
            attrs.set_nonempty(key, &env.get(var).unwrap_or_default());
        }
    }
    let in_pod = env
        .get("KUBERNETES_SERVICE_HOST")
        .is_some_and(|h| !h.is_empty())
        || Path::new(K8S_SECRETS).exists();
    if in_pod {
        let mut seen: Vec<&str> = Vec::new();
        for (var, key) in K8S_ATTRS {
            if let Some(v) = env.get(var).filter(|v| !v.is_empty())
                && !seen.contains(&key)
            {
                seen.push(key);
                attrs.set(key, v);
            }
        }
    }
}

/// Builds the resource (see the module's documentation for the precedence).
pub fn build_resource(inputs: &ResourceInputs<'_>, env: &dyn EnvSource) -> Resource {
    Resource::builder_empty()
        .with_attributes(resource_attributes(inputs, env))
        .build()
}

/// The resource's attributes in the order Python's `Resource.create` leaves NeMo Lens's (what its
/// console exporters print): the SDK's `telemetry.sdk.*`, the place of its
/// `service.instance.id` detector, `OTEL_RESOURCE_ATTRIBUTES` (and `service.name` when
/// `OTEL_SERVICE_NAME` is set), then NeMo Lens's own in the order it sets them; a key set again
/// keeps its first place and takes the later value.
pub fn resource_attributes(inputs: &ResourceInputs<'_>, env: &dyn EnvSource) -> Vec<KeyValue> {
    let r = inputs.rank;
    let mut attrs = Attributes::default();
    // `telemetry.sdk.language` (`rust`), `.name` and `.version`: the SDK describing itself, in
    // the Python SDK's order.
    let sdk = Resource::builder_empty()
        .with_detector(Box::new(
            opentelemetry_sdk::resource::TelemetryResourceDetector,
        ))
        .build();
    for key in [
        "telemetry.sdk.language",
        "telemetry.sdk.name",
        "telemetry.sdk.version",
    ] {
        if let Some(v) = sdk.get(&opentelemetry::Key::from_static_str(key)) {
            attrs.set(key, v);
        }
    }
    let run_id = !inputs.run_id.is_empty();
    if run_id {
        // Where the Python SDK's detector puts its own; NeMo Lens's value replaces it below.
        attrs.set("service.instance.id", "");
    }
    if let Some(v) = env.get("OTEL_RESOURCE_ATTRIBUTES") {
        attrs.extend(parse_resource_attributes(&v));
    }
    if env.get("OTEL_SERVICE_NAME").is_some_and(|v| !v.is_empty()) {
        // The Python SDK's `OTELResourceDetector` places it here.
        attrs.set("service.name", inputs.service_name.to_string());
    }
    attrs.set("service.name", inputs.service_name.to_string());
    attrs.set("service.version", inputs.service_version.to_string());
    attrs.set(semconv::DL_RANK, i64::from(r.rank));
    attrs.set(semconv::DL_WORLD_SIZE, i64::from(r.world_size));
    // Lens's own: not in NeMo Lens.
    attrs.set(semconv::DL_LOCAL_RANK, i64::from(r.local_rank));
    attrs.set("lens.version", env!("CARGO_PKG_VERSION"));
    if run_id {
        attrs.set(RUN_ID_KEY, inputs.run_id.to_string());
        attrs.set(
            "service.instance.id",
            format!("{}-rank{}", inputs.run_id, r.rank),
        );
    }
    attrs.set_nonempty(semconv::NEMO_USER_ID, inputs.user);
    attrs.set_nonempty(semconv::WANDB_ENTITY, inputs.wandb_entity);
    attrs.set_nonempty(semconv::WANDB_PROJECT, inputs.wandb_project);
    attrs.set_nonempty("deployment.environment", &deployment_environment(env));
    // An empty key is dropped, as the Python SDK drops it.
    attrs.extend(
        inputs
            .caller
            .iter()
            .filter(|kv| !kv.key.as_str().is_empty())
            .cloned(),
    );
    detected(env, &mut attrs);
    attrs.0
}
