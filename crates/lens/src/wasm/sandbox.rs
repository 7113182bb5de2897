//! What one guest instance may touch: deny by default, every grant explicit in the config.
//!
//! - files: only the `preopens` directories, read-only unless `read_only = false`, writes
//!   within the exporter's `max_write_mib` (`quota`);
//! - environment: only the `env` entries (explicit values, or named host variables);
//! - network: no sockets at all; outbound HTTP through `wasi:http` to `allowed_hosts` only
//!   (anything else gets `HttpRequestDenied` and is logged);
//! - stdout/stderr: forwarded to the host log, prefixed, escaped and cut (`guest_output`), and
//!   copied as written where the host asks (`lens demo`'s run folder, `lens check`'s cases);
//! - memory: every linear memory and table of an instance counted against one cap, and their
//!   number capped too, by a `ResourceLimiter` that also records the peak.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView};

use super::guest_output::{
    GuestOutputSink, LogStream, MAX_LOG_BYTES_PER_INSTANCE, StderrTail, Stream, WarnBudget,
};
use super::quota::{Budgeted, WriteBudget};
use crate::config::EnvGrant;
use crate::config::env::EnvSource;
use crate::error::GrantError;

/// The grants of one exporter, resolved at setup (host variables read, paths checked).
#[derive(Debug, Clone)]
pub(crate) struct Grants {
    /// `(name, value)` pairs the guest sees.
    pub env: Vec<(String, String)>,
    /// `(host dir, guest path, read_only)`.
    pub preopens: Vec<(PathBuf, String, bool)>,
    /// `host` or `host:port` entries.
    pub allowed_hosts: Vec<String>,
    /// Forward stdout/stderr to the log.
    pub forward_stdio: bool,
    /// Where a copy of stdout/stderr goes (whether forwarded or not), with the exporter's name.
    pub output_copy: Option<(Arc<str>, Arc<dyn GuestOutputSink>)>,
    /// Cap on all the instance's memories and tables together, bytes.
    pub memory_limit: usize,
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
    pub(crate) fn new(grants: &Grants) -> wasmtime::Result<Self> {
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
            table: ResourceTable::new(),
            http: WasiHttpCtx::new(),
            hooks: HttpPolicy {
                allowed: grants.allowed_hosts.clone(),
                log_prefix: grants.log_prefix.clone(),
            },
            limiter: MemoryLimiter::new(grants.memory_limit),
            write_budget: grants.write_budget.clone(),
            stderr_tail,
        })
    }
}

/// The error a guest gets when its memories and tables together would exceed the cap (a trap).
#[derive(Debug, thiserror::Error)]
#[error(
    "memory limit of {limit} bytes exceeded: the instance asked for {desired} bytes of memories \
     and tables in all"
)]
pub struct MemoryLimitExceeded {
    /// The cap.
    pub limit: usize,
    /// What the instance would have held in all.
    pub desired: usize,
}

/// Bytes a table element is counted as (a function reference: one pointer on 64-bit hosts).
pub const TABLE_ELEMENT_BYTES: usize = 8;
/// Core instances one component instance may create (every language Lens has examples in
/// needs far fewer; a componentize-py guest is the largest).
pub const MAX_INSTANCES: usize = 64;
/// Linear memories one component instance may create.
pub const MAX_MEMORIES: usize = 16;
/// Tables one component instance may create.
pub const MAX_TABLES: usize = 64;

/// Caps what one instance allocates: all its linear memories and tables together, and their
/// number, and remembers the largest total it held (the instance's peak memory).
///
/// wasmtime asks before creating a memory or a table (`current = 0`) and before growing one,
/// never telling which one it is; so the limiter keeps the running total of every grant.
#[derive(Debug)]
pub struct MemoryLimiter {
    limit: usize,
    /// Bytes of memories and tables granted so far.
    total: usize,
    /// The last grant, taken back if wasmtime then fails to apply it.
    last_grant: usize,
    /// Largest total so far, bytes.
    pub peak: usize,
}

