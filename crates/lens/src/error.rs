//! The crate's error types, in one leaf module so that every layer can return them and
//! [`LensError`] can carry the lower layers' errors as its sources.
//!
//! - [`LensError`]: what the public API returns; each variant names what it is about (the config
//!   file and key, the environment variable, the exporter).
//! - [`LoadError`]: what is wrong with a `.wasm` file.
//! - [`CompileError`]: why compiling a `.wasm` file failed (one of its bounds, or wasmtime).
//! - [`WasmSetupError`]: why a `.wasm` exporter could not be set up (its file, its grants, its
//!   first instance).
//! - [`FaultKind`]: why a sandboxed instance was discarded (a trap, a deadline, …), as counted in
//!   the statistics and the `kind` attribute of the health metrics.

use std::error::Error;
use std::fmt;
use std::path::PathBuf;

use crate::signal::{Role, Signal, WIT_VERSION};

/// A boxed error, the source of a variant whose cause comes from another crate.
pub type BoxError = Box<dyn Error + Send + Sync + 'static>;

/// The message of `e` followed by those of its sources, `: `-separated (`anyhow`'s `{:#}`).
pub(crate) fn chain(e: &(dyn Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        let text = s.to_string();
        // Wrappers that already print their source would repeat it.
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = s.source();
    }
    out
}

/// Everything that can go wrong setting up or running Lens. Each variant names what it is about:
/// the config file and key, the environment variable, or the exporter.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LensError {
    /// A config file (or config built in code) is invalid.
    #[error("invalid config {source_name}: {message}")]
    Config {
        /// The file path, or `<config>`.
        source_name: String,
        /// What is wrong, naming the key.
        message: String,
        /// The parser's or the file system's error, when there is one.
        #[source]
        source: Option<BoxError>,
    },
    /// An environment variable does not parse.
    #[error("invalid environment variable {variable}={value:?}: expected {expected}")]
    Env {
        /// Its name.
        variable: String,
        /// Its value.
        value: String,
        /// What was expected.
        expected: String,
    },
    /// A second setup in one process without `allow_reinit`.
    #[error(
        "telemetry is already set up in this process (set `allow_reinit = true` to replace it)"
    )]
    AlreadyInitialized,
    /// Rank or world size are inconsistent.
    #[error("invalid rank: {0}")]
    Rank(#[from] RankError),
    /// The configured export strategy is not known.
    #[error("unknown export strategy `{name}` (built in: {builtin}; registered: {registered})")]
    UnknownStrategy {
        /// The name in the config.
        name: String,
        /// Built-in names.
        builtin: String,
        /// Names registered at run time.
        registered: String,
    },
    /// Registering a strategy under a protected or taken name.
    #[error("cannot register export strategy `{0}`: the name is built in or already registered")]
    StrategyNameTaken(String),
    /// A native exporter could not be built.
    #[error("exporter `{exporter}`: {message}: {}", chain(source.as_ref()))]
    Exporter {
        /// The exporter's display name.
        exporter: String,
        /// What was being built, e.g. `http://127.0.0.1:4317 (grpc)`.
        message: String,
        /// Why it failed.
        #[source]
        source: BoxError,
    },
    /// A `.wasm` exporter could not be set up.
    #[error("wasm exporter `{exporter}` ({path}): {source}", path = path.display())]
    WasmLoad {
        /// The exporter's display name.
        exporter: String,
        /// The component file.
        path: PathBuf,
        /// What is wrong with it, its grants or its first instance.
        #[source]
        source: WasmSetupError,
    },
    /// A reload refused a new `.wasm` component: the running one stays.
    #[error(
        "reload of wasm exporter `{exporter}` refused at {step} ({path}): {source}; the running \
         component stays",
        path = path.display()
    )]
    Reload {
        /// The exporter's display name.
        exporter: String,
        /// The new component file.
        path: PathBuf,
        /// The step that failed.
        step: ReloadStep,
        /// What is wrong with the new component, its grants or its first instance.
        #[source]
        source: WasmSetupError,
    },
    /// A reload asked for a change a running installation cannot make: nothing was changed.
    #[error("reload refused for exporter `{exporter}`: {message}; nothing was changed")]
    ReloadUnsupported {
        /// The exporter's display name.
        exporter: String,
        /// What cannot change, and what to do instead.
        message: String,
    },
    /// Flush or shutdown did not complete cleanly.
    #[error("{operation} incomplete: {details}")]
    Incomplete {
        /// `force_flush` or `shutdown`.
        operation: &'static str,
        /// Per exporter and signal, what failed.
        details: String,
    },
}

