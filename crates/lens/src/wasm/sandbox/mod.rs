//! Stage 4, link and instantiate: a checked, compiled component linked against the host's
//! interfaces, and each instance started in a sandbox where it may touch only what its entry
//! grants (deny by default).
//!
//! - files: only the `preopens` directories, read-only unless `read_only = false`, writes
//!   within the exporter's `max_write_mib` (`quota`);
//! - environment: only the `env` entries (explicit values, or named host variables);
//! - network: no sockets at all (their use denied with what to do instead: `sockets`); outbound HTTP through `wasi:http` to `allowed_hosts` only
//!   (anything else gets `HttpRequestDenied` and is logged: `http`), over connections the
//!   host makes to addresses it checked (`egress`), with the entry's `credentials` added by
//!   the host to the requests they are for (the guest never holds them);
//! - stdout/stderr: forwarded to the host log, prefixed, escaped and cut ([`guest_output`]),
//!   and copied as written where the host asks (`lens demo`'s run folder, `lens check`'s
//!   cases);
//! - memory: every linear memory and table of an instance counted against one cap, and their
//!   number capped too, by a `ResourceLimiter` that also records the peak (`limits`).
//!
//! Modules: [`mod@link`] (the entry of stages 1 to 4: read, check, compile through the cache,
//! link: [`link::load`]), [`interface`] (what a component exports and the calls into it),
//! `instance` (one instance on its worker thread), [`warm`] (a configuration's components
//! compiled before ranks start), and the grants above.
//!
//! May call: the earlier stages ([`super::source`], [`super::checks`], [`super::artefact`]);
//! never the later ones (lanes, reload, the roles).

pub(crate) mod egress;
pub mod guest_output;
pub(crate) mod http;
pub(crate) mod instance;
pub mod interface;
pub(crate) mod limits;
pub mod link;
pub(crate) mod quota;
pub mod sockets;
pub mod warm;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::config::EnvGrant;
use crate::config::env::EnvSource;
use crate::error::GrantError;
use egress::Egress;
use guest_output::{
    GuestOutputSink, LogStream, MAX_LOG_BYTES_PER_INSTANCE, StderrTail, Stream, WarnBudget,
};
pub(crate) use http::HostCredential;
use http::HttpPolicy;
pub use limits::{
    MAX_COMPONENT_HANDLES, MAX_HOST_RESOURCES, MAX_INSTANCES, MAX_MEMORIES, MAX_TABLES,
    MemoryLimitExceeded, MemoryLimiter, TABLE_ELEMENT_BYTES,
};
use quota::{Budgeted, WriteBudget};
use sockets::{Denials, DeniesSockets};

/// The grants of one exporter, resolved at setup (host variables read, paths checked).
#[derive(Debug, Clone)]
pub(crate) struct Grants {
    /// `(name, value)` pairs the guest sees.
    pub env: Vec<(String, String)>,
    /// `(host dir, guest path, read_only)`.
    pub preopens: Vec<(PathBuf, String, bool)>,
    /// `host` or `host:port` entries.
    pub allowed_hosts: Vec<String>,
    /// Headers the host adds to the requests they are for.
    pub credentials: Arc<[HostCredential]>,
    /// What the host's connections may reach, and how much of a response the guest reads.
    pub egress: Egress,
    /// Forward stdout/stderr to the log.
    pub forward_stdio: bool,
    /// Where a copy of stdout/stderr goes (whether forwarded or not), with the exporter's name.
    pub output_copy: Option<(Arc<str>, Arc<dyn GuestOutputSink>)>,
    /// Cap on all the instance's memories and tables together, bytes.
    pub memory_limit: usize,
    /// The most the guest hands the host in one call (`max_answer_mib`), bytes.
    pub max_answer: usize,
    /// Prefix of forwarded log lines, e.g. `wasm exporter `vendor` rank 3`.
    pub log_prefix: Arc<str>,
    /// The exporter's allowance of guest stderr lines logged at `warn` (all its instances).
    pub stderr_warnings: Arc<WarnBudget>,
    /// Bytes its guests may still write into files (`max_write_mib`), shared by its instances.
    pub write_budget: Option<Arc<WriteBudget>>,
}

