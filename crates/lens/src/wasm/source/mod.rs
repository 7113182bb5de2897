//! Stage 1, source: where a component's bytes come from, read within bounds before anyone
//! looks at them: a file named by path, or a component in an OCI registry ([`oci`]) resolved
//! to a verified file in the node's store. For a file: only a regular file within the size limit is
//! opened, and only a component's header lets it be read whole (a FIFO, a device or a huge
//! file is refused at once).
//!
//! Owns: the file's metadata and its bounded reading, each failure a [`LoadError`] naming what
//! is wrong with the file. May call: nothing else of the wasm host (what a header must be is
//! the caller's check, `checks::header`, handed in).

pub mod oci;

use std::io::Read;
use std::path::Path;

use crate::error::LoadError;

/// Creates `dir` and its missing parents readable and writable by this user only (the
/// compilation cache holds native code, the component store what it compiles).
pub(crate) fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Default of `max_file_mib`: the largest `.wasm` file read (the Python and JavaScript example
/// guests are under 20 MiB).
pub const DEFAULT_MAX_FILE_MIB: u64 = 256;

/// How many bytes of a file are read first and handed to the header check.
pub(crate) const HEADER_BYTES: u64 = 8;

/// The metadata of `path` if it is a regular file of at most `max_bytes` (what is checked
/// before anything is read).
pub(crate) fn checked_meta(path: &Path, max_bytes: u64) -> Result<std::fs::Metadata, LoadError> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => LoadError::NotFound,
        _ => LoadError::Unreadable(e),
    })?;
    if meta.is_dir() {
        return Err(LoadError::IsDirectory);
    }
    if !meta.is_file() {
        return Err(LoadError::NotRegularFile {
            kind: special_kind(&meta),
        });
    }
    if meta.len() > max_bytes {
        return Err(LoadError::TooLarge {
            size: meta.len(),
            limit: max_bytes,
        });
    }
    Ok(meta)
}

/// The file's bytes: its first [`HEADER_BYTES`] first, passed to `header` (nothing more is
/// read from a file it refuses), then the rest, never more than `max_bytes` even if the file
/// grows meanwhile.
pub(crate) fn read(
    path: &Path,
    max_bytes: u64,
    header: impl FnOnce(&[u8]) -> Result<(), LoadError>,
) -> Result<Vec<u8>, LoadError> {
    let file = std::fs::File::open(path).map_err(LoadError::Unreadable)?;
    let mut reader = file.take(max_bytes.saturating_add(1));
    let mut bytes = Vec::new();
    (&mut reader)
        .take(HEADER_BYTES)
        .read_to_end(&mut bytes)
        .map_err(LoadError::Unreadable)?;
    header(&bytes)?;
    reader
        .read_to_end(&mut bytes)
        .map_err(LoadError::Unreadable)?;
    if bytes.len() as u64 > max_bytes {
        return Err(LoadError::TooLarge {
            size: bytes.len() as u64,
            limit: max_bytes,
        });
    }
    Ok(bytes)
}

/// What kind of file `meta` describes when it is neither a regular file nor a directory.
fn special_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}