impl LensError {
    pub(crate) fn exporter(
        exporter: impl Into<String>,
        message: impl Into<String>,
        source: impl Into<BoxError>,
    ) -> Self {
        Self::Exporter {
            exporter: exporter.into(),
            message: message.into(),
            source: source.into(),
        }
    }
}

/// A rank identity that cannot be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RankError {
    /// `world_size = 0`.
    #[error("world_size must be at least 1")]
    EmptyWorld,
    /// `rank >= world_size`.
    #[error("rank {rank} is outside world_size {world_size}")]
    OutsideWorld {
        /// The rank.
        rank: u32,
        /// The world size.
        world_size: u32,
    },
}

/// What is wrong with a `.wasm` file: one variant per check [`crate::wasm::load()`] makes, each
/// displayed as one sentence about the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// Nothing at the path.
    #[error("file not found")]
    NotFound,
    /// The file exists but cannot be read.
    #[error("cannot read the file: {0}")]
    Unreadable(#[source] std::io::Error),
    /// The path is a directory.
    #[error("is a directory, not a .wasm component file")]
    IsDirectory,
    /// The path is a FIFO, a device or a socket: reading it could block forever or never end.
    #[error("is {kind}, not a regular file: refusing to read it")]
    NotRegularFile {
        /// `a FIFO`, `a character device`, `a block device`, `a socket`.
        kind: &'static str,
    },
    /// The file is larger than the exporter's `max_file_mib`.
    #[error(
        "is {size} bytes, more than the limit of {limit} bytes (`max_file_mib`): refusing to read it"
    )]
    TooLarge {
        /// The file's size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The file's SHA-256 is not the pinned one.
    #[error("sha256 is {actual}, but the config pins {pinned}: refusing to load it")]
    PinMismatch {
        /// The file's SHA-256, hex.
        actual: String,
        /// The config's pin, lowercase hex.
        pinned: String,
    },
    /// No `\0asm` magic number.
    #[error("not a WebAssembly file (no `\\0asm` header)")]
    NotWasm,
    /// A core module rather than a component.
    #[error(
        "is a core WebAssembly module, not a component: build it for wasm32-wasip2, or wrap \
         it with `wasm-tools component new`"
    )]
    CoreModule,
    /// A version/layer field this host does not know.
    #[error("unsupported WebAssembly version/layer {0:02x?}")]
    UnsupportedLayer([u8; 4]),
    /// The component's structure exceeds a limit checked before compiling it
    /// ([`crate::wasm::StructureLimits`]).
    #[error("its structure exceeds a limit of the host: {what} {found}, the limit is {limit}")]
    Structure {
        /// What was counted, e.g. `nesting depth of components and modules`.
        what: &'static str,
        /// How many the file has (counting stops at the first over the limit).
        found: u64,
        /// The limit.
        limit: u64,
    },
    /// Its compile ran past a bound ([`crate::wasm::artefact::compiler`]).
    #[error("{source}")]
    Compile {
        /// Which bound, or why the worker failed.
        #[source]
        source: CompileError,
    },
    /// wasmtime rejected the component (validation or compilation).
    #[error("invalid component: {}", chain(source.as_ref()))]
    Invalid {
        /// wasmtime's error.
        #[source]
        source: BoxError,
    },
    /// It imports interfaces outside WASI 0.2 and `wasi:http`.
    #[error(
        "imports the host does not provide: {} (the host offers WASI 0.2 and wasi:http only)",
        quoted(imports)
    )]
    UnknownImports {
        /// The imports no host package provides.
        imports: Vec<String>,
    },
    /// An `oci://` reference could not be resolved to a verified component (`wasm::source::oci`).
    #[error("{0}")]
    Oci(Box<OciError>),
    /// Linking failed for another reason (an import of the right package, the wrong shape).
    #[error("imports the host cannot provide: {}", chain(source.as_ref()))]
    Link {
        /// wasmtime's error.
        #[source]
        source: BoxError,
    },
    /// It exports no `lens:exporter` interface.
    #[error(
        "does not export `{expected}` (it exports {}); is it built for a `lens:exporter` world (`exporter`, `metrics`, `logs` or `all-signals`)?",
        listed(exports)
    )]
    MissingExport {
        /// The interfaces the host looks for.
        expected: String,
        /// What it exports.
        exports: Vec<String>,
    },
    /// It exports another version of the interface.
    #[error(
        "targets {}, but this host supports `{expected}`{}",
        listed(exports),
        if *older { "; rebuild it against this host's `wit/` (span records are unchanged since 0.1.0)" } else { "" }
    )]
    WrongVersion {
        /// The interfaces the host looks for.
        expected: String,
        /// What it exports.
        exports: Vec<String>,
        /// Whether it is older than the host's (a rebuild suffices).
        older: bool,
    },
    /// The interface has the right name but not the host's types.
    #[error("its `{expected}` does not match the WIT this host was built with: {detail}")]
    ExportMismatch {
        /// The interface the host looks for.
        expected: String,
        /// wasmtime's type check.
        detail: String,
    },
    /// It exports `lens:exporter` interfaces, but not the one of the signal and role it is
    /// configured for.
    #[error(
        "is configured under [{signal}{}] but does not export `{}` (it exports {}); build it for the `{}` or `{}` world",
        if *role == Role::Processor { ".processors" } else { "" },
        signal.interface_name_of(*role, WIT_VERSION),
        listed(exports),
        if *role == Role::Processor { signal.processor_world() } else { signal.world() },
        if *role == Role::Processor { "all-processors" } else { "all-signals" }
    )]
    SignalNotExported {
        /// The signal it is configured for.
        signal: Signal,
        /// As an exporter or a processor.
        role: Role,
        /// What it exports.
        exports: Vec<String>,
    },
}