impl MemoryLimiter {
    /// A limiter capping an instance at `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            total: 0,
            last_grant: 0,
            peak: 0,
        }
    }

    fn grant(&mut self, current: usize, desired: usize) -> wasmtime::Result<bool> {
        let more = desired.saturating_sub(current);
        let total = self.total.saturating_add(more);
        if total > self.limit {
            return Err(MemoryLimitExceeded {
                limit: self.limit,
                desired: total,
            }
            .into());
        }
        self.total = total;
        self.last_grant = more;
        self.peak = self.peak.max(total);
        Ok(true)
    }

    fn revoke_last(&mut self) {
        self.total -= std::mem::take(&mut self.last_grant);
    }
}

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grant(current, desired)
    }

    fn memory_grow_failed(&mut self, _error: wasmtime::Error) -> wasmtime::Result<()> {
        self.revoke_last();
        Ok(())
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grant(
            current.saturating_mul(TABLE_ELEMENT_BYTES),
            desired.saturating_mul(TABLE_ELEMENT_BYTES),
        )
    }

    fn table_grow_failed(&mut self, _error: wasmtime::Error) -> wasmtime::Result<()> {
        self.revoke_last();
        Ok(())
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }
}

/// `wasi:http` policy: only `allowed_hosts`, everything else denied and logged.
struct HttpPolicy {
    allowed: Vec<String>,
    log_prefix: Arc<str>,
}

/// Whether `host` (and `port`) match an `allowed_hosts` entry (`host` = any port).
pub(crate) fn host_allowed(allowed: &[String], host: &str, port: u16) -> bool {
    allowed.iter().any(|entry| match entry.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => {
            h.eq_ignore_ascii_case(host) && p.parse() == Ok(port)
        }
        _ => entry.eq_ignore_ascii_case(host),
    })
}

type SendFuture = Box<
    dyn std::future::Future<
            Output = Result<
                (
                    http::Response<wasmtime_wasi_http::WasiBody>,
                    Box<
                        dyn std::future::Future<Output = Result<(), wasmtime_wasi_http::Error>>
                            + Send,
                    >,
                ),
                wasmtime_wasi_http::Error,
            >,
        > + Send,
>;

impl WasiHttpHooks for HttpPolicy {
    fn send_request(
        &mut self,
        request: http::Request<wasmtime_wasi_http::WasiBody>,
        options: Option<wasmtime_wasi_http::RequestOptions>,
        fut: Box<dyn std::future::Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
    ) -> SendFuture {
        let uri = request.uri();
        let host = uri.host().unwrap_or_default().to_string();
        let https = uri.scheme() == Some(&http::uri::Scheme::HTTPS);
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        if !host_allowed(&self.allowed, &host, port) {
            log::warn!(
                "{}: denied HTTP request to {}:{port} (not in allowed_hosts)",
                self.log_prefix,
                super::guest_output::escape(&host)
            );
            return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) });
        }
        let _ = fut;
        Box::new(async move {
            use http_body_util::BodyExt;
            let (res, io) = wasmtime_wasi_http::default_send_request(request, options).await?;
            Ok((
                res.map(BodyExt::boxed_unsync),
                Box::new(io) as Box<dyn std::future::Future<Output = _> + Send>,
            ))
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

#[cfg(test)]
mod tests {
    use super::host_allowed;

    #[test]
    fn allowed_hosts_match_host_and_port() {
        let allowed = vec![
            "ingest.example.com:443".to_string(),
            "127.0.0.1".to_string(),
        ];
        assert!(host_allowed(&allowed, "ingest.example.com", 443));
        assert!(host_allowed(&allowed, "INGEST.example.com", 443));
        assert!(!host_allowed(&allowed, "ingest.example.com", 80));
        assert!(!host_allowed(&allowed, "evil.example.com", 443));
        assert!(host_allowed(&allowed, "127.0.0.1", 4318));
        assert!(!host_allowed(&[], "127.0.0.1", 80), "empty = no hosts");
    }
}
