//! `lens new` and `lens build`: a project per language (exporters, and processors with
//! `--kind processor`) made in a folder outside the repository,
//! built with the pinned toolchain, checked by `lens check` (which shows what the guest printed),
//! run by `lens demo` (which writes it into the run folder); the manifest's golden errors; the
//! SDKs the binary carries against the repository's.
//!
//! The toolchains are the ones `guest-examples/build.sh` installed (`LENS_TOOLS_DIR` points at
//! its tools folder, same layout and pins); the Lens home is a folder under `target/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

/// The repository's root.
fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `lens` with the test's Lens home and the tools `guest-examples/build.sh` installed.
pub(crate) fn lens_in(dir: &Path) -> Command {
    let mut c = crate::lens();
    c.current_dir(dir)
        .env("LENS_HOME", repo().join("target/lens-test-home"))
        .env("LENS_TOOLS_DIR", repo().join("guest-examples/.tools"))
        // Rust projects share one target folder (the registry crates compile once).
        .env(
            "CARGO_TARGET_DIR",
            repo().join("guest-examples/.tools/project-target"),
        );
    c
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `cmd`, asserting it succeeds; returns its output.
pub(crate) fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let text = text(&out);
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

/// `lens new` + `lens build` + `lens check` in a temporary folder outside the repository;
/// returns the check's report and the project's folder.
fn new_build_check(language: &str, signals: &str, name: &str) -> (String, tempfile::TempDir) {
    let outside = tempfile::tempdir().unwrap();
    assert!(!outside.path().starts_with(repo()));
    let started = Instant::now();
    let made = ok(lens_in(outside.path()).args(["new", language, name, "--signals", signals]));
    assert!(made.contains("Next:"), "{made}");
    let project = outside.path().join(name);
    // Its README says how to ship it.
    let readme = std::fs::read_to_string(project.join("README.md")).unwrap();
    assert!(
        readme.contains(&format!(
            "lens push build/{name}.wasm oci://REGISTRY/{name}:0.1.0"
        )),
        "{readme}"
    );
    let built = ok(lens_in(&project).arg("build"));
    assert!(
        built.contains(&format!("Next: lens check ./build/{name}.wasm")),
        "{built}"
    );
    let report = ok(lens_in(&project).args(["check", &format!("build/{name}.wasm"), "--quick"]));
    eprintln!(
        "{language}: lens new to a passing lens check in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(report.ends_with("PASS\n"), "{report}");
    (report, outside)
}

/// The interfaces a check report says the component exports.
fn exports(report: &str) -> &str {
    report
        .lines()
        .find_map(|l| l.trim().strip_prefix("exports"))
        .unwrap()
        .trim()
}

#[test]
fn a_python_project_with_two_signals_builds_and_passes_its_check() {
    let (report, dir) = new_build_check("python", "spans,metrics", "acme-py");
    assert_eq!(
        exports(&report),
        "lens:exporter/span-exporter@0.4.0, lens:exporter/metric-exporter@0.4.0 (valid)"
    );
    // What the guest printed, under the case that made it print.
    assert!(
        report.contains("      ok    one span\n            stdout | span rank=0 one "),
        "{report}"
    );
    assert!(report.contains("stdout | metric "), "{report}");
    // The generated source is clean under the repository's linter.
    let app = dir.path().join("acme-py/app.py");
    ok(Command::new("ruff")
        .arg("check")
        .arg("--no-cache")
        .arg(&app));
    ok(Command::new("ruff")
        .args(["format", "--check", "--no-cache"])
        .arg(&app));
}

#[test]
fn a_javascript_project_with_two_signals_builds_and_passes_its_check() {
    let (report, _dir) = new_build_check("js", "spans,logs", "acme-js");
    assert_eq!(
        exports(&report),
        "lens:exporter/span-exporter@0.4.0, lens:exporter/log-exporter@0.4.0 (valid)"
    );
    assert!(
        report.contains("      ok    body: string\n            stdout | log WARN checkpoint saved"),
        "{report}"
    );
}

#[test]
fn a_rust_project_with_every_signal_builds_runs_in_the_demo_and_writes_its_output_there() {
    let (report, dir) = new_build_check("rust", "spans,metrics,logs", "acme-rs");
    assert!(
        exports(&report).starts_with("lens:exporter/span-exporter@0.4.0, lens:exporter/metric-"),
        "{report}"
    );
    let project = dir.path().join("acme-rs");
    ok(Command::new("rustfmt")
        .args(["--check", "--edition", "2024"])
        .arg(project.join("src/lib.rs")));
    // The project's lens.toml in a 2-rank demo: each rank's guest stdout lands in the run folder.
    let out = dir.path().join("run");
    let demo = ok(lens_in(&project)
        .args(["demo", "--config", "lens.toml", "--ranks", "2"])
        .args(["--steps", "10", "--out"])
        .arg(&out));
    assert!(demo.contains("rank-N-guest/<exporter>.stdout"), "{demo}");
    let run = crate::cli::run_dir(&out);
    for rank in 0..2 {
        let printed =
            std::fs::read_to_string(run.join(format!("rank-{rank}-guest/acme-rs.stdout"))).unwrap();
        assert!(
            printed.contains(&format!("acme-rs rank={rank} step ")),
            "rank {rank}: {printed}"
        );
        assert!(
            printed.contains("acme-rs train.step_time histogram "),
            "{printed}"
        );
    }
    // The manifest now lists spans only, the source still exports every signal: the build
    // notices and says what to change.
    let manifest = project.join("lens-exporter.toml");
    let written = std::fs::read_to_string(&manifest).unwrap();
    let spans_only = written.replace(
        "signals = [\"spans\", \"metrics\", \"logs\"]",
        "signals = [\"spans\"]",
    );
    assert_ne!(spans_only, written);
    std::fs::write(&manifest, spans_only).unwrap();
    let out = lens_in(&project).arg("build").output().unwrap();
    assert!(!out.status.success());
    let said = text(&out);
    assert!(
        said.contains(
            "build/acme-rs.wasm serves [\"spans\", \"metrics\", \"logs\"] as an exporter, but \
             lens-exporter.toml has `signals = [\"spans\"]`: it also serves \"metrics\", \"logs\": \
             add them to `signals`, or stop exporting them"
        ),
        "{said}"
    );
}

#[test]
fn a_python_project_missing_a_signal_s_class_is_told_and_its_own_packages_are_bundled() {
    let outside = tempfile::tempdir().unwrap();
    ok(lens_in(outside.path()).args(["new", "python", "half", "--signals", "spans"]));
    let project = outside.path().join("half");
    // Ask for metrics too without writing the class.
    let manifest = project.join("lens-exporter.toml");
    let written = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        written.replace(
            "signals = [\"spans\"]",
            "signals = [\"spans\", \"metrics\"]",
        ),
    )
    .unwrap();
    let out = lens_in(&project).arg("build").output().unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(
            "error: app.py defines no `MetricExporter`, which `signals` in lens-exporter.toml \
             asks for (metrics)"
        ),
        "{said}"
    );
    // Back to spans only, with a package of its own (resolved with its dependencies and
    // bundled by `lens build`) that the exporter uses.
    std::fs::write(&manifest, &written).unwrap();
    std::fs::write(project.join("requirements.txt"), "six==1.17.0\n").unwrap();
    let app = project.join("app.py");
    let source = std::fs::read_to_string(&app).unwrap();
    let source = source
        .replace("import sys\n", "import sys\n\nimport six\n")
        .replace(
            "settings.get(\"prefix\", \"span\")",
            "six.ensure_str(settings.get(\"prefix\", \"six-span\"))",
        );
    std::fs::write(&app, source).unwrap();
    ok(lens_in(&project).arg("build"));
    assert!(project.join("build/python-deps/six.py").exists());
    let report = ok(lens_in(&project).args(["check", "build/half.wasm", "--quick"]));
    assert!(report.contains("stdout | six-span rank=0 one "), "{report}");
}