fn quoted(items: &[String]) -> String {
    items
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn listed(items: &[String]) -> String {
    if items.is_empty() {
        "nothing".to_string()
    } else {
        quoted(items)
    }
}

/// The step of a reload at which a new component was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReloadStep {
    /// Reading, checking and compiling the file.
    Load,
    /// Checking what it exports against the signal's WIT interface.
    Interface,
    /// Linking its imports to what the sandbox grants.
    Link,
    /// Resolving the entry's grants (environment, pre-opened directories).
    Grants,
    /// Instantiating it and calling its `init` (a trap, a deadline).
    Start,
    /// Its `init` returned an error.
    Init,
    /// What its `init` asked for cannot change in a running installation (a metric
    /// exporter's temporality).
    Preferences,
}

impl ReloadStep {
    /// The step a setup error happened at.
    pub fn of(error: &WasmSetupError) -> Self {
        match error {
            WasmSetupError::Load(
                LoadError::MissingExport { .. }
                | LoadError::WrongVersion { .. }
                | LoadError::ExportMismatch { .. }
                | LoadError::SignalNotExported { .. },
            ) => Self::Interface,
            WasmSetupError::Load(LoadError::UnknownImports { .. } | LoadError::Link { .. }) => {
                Self::Link
            }
            WasmSetupError::Load(_) | WasmSetupError::Engine { .. } => Self::Load,
            WasmSetupError::Grant(_) => Self::Grants,
            WasmSetupError::InitRefused(_) => Self::Init,
            WasmSetupError::Start { .. } => Self::Start,
            WasmSetupError::Incompatible(_) => Self::Preferences,
        }
    }
}

