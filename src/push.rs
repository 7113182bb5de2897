//! `lens push FILE oci://HOST/REPOSITORY:TAG`: a component published in the layout `wkg oci
//! push` writes, and the config line that names it by digest.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{EXIT_BAD_INPUT, EXIT_RUN_FAILED};

#[derive(Args)]
pub struct PushArgs {
    /// The component file, e.g. `build/acme-exporter.wasm`.
    file: PathBuf,
    /// Where to push it: `oci://HOST[:PORT]/REPOSITORY:TAG`.
    reference: String,
    /// A registry (`host:port`) reached over plain http (repeatable; loopback always is).
    #[arg(long = "insecure-registry", value_name = "HOST:PORT")]
    insecure_registries: Vec<String>,
    /// Largest file pushed, MiB (the default of an entry's `max_file_mib`).
    #[arg(long, default_value_t = lens::wasm::DEFAULT_MAX_FILE_MIB)]
    max_file_mib: u64,
}

pub fn run(args: PushArgs) -> ExitCode {
    if !args.reference.starts_with(lens::wasm::source::oci::SCHEME) {
        eprintln!(
            "error: `{}` is not an oci:// reference (oci://HOST[:PORT]/REPOSITORY:TAG)",
            args.reference
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    match lens::wasm::source::oci::push(
        &args.file,
        &args.reference,
        &args.insecure_registries,
        args.max_file_mib << 20,
    ) {
        Ok(pinned) => {
            println!("pushed {} as {pinned}", args.file.display(),);
            println!("name it in a config (pinned: every node loads exactly this):");
            println!("  path = \"{pinned}\"");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: pushing {}: {e}", args.file.display());
            ExitCode::from(EXIT_RUN_FAILED)
        }
    }
}
