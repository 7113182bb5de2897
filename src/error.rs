//! The public error type.

use std::path::PathBuf;

/// Everything that can go wrong setting up or running Lens. Each variant names what it is about:
/// the config file and key, the environment variable, or the exporter.
#[derive(Debug, thiserror::Error)]
pub enum LensError {
    /// A config file (or config built in code) is invalid.
    #[error("invalid config {source_name}: {message}")]
    Config {
        /// The file path, or `<config>`.
        source_name: String,
        /// What is wrong, naming the key.
        message: String,
    },
    /// An environment variable does not parse.
    #[error("invalid environment variable {variable}={value:?}: expected {expected}")]
    Env {
        /// Its name.
        variable: String,
        /// Its value.
        value: String,
        /// What was expected.
        expected: String,
    },
    /// A second setup in one process without `allow_reinit`.
    #[error(
        "telemetry is already set up in this process (set `allow_reinit = true` to replace it)"
    )]
    AlreadyInitialized,
    /// Rank or world size are inconsistent.
    #[error("invalid rank: {0}")]
    Rank(String),
    /// The configured export strategy is not known.
    #[error("unknown export strategy `{name}` (built in: {builtin}; registered: {registered})")]
    UnknownStrategy {
        /// The name in the config.
        name: String,
        /// Built-in names.
        builtin: String,
        /// Names registered at run time.
        registered: String,
    },
    /// Registering a strategy under a protected or taken name.
    #[error("cannot register export strategy `{0}`: the name is built in or already registered")]
    StrategyNameTaken(String),
    /// An exporter could not be built.
    #[error("exporter `{exporter}`: {message}")]
    Exporter {
        /// The exporter's display name.
        exporter: String,
        /// What went wrong.
        message: String,
    },
    /// A `.wasm` exporter could not be loaded.
    #[error("wasm exporter `{exporter}` ({path}): {message}")]
    WasmLoad {
        /// The exporter's display name.
        exporter: String,
        /// The component file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// Flush or shutdown did not complete cleanly.
    #[error("{operation} incomplete: {details}")]
    Incomplete {
        /// `force_flush` or `shutdown`.
        operation: &'static str,
        /// Per exporter, what failed.
        details: String,
    },
}

impl LensError {
    pub(crate) fn exporter(exporter: impl Into<String>, message: impl std::fmt::Display) -> Self {
        Self::Exporter {
            exporter: exporter.into(),
            message: message.to_string(),
        }
    }
}
