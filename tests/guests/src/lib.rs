//! Paths of the guest components built by `build.rs`, one per program in `programs/`.

/// Records every batch it receives (both encodings) as JSON lines in a pre-opened directory.
pub const RECORDER: &str = env!("LENS_GUEST_RECORDER");
/// Misbehaves as its `mode` setting says: loop, memory-bomb, panic-on-boom, huge-error, slow,
/// read-file, read-env, socket, http, print, trap-every, refuse-init, noop (with
/// `encoding = typed | otlp`).
pub const HOSTILE: &str = env!("LENS_GUEST_HOSTILE");
