//! Reloads of a running installation's exporters ([`TelemetryHandle::reload_exporters`],
//! [`TelemetryHandle::reload_config_file`]) and the triggers `[reload]` turns on for a process
//! whose code a user does not control: a watched config file and SIGHUP.
//!
//! The triggers run on one thread per installation (`lens-reload`), which holds the
//! installation weakly (dropping the last handle still shuts it down) and ends with it. A
//! reload it makes that fails is logged at WARNING with the reason; the exporters running
//! keep running, and the file is read again at its next change.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use opentelemetry_sdk::Resource;

use super::handle::{HandleInner, TelemetryHandle};
use crate::Signal;
use crate::config::env::EnvSource;
use crate::config::{FileWatch, LensConfig};
use crate::error::LensError;
use crate::exporter::ConsoleOut;
use crate::exporter::python_json::ResourceOrder;
use crate::pipeline::BuildContext;
use crate::pipeline::reload::{Fanouts, Registry, ReloadReport};
use crate::rank::RankInfo;

/// What a reload of an installation needs besides its providers.
pub(super) struct ReloadState {
    pub(super) registry: Mutex<Registry>,
    pub(super) env: Arc<dyn EnvSource + Send + Sync>,
    pub(super) rank: RankInfo,
    pub(super) resource: Resource,
    pub(super) console: ConsoleOut,
    pub(super) resource_order: ResourceOrder,
    pub(super) guest_output: crate::wasm::GuestOutputCopy,
    /// The file a reload without one reads: `[reload] file`, else the one of the setup.
    pub(super) file: Option<PathBuf>,
    /// Set at shutdown: the trigger thread ends, SIGHUP is let go.
    pub(super) stop: Arc<AtomicBool>,
}

/// The config file at `path` as a reload reads it: parsed, checked, with the environment's
/// overrides (as a rank applies them at setup).
fn read_config(path: &Path, env: &dyn EnvSource) -> Result<LensConfig, LensError> {
    let mut config = LensConfig::from_file(path)?;
    config.apply_env(env)?;
    Ok(config)
}

impl TelemetryHandle {
    /// Applies `config`'s exporter entries to this running installation, while its exporters
    /// keep exporting: entries are matched by name within each signal; one whose file and
    /// settings did not change is kept as it is; a `.wasm` entry with a new file or settings
    /// gets the new component swapped in between two batches, counters carried on (its
    /// `reloads` count and `component_sha256` in [`stats`](Self::stats)); other changed span
    /// and log entries get a new processor, new ones are added, missing ones removed. All or
    /// nothing: everything new is built (compiled, instantiated, `init`ed) first, and any
    /// failure (naming the exporter, the file and the step) leaves every exporter as it was.
    /// Other keys that changed are listed in [`ReloadReport::not_applied`]. A rank that does
    /// not export has nothing to reload (an empty report).
    pub fn reload_exporters(&self, config: &LensConfig) -> Result<ReloadReport, LensError> {
        reload(&self.inner, config.clone())
    }

    /// Reads the config file again (`[reload] file`, else the one given to
    /// [`TelemetryBuilder::config_file`](super::TelemetryBuilder::config_file)), with the
    /// environment's overrides, and [reloads](Self::reload_exporters) its exporters.
    pub fn reload_config_file(&self) -> Result<ReloadReport, LensError> {
        let Some(state) = &self.inner.reload else {
            return Ok(ReloadReport::default());
        };
        let Some(file) = &state.file else {
            return Err(LensError::Config {
                source_name: "reload".into(),
                message: "no config file to reload from: set `[reload] file`, or give the \
                          installation its file with TelemetryBuilder::config_file"
                    .into(),
                source: None,
            });
        };
        reload(&self.inner, read_config(file, state.env.as_ref())?)
    }
}

/// See [`TelemetryHandle::reload_exporters`].
fn reload(inner: &HandleInner, config: LensConfig) -> Result<ReloadReport, LensError> {
    let Some(state) = &inner.reload else {
        return Ok(ReloadReport::default());
    };
    config.validate(&crate::config::ConfigSource::Code)?;
    let mut registry = state.registry.lock().unwrap_or_else(|p| p.into_inner());
    let mut ctx = BuildContext::new(
        &config,
        state.env.as_ref(),
        state.rank,
        state.resource.clone(),
    )
    .with_console(state.console.clone(), state.resource_order.clone())
    .with_guest_output(state.guest_output.clone())
    .for_reload();
    let mut processor_stats = vec![
        (Signal::Logs, &inner.log_processor_stats),
        (Signal::Metrics, &inner.metric_processor_stats),
    ];
    if let Some(core) = inner.fanout.as_deref() {
        processor_stats.push((Signal::Traces, core.processor_stats()));
    }
    let fanouts = Fanouts {
        traces: inner.fanout.as_deref(),
        logs: inner.log_fanout.as_deref().map(|f| (f, &inner.log_stats)),
        processor_stats,
    };
    let pending = crate::pipeline::reload::prepare(&registry, config.clone(), &mut ctx, &fanouts)?;
    let committed = {
        // A shutdown never sees half a reload: it waits for the swap, or the reload sees it.
        let shutdown = inner.shutdown.lock().unwrap_or_else(|p| p.into_inner());
        if shutdown.is_some() {
            drop(shutdown);
            pending.abandon();
            return Err(LensError::Config {
                source_name: "reload".into(),
                message: "the installation is shut down".into(),
                source: None,
            });
        }
        pending.commit(&mut registry, &fanouts)
    };
    let report = committed.finish();
    log_report(inner.rank.rank, &report);
    Ok(report)
}

