//! `lens new <python|js|rust> <dir> [--signals spans,metrics,logs] [--kind exporter|processor]
//! [--template lines|http]`: a project that builds outside this repository.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::manifest::{Language, Manifest, ProjectKind, ProjectSignal, check_name};
use super::sdk::{self, SDK_VERSION};
use super::templates::Template;
use crate::{EXIT_BAD_INPUT, EXIT_RUN_FAILED};

#[derive(Args, Debug)]
pub struct NewArgs {
    /// The exporter's language.
    language: Language,
    /// The project's folder (made; it must not exist or be empty).
    dir: PathBuf,
    /// The signals it serves, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "spans")]
    signals: Vec<ProjectSignal>,
    /// What to make: an exporter, or a processor (run before the exporters, to drop, redact
    /// or rename items).
    #[arg(long, value_enum, default_value = "exporter")]
    kind: ProjectKind,
    /// The component's name (default: the folder's name).
    #[arg(long)]
    name: Option<String>,
    /// What the exporter does: `lines` writes a line per item to stdout; `http` is a vendor
    /// integration POSTing each batch's OTLP to `settings.endpoint`, its key a host-held
    /// credential (built against a world importing wasi:http).
    #[arg(long, value_enum, default_value = "lines")]
    template: Template,
}

pub fn run(args: NewArgs) -> ExitCode {
    match new(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, e)) => {
            eprintln!("error: {e}");
            ExitCode::from(code)
        }
    }
}

fn new(args: &NewArgs) -> Result<(), (u8, String)> {
    let bad = |e: String| (EXIT_BAD_INPUT, e);
    if args.dir.exists()
        && std::fs::read_dir(&args.dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(bad(format!(
            "{} exists and is not empty: `lens new` makes a new folder",
            args.dir.display()
        )));
    }
    let name = match &args.name {
        Some(n) => n.clone(),
        None => std::path::absolute(&args.dir)
            .ok()
            .as_deref()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| bad(format!("{}: name the project's folder", args.dir.display())))?,
    };
    check_name(&name).map_err(|e| {
        bad(format!(
            "{e}{}",
            if args.name.is_none() {
                " (the folder's name is the default: pass --name)"
            } else {
                ""
            }
        ))
    })?;
    let http = args.template == Template::Http;
    if http && args.kind == ProjectKind::Processor {
        return Err(bad(
            "--template http makes an exporter (a processor sends nothing): drop --kind \
             processor"
                .into(),
        ));
    }
    let manifest = Manifest {
        name,
        language: args.language,
        kind: args.kind,
        signals: args.signals.clone(),
        sdk: SDK_VERSION.to_string(),
        http,
    };
    manifest
        .validate()
        .map_err(|e| bad(format!("--signals: {e}")))?;
    let failed = |e: String| (EXIT_RUN_FAILED, e);
    let home = super::home().map_err(bad)?;
    let installed = sdk::install(&home).map_err(|e| {
        failed(format!(
            "installing the SDKs under {}: {e}",
            home.join("sdk").display()
        ))
    })?;
    for (path, text) in super::templates::files(&manifest, &installed) {
        let to = args.dir.join(path);
        std::fs::create_dir_all(to.parent().expect("a file in the project"))
            .and_then(|()| std::fs::write(&to, text))
            .map_err(|e| failed(format!("{}: {e}", to.display())))?;
    }
    let signals: Vec<String> = manifest.signals.iter().map(|s| s.to_string()).collect();
    println!(
        "Created {} {} `{}` ({}) in {}",
        manifest.language.display_name(),
        manifest.kind.as_str(),
        manifest.name,
        signals.join(", "),
        args.dir.display()
    );
    println!(
        "  SDK {SDK_VERSION}: {}",
        installed.sdk(manifest.language.as_str()).display()
    );
    println!("Next:");
    println!("  cd {}", args.dir.display());
    println!("  lens build");
    if manifest.http {
        println!(
            "  (README.md: trying it against the stand-in ingest in test_server.py, with a \
             host-held key)"
        );
    } else {
        println!("  lens check build/{}.wasm", manifest.name);
    }
    Ok(())
}
