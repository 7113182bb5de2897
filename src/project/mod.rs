//! Exporter projects outside this repository: `lens new` makes one, `lens build` builds it.
//!
//! - [`manifest`]: `lens-exporter.toml`, what a project is (name, language, signals, SDK);
//! - [`sdk`]: the guest SDKs and WIT carried in the binary, installed once per user;
//! - [`tools`]: the pinned toolchains (componentize-py, componentize-js, cargo), found or
//!   installed once per user;
//! - [`templates`]: the files of a new project, per language and signal;
//! - [`new`], [`build`]: the two commands.
//!
//! Where things go: the Lens home (`LENS_HOME`, else `$XDG_DATA_HOME/lens`, else
//! `~/.local/share/lens`) holds `sdk/` and `tools/` (`LENS_TOOLS_DIR` moves the latter); a
//! project's own build output is `build/` in the project.

pub mod build;
pub mod manifest;
pub mod new;
pub mod sdk;
pub mod templates;
pub mod tools;

use std::path::PathBuf;

/// The Lens home: `LENS_HOME`, else `$XDG_DATA_HOME/lens`, else `$HOME/.local/share/lens`.
pub fn home() -> Result<PathBuf, String> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    let home = if let Some(h) = var("LENS_HOME") {
        PathBuf::from(h)
    } else if let Some(xdg) = var("XDG_DATA_HOME") {
        PathBuf::from(xdg).join("lens")
    } else if let Some(h) = var("HOME") {
        PathBuf::from(h).join(".local/share/lens")
    } else {
        return Err("no Lens home: set LENS_HOME (or HOME) to a writable directory".into());
    };
    std::path::absolute(&home).map_err(|e| format!("LENS_HOME `{}`: {e}", home.display()))
}

/// Where the toolchains live: `LENS_TOOLS_DIR`, else `<home>/tools`.
pub fn tools_dir() -> Result<PathBuf, String> {
    match std::env::var_os("LENS_TOOLS_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => std::path::absolute(PathBuf::from(&dir))
            .map_err(|e| format!("LENS_TOOLS_DIR `{}`: {e}", PathBuf::from(dir).display())),
        None => Ok(home()?.join("tools")),
    }
}