impl std::fmt::Display for ReloadStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Load => "load (read, check, compile)",
            Self::Interface => "interface check",
            Self::Link => "link",
            Self::Grants => "grants",
            Self::Start => "start (instantiate, init)",
            Self::Init => "init",
            Self::Preferences => "preferences",
        })
    }
}

/// Why a compile failed ([`crate::wasm::artefact::compiler`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompileError {
    /// wasmtime refused the component (validation or compilation).
    #[error("{0}")]
    Refused(String),
    /// The worker ran out of its memory bound.
    #[error("compiling it needed more than {memory_mib} MiB (`compile_memory_mib`): refused")]
    OutOfMemory {
        /// The bound.
        memory_mib: u64,
    },
    /// The worker ran past its time bound and was killed.
    #[error("compiling it took longer than {timeout:?} (`compile_timeout_ms`): refused")]
    TimedOut {
        /// The bound.
        timeout: std::time::Duration,
    },
    /// The worker could not be run, or died for another reason.
    #[error("the compile worker failed: {0}")]
    Worker(String),
}

/// Why a `.wasm` exporter could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WasmSetupError {
    /// The file does not load.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A grant in the config cannot be given.
    #[error(transparent)]
    Grant(#[from] GrantError),
    /// The wasm engine could not start.
    #[error("cannot create the wasm engine: {}", chain(source.as_ref()))]
    Engine {
        /// wasmtime's error.
        #[source]
        source: BoxError,
    },
    /// The guest's `init` returned an error.
    #[error("init failed: init: {0}")]
    InitRefused(String),
    /// A reloaded component asks in `init` for what the running installation cannot change.
    #[error("{0}")]
    Incompatible(String),
    /// The first instance faulted before it was ready.
    #[error("{kind}: {detail}")]
    Start {
        /// What stopped it.
        kind: FaultKind,
        /// wasmtime's or the host's account of it.
        detail: String,
    },
}

/// A capability in the config that the host cannot grant.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GrantError {
    /// `env.NAME = { from_host = "VAR" }` with `VAR` unset.
    #[error("`env.{name}` takes host variable `{from_host}`, which is not set")]
    MissingHostVariable {
        /// The guest's variable.
        name: String,
        /// The host variable.
        from_host: String,
    },
    /// A pre-opened directory that is not a directory.
    #[error("pre-opened directory {} does not exist", path.display())]
    MissingDirectory {
        /// The host path.
        path: PathBuf,
    },
    /// A credential's `from_env` variable is not set.
    #[error("credential {credential} takes host variable `{from_env}`, which is not set")]
    MissingCredentialVariable {
        /// The credential, by header and host.
        credential: String,
        /// The host variable.
        from_env: String,
    },
    /// A credential's `from_file` cannot be read.
    #[error("credential {credential} cannot read {}", path.display())]
    UnreadableCredentialFile {
        /// The credential, by header and host.
        credential: String,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A credential the entry cannot have (an entry built in code skips the config's checks;
    /// these are the same).
    #[error("credential {credential} is refused: {why}")]
    RefusedCredential {
        /// The credential, by header and host.
        credential: String,
        /// The config check it fails, naming the key.
        why: String,
    },
    /// A credential's value cannot be sent as its header (what is wrong, never the value).
    #[error("credential {credential}: its value {why}")]
    InvalidCredential {
        /// The credential, by header and host.
        credential: String,
        /// What is wrong with the value.
        why: String,
    },
}

/// Why a sandboxed instance was discarded: counted per kind in
/// [`ExporterSnapshot::traps`](crate::ExporterSnapshot::traps) and reported as the `kind`
/// attribute of `lens.exporter.traps`. Displayed (and serialized) as its label, e.g.
/// `memory limit`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum FaultKind {
    /// The call ran past its deadline (in wasm, or blocked in a host call).
    Deadline,
    /// The call used up its fuel.
    Fuel,
    /// The instance asked for more memory than its limit.
    MemoryLimit,
    /// The guest handed the host more than `max_answer_mib` in one call (an answer, a result,
    /// the arguments of a host call).
    AnswerLimit,
    /// `unreachable` was executed: how Rust and C guests panic or abort.
    Unreachable,
    /// The guest's stack overflowed.
    StackOverflow,
    /// A load or store outside linear memory.
    MemoryOutOfBounds,
    /// Another trap, by wasmtime's description of it.
    Trap(String),
    /// `init` returned an error when an instance was rebuilt.
    InitFailed,
    /// The host failed around the call (a worker thread could not start or was lost).
    HostError,
}

