//! `[reload] watch = true` for an exporter built from a config file (`from_config`): a thread
//! polls the file and, when its content changes, reloads the exporter from the entry named like
//! it (kept when the entry's file and settings did not change). A reload that fails is logged
//! (logger `lens`, WARNING) and the running component stays. The thread ends when the exporter
//! is shut down or dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use lens::Signal;
use lens::config::{FileWatch, ProcessorSpec, WasmExporterSpec};

use crate::core::Entry;
use crate::following::Following;
use crate::handoff::{Guest, Queue};

/// What the thread needs of one exporter.
pub struct Watched<E> {
    pub following: Weak<Following<E>>,
    pub spec: Arc<Mutex<WasmExporterSpec>>,
    pub closed: Arc<AtomicBool>,
    pub name: String,
    pub signal: Signal,
    /// Its hand-off queue, whose processors a changed file replaces (`None`: blocking).
    pub queue: Option<Weak<dyn Queue>>,
    /// The processor entries it runs now.
    pub processors: Mutex<Vec<ProcessorSpec>>,
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
        let entry = match Entry::find(file.path(), Some(name), watched.signal) {
            Ok(entry) => entry,
            Err(e) => {
                log::warn!("wasm exporter `{name}`: {at} changed but was not reloaded: {e}");
                continue;
            }
        };
        rechain(watched, &entry, &at.to_string());
        let spec = entry.spec;
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

/// The processors of `entry` (read from the file at `at`) for the watched exporter's queue, when
/// they differ from those it runs: built first, then swapped in (batches running finish on the
/// old chain); a failure is logged and the running processors stay.
fn rechain<E>(watched: &Watched<E>, entry: &Entry, at: &str) {
    let name = &watched.name;
    let mut running = watched.processors.lock().unwrap_or_else(|p| p.into_inner());
    if *running == entry.processors {
        return;
    }
    let Some(queue) = watched.queue.as_ref().and_then(Weak::upgrade) else {
        log::warn!(
            "wasm exporter `{name}`: the processors in {at} changed, but a blocking exporter \
             runs none (use a queued mode)"
        );
        return;
    };
    match crate::core::build_processors(entry) {
        Ok(processors) => {
            let n = processors.len();
            queue.rechain(processors);
            *running = entry.processors.clone();
            log::info!("wasm exporter `{name}`: {n} processor(s) from {at} now run before it");
        }
        Err(e) => log::warn!("wasm exporter `{name}`: the processors in {at} stay: {e}"),
    }
}
