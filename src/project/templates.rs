//! The files of a new project: a manifest, a README with the two commands, and the component's
//! source with one example per signal asked for, assembled from the pieces under `templates/`:
//! an exporter (each writes a line per item to stdout, where `lens check` and `lens demo` show
//! it) or a processor (each drops the items named in `drop` and redacts the attributes named in
//! `keys`). The tests build and check every language's project and lint the Python and Rust
//! ones.

use super::manifest::{Language, Manifest, ProjectKind, ProjectSignal};
use super::sdk::{InstalledSdk, SDK_VERSION};

/// A file of the project: its path relative to the project and its text.
pub type ProjectFile = (&'static str, String);

/// What a new exporter does (`lens new --template`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Template {
    /// A line per item on stdout.
    #[default]
    Lines,
    /// A vendor integration: each batch's OTLP POSTed to `settings.endpoint`, the key a
    /// host-held credential.
    Http,
}

/// The HTTP template's pieces: the head, and per signal the exporter (Rust) or registration
/// (Python).
const PYTHON_HTTP_HEAD: &str = include_str!("templates/python-http/head.py");
const JS_HTTP_HEAD: &str = include_str!("templates/js-http/head.js");
const RUST_HTTP: Pieces = Pieces {
    head: include_str!("templates/rust-http/head.rs"),
    spans: ("", include_str!("templates/rust-http/spans.rs")),
    metrics: ("", include_str!("templates/rust-http/metrics.rs")),
    logs: ("", include_str!("templates/rust-http/logs.rs")),
};

/// Where the HTTP template's local test server listens, and the header and variable of its key.
const TEST_SERVER: &str = "127.0.0.1:4318";
const KEY_HEADER: &str = "x-api-key";
const KEY_VARIABLE: &str = "VENDOR_API_KEY";

/// A Rust exporter's `export!` line: each signal with its type (`types`: spans', metrics', logs').
fn rust_export(signals: &[ProjectSignal], types: [&str; 3]) -> String {
    let names: Vec<String> = signals
        .iter()
        .map(|s| {
            let ty = match s {
                ProjectSignal::Spans => types[0],
                ProjectSignal::Metrics => types[1],
                ProjectSignal::Logs => types[2],
            };
            format!("{s}: {ty}")
        })
        .collect();
    format!(
        "\n// The component exports exactly these signals.\nlens_exporter_sdk::export!({});\n",
        names.join(", ")
    )
}

/// An HTTP exporter project's source file.
fn http_source(m: &Manifest, signals: &[ProjectSignal]) -> ProjectFile {
    match m.language {
        Language::Python => {
            let mut text = PYTHON_HTTP_HEAD.to_string();
            for s in signals {
                let (class, factory, path) = match s {
                    ProjectSignal::Spans => ("SpanExporter", "otlp_span_exporter", "/v1/traces"),
                    ProjectSignal::Metrics => {
                        ("MetricExporter", "otlp_metric_exporter", "/v1/metrics")
                    }
                    ProjectSignal::Logs => ("LogExporter", "otlp_log_exporter", "/v1/logs"),
                };
                text.push_str(&format!(
                    "{class} = lens_exporter_sdk.{factory}(lambda s: Vendor(s, \"{path}\"))\n"
                ));
            }
            ("app.py", text)
        }
        Language::Js => {
            let mut names = vec!["parseUrl", "send"];
            let mut exports = String::new();
            for s in signals {
                let (name, factory, path) = match s {
                    ProjectSignal::Spans => ("spanExporter", "forwardSpans", "/v1/traces"),
                    ProjectSignal::Metrics => ("metricExporter", "forwardMetrics", "/v1/metrics"),
                    ProjectSignal::Logs => ("logExporter", "forwardLogs", "/v1/logs"),
                };
                names.push(factory);
                exports.push_str(&format!(
                    "export const {name} = {factory}((settings) => new Vendor(settings, \"{path}\"));\n"
                ));
            }
            let (doc, body) = JS_HTTP_HEAD
                .split_once("\n\n")
                .expect("the head's doc comment, then its code");
            let text = format!(
                "{doc}\n\nimport {{ {} }} from \"lens-exporter-sdk\";\n\n{body}\
                 // The component exports exactly these signals.\n{exports}",
                names.join(", ")
            );
            ("exporter.js", text)
        }
        Language::Rust => {
            let mut text = RUST_HTTP.head.to_string();
            for s in signals {
                text.push_str(RUST_HTTP.of(*s).1);
            }
            text.push_str(&rust_export(
                signals,
                ["SpanVendor", "MetricVendor", "LogVendor"],
            ));
            ("src/lib.rs", text)
        }
    }
}

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

