//! Stage 2, checks: what a component's bytes must satisfy before anything compiles them — a
//! component's header (not a core module, a known layer), the digest it is pinned to, and a
//! structure within [`StructureLimits`] ([`structure`]). Each failure is a [`LoadError`].
//!
//! Owns: pure checks of bytes against limits. May call: nothing else of the wasm host.

pub mod structure;

use sha2::{Digest, Sha256};

use crate::error::LoadError;
pub use structure::{Structure, StructureLimits};

/// Whether `bytes` (the first bytes of a file) start a WebAssembly component.
pub(crate) fn header(bytes: &[u8]) -> Result<(), LoadError> {
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return Err(LoadError::NotWasm);
    }
    let layer: [u8; 4] = [bytes[4], bytes[5], bytes[6], bytes[7]];
    match layer {
        [1, 0, 0, 0] => Err(LoadError::CoreModule),
        [0x0d, 0, 1, 0] => Ok(()),
        other => Err(LoadError::UnsupportedLayer(other)),
    }
}

/// The SHA-256 of `bytes`, lower-case hex: what pins and the cache name a component by.
pub(crate) fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Whether `sha256` is the digest an entry pins (hex, any case), when it pins one.
pub(crate) fn pin(sha256: &str, pin: Option<&str>) -> Result<(), LoadError> {
    match pin {
        Some(pin) if !pin.eq_ignore_ascii_case(sha256) => Err(LoadError::PinMismatch {
            actual: sha256.to_string(),
            pinned: pin.to_ascii_lowercase(),
        }),
        _ => Ok(()),
    }
}
