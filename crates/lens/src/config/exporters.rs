//! Exporter entries of the config: `[[traces.exporters]]` / `[[metrics.exporters]]`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::BatchConfig;
use super::secret::{REDACTED, Secret, redact_url, secret_key};
use super::spool::SpoolSpec;

/// One exporter, tagged by `kind`.
///
/// ```toml
/// [[traces.exporters]]
/// kind = "wasm"
/// path = "exporters/vendor.wasm"
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[non_exhaustive]
#[allow(
    clippy::large_enum_variant,
    reason = "a config is built once per setup; boxing the wasm entry would burden every constructor"
)]
pub enum ExporterSpec {
    /// OTLP over gRPC or HTTP/protobuf.
    Otlp(OtlpExporterSpec),
    /// One compact JSON line per span (or metric) on stdout.
    Console(ConsoleExporterSpec),
    /// Nothing is exported (spans are still counted).
    None(NoneExporterSpec),
    /// A sandboxed WebAssembly component implementing `lens:exporter/span-exporter`.
    Wasm(WasmExporterSpec),
}

/// `kind = "console"`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConsoleExporterSpec {
    /// Display name in statistics and logs. Example: `name = "stdout"`.
    pub name: Option<String>,
    /// Batch settings of this exporter. Example: `batch = { max_queue_size = 8192 }`.
    pub batch: BatchOverrides,
}

/// `kind = "none"`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NoneExporterSpec {
    /// Display name in statistics and logs. Example: `name = "discard"`.
    pub name: Option<String>,
}

/// OTLP protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub enum OtlpProtocol {
    /// gRPC (default port 4317).
    #[default]
    #[serde(rename = "grpc")]
    Grpc,
    /// HTTP with protobuf bodies (default port 4318). `http/json` is read as this too: NeMo
    /// Lens accepts it, and its exporter sends protobuf.
    #[serde(rename = "http/protobuf", alias = "http/json")]
    HttpProtobuf,
}

impl OtlpProtocol {
    /// A protocol as NeMo Lens resolves it: `http/protobuf` and `http/json` (any case, spaces
    /// around ignored) are HTTP, anything else gRPC (logged when it is not `grpc`).
    pub fn lenient(value: &str) -> Self {
        let v = super::python::strip(value).to_lowercase();
        match v.as_str() {
            "http/protobuf" | "http/json" => Self::HttpProtobuf,
            "grpc" => Self::Grpc,
            other => {
                log::warn!("unknown OTLP protocol `{other}`: using grpc, as NeMo Lens does");
                Self::Grpc
            }
        }
    }
}

impl std::str::FromStr for OtlpProtocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "grpc" => Ok(Self::Grpc),
            "http/protobuf" | "http/json" | "http" => Ok(Self::HttpProtobuf),
            other => Err(format!(
                "unknown OTLP protocol `{other}` (expected `grpc`, `http/protobuf` or `http/json`)"
            )),
        }
    }
}

/// `kind = "otlp"`; also the top-level `[otlp]` defaults.
///
/// ```toml
/// [[traces.exporters]]
/// kind = "otlp"
/// protocol = "http/protobuf"
/// endpoint = "http://127.0.0.1:4318/v1/traces"
/// headers = { authorization = "Bearer …" }
/// timeout_ms = 10000
/// ```
#[derive(Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OtlpExporterSpec {
    /// Display name in statistics and logs. Example: `name = "collector"`.
    pub name: Option<String>,
    /// Collector URL. For HTTP it is used verbatim: include `/v1/traces` or `/v1/metrics`.
    /// Unset: `OTEL_EXPORTER_OTLP_*_ENDPOINT`, then the protocol's localhost default.
    pub endpoint: Option<String>,
    /// `grpc` or `http/protobuf`. Unset: `OTEL_EXPORTER_OTLP_PROTOCOL`, then `grpc`.
    pub protocol: Option<OtlpProtocol>,
    /// Extra request headers (`OTEL_EXPORTER_OTLP_HEADERS` adds to them). Their values are
    /// secrets: never printed.
    pub headers: BTreeMap<String, Secret>,
    /// Per-request timeout in milliseconds. Example: `timeout_ms = 10000`.
    pub timeout_ms: Option<u64>,
    /// Batch settings of this exporter. Example: `batch = { max_export_batch_size = 1024 }`.
    pub batch: BatchOverrides,
    /// Keep what the collector cannot take now on disk and send it when it is back (spans,
    /// metric collections and log records; `docs/spool.md`). Default: none. Example: `spool = { max_mib = 2048 }`.
    pub spool: Option<SpoolSpec>,
}

