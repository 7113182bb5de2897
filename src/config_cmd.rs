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
                "{}: valid ({} trace exporter(s), {} metric exporter(s), strategy {})",
                file.display(),
                cfg.trace_exporters().len(),
                cfg.metric_exporters().len(),
                cfg.export_strategy
            );
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
