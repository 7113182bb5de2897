//! `lens spool status DIR`: what an exporter's disk spool holds (a job that ended during an
//! outage leaves one), read without taking its lock and without changing it; `lens spool
//! replay DIR --config FILE`: sends it through the config's exporter.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use lens::spool::Spool;
use lens::{LensConfig, Signal, Telemetry};

use super::{EXIT_BAD_INPUT, EXIT_RUN_FAILED};

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

/// `lens spool replay DIR --config FILE [--exporter NAME]`: sends what the spool at `dir`
/// holds through the exporter entry of `config` that wrote it (the spool's signal; `exporter`
/// names it when the config has several with a spool), within `timeout`. Exit 0 when all of it
/// was delivered, 1 when some stays spooled (the exporter is still down), 2 on bad input.
pub fn replay(dir: &Path, config: &Path, exporter: Option<&str>, timeout: Duration) -> ExitCode {
    match replay_inner(dir, config, exporter, timeout) {
        Ok((replayed, left, corrupt, noun)) => {
            println!(
                "{}: {replayed} {noun} replayed, {left} still spooled{}",
                dir.display(),
                if corrupt > 0 {
                    format!(", {corrupt} in damaged records skipped")
                } else {
                    String::new()
                }
            );
            if left == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(EXIT_RUN_FAILED)
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

fn replay_inner(
    dir: &Path,
    config: &Path,
    exporter: Option<&str>,
    timeout: Duration,
) -> Result<(u64, u64, u64, &'static str), String> {
    if !dir.is_dir() {
        return Err(format!(
            "spool directory {}: not found or not a directory",
            dir.display()
        ));
    }
    let (signal, _, _) = Spool::inspect(dir).map_err(|e| e.to_string())?;
    let Some(signal) = signal else {
        // No segment: nothing to send.
        return Ok((0, 0, 0, "items"));
    };
    let mut config = LensConfig::load(Some(config)).map_err(|e| e.to_string())?;
    let entries = &config.signal(signal).exporters;
    let spooling: Vec<usize> = (0..entries.len())
        .filter(|&i| entries[i].spool().is_some())
        .filter(|&i| exporter.is_none_or(|n| entries[i].display_name() == n))
        .collect();
    let chosen = match (spooling.as_slice(), exporter) {
        ([i], _) => *i,
        ([], Some(name)) => {
            return Err(format!(
                "the config has no {signal} exporter `{name}` with a `spool`"
            ));
        }
        ([], None) => {
            return Err(format!(
                "the config has no {signal} exporter with a `spool`"
            ));
        }
        (_, _) => {
            return Err(format!(
                "the config has several {signal} exporters with a `spool`: name one with \
                 --exporter"
            ));
        }
    };
    // That entry alone, its spool at `dir`, exporting from this process.
    let mut spec = config.signal(signal).exporters[chosen].clone();
    if let Some(s) = spec.spool_mut() {
        s.dir = Some(dir.to_path_buf());
    }
    for (other, list) in [
        (Signal::Traces, &mut config.traces.exporters),
        (Signal::Metrics, &mut config.metrics.exporters),
        (Signal::Logs, &mut config.logs.exporters),
    ] {
        list.clear();
        if other == signal {
            list.push(spec.clone());
        }
    }
    // A spool holds batches after the processors: none runs again.
    config.traces.processors.clear();
    config.metrics.processors.clear();
    config.logs.processors.clear();
    config.enabled = true;
    config.export_strategy = "all_ranks".into();
    config.traces_enabled = signal == Signal::Traces;
    config.logs_enabled = signal == Signal::Logs;
    config.metrics_enabled = signal == Signal::Metrics;
    let handle = Telemetry::builder(config)
        .rank(0)
        .world_size(1)
        .install_global(false)
        .install()
        .map_err(|e| e.to_string())?;
    if signal == Signal::Metrics {
        // A metric spool is replayed by a flush (the reader exports nothing when nothing was
        // recorded); the shutdown after it only releases it.
        let _ = handle.force_flush(timeout);
    }
    let _ = handle.shutdown(timeout);
    let stats = handle.stats();
    let e = stats
        .exporters_of(signal)
        .first()
        .ok_or("the exporter was not installed")?;
    Ok((
        e.replayed,
        e.in_spool,
        e.dropped_spool_corrupt,
        signal.items(),
    ))
}
