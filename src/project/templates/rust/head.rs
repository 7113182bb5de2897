//! {{name}}: a Lens exporter for {{signals}}.
//!
//! `lens build` makes build/{{name}}.wasm; `lens check build/{{name}}.wasm` runs the
//! conformance suite on it and shows what it printed. Each type below implements one of the
//! SDK's exporter traits (`cargo doc --open` shows the SDK's API); replace the bodies of
//! `export` with calls to your backend. A line on stdout is the easiest start (`lens check`
//! shows it under its case, `lens demo` writes it into its run folder).
//!
//! `Config` holds the exporter's `settings` table from the config (`config.setting("key")`) and
//! the rank's resource (`config.resource_attribute("dl.rank")`). The host owns retries: return
//! `ExportError::retryable(..)` for a transient failure, never sleep in `export`.

use std::io::Write;

use lens_exporter_sdk::{Config, ExportResult};

/// Writes `out` to stdout; a failed write fails the batch (the host counts it).
fn write_out(out: &str) -> ExportResult {
    std::io::stdout()
        .write_all(out.as_bytes())
        .map_err(|e| lens_exporter_sdk::ExportError::rejected(format!("stdout: {e}")))
}
