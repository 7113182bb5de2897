//! The files of a new project: a manifest, a README with the two commands, and the exporter's
//! source with one example exporter per signal asked for (each writes a line per item to
//! stdout, where `lens check` and `lens demo` show it), assembled from the pieces under
//! `templates/`. The tests build and check every language's project and lint the Python and
//! Rust ones.

use super::manifest::{Language, Manifest, ProjectSignal};
use super::sdk::{InstalledSdk, SDK_VERSION};

/// A file of the project: its path relative to the project and its text.
pub type ProjectFile = (&'static str, String);

/// The pieces of one language: the head, and per signal its imports (Python) and body.
struct Pieces {
    head: &'static str,
    spans: (&'static str, &'static str),
    metrics: (&'static str, &'static str),
    logs: (&'static str, &'static str),
}

const PYTHON: Pieces = Pieces {
    head: include_str!("templates/python/head.py"),
    spans: (
        include_str!("templates/python/spans.imports"),
        include_str!("templates/python/spans.py"),
    ),
    metrics: (
        include_str!("templates/python/metrics.imports"),
        include_str!("templates/python/metrics.py"),
    ),
    logs: (
        include_str!("templates/python/logs.imports"),
        include_str!("templates/python/logs.py"),
    ),
};

const JS: Pieces = Pieces {
    head: include_str!("templates/js/head.js"),
    spans: ("", include_str!("templates/js/spans.js")),
    metrics: ("", include_str!("templates/js/metrics.js")),
    logs: ("", include_str!("templates/js/logs.js")),
};

const RUST: Pieces = Pieces {
    head: include_str!("templates/rust/head.rs"),
    spans: ("", include_str!("templates/rust/spans.rs")),
    metrics: ("", include_str!("templates/rust/metrics.rs")),
    logs: ("", include_str!("templates/rust/logs.rs")),
};

impl Pieces {
    fn of(&self, signal: ProjectSignal) -> (&'static str, &'static str) {
        match signal {
            ProjectSignal::Spans => self.spans,
            ProjectSignal::Metrics => self.metrics,
            ProjectSignal::Logs => self.logs,
        }
    }
}

/// `{{name}}`-style placeholders replaced.
fn fill(text: &str, m: &Manifest, sdk: &InstalledSdk) -> String {
    let signals: Vec<String> = m.signals.iter().map(|s| s.to_string()).collect();
    text.replace("{{name}}", &m.name)
        .replace("{{signals}}", &signals.join(", "))
        .replace("{{sdk_version}}", SDK_VERSION)
        .replace("{{sdk_path}}", &sdk.sdk("rust").display().to_string())
        .replace("{{sdk_js_path}}", &sdk.sdk("js").display().to_string())
}

/// The names each SDK registers a signal's exporter under.
fn python_registration(signal: ProjectSignal) -> &'static str {
    match signal {
        ProjectSignal::Spans => "SpanExporter = lens_exporter_sdk.span_exporter(SpanLines)",
        ProjectSignal::Metrics => "MetricExporter = lens_exporter_sdk.metric_exporter(MetricLines)",
        ProjectSignal::Logs => "LogExporter = lens_exporter_sdk.log_exporter(LogLines)",
    }
}

fn js_import(signal: ProjectSignal) -> &'static str {
    match signal {
        ProjectSignal::Spans => "exportSpans",
        ProjectSignal::Metrics => "exportMetrics",
        ProjectSignal::Logs => "exportLogs",
    }
}

/// The exporter's source file.
fn source(m: &Manifest) -> ProjectFile {
    let mut signals = m.signals.clone();
    signals.sort();
    match m.language {
        Language::Python => {
            let mut imports: Vec<&str> = signals
                .iter()
                .flat_map(|s| PYTHON.of(*s).0.lines())
                .collect();
            // isort's order, as ruff keeps it: case-insensitive.
            imports.sort_by_key(|l| l.to_lowercase());
            let mut text = format!("{}{}\n", PYTHON.head, imports.join("\n"));
            for s in &signals {
                text.push_str(PYTHON.of(*s).1);
            }
            text.push_str(
                "\n\n# The registration: componentize-py looks for these names in this module.\n",
            );
            for s in &signals {
                text.push_str(python_registration(*s));
                text.push('\n');
            }
            ("app.py", text)
        }
        Language::Js => {
            let mut names: Vec<&str> = vec!["ExportResultCode"];
            names.extend(signals.iter().map(|s| js_import(*s)));
            if signals.contains(&ProjectSignal::Spans) {
                names.push("hrTimeToNanos");
            }
            let mut text = format!(
                "{}import {{ {} }} from \"lens-exporter-sdk\";\n",
                JS.head,
                names.join(", ")
            );
            for s in &signals {
                text.push_str(JS.of(*s).1);
            }
            ("exporter.js", text)
        }
        Language::Rust => {
            let mut text = RUST.head.to_string();
            for s in &signals {
                text.push_str(RUST.of(*s).1);
            }
            let names: Vec<String> = signals
                .iter()
                .map(|s| {
                    let ty = match s {
                        ProjectSignal::Spans => "SpanLines",
                        ProjectSignal::Metrics => "MetricLines",
                        ProjectSignal::Logs => "LogLines",
                    };
                    format!("{s}: {ty}")
                })
                .collect();
            text.push_str(&format!(
                "\n// The component exports exactly these signals.\nlens_exporter_sdk::export!({});\n",
                names.join(", ")
            ));
            ("src/lib.rs", text)
        }
    }
}

