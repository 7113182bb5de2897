//! Exporters shipped inside the `lens` binary (built by `build.rs` from `guest-examples/`).

use std::path::{Path, PathBuf};

/// The JSON-lines exporter (`guest-examples/rust-jsonl`), compiled when Lens was built.
/// Settings: `path` (e.g. `/out/rank-{dl.rank}.jsonl`, in a pre-opened directory) or none
/// for stdout; `include_resource`.
pub const JSONL_EXPORTER: &[u8] = include_bytes!(env!("LENS_BUILTIN_JSONL_WASM"));

/// File name the built-in exporter is written under.
pub const JSONL_EXPORTER_FILE: &str = "lens-jsonl-exporter.wasm";

/// Writes the built-in JSON-lines exporter into `dir` (unless an identical copy is there) and
/// returns its path, for configs to point at.
pub fn write_jsonl_exporter(dir: &Path) -> std::io::Result<PathBuf> {
    let path = dir.join(JSONL_EXPORTER_FILE);
    if std::fs::read(&path)
        .map(|b| b != JSONL_EXPORTER)
        .unwrap_or(true)
    {
        std::fs::create_dir_all(dir)?;
        let tmp = dir.join(format!(".{JSONL_EXPORTER_FILE}.{}", std::process::id()));
        std::fs::write(&tmp, JSONL_EXPORTER)?;
        std::fs::rename(&tmp, &path)?;
    }
    Ok(path)
}
