//! Compiled functions on disk: Cranelift's incremental compilation cache, so that a component
//! sharing most of its code with one compiled before (a Python guest after an edit to its
//! exporter: the same CPython, another snapshot) compiles only what changed.
//!
//! `<cache dir>/functions/<2 hex>/<SHA-256 of the key>`: Cranelift's key (a hash of the
//! function's IR and the compiler's settings) names the entry; the entry is a BLAKE3 digest of
//! the key and the value, then the value (Cranelift's serialized compiled code). Like the
//! artefacts beside it, entries become native code: one is used only if it belongs to this user
//! and no one else may write it, and only if its digest matches; anything else is a miss (the
//! function is compiled again). The directory is pruned, least recently written first, to a
//! quarter of the cache's `max_mb` after each compile that added to it.

use std::borrow::Cow;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest, Sha256};
use wasmtime::CacheStore;

use super::files::{private_dir, untrusted_path, write_unsynced};

/// The functions directory of the cache at `cache_dir`.
pub fn dir(cache_dir: &Path) -> PathBuf {
    cache_dir.join("functions")
}

/// The store the compile worker hands Cranelift.
#[derive(Debug)]
pub struct FunctionCache {
    dir: PathBuf,
}

impl FunctionCache {
    /// A store over `dir` (made private if missing); `None` when `dir` cannot be trusted.
    pub fn open(dir: PathBuf) -> Option<Self> {
        private_dir(&dir).ok()?;
        if let Some(why) = untrusted_path(&dir, true) {
            log::warn!("wasm cache: not using {}: {why}", dir.display());
            return None;
        }
        Some(Self { dir })
    }

    fn path(&self, key: &[u8]) -> PathBuf {
        let name = hex::encode(Sha256::digest(key));
        self.dir.join(&name[..2]).join(name)
    }
}

/// The digest an entry starts with: of the key's length, the key and the value.
fn digest(key: &[u8], value: &[u8]) -> blake3::Hash {
    let mut h = blake3::Hasher::new();
    h.update(&(key.len() as u64).to_le_bytes());
    h.update(key);
    h.update(value);
    h.finalize()
}

impl CacheStore for FunctionCache {
    fn get(&self, key: &[u8]) -> Option<Cow<'_, [u8]>> {
        let path = self.path(key);
        if untrusted_path(&path, false).is_some() {
            return None;
        }
        let entry = fs::read(&path).ok()?;
        let (recorded, value) = entry.split_at_checked(blake3::OUT_LEN)?;
        let recorded: [u8; blake3::OUT_LEN] = recorded.try_into().ok()?;
        (digest(key, value) == blake3::Hash::from_bytes(recorded))
            .then(|| Cow::Owned(value.to_vec()))
    }

    fn insert(&self, key: &[u8], value: Vec<u8>) -> bool {
        let path = self.path(key);
        let parent = path.parent().expect("an entry is in a subdirectory");
        let mut entry = Vec::with_capacity(blake3::OUT_LEN + value.len());
        entry.extend_from_slice(digest(key, &value).as_bytes());
        entry.extend_from_slice(&value);
        // No fsync per entry (thousands per compile): a torn entry fails its digest.
        private_dir(parent).is_ok() && write_unsynced(&path, &entry).is_ok()
    }
}

/// Removes the entries written longest ago until the directory holds at most `max_bytes`.
pub fn prune(dir: &Path, max_bytes: u64) {
    let Ok(subdirs) = fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<(SystemTime, u64, PathBuf)> = subdirs
        .filter_map(Result::ok)
        .filter_map(|d| fs::read_dir(d.path()).ok())
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((m.modified().ok()?, m.len(), e.path()))
        })
        .collect();
    let mut total: u64 = entries.iter().map(|e| e.1).sum();
    if total <= max_bytes {
        return;
    }
    entries.sort();
    for (_, len, path) in entries {
        if total <= max_bytes {
            break;
        }
        if fs::remove_file(&path).is_ok() {
            total -= len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wasm::artefact::cache::files::write_atomically;

    #[test]
    fn an_entry_reads_back_and_a_damaged_one_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let store = FunctionCache::open(dir.path().join("functions")).unwrap();
        assert!(store.get(b"k").is_none());
        assert!(store.insert(b"k", b"compiled".to_vec()));
        assert_eq!(store.get(b"k").as_deref(), Some(&b"compiled"[..]));
        assert!(store.get(b"other").is_none());
        // A flipped byte, a truncation: misses, never wrong code.
        let path = store.path(b"k");
        let mut bytes = fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        write_atomically(&path, &bytes).unwrap();
        assert!(store.get(b"k").is_none());
        write_atomically(&path, &bytes[..10]).unwrap();
        assert!(store.get(b"k").is_none());
        // Written by someone else's rules (group-writable): not used.
        assert!(store.insert(b"k", b"compiled".to_vec()));
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o666)).unwrap();
        assert!(store.get(b"k").is_none());
    }

    #[test]
    fn pruning_keeps_the_newest_entries_within_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let store = FunctionCache::open(dir.path().join("f")).unwrap();
        for i in 0..10u8 {
            assert!(store.insert(&[i], vec![i; 1000]));
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        prune(&dir.path().join("f"), 5 * 1032);
        let kept: Vec<u8> = (0..10u8).filter(|i| store.get(&[*i]).is_some()).collect();
        assert_eq!(kept, [5, 6, 7, 8, 9]);
    }
}