/// Bad manifests, each with the message `lens build` gives.
const BAD_MANIFESTS: &[(&str, &str)] = &[
    (
        "name = \"x\"\nlanguage = \"go\"\nsignals = [\"spans\"]\nsdk = \"0.3.0\"\n",
        "unknown variant `go`, expected one of `python`, `js`, `rust`",
    ),
    (
        "name = \"x\"\nlanguage = \"js\"\nsignals = [\"traces\"]\nsdk = \"0.3.0\"\n",
        "unknown variant `traces`, expected one of `spans`, `metrics`, `logs`",
    ),
    (
        "name = \"x\"\nlanguage = \"js\"\nsignals = []\nsdk = \"0.3.0\"\n",
        "`signals` is empty: list at least one of spans, metrics, logs",
    ),
    (
        "name = \"x\"\nlanguage = \"js\"\nsignals = [\"logs\", \"logs\"]\nsdk = \"0.3.0\"\n",
        "`signals` lists `logs` twice",
    ),
    (
        "name = \"x\"\nlanguage = \"js\"\nsignals = [\"logs\"]\nsdk = \"0.2.0\"\n",
        "`sdk = \"0.2.0\"`: this lens carries SDK 0.4.0",
    ),
    (
        "name = \"../x\"\nlanguage = \"js\"\nsignals = [\"logs\"]\nsdk = \"0.3.0\"\n",
        "`name = \"../x\"`: a name is 1 to 64 letters, digits, `-` or `_`, starting with a letter",
    ),
    (
        "name = \"x\"\nlanguage = \"js\"\nsignals = [\"logs\"]\nsdk = \"0.3.0\"\nworld = \"all\"\n",
        "unknown field `world`, expected one of `name`, `language`, `kind`, `signals`, `sdk`",
    ),
    (
        "name = \"x\"\nlanguage = \"js\"\nkind = \"filter\"\nsignals = [\"logs\"]\nsdk = \"0.4.0\"\n",
        "unknown variant `filter`, expected `exporter` or `processor`",
    ),
    (
        "name = \"x\"\nlanguage = \"js\"\nkind = \"processor\"\nsignals = [\"logs\"]\nsdk = \"0.3.0\"\n",
        "`sdk = \"0.3.0\"`: processors came with SDK 0.4.0",
    ),
];

