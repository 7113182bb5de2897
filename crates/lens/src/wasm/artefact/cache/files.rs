//! The cache's files: private directories, atomic writes, and who may have written a file.

use std::fs::{self, File};
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Creates `dir` and its missing parents readable and writable by this user only (the cache
/// holds native code).
pub(super) use crate::wasm::source::private_dir;

/// Where a record about `artifact` (its integrity, a refused compile) lives in the `index`
/// directory: `<artefact name>.<kind>`.
pub(super) fn sidecar(index: &Path, artifact: &Path, kind: &str) -> std::path::PathBuf {
    let name = artifact
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    index.join(format!("{name}.{kind}"))
}

/// Writes `bytes` to `path` through a temporary file and a rename: readers never see a torn file.
/// The temporary name is unique per write (process, a per-process random value for ranks on
/// other hosts sharing the directory, a counter for threads), so no two writers share one; it
/// is removed if the write fails.
pub(super) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_through_rename(path, bytes, true)
}

/// [`write_atomically`] without syncing the file to disk first: for entries whose damage a
/// digest detects, where a crash may lose them but never passes a torn one off as whole.
pub(super) fn write_unsynced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_through_rename(path, bytes, false)
}

fn write_through_rename(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    static WRITES: AtomicUsize = AtomicUsize::new(0);
    static NONCE: OnceLock<u64> = OnceLock::new();
    let nonce = NONCE.get_or_init(|| std::hash::RandomState::new().build_hasher().finish());
    let tmp = path.with_extension(format!(
        "tmp{}-{nonce:x}-{}",
        std::process::id(),
        WRITES.fetch_add(1, Relaxed)
    ));
    let written = (|| {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = File::options()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        if sync {
            f.sync_all()?;
        }
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// Why a file or directory of the cache cannot be trusted to hold code this user will run:
/// it belongs to another user, or its group or everyone may write it.
pub fn untrusted(mode: u32, owner: u32, me: u32) -> Option<String> {
    if owner != me {
        return Some(format!(
            "it belongs to uid {owner}, not to this user (uid {me})"
        ));
    }
    if mode & 0o022 != 0 {
        return Some(format!(
            "its group or everyone may write it (mode {:o})",
            mode & 0o7777
        ));
    }
    None
}

/// [`untrusted`] for `path`: a directory through any symbolic link to it (a cache under a
/// linked `~/.cache` is common), a file as itself (a link's mode is 0777: a planted link is
/// refused). `None` when the path does not exist.
pub(super) fn untrusted_path(path: &Path, dir: bool) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = if dir {
        fs::metadata(path)
    } else {
        fs::symlink_metadata(path)
    }
    .ok()?;
    // SAFETY: `geteuid` has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    untrusted(meta.mode(), meta.uid(), me)
}

#[cfg(test)]
mod tests {
    use super::untrusted;

    #[test]
    fn only_this_user_may_write_what_the_cache_runs() {
        assert_eq!(untrusted(0o40700, 1000, 1000), None);
        assert_eq!(untrusted(0o100600, 1000, 1000), None);
        assert_eq!(untrusted(0o100644, 1000, 1000), None);
        assert_eq!(
            untrusted(0o40777, 1000, 1000).as_deref(),
            Some("its group or everyone may write it (mode 777)")
        );
        assert_eq!(
            untrusted(0o100620, 1000, 1000).as_deref(),
            Some("its group or everyone may write it (mode 620)")
        );
        assert_eq!(
            untrusted(0o40700, 0, 1000).as_deref(),
            Some("it belongs to uid 0, not to this user (uid 1000)")
        );
    }
}
