//! Compiles refused for a bound, remembered for the ranks waiting on the same entry.
//!
//! Ranks of a node load a component under the entry's lock one after another; when the first's
//! compile runs out of memory or time, each waiting rank would try again and pay the same bound
//! in turn (eight ranks, eight compile timeouts). The first records the refusal next to the
//! entry (`index/<artefact name>.refused`: the bound and its value); a rank finding a recent
//! record for bounds no larger than its own is refused at once. The record expires after
//! [`REFUSAL_TTL`], so that a compile that only ran out of time on a busy machine is tried
//! again by a later job, and larger bounds always try again.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::files::{sidecar, write_atomically};
use crate::error::CompileError;
use crate::wasm::artefact::compiler::CompileBounds;

/// How long a refusal stands for other ranks.
pub const REFUSAL_TTL: Duration = Duration::from_secs(600);

fn record_path(index: &Path, artifact: &Path) -> PathBuf {
    sidecar(index, artifact, "refused")
}

/// Records `error` for `artifact` if it is a bound's refusal (other failures are not).
pub(super) fn record(index: &Path, artifact: &Path, error: &CompileError) {
    let text = match error {
        CompileError::OutOfMemory { memory_mib } => format!("memory {memory_mib}\n"),
        CompileError::TimedOut { timeout } => format!("time {}\n", timeout.as_millis()),
        _ => return,
    };
    let _ = write_atomically(&record_path(index, artifact), text.as_bytes());
}

/// The refusal a recent record implies under `bounds`, if any.
pub(super) fn recorded(
    index: &Path,
    artifact: &Path,
    bounds: CompileBounds,
) -> Option<CompileError> {
    use std::io::Read;
    let path = record_path(index, artifact);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    let age = SystemTime::now()
        .duration_since(meta.modified().ok()?)
        .unwrap_or_default();
    if !meta.is_file() || age > REFUSAL_TTL {
        return None;
    }
    let mut text = String::new();
    std::fs::File::open(&path)
        .ok()?
        .take(64)
        .read_to_string(&mut text)
        .ok()?;
    let (kind, value) = text.trim_end().split_once(' ')?;
    let value: u64 = value.parse().ok()?;
    match kind {
        "memory" if value >= bounds.memory_mib => Some(CompileError::OutOfMemory {
            memory_mib: bounds.memory_mib,
        }),
        "time" if u128::from(value) >= bounds.timeout.as_millis() => Some(CompileError::TimedOut {
            timeout: bounds.timeout,
        }),
        _ => None,
    }
}

/// Forgets the refusal of `artifact` (it compiled).
pub(super) fn clear(index: &Path, artifact: &Path) {
    let _ = std::fs::remove_file(record_path(index, artifact));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_stands_for_bounds_no_larger_than_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let (index, artifact) = (dir.path(), dir.path().join("a.cwasm"));
        let bounds = |memory_mib, ms| CompileBounds {
            memory_mib,
            timeout: Duration::from_millis(ms),
        };
        assert!(recorded(index, &artifact, bounds(256, 1000)).is_none());
        record(
            index,
            &artifact,
            &CompileError::OutOfMemory { memory_mib: 256 },
        );
        assert!(matches!(
            recorded(index, &artifact, bounds(128, 1000)),
            Some(CompileError::OutOfMemory { memory_mib: 128 })
        ));
        assert!(recorded(index, &artifact, bounds(512, 1000)).is_none());
        record(
            index,
            &artifact,
            &CompileError::TimedOut {
                timeout: Duration::from_secs(1),
            },
        );
        assert!(recorded(index, &artifact, bounds(256, 1000)).is_some());
        assert!(recorded(index, &artifact, bounds(256, 2000)).is_none());
        record(index, &artifact, &CompileError::Refused("invalid".into()));
        assert!(
            recorded(index, &artifact, bounds(256, 1000)).is_some(),
            "kept"
        );
        clear(index, &artifact);
        assert!(recorded(index, &artifact, bounds(256, 1000)).is_none());
    }
}