/// Per-exporter batch settings; unset fields take the top-level `[batch]` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BatchOverrides {
    /// See [`BatchConfig::max_queue_size`].
    pub max_queue_size: Option<usize>,
    /// See [`BatchConfig::max_export_batch_size`].
    pub max_export_batch_size: Option<usize>,
    /// See [`BatchConfig::scheduled_delay_ms`].
    pub scheduled_delay_ms: Option<u64>,
    /// See [`BatchConfig::export_timeout_ms`].
    pub export_timeout_ms: Option<u64>,
    /// See [`BatchConfig::shutdown_timeout_ms`].
    pub shutdown_timeout_ms: Option<u64>,
    /// See [`BatchConfig::max_concurrent_exports`].
    pub max_concurrent_exports: Option<usize>,
}

/// How an environment variable reaches a wasm guest.
///
/// ```toml
/// env = { DATASET = "pretraining", VENDOR_API_KEY = { from_host = "VENDOR_API_KEY" } }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum EnvGrant {
    /// An explicit value (a secret: never printed).
    Value(Secret),
    /// The value of a host variable (an error at setup when the host lacks it).
    FromHost {
        /// Name of the host variable.
        from_host: String,
    },
}

impl<'de> Deserialize<'de> for EnvGrant {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = EnvGrant;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(r#"a string value or { from_host = "HOST_VARIABLE" }"#)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<EnvGrant, E> {
                Ok(EnvGrant::Value(v.into()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<EnvGrant, A::Error> {
                let mut from_host = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key != "from_host" || from_host.is_some() {
                        return Err(serde::de::Error::unknown_field(&key, &["from_host"]));
                    }
                    from_host = Some(map.next_value::<String>()?);
                }
                from_host
                    .map(|from_host| EnvGrant::FromHost { from_host })
                    .ok_or_else(|| serde::de::Error::missing_field("from_host"))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// A host directory made visible to a wasm guest.
///
/// ```toml
/// preopens = [{ host = "./lens-out", guest = "/out", read_only = false }]
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WasmPreopen {
    /// Host directory (relative paths are relative to the config file).
    pub host: PathBuf,
    /// Path the guest sees. Example: `guest = "/out"`.
    pub guest: String,
    /// Read-only unless `false`. Example: `read_only = false`.
    #[serde(default = "yes")]
    pub read_only: bool,
}

fn yes() -> bool {
    true
}

/// The key an `oci://` component must be signed by (cosign's key-pair layout: `cosign sign
/// --key cosign.key`, or `lens push --sign-key`).
///
/// ```toml
/// verify = { key = "keys/acme.pub" }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifySpec {
    /// The vendor's public key, PEM (`cosign.pub`; ECDSA P-256). Relative paths are relative
    /// to the config file. Example: `key = "keys/acme.pub"`.
    pub key: PathBuf,
}

/// `kind = "wasm"`: a sandboxed component. Everything not granted here is denied.
///
/// ```toml
/// [[traces.exporters]]
/// kind = "wasm"
/// path = "exporters/vendor.wasm"
/// sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
/// allowed_hosts = ["ingest.example.com:443"]
/// credentials = [{ host = "ingest.example.com:443", header = "x-api-key", from_env = "VENDOR_API_KEY" }]
/// settings = { dataset = "pretraining" }
/// memory_limit_mib = 128
/// call_timeout_ms = 2000
/// ```
#[derive(Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WasmExporterSpec {
    /// Display name in statistics and logs; default: the file stem.
    pub name: Option<String>,
    /// The component file (relative paths are relative to the config file), or a component
    /// in an OCI registry: `oci://HOST[:PORT]/REPOSITORY[:TAG]@sha256:DIGEST` (the manifest's
    /// digest; pulled once per node into the store, then loaded offline). Example:
    /// `path = "oci://ghcr.io/acme/exporter:1.2.0@sha256:4f1c…"`.
    pub path: PathBuf,
    /// Refuse the file unless its SHA-256 (hex) is this. For an `oci://` path: the component
    /// layer's digest, which must be the one the manifest names.
    pub sha256: Option<String>,
    /// Follow an `oci://` reference's tag without a digest (the component may change under a
    /// running job's feet: a new rank can start another one). Default `false`: refused, with
    /// the digest the tag resolves to now and the line to paste. Example: `allow_unpinned = true`.
    pub allow_unpinned: Option<bool>,
    /// Registries (`host:port`) an `oci://` path may reach over plain http. Loopback always
    /// may; every other registry is https. Example: `insecure_registries = ["registry.lan:5000"]`.
    pub insecure_registries: Vec<String>,
    /// Use an `oci://` component only if it carries a valid signature by this key (checked
    /// before it is downloaded, and again offline at each start). Default: no signature
    /// needed. Example: `verify = { key = "keys/acme.pub" }`.
    pub verify: Option<VerifySpec>,
    /// `host:port` (or `host`, any port) the guest may call over `wasi:http`. Empty: none.
    pub allowed_hosts: Vec<String>,
    /// Headers the host adds to the guest's requests to one host, their values read by the
    /// host (the guest never holds them). Empty: none. Example:
    /// `credentials = [{ host = "ingest.example.com:443", header = "x-api-key", from_env = "VENDOR_API_KEY" }]`.
    pub credentials: Vec<super::CredentialSpec>,
    /// Whether the guest's HTTP requests may reach private, link-local (cloud metadata among
    /// them) and other special addresses that an allowed host resolves to. Loopback is always
    /// reachable. Default `false`. Example: `allow_private_addresses = true`.
    pub allow_private_addresses: Option<bool>,
    /// Largest HTTP response body the guest may read, MiB; past it, reading the body fails.
    /// Default 4. Example: `max_response_mib = 16`.
    pub max_response_mib: Option<u64>,
    /// Environment variables the guest sees. Empty: none.
    pub env: BTreeMap<String, EnvGrant>,
    /// Directories the guest may open. Empty: none.
    pub preopens: Vec<WasmPreopen>,
    /// Exporter settings handed to the guest's `init` as string pairs.
    pub settings: BTreeMap<String, String>,
    /// Linear memory cap per instance, MiB. Default 256.
    pub memory_limit_mib: Option<u64>,
    /// The most the guest may hand the host in one call, MiB: a processor's answer, an
    /// exporter's result or error, the bytes of one host call (output, HTTP bodies and
    /// headers). Past it the call is a fault (`answer limit`). Default 16, never more than
    /// `memory_limit_mib`. Example: `max_answer_mib = 4`.
    pub max_answer_mib: Option<u64>,
    /// Deadline of one guest call, ms. Default: the batch `export_timeout_ms`.
    pub call_timeout_ms: Option<u64>,
    /// Deadline of an instance's start, ms: its instantiation, then its `init`, each. Default
    /// 5000 (a hung `init` holds the rank's setup that long, not the whole call deadline).
    /// Example: `init_timeout_ms = 2000`.
    pub init_timeout_ms: Option<u64>,
    /// Optional fuel per call (deterministic instruction budget). Default: unlimited.
    pub fuel_per_call: Option<u64>,
    /// Forward the guest's stdout/stderr to the host log. Default `true`.
    pub forward_stdio: Option<bool>,
    /// Largest `.wasm` file read, MiB; larger files are refused before they are read. Default
    /// 256. Example: `max_file_mib = 64`.
    pub max_file_mib: Option<u64>,
    /// Heap a compile of the component may use, MiB, where compiles run in a worker process
    /// (the `lens` command and the Python package); past it the file is refused. Default 2048.
    /// Example: `compile_memory_mib = 1024`.
    pub compile_memory_mib: Option<u64>,
    /// How long a compile of the component may take (wall clock and CPU), milliseconds, where
    /// compiles run in a worker process; past it the file is refused. Default 300000.
    /// Example: `compile_timeout_ms = 60000`.
    pub compile_timeout_ms: Option<u64>,
    /// Bytes the guest may write into its writable pre-opens in all, MiB, over the life of the
    /// exporter (every instance together); past it, writes fail with "no space left on device".
    /// Default: no limit. Example: `max_write_mib = 1024`.
    pub max_write_mib: Option<u64>,
    /// What a failure at setup that is not the config's fault (the guest's `init` failing,
    /// trapping or hanging) does: `disable` (default: the rank trains, the exporter's spans are
    /// counted as dropped, and the health metrics and the summary say why) or `fail` (setup
    /// fails). A missing or invalid file, a pin mismatch or a grant that cannot be given fail
    /// setup whatever this says. Example: `on_setup_failure = "fail"`.
    pub on_setup_failure: Option<SetupFailurePolicy>,
    /// Batch settings of this exporter.
    pub batch: BatchOverrides,
    /// Keep what the exporter cannot take now on disk and send it when it is back (spans,
    /// metric collections and log records; `docs/spool.md`). Default: none. Example: `spool = { max_mib = 2048 }`.
    pub spool: Option<SpoolSpec>,
}

/// What a `.wasm` exporter failing at setup for a reason other than its configuration does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum SetupFailurePolicy {
    /// Setup fails (and the rank does not train).
    Fail,
    /// The exporter is disabled: the rank trains, its spans are counted as dropped.
    #[default]
    Disable,
}

impl OtlpExporterSpec {
    /// This entry with its secrets (header values, the endpoint's password) `[REDACTED]`.
    pub fn redacted(&self) -> Self {
        let mut o = self.clone();
        o.headers.values_mut().for_each(|v| *v = REDACTED.into());
        if let Some(e) = &mut o.endpoint {
            *e = redact_url(e).into_owned();
        }
        o
    }
}

impl WasmExporterSpec {
    /// This entry with its secrets (explicit `env` values, credential-named `settings`)
    /// `[REDACTED]`.
    pub fn redacted(&self) -> Self {
        let mut w = self.clone();
        for grant in w.env.values_mut() {
            if let EnvGrant::Value(v) = grant {
                *v = REDACTED.into();
            }
        }
        for (k, v) in w.settings.iter_mut() {
            if secret_key(k) {
                *v = REDACTED.to_string();
            }
        }
        w
    }
}

/// `Debug` of an entry holding secrets: its redacted form, as JSON.
macro_rules! debug_redacted {
    ($ty:ident) => {
        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let json = serde_json::to_string(&self.redacted()).map_err(|_| std::fmt::Error)?;
                write!(f, "{} {json}", stringify!($ty))
            }
        }
    };
}

