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
    /// Sign the pushed component with this private key, in cosign's layout (so `cosign
    /// verify --key` and an entry's `verify = { key = … }` accept it): cosign's encrypted key
    /// (`cosign generate-key-pair`; its password in `COSIGN_PASSWORD`) or a PKCS#8 ECDSA P-256
    /// key.
    #[arg(long, value_name = "FILE")]
    sign_key: Option<PathBuf>,
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
    use lens::wasm::source::oci;
    // Read before anything is pushed: a key that cannot sign fails the push at once.
    let key = match &args.sign_key {
        Some(path) => {
            match oci::SignKey::read(path, std::env::var(oci::SIGN_PASSWORD_VAR).ok().as_deref()) {
                Ok(key) => Some(key),
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(EXIT_BAD_INPUT);
                }
            }
        }
        None => None,
    };
    match oci::push(
        &args.file,
        &args.reference,
        &args.insecure_registries,
        args.max_file_mib << 20,
        key.as_ref(),
    ) {
        Ok(pinned) => {
            println!("pushed {} as {pinned}", args.file.display(),);
            if let Some(path) = &args.sign_key {
                println!(
                    "signed with {} (cosign's layout, tag {})",
                    path.display(),
                    oci::signature_tag(pinned.digest.as_deref().unwrap_or_default())
                );
            }
            println!("name it in a config (pinned: every node loads exactly this):");
            println!("  path = \"{pinned}\"");
            if args.sign_key.is_some() {
                println!(
                    "  verify = {{ key = \"PUBLIC_KEY.pub\" }}  # the signing key's public half"
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: pushing {}: {e}", args.file.display());
            ExitCode::from(EXIT_RUN_FAILED)
        }
    }
}
