//! A rank's hot reload (`--reload-after-s N --reload-config FILE`): N seconds into the run, a
//! thread beside the training loop applies the file's exporters to the running installation;
//! the rank's summary says what it did and which component each exporter ended on.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lens::{ReloadReport, TelemetryHandle};

/// The reload thread of a rank.
pub struct Reloader {
    cancel: Sender<()>,
    thread: JoinHandle<String>,
}

impl Reloader {
    /// Reloads `handle`'s exporters from `file` (a Lens config, read as `--config` is) after
    /// `after`, unless [`finish`](Self::finish) comes first.
    pub fn start(handle: &TelemetryHandle, file: PathBuf, out: PathBuf, after: Duration) -> Self {
        let (cancel, cancelled) = channel();
        let handle = handle.clone();
        let thread =
            std::thread::spawn(move || reload_after(&handle, &file, &out, after, &cancelled));
        Self { cancel, thread }
    }

    /// What the reload did, as a note for the summary (the run ended first: it did not
    /// happen).
    pub fn finish(self) -> String {
        let _ = self.cancel.send(());
        self.thread
            .join()
            .unwrap_or_else(|_| "reload: its thread panicked".into())
    }
}

fn reload_after(
    handle: &TelemetryHandle,
    file: &Path,
    out: &Path,
    after: Duration,
    cancelled: &Receiver<()>,
) -> String {
    let started = Instant::now();
    match cancelled.recv_timeout(after) {
        Err(RecvTimeoutError::Timeout) => {}
        Ok(()) | Err(RecvTimeoutError::Disconnected) => {
            return format!(
                "reload: not made, the run ended after {:.1}s (before --reload-after-s)",
                started.elapsed().as_secs_f64()
            );
        }
    }
    let at = started.elapsed().as_secs_f64();
    let outcome = super::rank::rank_config(Some(file), out)
        .and_then(|config| handle.reload_exporters(&config));
    match outcome {
        Ok(report) => format!(
            "reload at {at:.1}s from {} took {:.2}s: {}",
            file.display(),
            started.elapsed().as_secs_f64() - at,
            describe(&report)
        ),
        Err(e) => format!("reload at {at:.1}s refused: {e}"),
    }
}

/// What a reload changed, in a line.
fn describe(report: &ReloadReport) -> String {
    let mut parts: Vec<String> = report
        .reloaded
        .iter()
        .map(|r| {
            format!(
                "{} `{}` swapped to {}",
                r.signal,
                r.exporter,
                short(&r.sha256)
            )
        })
        .collect();
    parts.extend(
        report
            .processors
            .iter()
            .map(|s| format!("[[{s}.processors]] rechained")),
    );
    for (what, list) in [
        ("rebuilt", &report.replaced),
        ("added", &report.added),
        ("removed", &report.removed),
    ] {
        parts.extend(list.iter().map(|(s, n)| format!("{s} `{n}` {what}")));
    }
    if !report.not_applied.is_empty() {
        parts.push(format!(
            "next start only: {}",
            report.not_applied.join(", ")
        ));
    }
    if parts.is_empty() {
        "nothing changed".into()
    } else {
        parts.join("; ")
    }
}

/// The first 12 hex digits of a SHA-256.
pub fn short(sha256: &str) -> &str {
    &sha256[..sha256.len().min(12)]
}