impl FaultKind {
    /// The label: `deadline`, `fuel`, `memory limit`, `answer limit`, `unreachable`, `stack overflow`,
    /// `memory out of bounds`, `init failed`, `host error`, or the trap's description.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Deadline => "deadline",
            Self::Fuel => "fuel",
            Self::MemoryLimit => "memory limit",
            Self::AnswerLimit => "answer limit",
            Self::Unreachable => "unreachable",
            Self::StackOverflow => "stack overflow",
            Self::MemoryOutOfBounds => "memory out of bounds",
            Self::Trap(description) => description,
            Self::InitFailed => "init failed",
            Self::HostError => "host error",
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for FaultKind {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "deadline" => Self::Deadline,
            "fuel" => Self::Fuel,
            "memory limit" => Self::MemoryLimit,
            "answer limit" => Self::AnswerLimit,
            "unreachable" => Self::Unreachable,
            "stack overflow" => Self::StackOverflow,
            "memory out of bounds" => Self::MemoryOutOfBounds,
            "init failed" => Self::InitFailed,
            "host error" => Self::HostError,
            other => Self::Trap(other.to_string()),
        })
    }
}

impl serde::Serialize for FaultKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for FaultKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let label = String::deserialize(d)?;
        Ok(label.parse().unwrap_or_else(|never| match never {}))
    }
}

impl From<CompileError> for LoadError {
    fn from(e: CompileError) -> Self {
        match e {
            CompileError::Refused(message) => LoadError::Invalid {
                source: message.into(),
            },
            other => LoadError::Compile { source: other },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_kinds_round_trip_through_their_labels() {
        for kind in [
            FaultKind::Deadline,
            FaultKind::Fuel,
            FaultKind::MemoryLimit,
            FaultKind::AnswerLimit,
            FaultKind::Unreachable,
            FaultKind::StackOverflow,
            FaultKind::MemoryOutOfBounds,
            FaultKind::Trap("integer divide by zero".into()),
            FaultKind::InitFailed,
            FaultKind::HostError,
        ] {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{kind}\""));
            assert_eq!(serde_json::from_str::<FaultKind>(&json).unwrap(), kind);
        }
    }

    #[test]
    fn a_chain_names_every_cause_once() {
        let io = std::io::Error::other("disk on fire");
        let e = LensError::exporter("otlp", "cannot start the gRPC runtime", io);
        assert_eq!(
            e.to_string(),
            "exporter `otlp`: cannot start the gRPC runtime: disk on fire"
        );
        assert!(e.source().is_some());
    }
}

impl From<OciError> for LoadError {
    fn from(e: OciError) -> Self {
        Self::Oci(Box::new(e))
    }
}