/// The store data of one guest instance.
pub(crate) struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    http: WasiHttpCtx,
    hooks: HttpPolicy,
    /// Memory cap and peak.
    pub limiter: MemoryLimiter,
    /// The exporter's write budget, if it has one.
    pub(super) write_budget: Option<Arc<WriteBudget>>,
    /// The instance's last stderr lines, for its fault's message.
    pub(super) stderr_tail: Arc<StderrTail>,
    /// The sockets it was denied (`sockets`), for the message of the call that ran into one.
    pub(super) denials: Denials,
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl Budgeted for HostState {
    fn write_budget(&self) -> Option<Arc<WriteBudget>> {
        self.write_budget.clone()
    }
}

impl DeniesSockets for HostState {
    fn denied(&mut self, what: String) {
        self.denials.record(what);
    }
}

impl WasiHttpView for HostState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            hooks: &mut self.hooks,
            table: &mut self.table,
            ctx: &mut self.http,
        }
    }
}

impl HostState {
    /// A fresh sandbox for one instance.
    pub(crate) fn new(grants: &Grants, answer: http::HttpAnswer) -> wasmtime::Result<Self> {
        let mut b = WasiCtxBuilder::new();
        for (k, v) in &grants.env {
            b.env(k, v);
        }
        for (host, guest, read_only) in &grants.preopens {
            let perms = if *read_only {
                FsPerms::ReadOnly
            } else {
                FsPerms::ReadWrite
            };
            b.preopened_dir(host, guest, perms).map_err(|e| {
                wasmtime::format_err!("cannot pre-open {} as {guest}: {e}", host.display())
            })?;
        }
        let budget = Arc::new(AtomicU64::new(MAX_LOG_BYTES_PER_INSTANCE));
        let stream = |stream, name| {
            LogStream::new(
                format!("{} {name}", grants.log_prefix),
                stream,
                budget.clone(),
                grants.stderr_warnings.clone(),
            )
        };
        if grants.forward_stdio || grants.output_copy.is_some() {
            b.stdout(
                stream(Stream::Stdout, "stdout")
                    .forwarding(grants.forward_stdio)
                    .with_copy(grants.output_copy.clone()),
            );
        }
        // Kept for a fault's message even when not forwarded.
        let stderr_tail = Arc::new(StderrTail::default());
        b.stderr(
            stream(Stream::Stderr, "stderr")
                .with_tail(stderr_tail.clone(), grants.forward_stdio)
                .with_copy(grants.output_copy.clone()),
        );
        // No sockets: neither TCP, UDP nor name lookups (wasi:http does its own connections).
        b.allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        Ok(Self {
            wasi: b.build(),
            table: {
                let mut table = ResourceTable::new();
                table.set_max_capacity(limits::MAX_HOST_RESOURCES);
                table
            },
            http: WasiHttpCtx::new(),
            hooks: HttpPolicy::new(
                grants.allowed_hosts.clone(),
                grants.credentials.clone(),
                grants.egress,
                grants.log_prefix.clone(),
                answer,
            ),
            limiter: MemoryLimiter::new(grants.memory_limit),
            write_budget: grants.write_budget.clone(),
            stderr_tail,
            denials: Denials::new(grants.log_prefix.clone()),
        })
    }
}

/// Resolves the `env` grants: explicit values, or named host variables (which must exist).
pub(crate) fn resolve_env(
    env: &BTreeMap<String, EnvGrant>,
    host: &dyn EnvSource,
) -> Result<Vec<(String, String)>, GrantError> {
    env.iter()
        .map(|(name, grant)| match grant {
            EnvGrant::Value(v) => Ok((name.clone(), v.expose().to_string())),
            EnvGrant::FromHost { from_host } => host
                .get(from_host)
                .map(|v| (name.clone(), v))
                .ok_or_else(|| GrantError::MissingHostVariable {
                    name: name.clone(),
                    from_host: from_host.clone(),
                }),
        })
        .collect()
}