#[test]
fn bad_manifests_are_refused_naming_the_file_and_the_key() {
    for (manifest, message) in BAD_MANIFESTS {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("lens-exporter.toml"), manifest).unwrap();
        let out = lens_in(dir.path()).arg("build").output().unwrap();
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert!(
            said.starts_with("error: ./lens-exporter.toml: ") && said.contains(message),
            "{manifest}\n→ {said}"
        );
    }
    let empty = tempfile::tempdir().unwrap();
    let said = text(&lens_in(empty.path()).arg("build").output().unwrap());
    assert!(
        said.contains("lens-exporter.toml: No such file or directory")
            && said.contains("a project made by `lens new`?"),
        "{said}"
    );
}

#[test]
fn lens_new_refuses_a_used_folder_and_a_bad_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep.txt"), "mine").unwrap();
    let out = lens_in(dir.path())
        .args(["new", "js", "."])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("exists and is not empty"),
        "{}",
        text(&out)
    );
    let out = lens_in(dir.path())
        .args(["new", "js", "9lives"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("starting with a letter") && text(&out).contains("pass --name"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("keep.txt")).unwrap(),
        "mine"
    );
}

/// Every file of the SDK folders a project needs (their tests and build output aside).
fn sdk_sources() -> Vec<String> {
    let mut files = Vec::new();
    let mut walk = vec![repo().join("wit"), repo().join("sdk")];
    while let Some(dir) = walk.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(repo())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let skipped = [
                "tests",
                "test",
                "target",
                "__pycache__",
                "node_modules",
                "compat",
            ];
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !skipped.contains(&name.as_str()) {
                    walk.push(path);
                }
            } else if !["README.md", "test.sh", "Cargo.lock", "api_docs.py"]
                .contains(&name.as_str())
                && !name.ends_with(".pyc")
            {
                files.push(rel);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn the_binary_carries_the_repository_s_sdks_and_installs_them_once() {
    let home = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    ok(lens_in(outside.path())
        .env("LENS_HOME", home.path())
        .args(["new", "rust", "carry"]));
    let installed: Vec<PathBuf> = std::fs::read_dir(home.path().join("sdk"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(installed.len(), 1, "{installed:?}");
    let root = &installed[0];
    assert!(
        root.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("0.4.0-"),
        "{root:?}"
    );
    for file in sdk_sources() {
        let copy = std::fs::read(root.join(&file)).unwrap_or_else(|e| {
            panic!("{file} is not carried by the binary (src/project/sdk.rs): {e}")
        });
        assert_eq!(
            copy,
            std::fs::read(repo().join(&file)).unwrap(),
            "{file} differs"
        );
    }
    // The Rust project depends on that copy.
    let cargo = std::fs::read_to_string(outside.path().join("carry/Cargo.toml")).unwrap();
    assert!(
        cargo.contains(&format!("path = \"{}\"", root.join("sdk/rust").display())),
        "{cargo}"
    );
    // A second project reuses the install.
    ok(lens_in(outside.path())
        .env("LENS_HOME", home.path())
        .args(["new", "js", "again"]));
    assert_eq!(
        std::fs::read_dir(home.path().join("sdk")).unwrap().count(),
        1
    );
}

#[test]
fn guest_examples_build_sh_pins_the_toolchain_lens_build_installs() {
    let script = std::fs::read_to_string(repo().join("guest-examples/build.sh")).unwrap();
    let tools = std::fs::read_to_string(repo().join("src/project/tools.rs")).unwrap();
    for var in ["COMPONENTIZE_PY_VERSION", "COMPONENTIZE_JS_VERSION"] {
        let in_script = script
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{var}=")))
            .unwrap();
        assert!(
            tools.contains(&format!("pub const {var}: &str = \"{in_script}\";")),
            "{var}: build.sh pins {in_script}, src/project/tools.rs does not"
        );
    }
}

/// `lens new --kind processor` + `lens build` + `lens check` (every suite passing), as
/// [`new_build_check`].
fn new_processor(language: &str, signals: &str, name: &str) -> (String, tempfile::TempDir) {
    let outside = tempfile::tempdir().unwrap();
    let made = ok(lens_in(outside.path()).args([
        "new",
        language,
        name,
        "--kind",
        "processor",
        "--signals",
        signals,
    ]));
    assert!(made.contains(&format!("processor `{name}`")), "{made}");
    let project = outside.path().join(name);
    ok(lens_in(&project).arg("build"));
    let report = ok(lens_in(&project).args(["check", &format!("build/{name}.wasm"), "--quick"]));
    assert!(report.ends_with("PASS\n"), "{report}");
    (report, outside)
}

#[test]
fn a_rust_processor_project_serves_every_signal_and_drops_in_the_demo() {
    let (report, dir) = new_processor("rust", "spans,metrics,logs", "quiet-rs");
    assert_eq!(
        exports(&report),
        "lens:exporter/span-processor@0.4.0, lens:exporter/metric-processor@0.4.0, \
         lens:exporter/log-processor@0.4.0 (valid)"
    );
    let project = dir.path().join("quiet-rs");
    ok(Command::new("rustfmt")
        .args(["--check", "--edition", "2024"])
        .arg(project.join("src/lib.rs")));
    // The project's lens.toml: the processor drops the demo's optimizer spans.
    let out = dir.path().join("run");
    let demo = ok(lens_in(&project)
        .args(["demo", "--config", "lens.toml", "--ranks", "1"])
        .args(["--steps", "10", "--out"])
        .arg(&out));
    assert!(
        demo.contains("processor `quiet-rs`: ") && demo.contains("10 dropped, 0 met a fault"),
        "{demo}"
    );
}

#[test]
fn python_and_javascript_processor_projects_build_and_pass_their_check() {
    let (report, dir) = new_processor("python", "spans,metrics", "quiet-py");
    assert_eq!(
        exports(&report),
        "lens:exporter/span-processor@0.4.0, lens:exporter/metric-processor@0.4.0 (valid)"
    );
    let app = dir.path().join("quiet-py/app.py");
    ok(Command::new("ruff").args(["check", "--no-cache"]).arg(&app));
    ok(Command::new("ruff")
        .args(["format", "--check", "--no-cache"])
        .arg(&app));
    let (report, _dir) = new_processor("js", "logs", "quiet-js");
    assert_eq!(
        exports(&report),
        "lens:exporter/log-processor@0.4.0 (valid)"
    );
}
