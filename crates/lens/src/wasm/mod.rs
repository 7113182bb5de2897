//! The host of sandboxed WebAssembly components: exporters and processors (`kind = "wasm"`).
//!
//! The component contract is the WIT package in `wit/` (`lens:exporter@0.4.0`: span, metric
//! and log exporters, and processors; 0.3.0 exporters and 0.2.0 span exporters still load);
//! how batches are encoded for a guest is the crate's `encoding` module's business.
//!
//! The folders are the stages a component goes through, in order; each may call the stages
//! before it and never one after it:
//!
//! 1. [`source`]: its bytes, read within bounds (a file today);
//! 2. [`checks`]: its header, its pinned digest and its structure, before anything compiles it;
//! 3. [`artefact`]: compiled or mapped from the on-disk cache ([`artefact::cache`]), compiles
//!    bounded in a worker process ([`artefact::compiler`]), the process's engines
//!    ([`artefact::engine`]);
//! 4. [`sandbox`]: linked against the host's interfaces ([`sandbox::link`], the entry of
//!    stages 1 to 4: [`load`]) and instantiated with exactly its grants: files, environment,
//!    `wasi:http`, memory, output ([`sandbox::guest_output`]); one instance on its worker
//!    thread (`sandbox::instance`); a configuration's components compiled ahead
//!    ([`sandbox::warm`]);
//! 5. `lanes`: the instances serving one entry, with fault backoff and retries, started from
//!    the installation's [`HostInputs`];
//! 6. [`reload`]: an entry's lanes, replaceable while batches flow (hot reload; the roles hold
//!    their lanes through it);
//! 7. the roles: [`exporters`] ([`WasmSpanExporter`], [`WasmMetricExporter`],
//!    [`WasmLogExporter`], the SDK's exporter traits) and [`processors`] ([`WasmProcessor`] and
//!    its answers checked and applied: [`processors::edit`], [`processors::metric_edit`],
//!    `processors::log_edit`).
//!
//! The host takes what it needs from the installation building it as a [`HostInputs`]; it
//! never sees the rest of the configuration. The error types it returns live in the crate's
//! leaf `error` module, which depends on none of these stages.

pub mod artefact;
pub mod checks;
pub mod exporters;
pub(crate) mod lanes;
pub mod processors;
pub mod reload;
pub mod sandbox;
pub mod source;
#[cfg(test)]
mod stage_order;
#[cfg(test)]
mod tests;

pub use crate::batch::retry::{FIRST_RETRY, MAX_RETRY_DELAY};
pub use crate::error::{GrantError, LoadError, WasmSetupError};
pub use artefact::compiler::enable_worker_process;
pub use checks::{Structure, StructureLimits};
pub use exporters::{WasmLogExporter, WasmMetricExporter, WasmSpanExporter};
pub use lanes::backoff::{FIRST_BACKOFF, HEALTHY_PERIOD, MAX_BACKOFF};
pub use lanes::start::HostInputs;
pub use processors::WasmProcessor;
pub use reload::Reloaded;
pub use sandbox::egress::DEFAULT_MAX_RESPONSE_MIB;
pub use sandbox::guest_output::{
    DEFAULT_FORWARD_STDIO, GuestOutputBuffer, GuestOutputCopy, GuestOutputFiles, GuestOutputSink,
};
pub use sandbox::instance::{DEFAULT_INIT_TIMEOUT_MS, INSTANCE_PLACEHOLDER, MAX_GUEST_ERROR};
pub use sandbox::interface::{GuestInterface, Role, Signal, WIT_VERSION};
pub use sandbox::limits::{
    DEFAULT_MEMORY_LIMIT_MIB, MAX_INSTANCES, MAX_MEMORIES, MAX_TABLES, MemoryLimitExceeded,
    TABLE_ELEMENT_BYTES,
};
pub use sandbox::link::{LoadChecks, LoadedComponent, load};
pub use sandbox::sockets::USE_HTTP;
pub use sandbox::warm::{Warmed, warm_cache};
pub use source::DEFAULT_MAX_FILE_MIB;

use crate::config::{BatchConfig, WasmExporterSpec};

/// `spec` with every unset key at the value the host uses (`lens config show` prints these):
/// `batch` is the entry's effective batch settings, whose `export_timeout_ms` is the call
/// deadline's default.
pub fn with_defaults(spec: &WasmExporterSpec, batch: &BatchConfig) -> WasmExporterSpec {
    let mut s = spec.clone();
    s.memory_limit_mib.get_or_insert(DEFAULT_MEMORY_LIMIT_MIB);
    s.max_answer_mib = Some(spec.answer_mib());
    s.call_timeout_ms.get_or_insert(batch.export_timeout_ms);
    s.init_timeout_ms.get_or_insert(DEFAULT_INIT_TIMEOUT_MS);
    s.forward_stdio.get_or_insert(DEFAULT_FORWARD_STDIO);
    s.max_file_mib.get_or_insert(DEFAULT_MAX_FILE_MIB);
    s.allow_private_addresses.get_or_insert(false);
    s.max_response_mib.get_or_insert(DEFAULT_MAX_RESPONSE_MIB);
    s.compile_memory_mib
        .get_or_insert(artefact::compiler::DEFAULT_COMPILE_MEMORY_MIB);
    s.compile_timeout_ms
        .get_or_insert(artefact::compiler::DEFAULT_COMPILE_TIMEOUT_MS);
    s.on_setup_failure.get_or_insert_default();
    s
}
