//! Paths of the guest components built by `build.rs`: one per program in `programs/`, and the
//! WAT guests from `wat/`.

/// Records every batch of every signal it receives (any encoding) as JSON lines in a
/// pre-opened directory; can answer `retryable` or `partial`, or discard (see its crate doc).
pub const RECORDER: &str = env!("LENS_GUEST_RECORDER");
/// Misbehaves as its `mode` setting says: loop, memory-bomb, panic-on-boom, huge-error, slow,
/// read-file, read-env, socket, http, print, trap-every, refuse-init, trap-init, noop (with
/// `encoding = typed | otlp`).
pub const HOSTILE: &str = env!("LENS_GUEST_HOSTILE");
/// A span processor (`lens:exporter@0.4.0`): `noop`, `redact`, `filter`, `rewrite`, and
/// misbehaviours (`trap`, `hang`, `error`, answers the host refuses; see its crate doc).
pub const PROCESSOR: &str = env!("LENS_GUEST_PROCESSOR");
/// The smallest exporter, in WAT: accepts everything (`otlp-protobuf`).
pub const WAT_EXPORTER: &str = env!("LENS_GUEST_WAT_EXPORTER");
/// The WAT exporter plus a core instance with a 16 MiB memory of its own.
pub const TWO_MEMORIES: &str = env!("LENS_GUEST_TWO_MEMORIES");
/// The WAT exporter plus 20 core instances, each touching a 60 MiB memory of its own.
pub const MANY_MEMORIES: &str = env!("LENS_GUEST_MANY_MEMORIES");
/// The WAT exporter plus 50 core instances, each with a table of 900k function references.
pub const BIG_TABLES: &str = env!("LENS_GUEST_BIG_TABLES");
/// The WAT exporter plus a core module with two memories.
pub const MULTI_MEMORY: &str = env!("LENS_GUEST_MULTI_MEMORY");
/// The WAT exporter plus 100 empty core instances.
pub const MANY_INSTANCES: &str = env!("LENS_GUEST_MANY_INSTANCES");
/// The WAT exporter plus a core instance whose start function never returns.
pub const LOOPING_START: &str = env!("LENS_GUEST_LOOPING_START");