debug_redacted!(OtlpExporterSpec);
debug_redacted!(WasmExporterSpec);

impl WasmExporterSpec {
    /// Whether `path` names a component in an OCI registry (`oci://…`), not a file.
    pub fn is_oci(&self) -> bool {
        crate::wasm::source::oci::is_reference(&self.path)
    }

    pub(crate) fn resolve_relative_paths(&mut self, base: &Path) {
        if self.path.is_relative() && !self.is_oci() {
            self.path = base.join(&self.path);
        }
        for p in &mut self.preopens {
            if p.host.is_relative() {
                p.host = base.join(&p.host);
            }
        }
        if let Some(v) = self.verify.as_mut().filter(|v| v.key.is_relative()) {
            v.key = base.join(&v.key);
        }
        for c in &mut self.credentials {
            if let Some(file) = c.from_file.as_mut().filter(|f| f.is_relative()) {
                *file = base.join(&*file);
            }
        }
        if let Some(spool) = &mut self.spool {
            spool.resolve_relative_paths(base);
        }
    }
}

impl ExporterSpec {
    /// The spec named by the top-level `exporter` shorthand.
    pub fn from_shorthand(value: &str) -> Result<Self, String> {
        match value {
            "otlp" => Ok(Self::Otlp(OtlpExporterSpec::default())),
            "console" => Ok(Self::Console(ConsoleExporterSpec::default())),
            "none" => Ok(Self::None(NoneExporterSpec::default())),
            path if path.ends_with(".wasm")
                || path.starts_with(crate::wasm::source::oci::SCHEME) =>
            {
                Ok(Self::Wasm(WasmExporterSpec {
                    path: PathBuf::from(path),
                    ..Default::default()
                }))
            }
            other => Err(format!(
                "unknown exporter `{other}` (expected `otlp`, `console`, `none`, a path ending in `.wasm` or an `oci://` reference)"
            )),
        }
    }

