//! Each artefact's integrity record: what the cache wrote, checked before it is mapped.
//!
//! An artefact is native code that `Component::deserialize_file` trusts: wasmtime checks its
//! header and engine settings, not its code, so a flipped byte there runs as a wrong
//! instruction (a crash, or worse, silently). The ownership checks keep other users out of the
//! cache; this record catches what they cannot: a file changed after it was written (a tool, a
//! shared file system's fault, a hand that edited it). `index/<artefact name>.integrity` holds
//! `blake3 <hex digest> <length>`, written before the artefact under the entry's lock, so a
//! reader holding that lock sees the two together.
//!
//! What the record does not stop: a process of the same user that rewrites both (it can run
//! code as that user anyway), or one that rewrites the artefact between the check and the
//! mapping (the same).

use std::fs::File;
use std::path::{Path, PathBuf};

use super::files::{sidecar, write_atomically};

/// What checking an artefact against its record found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// The artefact is what was written.
    Intact,
    /// No usable record: an artefact from before records existed, or a record removed.
    Unrecorded,
    /// The artefact differs from its record (the text says how).
    Altered(String),
}

/// Where the record of `artifact` lives in the `index` directory.
fn record_path(index: &Path, artifact: &Path) -> PathBuf {
    sidecar(index, artifact, "integrity")
}

/// The record's text for `compiled`.
fn record_text(compiled: &[u8]) -> String {
    format!(
        "blake3 {} {}\n",
        blake3::hash(compiled).to_hex(),
        compiled.len()
    )
}

/// Writes the record of `compiled`, the bytes about to be stored at `artifact`.
pub(super) fn write_record(index: &Path, artifact: &Path, compiled: &[u8]) -> std::io::Result<()> {
    write_atomically(
        &record_path(index, artifact),
        record_text(compiled).as_bytes(),
    )
}

/// Removes the record of `artifact` (pruned or discarded).
pub(super) fn remove_record(index: &Path, artifact: &Path) {
    let _ = std::fs::remove_file(record_path(index, artifact));
}

/// The BLAKE3 digest of a file: mapped and hashed on every core (large artefacts are tens of
/// MiB; `docs/benchmarks.md`, start-up, has what this costs of a cached load).
pub fn file_digest(path: &Path) -> std::io::Result<blake3::Hash> {
    let mut hasher = blake3::Hasher::new();
    hasher.update_mmap_rayon(path)?;
    Ok(hasher.finalize())
}

/// Parses a record: `blake3 <64 hex digits> <length>`; `None` for anything else.
fn parse_record(text: &str) -> Option<(blake3::Hash, u64)> {
    let mut words = text.trim_end_matches('\n').split(' ');
    let (Some("blake3"), Some(hex), Some(len), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return None;
    };
    Some((blake3::Hash::from_hex(hex).ok()?, len.parse().ok()?))
}

/// Checks `artifact` against its record in `index`: its length first (no read when it
/// differs), then its digest. A record larger than any valid one is not read.
pub(super) fn verify(index: &Path, artifact: &Path) -> Verdict {
    use std::io::Read;
    let mut text = String::new();
    let read = File::open(record_path(index, artifact))
        .and_then(|f| f.take(200).read_to_string(&mut text));
    let Some((digest, len)) = read.ok().and_then(|_| parse_record(&text)) else {
        return Verdict::Unrecorded;
    };
    let actual_len = match std::fs::metadata(artifact) {
        Ok(m) => m.len(),
        Err(e) => return Verdict::Altered(format!("cannot read it: {e}")),
    };
    if actual_len != len {
        return Verdict::Altered(format!("it is {actual_len} bytes, {len} were written"));
    }
    match file_digest(artifact) {
        Ok(actual) if actual == digest => Verdict::Intact,
        Ok(_) => Verdict::Altered(String::from(
            "its content differs from what was written (BLAKE3 digest mismatch)",
        )),
        Err(e) => Verdict::Altered(format!("cannot read it: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_checked_for_length_then_content() {
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join("index");
        std::fs::create_dir(&index).unwrap();
        let artifact = dir.path().join("a.cwasm");
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
        std::fs::write(&artifact, &bytes).unwrap();
        assert_eq!(verify(&index, &artifact), Verdict::Unrecorded);
        write_record(&index, &artifact, &bytes).unwrap();
        assert_eq!(verify(&index, &artifact), Verdict::Intact);

        let mut flipped = bytes.clone();
        flipped[50_000] ^= 0x10;
        std::fs::write(&artifact, &flipped).unwrap();
        assert_eq!(
            verify(&index, &artifact),
            Verdict::Altered(
                "its content differs from what was written (BLAKE3 digest mismatch)".into()
            )
        );
        std::fs::write(&artifact, &bytes[..10]).unwrap();
        assert_eq!(
            verify(&index, &artifact),
            Verdict::Altered("it is 10 bytes, 100000 were written".into())
        );

        for bad in [
            "",
            "blake3",
            "sha256 00 10",
            "blake3 zz 10",
            &format!("blake3 {} ten", blake3::hash(b"").to_hex()),
            &format!("blake3 {} 10 extra", blake3::hash(b"").to_hex()),
        ] {
            std::fs::write(record_path(&index, &artifact), bad).unwrap();
            assert_eq!(verify(&index, &artifact), Verdict::Unrecorded, "{bad:?}");
        }
    }
}
