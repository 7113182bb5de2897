//! `lens compile`: the compilation cache warmed before a job's ranks start.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lens::config::env::ProcessEnv;

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

pub fn run(args: CompileArgs) -> ExitCode {
    let warmed = match lens::wasm::sandbox::warm::warm_file(&args.file, args.fuel, &ProcessEnv) {
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
        match &w.outcome {
            Ok(cached) => println!(
                "{} ({}): {}",
                w.path.display(),
                w.exporters.join(", "),
                if *cached {
                    String::from("already in the cache")
                } else {
                    format!("compiled in {:.1} s", w.elapsed.as_secs_f64())
                }
            ),
            Err(e) => {
                failed = true;
                eprintln!("error: {e}");
            }
        }
    }
    if failed {
        ExitCode::from(EXIT_BAD_INPUT)
    } else {
        ExitCode::SUCCESS
    }
}
