//! `lens compile`: the compilation cache warmed before a job's ranks start.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lens::config::env::ProcessEnv;

use super::EXIT_BAD_INPUT;

#[derive(Args)]
pub struct CompileArgs {
    /// A `.wasm` component, an `oci://HOST/REPOSITORY[:TAG]@sha256:DIGEST` reference (pulled
    /// into the node's store first), or a config file (`.toml`) whose wasm exporters to
    /// compile.
    file: PathBuf,
    /// For a component: compile for exporters with a fuel budget (`fuel_per_call`), whose
    /// engine differs.
    #[arg(long)]
    fuel: bool,
    /// For a reference: follow a tag without a digest.
    #[arg(long)]
    allow_unpinned: bool,
    /// For a reference: a registry (`host:port`) reached over plain http (repeatable; loopback
    /// always is).
    #[arg(long = "insecure-registry", value_name = "HOST:PORT")]
    insecure_registries: Vec<String>,
    /// For a reference: use it only if it carries a valid signature by this public key
    /// (cosign's `cosign.pub`), as an entry's `verify = { key = … }`.
    #[arg(long, value_name = "FILE")]
    verify_key: Option<PathBuf>,
}

pub fn run(args: CompileArgs) -> ExitCode {
    let entry = lens::config::WasmExporterSpec {
        fuel_per_call: args.fuel.then_some(u64::MAX),
        allow_unpinned: args.allow_unpinned.then_some(true),
        insecure_registries: args.insecure_registries.clone(),
        verify: args
            .verify_key
            .clone()
            .map(|key| lens::config::VerifySpec { key }),
        ..Default::default()
    };
    let warmed = match lens::wasm::sandbox::warm::warm_file(&args.file, &entry, &ProcessEnv) {
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