/// Why a component named by an `oci://` reference was not used. Nothing unverified is kept: a
/// blob is written to the store only once its digest and size are checked.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    /// The reference is not `oci://HOST[:PORT]/REPOSITORY[:TAG][@sha256:DIGEST]`.
    #[error(
        "`{reference}` is not an OCI reference: {why} (expected oci://HOST[:PORT]/REPOSITORY[:TAG]@sha256:DIGEST)"
    )]
    Reference {
        /// The reference as written.
        reference: String,
        /// What is wrong with it.
        why: String,
    },
    /// A reference without a digest, and no `allow_unpinned`.
    #[error(
        "`{reference}` names no digest: a tag can move. It resolves to {digest} now; pin it: \
         path = \"{pinned}\" (or set `allow_unpinned = true` on the entry, `--allow-unpinned` \
         on the command line, to follow the tag)"
    )]
    Unpinned {
        /// The reference as written.
        reference: String,
        /// What the tag resolves to now.
        digest: String,
        /// The reference with that digest.
        pinned: String,
    },
    /// The registry refused the request for lack of (valid) credentials.
    #[error(
        "registry {registry} refused access ({status}): credentials were looked for in {looked}"
    )]
    Denied {
        /// `HOST[:PORT]`.
        registry: String,
        /// `401 Unauthorized` or `403 Forbidden`, as the client reported it.
        status: String,
        /// Where credentials were looked for, and what was found (never a value).
        looked: String,
    },
    /// The registry could not be reached or answered with an error.
    #[error("registry {registry}: {message}")]
    Registry {
        /// `HOST[:PORT]`.
        registry: String,
        /// What went wrong, in one line.
        message: String,
    },
    /// What the registry sent is not a Wasm component artifact.
    #[error(
        "{reference}: {what}; Lens takes a Wasm component artifact (`wkg oci push`, `lens push`: config media type `application/vnd.wasm.config.v0+json`, one `application/wasm` layer)"
    )]
    NotWasmArtifact {
        /// The reference.
        reference: String,
        /// What it is instead.
        what: String,
    },
    /// Bytes whose digest is not the one asked for (the manifest, or the layer while streaming).
    #[error(
        "{reference}: the registry sent {what} with digest {actual}, not {expected}: refused, nothing kept"
    )]
    DigestMismatch {
        /// The reference.
        reference: String,
        /// `the manifest` or `the component layer`.
        what: &'static str,
        /// The digest asked for.
        expected: String,
        /// The digest of what arrived.
        actual: String,
    },
    /// The layer is larger than `max_file_mib` (from the manifest, or while streaming).
    #[error(
        "{reference}: the component layer is {size} bytes or more, over the limit of {limit} bytes (`max_file_mib`): refused, nothing kept"
    )]
    TooLarge {
        /// The reference.
        reference: String,
        /// Its size, as announced or as counted so far.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The entry's `sha256` is not the digest of the component the reference names.
    #[error(
        "{reference} names a component whose sha256 is {layer}, but the entry pins sha256 = {pinned}"
    )]
    PinMismatch {
        /// The reference.
        reference: String,
        /// The layer's digest (hex).
        layer: String,
        /// The entry's pin.
        pinned: String,
    },
    /// A key file (`verify.key`, `--sign-key`) that cannot be used.
    #[error("key {key}: {why}")]
    Key {
        /// The file.
        key: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// The entry says `verify = { key = … }` and the component carries no valid signature by
    /// that key.
    #[error(
        "{reference}: refused, not signed by the key {key}: {why} (signatures are looked for at \
         the tag {tag} of its repository, cosign's layout: `cosign sign --key cosign.key \
         {reference}` or `lens push --sign-key`)"
    )]
    Signature {
        /// The reference (pinned).
        reference: String,
        /// The key file.
        key: PathBuf,
        /// The signatures' tag.
        tag: String,
        /// What was found instead.
        why: String,
    },
    /// The local store could not be written or read.
    #[error("the component store {dir}: {source}")]
    Store {
        /// The store's directory.
        dir: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}
