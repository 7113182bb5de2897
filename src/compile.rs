//! `lens compile`: the compilation cache warmed before a job's ranks start.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use lens::LensConfig;
use lens::config::env::ProcessEnv;
use lens::config::{ExporterSpec, SignalConfig, WasmExporterSpec};

use super::EXIT_BAD_INPUT;

#[derive(Args)]
pub struct CompileArgs {
    /// A `.wasm` component, or a config file (`.toml`) whose wasm exporters to compile.
    file: PathBuf,
    /// For a `.wasm` file: compile for exporters with a fuel budget (`fuel_per_call`), whose
    /// engine differs.
    #[arg(long)]
    fuel: bool,
}

/// The configuration `file` stands for: the file itself, or the environment's configuration
/// with one exporter for a `.wasm` file.
fn config_for(args: &CompileArgs) -> Result<LensConfig, String> {
    let is_wasm = std::fs::File::open(&args.file)
        .and_then(|mut f| {
            use std::io::Read;
            let mut magic = [0u8; 4];
            f.read_exact(&mut magic).map(|_| &magic == b"\0asm")
        })
        .unwrap_or(false);
    if !is_wasm {
        return LensConfig::load(Some(&args.file)).map_err(|e| e.to_string());
    }
    let mut config = LensConfig::load(None).map_err(|e| e.to_string())?;
    config.traces = SignalConfig {
        exporters: vec![ExporterSpec::Wasm(WasmExporterSpec {
            path: args.file.clone(),
            fuel_per_call: args.fuel.then_some(u64::MAX),
            ..Default::default()
        })],
    };
    config.metrics.exporters.clear();
    config.logs.exporters.clear();
    Ok(config)
}

pub fn run(args: CompileArgs) -> ExitCode {
    let config = match config_for(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let warmed = match lens::wasm::warm_cache(&config, &ProcessEnv) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    if warmed.is_empty() {
        println!("{}: no wasm exporters", args.file.display());
    }
    let mut failed = false;
    for w in &warmed {
        let what = match &w.outcome {
            Ok(true) => String::from("already in the cache"),
            Ok(false) => format!("compiled in {:.1} s", w.elapsed.as_secs_f64()),
            Err(e) => {
                failed = true;
                eprintln!("error: {e}");
                continue;
            }
        };
        println!("{} ({}): {what}", display(&w.path), w.exporters.join(", "));
    }
    if let Some(dir) = lens::wasm::cache::shared(&config.wasm_cache, &ProcessEnv) {
        println!("cache: {}", dir.stats().directory.display());
    }
    if failed {
        ExitCode::from(EXIT_BAD_INPUT)
    } else {
        ExitCode::SUCCESS
    }
}

fn display(path: &Path) -> String {
    path.display().to_string()
}