/// The project's README: what it is and the two commands.
fn readme(m: &Manifest) -> String {
    let source = source(m).0;
    let edit = match m.language {
        Language::Python => "Extra pure-Python packages go in `requirements.txt` (bundled into \
                             the component by `lens build`). For an editor's completion and \
                             unit tests outside the sandbox, `pip install` the SDK folder \
                             `lens new` printed."
            .to_string(),
        Language::Js => "Extra npm packages go in `package.json` (`lens build` runs `npm \
                         install` and bundles them with rolldown; no Node.js APIs exist in the \
                         sandbox)."
            .to_string(),
        Language::Rust => "The SDK's API: `cargo doc --open`. Extra crates go in `Cargo.toml` \
                           as usual."
            .to_string(),
    };
    format!(
        "# {name}\n\n\
         A Lens exporter for {signals}, in {language}: `{source}` holds one exporter per signal, \
         each writing a line per item to stdout. Replace their `export` bodies with calls to your \
         backend.\n\n\
         ```sh\n\
         lens build\n\
         lens check build/{name}.wasm\n\
         ```\n\n\
         `lens build` installs the pinned toolchain once per user and builds \
         `build/{name}.wasm`; `lens check` validates it, runs the conformance suite of every \
         signal it exports and shows what the exporter printed under each case. `lens.toml` \
         runs it for each of its signals in a simulated training job: `lens demo --config \
         lens.toml` (each rank's guest output lands in the run folder).\n\n\
         {edit}\n",
        name = m.name,
        signals = m
            .signals
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        language = m.language.display_name(),
    )
}

/// A Lens config running the exporter for each of its signals.
fn config(m: &Manifest) -> String {
    let mut text = format!(
        "# A Lens config running {name} for each of its signals: `lens demo --config lens.toml`.\n\
         # Relative paths are relative to this file.\n\
         enabled = true\n\
         service_name = \"{name}-demo\"\n\
         # Every rank exports (NeMo Lens's default is rank 0 only).\n\
         export_strategy = \"all_ranks\"\n\
         # No built-in exporter besides the entries below.\n\
         exporter = \"none\"\n",
        name = m.name
    );
    if m.signals.contains(&ProjectSignal::Logs) {
        text.push_str("logs_enabled = true\n");
    }
    for s in &m.signals {
        let table = match s {
            ProjectSignal::Spans => "traces",
            ProjectSignal::Metrics => "metrics",
            ProjectSignal::Logs => "logs",
        };
        text.push_str(&format!(
            "\n[[{table}.exporters]]\nkind = \"wasm\"\nname = \"{name}\"\npath = \"build/{name}.wasm\"\n\
             settings = {{ prefix = \"{name}\" }}\n",
            name = m.name
        ));
    }
    text
}

/// Every file of a new project for `m`, its SDK installed at `sdk`.
pub fn files(m: &Manifest, sdk: &InstalledSdk) -> Vec<ProjectFile> {
    let mut files = vec![
        ("lens-exporter.toml", m.to_toml()),
        ("README.md", readme(m)),
        (
            ".gitignore",
            "/build/\n/target/\n/node_modules/\n".to_string(),
        ),
        ("lens.toml", config(m)),
    ];
    let (path, text) = source(m);
    files.push((path, fill(&text, m, sdk)));
    match m.language {
        Language::Python => files.push((
            "requirements.txt",
            "# Extra pure-Python packages for the exporter, one per line, as pip reads them: `lens \
             build` installs them\n# (with their dependencies) into build/python-deps and \
             bundles them into the component;\n# packages with native code cannot run in the \
             sandbox.\n"
                .to_string(),
        )),
        Language::Js => files.push((
            "package.json",
            fill(
                "{\n  \"name\": \"{{name}}\",\n  \"version\": \"0.1.0\",\n  \"private\": true,\n  \
                 \"type\": \"module\",\n  \"main\": \"exporter.js\",\n  \"dependencies\": {\n    \
                 \"lens-exporter-sdk\": \"file:{{sdk_js_path}}\"\n  }\n}\n",
                m,
                sdk,
            ),
        )),
        Language::Rust => files.push((
            "Cargo.toml",
            fill(include_str!("templates/rust/Cargo.toml"), m, sdk),
        )),
    }
    files
}
