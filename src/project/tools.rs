//! The pinned toolchains `lens build` uses, found in the tools directory or installed there once
//! (per user, per version): componentize-py in a venv of its own with the Python SDK's bundled
//! dependencies beside it, componentize-js (with the rolldown bundler it depends on) in an npm
//! prefix, and `cargo` with the `wasm32-wasip2` target (through rustup).
//!
//! Each install ends by writing a marker file, so an interrupted one is never taken for a
//! finished one. `guest-examples/build.sh` uses the same versions and layout
//! (a test keeps the two in step), so CI installs each tool once.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// componentize-py, from PyPI.
pub const COMPONENTIZE_PY_VERSION: &str = "0.25.1";
/// `@bytecodealliance/componentize-js`, from npm (it brings `rolldown`).
pub const COMPONENTIZE_JS_VERSION: &str = "0.23.0";

/// Runs `cmd`; on failure, its output's last lines and `what`.
pub fn run(what: &str, cmd: &mut Command) -> Result<String, String> {
    run_full(what, cmd).map_err(|(message, _)| message)
}

/// [`run`], the failure also with the whole output (to recognise an error in it).
pub fn run_full(what: &str, cmd: &mut Command) -> Result<String, (String, String)> {
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| (format!("{what}: cannot run {shown}: {e}"), String::new()))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        return Ok(text);
    }
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(40)..].join("\n");
    Err((
        format!("{what} failed ({}): {shown}\n{tail}", out.status),
        text,
    ))
}

/// Whether `program` runs at all (`program --version`).
fn available(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The file whose presence says an install into its directory finished.
const INSTALLED: &str = ".lens-installed";
/// How long a build waits for another one installing the same tool.
const LOCK_WAIT: Duration = Duration::from_secs(900);

/// Makes `dir` by running `fill` on it, unless an earlier install finished (its marker file is
/// written last, so an interrupted install is redone; venvs are not relocatable, so the install
/// happens in place). A lock file beside it keeps two builds from installing at once. Prints
/// what it installs and how long it took.
fn install_once(
    dir: &Path,
    what: &str,
    fill: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<(), String> {
    if dir.join(INSTALLED).is_file() {
        return Ok(());
    }
    let parent = dir.parent().expect("a tool directory has a parent");
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    let name = dir.file_name().expect("a tool directory has a name");
    let lock = parent.join(format!("{}.lock", name.to_string_lossy()));
    let waited = Instant::now();
    loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&lock)
        {
            Ok(_) => break,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if dir.join(INSTALLED).is_file() {
                    return Ok(());
                }
                if waited.elapsed() > LOCK_WAIT {
                    return Err(format!(
                        "{} has been locked for {} s: another `lens build` is installing {what},                          or one was killed (then delete the lock file)",
                        lock.display(),
                        LOCK_WAIT.as_secs()
                    ));
                }
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(e) => return Err(format!("{}: {e}", lock.display())),
        }
    }
    let result = (|| {
        if dir.join(INSTALLED).is_file() {
            return Ok(());
        }
        if dir.exists() {
            std::fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        eprintln!("  installing {what} into {} (once)", dir.display());
        let started = Instant::now();
        fill(dir)?;
        std::fs::write(dir.join(INSTALLED), what).map_err(|e| format!("{}: {e}", dir.display()))?;
        eprintln!(
            "  installed {what} in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        Ok(())
    })();
    let _ = std::fs::remove_file(&lock);
    result
}

/// The first 12 hex digits of the SHA-256 of `bytes`.
pub fn short_digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))[..12].to_string()
}

/// The Python toolchain: componentize-py and the SDK's bundled dependencies.
pub struct PythonTools {
    /// The `componentize-py` executable.
    pub componentize_py: PathBuf,
    /// The venv's `pip`, for a project's own dependencies.
    pub pip: PathBuf,
    /// The SDK's dependencies (`opentelemetry-sdk` …), installed with `--target`.
    pub sdk_deps: PathBuf,
}

