//! `lens config validate` and `lens config show`.

use std::path::Path;
use std::process::ExitCode;

use lens::LensConfig;
use lens::config::ExporterSpec;

use super::EXIT_BAD_INPUT;

pub fn validate(file: &Path) -> ExitCode {
    match LensConfig::from_file(file) {
        Ok(cfg) => {
            println!(
                "{}: valid (strategy {})",
                file.display(),
                cfg.export_strategy
            );
            for line in exporter_lines(&cfg) {
                println!("  {line}");
            }
            for line in guest_memory_lines(&cfg) {
                println!("  {line}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// What each signal exports with, and where it comes from: a signal the file lists no
/// exporter for gets the `exporter` shorthand (`otlp` unless set), said so rather than counted
/// as if the file had it.
fn exporter_lines(cfg: &LensConfig) -> Vec<String> {
    lens::Signal::ALL
        .into_iter()
        .map(|signal| {
            let enabled = match signal {
                lens::Signal::Traces => cfg.traces_enabled,
                lens::Signal::Metrics => cfg.metrics_enabled,
                lens::Signal::Logs => cfg.logs_enabled,
            };
            let kinds: Vec<&str> = cfg
                .exporters_of(signal)
                .iter()
                .map(|e| match e {
                    ExporterSpec::Otlp(_) => "otlp",
                    ExporterSpec::Console(_) => "console",
                    ExporterSpec::None(_) => "none",
                    ExporterSpec::Wasm(_) => "wasm",
                    _ => "other",
                })
                .collect();
            let what = if kinds.is_empty() {
                "no exporter".to_string()
            } else {
                kinds.join(", ")
            };
            let source = if cfg.signal(signal).exporters.is_empty() {
                format!(
                    " (the file lists none: from `exporter` = {:?})",
                    cfg.exporter
                )
            } else {
                String::new()
            };
            let off = if enabled { "" } else { "; the signal is off" };
            format!("{:<8} {what}{source}{off}", signal.as_str())
        })
        .collect()
}

pub fn show(file: Option<&Path>) -> ExitCode {
    match LensConfig::load(file) {
        Ok(mut cfg) => {
            let guests = guest_memory_lines(&cfg);
            // The effective config: a wasm entry's unset keys at the values the host uses.
            for signal in lens::Signal::ALL {
                let batch = *cfg.batch_for(signal);
                let exporters = match signal {
                    lens::Signal::Traces => &mut cfg.traces.exporters,
                    lens::Signal::Metrics => &mut cfg.metrics.exporters,
                    lens::Signal::Logs => &mut cfg.logs.exporters,
                };
                for e in exporters {
                    if let ExporterSpec::Wasm(w) = e {
                        *w = lens::wasm::with_defaults(w, &batch.with_overrides(&w.batch));
                    }
                }
            }
            print!("{}", cfg.to_toml());
            for line in guests {
                println!("# {line}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// The sandboxed entries' worst case, one line each after a total (nothing without any).
fn guest_memory_lines(cfg: &LensConfig) -> Vec<String> {
    let entries = cfg.guest_memory();
    if entries.is_empty() {
        return Vec::new();
    }
    let sum: u64 = entries.iter().map(|e| e.worst_mib()).sum();
    let mut lines = vec![format!(
        "guest memory at worst (lanes × (memory_limit_mib + max_answer_mib)): {sum} MiB of \
         max_guest_memory_mib = {}",
        cfg.max_guest_memory_mib
    )];
    lines.extend(
        entries
            .iter()
            .map(|e| format!("  {} {}", e.key, e.describe())),
    );
    lines
}
