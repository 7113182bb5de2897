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
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}
