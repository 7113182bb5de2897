//! `lens-exporter.toml`: what `lens new` writes and `lens build` reads.
//!
//! ```toml
//! name = "my-exporter"            # the component: build/my-exporter.wasm
//! language = "python"             # python, js or rust
//! kind = "exporter"               # exporter (the default) or processor
//! signals = ["spans", "metrics"]  # any of spans, metrics, logs
//! sdk = "0.4.0"                   # the guest SDK (and WIT) version it is written against
//! http = true                     # exporters only: build against a world importing wasi:http
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::sdk::SDK_VERSION;

/// Older SDK versions a project may name: its code builds against this lens's SDK unchanged.
pub const COMPATIBLE_SDK_VERSIONS: &[&str] = &["0.3.0"];

/// The manifest's file name, at the project's root.
pub const MANIFEST: &str = "lens-exporter.toml";

/// A project's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// Python, built with componentize-py on the Python SDK.
    Python,
    /// JavaScript, bundled with rolldown and built with componentize-js on the JS SDK.
    Js,
    /// Rust, built with `cargo` for `wasm32-wasip2` on the Rust SDK.
    Rust,
}

impl Language {
    /// Its name in prose.
    pub fn display_name(self) -> &'static str {
        match self {
            Language::Python => "Python",
            Language::Js => "JavaScript",
            Language::Rust => "Rust",
        }
    }

    /// Its name in the manifest and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Js => "js",
            Language::Rust => "rust",
        }
    }
}

/// What a project's component is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ProjectKind {
    /// An exporter (`span-exporter`, `metric-exporter`, `log-exporter`).
    #[default]
    Exporter,
    /// A processor (`span-processor`, `metric-processor`, `log-processor`), run before the
    /// exporters (`[[traces.processors]]` & co.).
    Processor,
}

impl ProjectKind {
    /// Its name in prose, the manifest and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ProjectKind::Exporter => "exporter",
            ProjectKind::Processor => "processor",
        }
    }
}

/// A signal an exporter serves.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum ProjectSignal {
    /// Spans (`span-exporter`).
    Spans,
    /// Metrics (`metric-exporter`).
    Metrics,
    /// Log records (`log-exporter`).
    Logs,
}

impl fmt::Display for ProjectSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProjectSignal::Spans => "spans",
            ProjectSignal::Metrics => "metrics",
            ProjectSignal::Logs => "logs",
        })
    }
}

/// `lens-exporter.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The component's name: `build/<name>.wasm`. Letters, digits, `-` and `_`, starting with
    /// a letter. Example: `name = "acme-exporter"`.
    pub name: String,
    /// The language. Example: `language = "python"`.
    pub language: Language,
    /// What the component is: `exporter` (the default) or `processor`. Example:
    /// `kind = "processor"`.
    #[serde(default)]
    pub kind: ProjectKind,
    /// The signals it exports, each once: the component exports exactly these interfaces.
    /// Example: `signals = ["spans", "logs"]`.
    pub signals: Vec<ProjectSignal>,
    /// The SDK version it is written against; must be the one this `lens` carries. Example:
    /// `sdk = "0.4.0"`.
    pub sdk: String,
    /// Whether the component may send HTTP requests: it is built against the world of
    /// `lens:exporter-http` that imports `wasi:http/outgoing-handler` (what it may reach is
    /// still the config entry's `allowed_hosts`). Exporters only. Example: `http = true`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub http: bool,
}

