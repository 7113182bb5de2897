//! `lens build [dir]`: builds a project's component into `build/<name>.wasm` with the pinned
//! toolchain of its language, then prints the next command.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use clap::Args;

use super::manifest::{Language, Manifest, ProjectSignal};
use super::sdk::{self, InstalledSdk};
use super::tools;
use crate::{EXIT_BAD_INPUT, EXIT_RUN_FAILED};

#[derive(Args, Debug)]
pub struct BuildArgs {
    /// The project's folder (the one holding `lens-exporter.toml`).
    #[arg(default_value = ".")]
    dir: PathBuf,
}

pub fn run(args: BuildArgs) -> ExitCode {
    let started = Instant::now();
    let manifest = match Manifest::load(&args.dir) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    match build(&args.dir, &manifest) {
        Ok(out) => {
            let size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
            println!(
                "Built {} ({:.1} MB) in {:.1} s",
                out.display(),
                size as f64 / 1e6,
                started.elapsed().as_secs_f64()
            );
            println!("Next: lens check {}", out.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_RUN_FAILED)
        }
    }
}

/// Builds the component; returns its path.
pub fn build(dir: &Path, m: &Manifest) -> Result<PathBuf, String> {
    let home = super::home()?;
    let installed = sdk::install(&home).map_err(|e| {
        format!(
            "installing the SDKs under {}: {e}",
            home.join("sdk").display()
        )
    })?;
    let tools_dir = super::tools_dir()?;
    let out = m.output(dir);
    let build_dir = dir.join("build");
    std::fs::create_dir_all(&build_dir).map_err(|e| format!("{}: {e}", build_dir.display()))?;
    match m.language {
        Language::Python => python(dir, m, &installed, &tools_dir, &out)?,
        Language::Js => js(dir, m, &installed, &tools_dir, &out)?,
        Language::Rust => rust(dir, m, &installed, &out)?,
    }
    exports_match(&out, m)?;
    Ok(out)
}