    /// The name used in statistics and logs.
    pub fn display_name(&self) -> String {
        match self {
            Self::Otlp(s) => s.name.clone().unwrap_or_else(|| "otlp".into()),
            Self::Console(s) => s.name.clone().unwrap_or_else(|| "console".into()),
            Self::None(s) => s.name.clone().unwrap_or_else(|| "none".into()),
            Self::Wasm(s) if s.is_oci() => s.name.clone().unwrap_or_else(|| {
                // `oci://ghcr.io/acme/exporter:1.2@sha256:…` is `exporter`.
                crate::wasm::source::oci::OciReference::parse(&s.path.to_string_lossy())
                    .ok()
                    .and_then(|r| r.repository.rsplit('/').next().map(str::to_string))
                    .unwrap_or_else(|| "wasm".into())
            }),
            Self::Wasm(s) => s.name.clone().unwrap_or_else(|| {
                s.path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "wasm".into())
            }),
        }
    }

    /// The entry's spool, if it has one (OTLP and wasm entries may).
    pub fn spool(&self) -> Option<&SpoolSpec> {
        match self {
            Self::Otlp(s) => s.spool.as_ref(),
            Self::Wasm(s) => s.spool.as_ref(),
            Self::Console(_) | Self::None(_) => None,
        }
    }

    /// The entry's spool to fill in (relative paths).
    pub fn spool_mut(&mut self) -> Option<&mut SpoolSpec> {
        match self {
            Self::Otlp(s) => s.spool.as_mut(),
            Self::Wasm(s) => s.spool.as_mut(),
            Self::Console(_) | Self::None(_) => None,
        }
    }

    /// The batch settings of this exporter given the top-level defaults.
    pub fn batch_config(&self, defaults: &BatchConfig) -> BatchConfig {
        match self {
            Self::Otlp(s) => defaults.with_overrides(&s.batch),
            Self::Console(s) => defaults.with_overrides(&s.batch),
            Self::None(_) => *defaults,
            Self::Wasm(s) => defaults.with_overrides(&s.batch),
        }
    }

    pub(crate) fn validate(&self, defaults: &BatchConfig) -> Result<(), String> {
        super::check_batch(&self.batch_config(defaults))?;
        if let Some(spool) = self.spool() {
            spool.validate()?;
        }
        if let Self::Wasm(w) = self {
            if w.path.as_os_str().is_empty() {
                return Err("`path` to the .wasm component is required".to_string());
            }
            if let Some(pin) = &w.sha256
                && (pin.len() != 64 || !pin.chars().all(|c| c.is_ascii_hexdigit()))
            {
                return Err(format!("`sha256` = {pin:?} is not 64 hex digits"));
            }
            if w.is_oci() {
                // Unpinned is refused when loaded, with the digest the tag resolves to then.
                crate::wasm::source::oci::OciReference::parse(&w.path.to_string_lossy())
                    .map_err(|e| format!("`path`: {e}"))?;
            } else if w.allow_unpinned.is_some()
                || !w.insecure_registries.is_empty()
                || w.verify.is_some()
            {
                return Err(
                    "`allow_unpinned`, `insecure_registries` and `verify` are for an \
                     `oci://` path (a file is pinned by `sha256`)"
                        .into(),
                );
            }
            for (i, p) in w.preopens.iter().enumerate() {
                check_guest_path(&p.guest)
                    .map_err(|why| format!("`preopens[{i}].guest` = {:?} {why}", p.guest))?;
                if w.preopens[..i].iter().any(|q| q.guest == p.guest) {
                    return Err(format!(
                        "`preopens[{i}].guest` = {:?} is pre-opened twice",
                        p.guest
                    ));
                }
            }
            for (key, value) in [
                ("memory_limit_mib", w.memory_limit_mib),
                ("call_timeout_ms", w.call_timeout_ms),
                ("init_timeout_ms", w.init_timeout_ms),
                ("max_file_mib", w.max_file_mib),
                ("compile_memory_mib", w.compile_memory_mib),
                ("compile_timeout_ms", w.compile_timeout_ms),
                ("max_write_mib", w.max_write_mib),
                ("max_response_mib", w.max_response_mib),
                ("max_answer_mib", w.max_answer_mib),
            ] {
                if value == Some(0) {
                    return Err(format!("`{key}` must be positive"));
                }
            }
            if let Some(answer) = w.max_answer_mib
                && answer > w.memory_mib()
            {
                return Err(format!(
                    "`max_answer_mib` = {answer} is more than `memory_limit_mib` ({}): an \
                     answer comes out of the guest's memory",
                    w.memory_mib()
                ));
            }
            for (i, c) in w.credentials.iter().enumerate() {
                c.validate(i, &w.allowed_hosts)?;
                let target = c.target()?;
                if let Some(j) = w.credentials[..i].iter().position(|d| {
                    d.header.eq_ignore_ascii_case(&c.header) && d.target().as_ref() == Ok(&target)
                }) {
                    return Err(format!(
                        "`credentials[{i}]` sets header `{}` for {target} as `credentials[{j}]` \
                         does: one value per header and host",
                        c.header
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Whether `guest`, a pre-opened directory's name inside the sandbox, names a directory the
/// guest sees as it is meant to: not empty, no `..` component (WASI resolves paths against the
/// pre-open, and a name that climbs out of it only confuses what the guest sees), no control
/// character.
fn check_guest_path(guest: &str) -> Result<(), &'static str> {
    if guest.is_empty() {
        return Err("is empty");
    }
    if guest.split('/').any(|c| c == "..") {
        return Err("has a `..` component: name the directory the guest sees, e.g. \"/out\"");
    }
    if guest.chars().any(char::is_control) {
        return Err("holds a control character");
    }
    Ok(())
}