impl Manifest {
    /// Reads and checks `<dir>/lens-exporter.toml`; errors name the file.
    pub fn load(dir: &Path) -> Result<Self, String> {
        let path = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            format!(
                "{}: {e} (is {} a project made by `lens new`?)",
                path.display(),
                dir.display()
            )
        })?;
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses and checks a manifest's text.
    pub fn parse(text: &str) -> Result<Self, String> {
        let m: Manifest = toml::from_str(text).map_err(|e| e.message().to_string())?;
        m.validate()?;
        Ok(m)
    }

    /// The checks beyond the types.
    pub fn validate(&self) -> Result<(), String> {
        check_name(&self.name)?;
        if self.signals.is_empty() {
            return Err("`signals` is empty: list at least one of spans, metrics, logs".into());
        }
        let mut seen = self.signals.clone();
        seen.sort();
        if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("`signals` lists `{}` twice", w[0]));
        }
        // SDK 0.4.0 added processors; an exporter written against 0.3.0 builds unchanged.
        if self.sdk != SDK_VERSION && !COMPATIBLE_SDK_VERSIONS.contains(&self.sdk.as_str()) {
            return Err(format!(
                "`sdk = \"{}\"`: this lens carries SDK {SDK_VERSION}; write `sdk = \
                 \"{SDK_VERSION}\"` (and follow CHANGELOG.md for what changed) or use the lens \
                 that made the project",
                self.sdk
            ));
        }
        if self.http && self.kind == ProjectKind::Processor {
            return Err(
                "`http = true` is for exporters: a processor answers with edits and sends \
                 nothing (leave `http` out, or make an exporter)"
                    .into(),
            );
        }
        if self.http && self.sdk != SDK_VERSION {
            return Err(format!(
                "`http = true`: the HTTP worlds came with SDK {SDK_VERSION}; write `sdk = \
                 \"{SDK_VERSION}\"`"
            ));
        }
        if self.kind == ProjectKind::Processor && self.sdk != SDK_VERSION {
            return Err(format!(
                "`sdk = \"{}\"`: processors came with SDK {SDK_VERSION}; write `sdk = \
                 \"{SDK_VERSION}\"`",
                self.sdk
            ));
        }
        Ok(())
    }

    /// The WIT world exporting exactly the manifest's signals' exporters (or processors).
    pub fn world(&self) -> &'static str {
        let has = |s| self.signals.contains(&s);
        let which = (
            has(ProjectSignal::Spans),
            has(ProjectSignal::Metrics),
            has(ProjectSignal::Logs),
        );
        match self.kind {
            ProjectKind::Exporter => match which {
                (true, false, false) => "exporter",
                (false, true, false) => "metrics",
                (false, false, true) => "logs",
                (true, true, false) => "spans-metrics",
                (true, false, true) => "spans-logs",
                (false, true, true) => "metrics-logs",
                _ => "all-signals",
            },
            ProjectKind::Processor => match which {
                (true, false, false) => "span-processors",
                (false, true, false) => "metric-processors",
                (false, false, true) => "log-processors",
                (true, true, false) => "span-metric-processors",
                (true, false, true) => "span-log-processors",
                (false, true, true) => "metric-log-processors",
                _ => "all-processors",
            },
        }
    }

    /// The JavaScript source `lens build` bundles.
    pub fn js_entry(&self) -> &'static str {
        match self.kind {
            ProjectKind::Exporter => "exporter.js",
            ProjectKind::Processor => "processor.js",
        }
    }

    /// The component `lens build` writes: `<dir>/build/<name>.wasm`.
    pub fn output(&self, dir: &Path) -> PathBuf {
        dir.join("build").join(format!("{}.wasm", self.name))
    }

    /// The manifest's text, commented.
    pub fn to_toml(&self) -> String {
        let signals: Vec<String> = self.signals.iter().map(|s| format!("\"{s}\"")).collect();
        format!(
            "# Written by `lens new`, read by `lens build`.\n\
             # The component: build/{name}.wasm\n\
             name = \"{name}\"\n\
             # python, js or rust\n\
             language = \"{language}\"\n\
             # exporter or processor\n\
             kind = \"{kind}\"\n\
             # Any of spans, metrics, logs: the component exports exactly these.\n\
             signals = [{signals}]\n\
             # The guest SDK (and WIT) version the component is written against.\n\
             sdk = \"{sdk}\"\n{http}",
            name = self.name,
            language = self.language.as_str(),
            kind = self.kind.as_str(),
            signals = signals.join(", "),
            sdk = self.sdk,
            http = if self.http {
                "# Built against a world importing wasi:http: the component may send HTTP \
                 requests\n# (to the hosts its config entry's allowed_hosts grants).\nhttp = true\n"
            } else {
                ""
            },
        )
    }

    /// The WIT package (`wit/` or `wit/http/` of the installed SDK) whose [`Manifest::world`]
    /// the component is built against.
    pub fn wit_dir(&self, sdk: &super::sdk::InstalledSdk) -> PathBuf {
        if self.http { sdk.wit_http() } else { sdk.wit() }
    }
}

/// A project name: what a file name, a Python module, an npm package and a Cargo package all
/// accept.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`name = \"{name}\"`: a name is 1 to 64 letters, digits, `-` or `_`, starting with a \
             letter (it names build/<name>.wasm and the package)"
        ))
    }
}