/// A processor's pieces: the head (with what every signal's processor shares) and per signal
/// its body.
struct ProcessorPieces {
    head: &'static str,
    spans: &'static str,
    metrics: &'static str,
    logs: &'static str,
}

impl ProcessorPieces {
    fn of(&self, signal: ProjectSignal) -> &'static str {
        match signal {
            ProjectSignal::Spans => self.spans,
            ProjectSignal::Metrics => self.metrics,
            ProjectSignal::Logs => self.logs,
        }
    }
}

const PYTHON_PROCESSOR: ProcessorPieces = ProcessorPieces {
    head: include_str!("templates/python-processor/head.py"),
    spans: include_str!("templates/python-processor/spans.py"),
    metrics: include_str!("templates/python-processor/metrics.py"),
    logs: include_str!("templates/python-processor/logs.py"),
};

const JS_PROCESSOR: ProcessorPieces = ProcessorPieces {
    head: concat!(
        include_str!("templates/js-processor/head.js"),
        "{{imports}}",
        include_str!("templates/js-processor/rules.js")
    ),
    spans: include_str!("templates/js-processor/spans.js"),
    metrics: include_str!("templates/js-processor/metrics.js"),
    logs: include_str!("templates/js-processor/logs.js"),
};

const RUST_PROCESSOR: ProcessorPieces = ProcessorPieces {
    head: include_str!("templates/rust-processor/head.rs"),
    spans: include_str!("templates/rust-processor/spans.rs"),
    metrics: include_str!("templates/rust-processor/metrics.rs"),
    logs: include_str!("templates/rust-processor/logs.rs"),
};

/// What each language registers a signal's processor as: Python's class and the SDK's factory
/// (also Rust's `export!` key), and the type the template defines.
fn processor_names(signal: ProjectSignal) -> (&'static str, &'static str, &'static str) {
    match signal {
        ProjectSignal::Spans => ("SpanProcessor", "span_processor", "SpanRules"),
        ProjectSignal::Metrics => ("MetricProcessor", "metric_processor", "MetricRules"),
        ProjectSignal::Logs => ("LogProcessor", "log_processor", "LogRules"),
    }
}

fn js_processor_import(signal: ProjectSignal) -> &'static str {
    match signal {
        ProjectSignal::Spans => "processSpans",
        ProjectSignal::Metrics => "processMetrics",
        ProjectSignal::Logs => "processLogs",
    }
}

/// A processor project's source file.
fn processor_source(m: &Manifest, signals: &[ProjectSignal]) -> ProjectFile {
    match m.language {
        Language::Python => {
            let mut text = PYTHON_PROCESSOR.head.to_string();
            for s in signals {
                text.push_str(PYTHON_PROCESSOR.of(*s));
            }
            text.push_str(
                "\n\n# The registration: componentize-py looks for these names in this module.\n",
            );
            for s in signals {
                let (class, factory, rules) = processor_names(*s);
                text.push_str(&format!("{class} = lens_exporter_sdk.{factory}({rules})\n"));
            }
            ("app.py", text)
        }
        Language::Js => {
            let names: Vec<&str> = signals.iter().map(|s| js_processor_import(*s)).collect();
            let import = format!(
                "import {{ {} }} from \"lens-exporter-sdk\";\n",
                names.join(", ")
            );
            let mut text = JS_PROCESSOR.head.replace("{{imports}}", &import);
            for s in signals {
                text.push_str(JS_PROCESSOR.of(*s));
            }
            ("processor.js", text)
        }
        Language::Rust => {
            let mut text = RUST_PROCESSOR.head.to_string();
            for s in signals {
                text.push_str(RUST_PROCESSOR.of(*s));
            }
            let names: Vec<String> = signals
                .iter()
                .map(|s| {
                    let (_, key, ty) = processor_names(*s);
                    format!("{key}: {ty}")
                })
                .collect();
            text.push_str(&format!(
                "\n// The component exports exactly these processors.\nlens_exporter_sdk::export!({});\n",
                names.join(", ")
            ));
            ("src/lib.rs", text)
        }
    }
}

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
        // The Rust SDK's HTTP client is a feature: an HTTP project turns it on.
        .replace(
            "{{sdk_features}}",
            if m.http {
                ", features = [\"http\"]"
            } else {
                ""
            },
        )
        .replace("{{sdk_js_path}}", &sdk.sdk("js").display().to_string())
        .replace("{{js_entry}}", m.js_entry())
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

