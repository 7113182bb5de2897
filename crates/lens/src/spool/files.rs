//! The spool's files: its directory (checked), its lock, its segments in order and their
//! acknowledgements.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use super::segment::{self, HEADER_BYTES};
use super::{MAX_RECORD_BYTES, SpoolError, SpoolLimits};
use crate::signal::Signal;

/// `dir` as a spool may use it: created (0700) if missing; else a real directory (not a
/// symlink), this user's, writable.
pub(super) fn checked_dir(dir: &Path) -> Result<(), SpoolError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let bad = |why: String| SpoolError::Dir {
        dir: dir.to_path_buf(),
        why,
    };
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_symlink() => {
            let target = fs::read_link(dir)
                .map(|t| t.display().to_string())
                .unwrap_or_default();
            return Err(bad(format!(
                "is a symlink (to {target}): a spool must be a directory of its own, not a link \
                 to one"
            )));
        }
        Ok(meta) if !meta.is_dir() => return Err(bad("is not a directory".into())),
        Ok(meta) => {
            // SAFETY: geteuid has no preconditions.
            let me = unsafe { libc::geteuid() };
            if meta.uid() != me {
                return Err(bad(format!(
                    "belongs to user {}, not this one ({me}): a spool holds the job's data",
                    meta.uid()
                )));
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| bad(format!("cannot be created ({e})")))?;
        }
        Err(e) => return Err(bad(format!("cannot be read ({e})"))),
    }
    Ok(())
}

/// The spool's lock, held for the process's life; the holder's pid written in it.
pub(super) fn take_lock(dir: &Path) -> Result<File, SpoolError> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join("lock");
    let mut file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(|e| SpoolError::Dir {
            dir: dir.to_path_buf(),
            why: format!("is not writable ({e})"),
        })?;
    match file.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.take(64).read_to_string(&mut holder);
            let holder = match holder.trim() {
                "" => "pid unknown".to_string(),
                pid => format!("pid {pid}"),
            };
            return Err(SpoolError::Busy {
                dir: dir.to_path_buf(),
                holder,
            });
        }
        Err(fs::TryLockError::Error(source)) => return Err(SpoolError::Io { path, source }),
    }
    let pid = std::process::id().to_string();
    file.set_len(0)
        .and_then(|()| file.write_all(pid.as_bytes()))
        .map_err(|source| SpoolError::Io {
            path: path.clone(),
            source,
        })?;
    Ok(file)
}

/// The segments in `dir`, oldest first (other files are left alone).
pub(super) fn segment_files(dir: &Path) -> Result<Vec<(u64, PathBuf)>, SpoolError> {
    let entries = fs::read_dir(dir).map_err(|e| SpoolError::Dir {
        dir: dir.to_path_buf(),
        why: format!("cannot be read ({e})"),
    })?;
    let mut found: Vec<(u64, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let seq = name.strip_prefix("seg-")?.strip_suffix(".spool")?;
            (seq.len() == 20)
                .then(|| seq.parse().ok())
                .flatten()
                .map(|n| (n, e.path()))
        })
        .collect();
    found.sort();
    Ok(found)
}

/// A segment's signal (`None` if it was cut before its header) and records, its header checked
/// (of `signal`, if given); at most a segment's size plus one record is read.
pub(super) fn read_segment(
    path: &Path,
    signal: Option<Signal>,
    limits: &SpoolLimits,
) -> Result<(Option<Signal>, segment::Scanned), SpoolError> {
    let io_err = |source| SpoolError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = fs::symlink_metadata(path).map_err(io_err)?;
    let bad = |why: String| SpoolError::Segment {
        file: path.to_path_buf(),
        why,
    };
    if !meta.is_file() {
        return Err(bad("is not a regular file".into()));
    }
    let limit = limits
        .segment_bytes
        .saturating_add(u64::from(MAX_RECORD_BYTES) + 64);
    if meta.len() > limit {
        return Err(bad(format!(
            "is {} bytes, more than a segment can be",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|f| f.take(limit).read_to_end(&mut bytes))
        .map_err(io_err)?;
    if bytes.len() < HEADER_BYTES {
        // A segment cut before its header was written: nothing in it.
        let scanned = segment::Scanned {
            corrupt_bytes: bytes.len() as u64,
            ..Default::default()
        };
        return Ok((None, scanned));
    }
    let of = segment::check_header(&bytes, signal).map_err(bad)?;
    Ok((Some(of), segment::scan(&bytes)))
}

pub(super) fn ack_path(segment: &Path) -> PathBuf {
    segment.with_extension("ack")
}

/// Records replayed of a segment, from its ack file (8 bytes and their CRC-32); 0 if absent or
/// damaged (then they are replayed again: at least once).
pub(super) fn read_ack(path: &Path) -> usize {
    let Ok(bytes) = fs::read(path) else {
        return 0;
    };
    match bytes.as_slice() {
        [n @ .., a, b, c, d] if n.len() == 8 => {
            let crc = u32::from_le_bytes([*a, *b, *c, *d]);
            if crc32fast::hash(n) != crc {
                return 0;
            }
            u64::from_le_bytes(n.try_into().expect("8 bytes")) as usize
        }
        _ => 0,
    }
}

/// Writes an ack file whole or not at all (a temporary file renamed over it).
pub(super) fn write_ack(path: &Path, acked: usize) -> io::Result<()> {
    let mut bytes = (acked as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(&crc32fast::hash(&bytes).to_le_bytes());
    let tmp = path.with_extension("ack.tmp");
    fs::write(&tmp, &bytes)?;
    fs::rename(&tmp, path)
}
