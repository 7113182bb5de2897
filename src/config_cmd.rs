//! `lens config validate` and `lens config show`.

use std::path::Path;
use std::process::ExitCode;

use lens::LensConfig;

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
        Ok(cfg) => {
            print!("{}", cfg.to_toml());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}