/// The component's source file.
fn source(m: &Manifest) -> ProjectFile {
    let mut signals = m.signals.clone();
    signals.sort();
    if m.kind == ProjectKind::Processor {
        return processor_source(m, &signals);
    }
    if m.http {
        return http_source(m, &signals);
    }
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
            text.push_str(&rust_export(
                &signals,
                ["SpanLines", "MetricLines", "LogLines"],
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
    let signals = m
        .signals
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let language = m.language.display_name();
    let what = match m.kind {
        ProjectKind::Exporter => format!(
            "A Lens exporter for {signals}, in {language}: `{source}` holds one exporter per \
             signal, each writing a line per item to stdout. Replace their `export` bodies with \
             calls to your backend."
        ),
        ProjectKind::Processor => format!(
            "A Lens processor for {signals}, in {language}: `{source}` holds one processor per \
             signal, each dropping the items named in the `drop` setting and removing the \
             attributes named in `keys`. Replace their `process` bodies with your own rules \
             (processors.md in the Lens repository has the rules of the game)."
        ),
    };
    if m.http {
        return http_readme(m, &signals, source);
    }
    format!(
        "# {name}\n\n\
         {what}\n\n\
         ```sh\n\
         lens build\n\
         lens check build/{name}.wasm\n\
         ```\n\n\
         `lens build` installs the pinned toolchain once per user and builds \
         `build/{name}.wasm`; `lens check` validates it, runs the conformance suite of every \
         signal it serves and shows what the component printed under each case. `lens.toml` \
         runs it for each of its signals in a simulated training job: `lens demo --config \
         lens.toml` (each rank's guest output lands in the run folder).\n\n\
         {edit}\n{ship}",
        name = m.name,
        ship = ship(&m.name),
    )
}

/// How a project is published: `lens push` to a registry, and the pinned line it prints.
fn ship(name: &str) -> String {
    format!(
        "\n## Ship it\n\n\
         ```sh\n\
         lens push build/{name}.wasm oci://REGISTRY/{name}:0.1.0\n\
         ```\n\n\
         uploads it as a Wasm OCI artifact (the layout `wkg oci push` writes; credentials from \
         `LENS_REGISTRY_USERNAME`/`LENS_REGISTRY_PASSWORD` or `~/.docker/config.json`) and \
         prints the line a platform team pastes into its config, pinned by digest: `path = \
         \"oci://REGISTRY/{name}:0.1.0@sha256:…\"`. Every node pulls it once and starts \
         offline after that (`lens pull lens.toml` in a job's prologue). Add `--sign-key \
         cosign.key` (cosign's key pair, password in `COSIGN_PASSWORD`) to sign it, and give \
         users `cosign.pub` for their entry's `verify = {{ key = \"cosign.pub\" }}`; \
         `docs/registry.md` in the Lens repository has the rest.\n"
    )
}

/// An HTTP exporter's README: what it sends where, and how to try it against the local test
/// server.
fn http_readme(m: &Manifest, signals: &str, source: &str) -> String {
    format!(
        "# {name}\n\n\
         A Lens vendor integration for {signals}, in {language}: `{source}` POSTs each batch's \
         OTLP (protobuf{json}) to `settings.endpoint`, one OTLP path per signal (`/v1/traces`, \
         `/v1/metrics`, `/v1/logs`). It never holds the vendor's key: the platform team hands \
         it to the host as a credential, and the host adds the `{KEY_HEADER}` header to the \
         requests to the endpoint's host only.\n\n\
         Try it against the stand-in ingest in `test_server.py` (Python's standard library; it \
         accepts the key in `${KEY_VARIABLE}` and refuses any other), in two terminals:\n\n\
         ```sh\n\
         {KEY_VARIABLE}=test-key python3 test_server.py\n\
         ```\n\n\
         ```sh\n\
         lens build\n\
         {KEY_VARIABLE}=test-key lens check build/{name}.wasm --allow-host {TEST_SERVER} \\\n    \
         --credential {KEY_HEADER}@http://{TEST_SERVER}=env:{KEY_VARIABLE} \\\n    \
         --setting endpoint=http://{TEST_SERVER}\n\
         {KEY_VARIABLE}=test-key lens demo --config lens.toml\n\
         ```\n\n\
         The server prints a line per request; with another key it answers 401, and `lens \
         check` and the demo show the exports `rejected` with that status. `lens.toml` grants \
         exactly that host and that credential; for the real ingest, name its host \
         (`ingest.acme.com:443`) in `allowed_hosts` and in the credential, with `https://` in \
         `endpoint` (a credential travels over plain `http://` to loopback only).\n\n\
         {edit}\n{ship}",
        ship = ship(&m.name),
        name = m.name,
        language = m.language.display_name(),
        json = if m.language == Language::Rust {
            ""
        } else {
            " or, with `format = \"json\"`, OTLP/JSON"
        },
        edit = match m.language {
            Language::Python =>
                "The SDK's HTTP client: `lens_exporter_sdk.http` (`post`, `send`, \
                                 `export_result`).",
            Language::Js =>
                "The SDK's HTTP helpers: `post`, `send`, `exportResult` and \
                             `parseUrl` from `lens-exporter-sdk`.",
            Language::Rust => {
                "The SDK's HTTP client: `lens_exporter_sdk::http` (`cargo doc --open`)."
            }
        },
    )
}

/// An HTTP exporter's config entry for `table`: its endpoint, host and credential, the local
/// test server's.
fn http_entry(m: &Manifest, table: &str) -> String {
    format!(
        "\n[[{table}.exporters]]\nkind = \"wasm\"\nname = \"{name}\"\npath = \"build/{name}.wasm\"\n\
         settings = {{ endpoint = \"http://{TEST_SERVER}\" }}\n\
         # The one host it may reach, and the key the host adds to requests to it (from\n\
         # ${KEY_VARIABLE}; the component never sees it).\n\
         allowed_hosts = [\"{TEST_SERVER}\"]\n\
         credentials = [{{ host = \"http://{TEST_SERVER}\", header = \"{KEY_HEADER}\", from_env = \"{KEY_VARIABLE}\" }}]\n",
        name = m.name
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
        if m.kind == ProjectKind::Processor {
            // What the demo makes, for the processor to drop and redact.
            let (drop, keys) = match s {
                ProjectSignal::Spans => ("optimizer", "gen_ai.prompt,gen_ai.completion"),
                ProjectSignal::Metrics => ("train.tokens_per_second", "user.email"),
                ProjectSignal::Logs => ("", "user.email"),
            };
            text.push_str(&format!(
                "\n# What the processor leaves goes to the console (`lens demo`'s summary notes what\n\
                 # it dropped).\n\
                 [[{table}.exporters]]\nkind = \"console\"\n\n\
                 [[{table}.processors]]\nkind = \"wasm\"\nname = \"{name}\"\n\
                 path = \"build/{name}.wasm\"\n\
                 settings = {{ drop = \"{drop}\", keys = \"{keys}\" }}\n",
                name = m.name
            ));
            continue;
        }
        if m.http {
            text.push_str(&http_entry(m, table));
            continue;
        }
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
                 \"type\": \"module\",\n  \"main\": \"{{js_entry}}\",\n  \"dependencies\": {\n    \
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
    if m.http {
        files.push((
            "test_server.py",
            include_str!("templates/test_server.py").to_string(),
        ));
    }
    files
}
