//! `lens spool status DIR`: what an exporter's disk spool holds (a job that ended during an
//! outage leaves one), read without taking its lock and without changing it.

use std::path::Path;
use std::process::ExitCode;

use lens::spool::Spool;

use super::EXIT_BAD_INPUT;

/// Prints what the spool at `dir` holds (`--json`: one JSON object); exit 2 if it cannot be
/// read, with the file or directory named.
pub fn status(dir: &Path, json: bool) -> ExitCode {
    if !dir.is_dir() {
        eprintln!(
            "error: spool directory {}: not found or not a directory",
            dir.display()
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let (signal, status, opened) = match Spool::inspect(dir) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let signal = signal.map(|s| s.as_str());
    if json {
        let doc = serde_json::json!({
            "dir": dir.display().to_string(),
            "signal": signal,
            "batches": status.records,
            "items": status.items,
            "bytes": status.bytes,
            "segments": status.segments,
            "corrupt_items": opened.corrupt_items,
            "warnings": opened.warnings,
        });
        println!("{doc}");
    } else {
        let items = match signal {
            Some("traces") => "spans",
            Some("metrics") => "data points",
            Some("logs") => "log records",
            _ => "items",
        };
        println!(
            "{}: {} batch(es), {} {items} waiting to be replayed, in {} segment(s), {} bytes{}",
            dir.display(),
            status.records,
            status.items,
            status.segments,
            status.bytes,
            signal.map(|s| format!(" ({s})")).unwrap_or_default()
        );
        for w in &opened.warnings {
            println!("warning: {w}");
        }
    }
    ExitCode::SUCCESS
}
