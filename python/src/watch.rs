//! `[reload] watch = true` for an exporter built from a config file (`from_config`): a thread
//! polls the file and, when its content changes, reloads the exporter from the entry named like
//! it (kept when the entry's file and settings did not change). A reload that fails is logged
//! (logger `lens`, WARNING) and the running component stays. The thread ends when the exporter
//! is shut down or dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use lens::Signal;
use lens::config::{FileWatch, WasmExporterSpec};

use crate::core::Entry;
use crate::following::Following;
use crate::handoff::Guest;

/// What the thread needs of one exporter.
pub struct Watched<E> {
    pub following: Weak<Following<E>>,
    pub spec: Arc<Mutex<WasmExporterSpec>>,
    pub closed: Arc<AtomicBool>,
    pub name: String,
    pub signal: Signal,
}

/// Starts the thread watching `file` every `poll`.
pub fn start<E: Guest>(watched: Watched<E>, file: FileWatch, poll: Duration) {
    let spawned = std::thread::Builder::new()
        .name(format!("lens-reload-{}", watched.name))
        .spawn(move || run(&watched, file, poll));
    if let Err(e) = spawned {
        log::warn!("cannot start the thread watching the config file: {e}");
    }
}

fn run<E: Guest>(watched: &Watched<E>, mut file: FileWatch, poll: Duration) {
    let name = &watched.name;
    loop {
        std::thread::sleep(poll);
        if watched.closed.load(Ordering::Acquire) {
            return;
        }
        if !file.changed() {
            continue;
        }
        let Some(following) = watched.following.upgrade() else {
            return;
        };
        let at = file.path().display();
        let spec = match Entry::find(file.path(), Some(name), watched.signal) {
            Ok(entry) => entry.spec,
            Err(e) => {
                log::warn!("wasm exporter `{name}`: {at} changed but was not reloaded: {e}");
                continue;
            }
        };
        if following.with(|e| e.runs(&spec)) {
            continue; // another entry changed, or only the file's formatting
        }
        match following.with(|e| e.reload(&spec)) {
            Ok(r) => {
                log::info!(
                    "wasm exporter `{name}`: reloaded from {at} (sha256 {}, was {})",
                    r.sha256,
                    r.previous_sha256
                );
                *watched.spec.lock().unwrap_or_else(|p| p.into_inner()) = spec;
            }
            Err(e) => log::warn!("{e} (from {at})"),
        }
    }
}