/// The built component serves exactly the signals `lens-exporter.toml` lists, in its kind:
/// a Rust `export!` can list more or fewer than the manifest, and a config entry built from the
/// manifest would otherwise fail (or export a signal nobody asked for) only when loaded.
fn exports_match(out: &Path, m: &Manifest) -> Result<(), String> {
    let bytes = std::fs::read(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let names = lens::wasm::checks::structure::exports(&bytes, &Default::default())
        .map_err(|e| format!("{}: {e}", out.display()))?;
    let role = m.kind.as_str();
    // The host's own reading of the exports (the versions it loads), in signal order.
    let exported: Vec<ProjectSignal> = lens::wasm::GuestInterface::detect(&names)
        .into_iter()
        .filter(|i| i.role.as_str() == role)
        .map(|i| match i.signal {
            lens::Signal::Traces => ProjectSignal::Spans,
            lens::Signal::Metrics => ProjectSignal::Metrics,
            lens::Signal::Logs => ProjectSignal::Logs,
        })
        .collect();
    let listed = &m.signals;
    let missing: Vec<String> = listed
        .iter()
        .filter(|s| !exported.contains(s))
        .map(|s| format!("\"{s}\""))
        .collect();
    let extra: Vec<String> = exported
        .iter()
        .filter(|s| !listed.contains(s))
        .map(|s| format!("\"{s}\""))
        .collect();
    if missing.is_empty() && extra.is_empty() {
        return Ok(());
    }
    let shown = |v: &[ProjectSignal]| {
        let v: Vec<String> = v.iter().map(|s| format!("\"{s}\"")).collect();
        format!("[{}]", v.join(", "))
    };
    let them = |v: &[String]| if v.len() == 1 { "it" } else { "them" };
    let mut fix = Vec::new();
    if !extra.is_empty() {
        let it = them(&extra);
        fix.push(format!(
            "it also serves {}: add {it} to `signals`, or stop exporting {it}",
            extra.join(", ")
        ));
    }
    if !missing.is_empty() {
        let it = them(&missing);
        fix.push(format!(
            "it does not serve {}: export {it} (the SDK's `export!` in Rust), or remove {it} \
             from `signals`",
            missing.join(", ")
        ));
    }
    Err(format!(
        "{} serves {} as {} {role}, but lens-exporter.toml has `signals = {}`: {}",
        out.display(),
        shown(&exported),
        if role == "exporter" { "an" } else { "a" },
        shown(listed),
        fix.join("; ")
    ))
}

/// Whether `stamp` holds `text` (what the last install was made from).
fn stamped(stamp: &Path, text: &[u8]) -> bool {
    std::fs::read(stamp).is_ok_and(|s| s == text)
}

/// Runs a build step, printing its name and time.
fn step(name: &str, cmd: &mut Command) -> Result<String, String> {
    let started = Instant::now();
    let out = tools::run(name, cmd)?;
    eprintln!("  {name}: {:.1} s", started.elapsed().as_secs_f64());
    Ok(out)
}

/// The module componentize-py builds from (`python_entry.py`, written into `build/`).
const PYTHON_ENTRY: &str = "lens_build_entry";
const PYTHON_ENTRY_SOURCE: &str = include_str!("python_entry.py");

fn python(
    dir: &Path,
    m: &Manifest,
    installed: &InstalledSdk,
    tools_dir: &Path,
    out: &Path,
) -> Result<(), String> {
    let sdk_dir = installed.sdk("python");
    let t = tools::python(tools_dir, &sdk_dir.join("requirements.txt"))?;
    let mut cmd = Command::new(&t.componentize_py);
    cmd.arg("-d")
        .arg(m.wit_dir(installed))
        .arg("-w")
        .arg(m.world())
        .arg("componentize")
        .arg("-p")
        .arg(dir)
        .arg("-p")
        .arg(&sdk_dir)
        .arg("-p")
        .arg(&t.sdk_deps);
    // The project's own packages, reinstalled when its requirements change.
    let requirements = dir.join("requirements.txt");
    let wanted = std::fs::read(&requirements).unwrap_or_default();
    let listed = String::from_utf8_lossy(&wanted)
        .lines()
        .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    if listed {
        let deps = dir.join("build/python-deps");
        let stamp = dir.join("build/python-deps.requirements");
        if !stamped(&stamp, &wanted) {
            let _ = std::fs::remove_dir_all(&deps);
            let started = Instant::now();
            tools::pip_target(&t.pip, &requirements, &deps, true)?;
            std::fs::write(&stamp, &wanted).map_err(|e| format!("{}: {e}", stamp.display()))?;
            eprintln!(
                "  installed requirements.txt: {:.1} s",
                started.elapsed().as_secs_f64()
            );
        }
        cmd.arg("-p").arg(deps);
    }
    // The entry imports app.py and, before componentize-py's snapshot, what it imports lazily.
    let entry_dir = dir.join("build/python-entry");
    std::fs::create_dir_all(&entry_dir).map_err(|e| format!("{}: {e}", entry_dir.display()))?;
    let entry = entry_dir.join(format!("{PYTHON_ENTRY}.py"));
    std::fs::write(&entry, PYTHON_ENTRY_SOURCE).map_err(|e| format!("{}: {e}", entry.display()))?;
    cmd.arg("-p").arg(&entry_dir);
    cmd.arg(PYTHON_ENTRY).arg("-o").arg(out);
    // A Python error is the message; componentize-py's own Rust backtrace would bury it.
    cmd.env("RUST_BACKTRACE", "0");
    let started = Instant::now();
    tools::run_full("componentize-py", &mut cmd).map_err(python_hint)?;
    eprintln!(
        "  componentize-py: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// componentize-py's error for a missing exporter (or processor) class, said in the project's
/// terms.
fn python_hint((e, output): (String, String)) -> String {
    for (signal, class, factory) in [
        ("spans", "SpanExporter", "span_exporter(MyExporter)"),
        ("metrics", "MetricExporter", "metric_exporter(MyExporter)"),
        ("logs", "LogExporter", "log_exporter(MyExporter)"),
        ("spans", "SpanProcessor", "span_processor(MyProcessor)"),
        (
            "metrics",
            "MetricProcessor",
            "metric_processor(MyProcessor)",
        ),
        ("logs", "LogProcessor", "log_processor(MyProcessor)"),
    ] {
        if output.contains(&format!(
            "module '{PYTHON_ENTRY}' has no attribute '{class}'"
        )) {
            return format!(
                "app.py defines no `{class}`, which `signals` in lens-exporter.toml asks for \
                 ({signal}): register one (`{class} = lens_exporter_sdk.{factory}`) or take \
                 `{signal}` out of `signals`\n\n{e}"
            );
        }
    }
    e
}

fn js(
    dir: &Path,
    m: &Manifest,
    installed: &InstalledSdk,
    tools_dir: &Path,
    out: &Path,
) -> Result<(), String> {
    let t = tools::js(tools_dir)?;
    // The project's packages (the SDK, by path), installed again when package.json changes.
    let package = std::fs::read(dir.join("package.json"))
        .map_err(|e| format!("{}: {e}", dir.join("package.json").display()))?;
    let stamp = dir.join("build/package.json.installed");
    if !stamped(&stamp, &package) || !dir.join("node_modules").is_dir() {
        tools::npm_available()?;
        step(
            "npm install",
            Command::new("npm").current_dir(dir).args([
                "install",
                "--silent",
                "--no-audit",
                "--no-fund",
            ]),
        )?;
        std::fs::write(&stamp, &package).map_err(|e| format!("{}: {e}", stamp.display()))?;
    }
    // componentize-js takes one module: rolldown resolves the imports into it.
    let bundle = dir.join("build/bundle").join(m.js_entry());
    step(
        "rolldown (bundle)",
        Command::new(&t.rolldown)
            .current_dir(dir)
            .arg(m.js_entry())
            .args(["--format", "esm", "--file"])
            .arg(&bundle),
    )?;
    step(
        "componentize-js",
        Command::new(&t.componentize_js)
            .arg(&bundle)
            .arg("--wit")
            .arg(m.wit_dir(installed))
            .arg("-n")
            .arg(m.world())
            .arg("-o")
            .arg(out)
            // An exporter is not an HTTP server: no `wasi:http/incoming-handler` export.
            .args(["-d", "fetch-event"]),
    )?;
    Ok(())
}

fn rust(dir: &Path, m: &Manifest, installed: &InstalledSdk, out: &Path) -> Result<(), String> {
    tools::rust()?;
    let manifest_path = dir.join("Cargo.toml");
    let cargo_toml = std::fs::read_to_string(&manifest_path)
        .map_err(|e| format!("{}: {e}", manifest_path.display()))?;
    let sdk_dir = installed.sdk("rust");
    if !cargo_toml.contains(&sdk_dir.display().to_string())
        && cargo_toml.contains("lens-exporter-sdk = { path")
    {
        eprintln!(
            "  note: Cargo.toml's lens-exporter-sdk path is not this lens's SDK ({}); point it \
             there if the build cannot find it",
            sdk_dir.display()
        );
    }
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.join("target"));
    let started = Instant::now();
    // Compiler errors are for the author to read as cargo prints them.
    let status = Command::new("cargo")
        .args(["build", "--release", "--target", "wasm32-wasip2"])
        .arg("--manifest-path")
        .arg(&manifest_path)
        .arg("--target-dir")
        .arg(&target_dir)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("cargo build failed ({status})"));
    }
    eprintln!("  cargo build: {:.1} s", started.elapsed().as_secs_f64());
    let built = target_dir
        .join("wasm32-wasip2/release")
        .join(format!("{}.wasm", m.name.replace('-', "_")));
    std::fs::copy(&built, out).map_err(|e| {
        format!(
            "{}: {e} (is the package in Cargo.toml still named `{}`?)",
            built.display(),
            m.name
        )
    })?;
    Ok(())
}