fn log_report(rank: u32, report: &ReloadReport) {
    let names = |list: &[(crate::Signal, String)]| {
        list.iter()
            .map(|(s, n)| format!("{s} `{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for r in &report.reloaded {
        log::info!(
            "rank {rank} reload: {} exporter `{}` now runs sha256 {} (was {})",
            r.signal,
            r.exporter,
            r.sha256,
            r.previous_sha256
        );
    }
    for (what, list) in [
        ("rebuilt", &report.replaced),
        ("added", &report.added),
        ("removed", &report.removed),
    ] {
        if !list.is_empty() {
            log::info!("rank {rank} reload: {what} {}", names(list));
        }
    }
    if !report.not_applied.is_empty() {
        log::warn!(
            "rank {rank} reload: changed keys that apply at the next start only: {}",
            report.not_applied.join(", ")
        );
    }
}

/// Starts the trigger thread `[reload]` asks for, if any, on `file` (watched from the content
/// the installation was set up from). Errors name the key.
pub(super) fn start_triggers(
    inner: &Arc<HandleInner>,
    config: &crate::config::ReloadConfig,
    file: Option<FileWatch>,
) -> Result<(), LensError> {
    let Some(state) = &inner.reload else {
        return Ok(());
    };
    if !config.watch && !config.sighup {
        return Ok(());
    }
    let Some(watched) = file else {
        return Err(LensError::Config {
            source_name: "<config>".into(),
            message: "`reload.watch`/`reload.sighup`: no file to reload from; set `[reload] \
                      file`, or give the installation its file with \
                      TelemetryBuilder::config_file"
                .into(),
            source: None,
        });
    };
    let hangup = Arc::new(AtomicBool::new(false));
    let signal = if config.sighup {
        Some(register_sighup(&hangup)?)
    } else {
        None
    };
    let weak = Arc::downgrade(inner);
    let stop = state.stop.clone();
    let watch = config.watch;
    let poll = Duration::from_millis(config.poll_interval_ms);
    std::thread::Builder::new()
        .name("lens-reload".into())
        .spawn(move || {
            let _suppress = opentelemetry::Context::enter_telemetry_suppressed_scope();
            watch_loop(weak, watched, watch, poll, &hangup, &stop);
            unregister_sighup(signal);
        })
        .map_err(|e| LensError::Config {
            source_name: "reload".into(),
            message: format!("cannot start the reload thread: {e}"),
            source: None,
        })?;
    Ok(())
}

/// Polls the file (when watched) and the SIGHUP flag until the installation ends.
fn watch_loop(
    weak: Weak<HandleInner>,
    mut watched: FileWatch,
    watch: bool,
    poll: Duration,
    hangup: &AtomicBool,
    stop: &AtomicBool,
) {
    // SIGHUP is looked at more often than a slow poll of the file.
    let tick = poll.min(Duration::from_millis(100));
    let file = watched.path().to_path_buf();
    let file = file.as_path();
    let mut since_poll = Duration::ZERO;
    while !stop.load(Ordering::Acquire) {
        std::thread::sleep(tick);
        since_poll += tick;
        let signalled = hangup.swap(false, Ordering::AcqRel);
        let mut changed = false;
        if watch && since_poll >= poll {
            since_poll = Duration::ZERO;
            changed = watched.changed();
        }
        if !(signalled || changed) {
            continue;
        }
        let Some(inner) = weak.upgrade() else { return };
        // The thread is started for an installation with exporters to reload.
        let Some(state) = &inner.reload else { return };
        let why = if signalled { "SIGHUP" } else { "file changed" };
        let outcome =
            read_config(file, state.env.as_ref()).and_then(|config| reload(&inner, config));
        match outcome {
            Ok(_) => log::info!("reload ({why}) from {} done", file.display()),
            Err(e) => log::warn!(
                "reload ({why}) from {} refused: {e}; the running exporters stay",
                file.display()
            ),
        }
        drop(inner);
    }
}

#[cfg(unix)]
type SignalId = signal_hook::SigId;
#[cfg(not(unix))]
type SignalId = ();

#[cfg(unix)]
fn register_sighup(flag: &Arc<AtomicBool>) -> Result<SignalId, LensError> {
    signal_hook::flag::register(signal_hook::consts::SIGHUP, flag.clone()).map_err(|e| {
        LensError::Config {
            source_name: "<config>".into(),
            message: format!("`reload.sighup`: cannot handle SIGHUP: {e}"),
            source: None,
        }
    })
}

#[cfg(not(unix))]
fn register_sighup(_: &Arc<AtomicBool>) -> Result<SignalId, LensError> {
    Err(LensError::Config {
        source_name: "<config>".into(),
        message: "`reload.sighup`: SIGHUP exists on Unix only".into(),
        source: None,
    })
}

fn unregister_sighup(id: Option<SignalId>) {
    #[cfg(unix)]
    if let Some(id) = id {
        signal_hook::low_level::unregister(id);
    }
    #[cfg(not(unix))]
    let _ = id;
}