/// Finds or installs componentize-py and the SDK's dependencies (`requirements` is the SDK's
/// `requirements.txt`).
pub fn python(tools: &Path, requirements: &Path) -> Result<PythonTools, String> {
    let venv = tools.join(format!("componentize-py-{COMPONENTIZE_PY_VERSION}"));
    install_once(
        &venv,
        &format!("componentize-py {COMPONENTIZE_PY_VERSION}"),
        |dir| {
            if !available("python3") {
                return Err(
                    "building a Python exporter installs componentize-py with python3, which is \
                     not on PATH: install Python 3.10 or later"
                        .into(),
                );
            }
            run(
                "making a venv for componentize-py",
                Command::new("python3").arg("-m").arg("venv").arg(dir),
            )?;
            run(
                "installing componentize-py",
                Command::new(dir.join("bin/pip")).args([
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    &format!("componentize-py=={COMPONENTIZE_PY_VERSION}"),
                ]),
            )
            .map(drop)
        },
    )?;
    let pip = venv.join("bin/pip");
    let text =
        std::fs::read(requirements).map_err(|e| format!("{}: {e}", requirements.display()))?;
    let sdk_deps = tools.join(format!("python-sdk-deps-{}", short_digest(&text)));
    install_once(&sdk_deps, "the Python SDK's dependencies", |dir| {
        pip_target(&pip, requirements, dir, false)
    })?;
    Ok(PythonTools {
        componentize_py: venv.join("bin/componentize-py"),
        pip,
        sdk_deps,
    })
}

/// `pip install --target dir -r requirements`: pure-Python packages for a component
/// (componentize-py bundles what is on its path; nothing is resolved inside the sandbox). The
/// SDK's list is complete and pinned (`resolve = false`: `--no-deps`); a project's own list has
/// its packages' dependencies resolved.
pub fn pip_target(
    pip: &Path,
    requirements: &Path,
    dir: &Path,
    resolve: bool,
) -> Result<(), String> {
    let mut cmd = Command::new(pip);
    cmd.args(["install", "--quiet", "--disable-pip-version-check"]);
    if !resolve {
        cmd.arg("--no-deps");
    }
    cmd.arg("--target").arg(dir).arg("-r").arg(requirements);
    run(&format!("installing {}", requirements.display()), &mut cmd).map(drop)
}

/// The JavaScript toolchain.
pub struct JsTools {
    /// The `componentize-js` executable.
    pub componentize_js: PathBuf,
    /// The `rolldown` bundler componentize-js depends on: it resolves the project's imports
    /// (`lens-exporter-sdk` from `node_modules`) into the one module componentize-js takes.
    pub rolldown: PathBuf,
}

/// Finds or installs componentize-js.
pub fn js(tools: &Path) -> Result<JsTools, String> {
    let prefix = tools.join(format!("componentize-js-{COMPONENTIZE_JS_VERSION}"));
    install_once(
        &prefix,
        &format!("componentize-js {COMPONENTIZE_JS_VERSION}"),
        |dir| {
            npm_available()?;
            std::fs::write(
                dir.join("package.json"),
                "{\"name\":\"lens-js-tools\",\"private\":true}\n",
            )
            .map_err(|e| format!("{}: {e}", dir.display()))?;
            run(
                "installing componentize-js",
                Command::new("npm").current_dir(dir).args([
                    "install",
                    "--silent",
                    "--no-audit",
                    "--no-fund",
                    &format!("@bytecodealliance/componentize-js@{COMPONENTIZE_JS_VERSION}"),
                ]),
            )
            .map(drop)
        },
    )?;
    let bin = prefix.join("node_modules/.bin");
    Ok(JsTools {
        componentize_js: bin.join("componentize-js"),
        rolldown: bin.join("rolldown"),
    })
}

/// Whether `npm` (and so Node.js) is installed; else an error saying so.
pub fn npm_available() -> Result<(), String> {
    if available("npm") {
        Ok(())
    } else {
        Err(
            "building a JavaScript exporter needs Node.js 18 or later with npm on PATH (for \
             componentize-js and the project's packages): install them"
                .into(),
        )
    }
}

/// Makes sure `cargo` and the `wasm32-wasip2` target are there (adding the target through
/// rustup when it is missing).
pub fn rust() -> Result<(), String> {
    if !available("cargo") {
        return Err("building a Rust exporter needs cargo: install Rust with rustup".into());
    }
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output();
    match installed {
        Ok(o)
            if String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l == "wasm32-wasip2") =>
        {
            Ok(())
        }
        Ok(_) => {
            eprintln!("  adding the wasm32-wasip2 target (once)");
            run(
                "adding the wasm32-wasip2 target",
                Command::new("rustup").args(["target", "add", "wasm32-wasip2"]),
            )
            .map(drop)
        }
        // No rustup: a toolchain installed otherwise may still have the target.
        Err(_) => Ok(()),
    }
}
