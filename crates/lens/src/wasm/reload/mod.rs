//! `Reloadable`: the instances of one wasm exporter (or processor), replaceable while it
//! exports (hot reload), and [`Reloaded`], what a reload did.
//!
//! A reload builds the new component's instances beside the running ones, through the same
//! steps as a setup (read, check, compile, link, instantiate, `init`), on the caller's thread,
//! while the running ones keep exporting. The switch is one pointer swapped under a lock, and
//! a batch is exported whole by the instances it started on: the switch falls between
//! batches, never inside one (a batch being retried stays with the instance it started on).
//! The replaced instances then end the batch they hold and get `force-flush` and `shutdown`,
//! each within its call deadline. A step that fails leaves the running instances as they were.
//!
//! Stage 6 (the roles, [`super::exporters`] and [`super::processors`], hold their lanes
//! through a `Reloadable`). May call: the lanes and the stages before them.
//!
//! Both sets of instances count into the exporter's one `ExporterStats`: counts carry across
//! a reload, which adds to `reloads` and sets the running component's SHA-256.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};

use opentelemetry_sdk::Resource;

use crate::batch::ExporterStats;
use crate::bindings::edit_types::ItemEdit;
use crate::config::env::{EnvSource, ProcessEnv};
use crate::config::{BatchConfig, WasmCacheConfig, WasmExporterSpec};
use crate::error::{LensError, ReloadStep, WasmSetupError};
use crate::wasm::artefact::cache::{self, ArtifactCache};
use crate::wasm::lanes::Lanes;
use crate::wasm::lanes::start::{HostInputs, start_lanes, start_role_lanes};
use crate::wasm::sandbox::guest_output::GuestOutputCopy;
use crate::wasm::sandbox::instance::Payload;
use crate::wasm::sandbox::interface::{Preferences, Role, Signal};
use crate::wasm::sandbox::link::{self as load, LoadChecks, setup_error};

/// What a reload of one wasm exporter did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reloaded {
    /// The exporter's display name.
    pub exporter: String,
    /// Its signal.
    pub signal: Signal,
    /// The SHA-256 (hex) of the component it ran before.
    pub previous_sha256: String,
    /// The SHA-256 (hex) of the component it runs now.
    pub sha256: String,
    /// Why the replaced instances' `force-flush` or `shutdown` failed, if one did (their
    /// batches are counted either way; the new instances export regardless).
    pub retire_error: Option<String>,
}

/// A check a new component's `init` answers must pass before it replaces the running one.
pub(crate) type Accept = Box<dyn Fn(&Preferences) -> Result<(), String> + Send + Sync>;

/// The running instances of one wasm exporter, replaceable while batches flow.
pub(crate) struct Reloadable {
    name: String,
    signal: Signal,
    /// An exporter's, or a processor's (whose instances number `batch.max_concurrent_exports`).
    role: Role,
    /// The entry's effective batch settings: the lanes' count and the export deadline.
    batch: BatchConfig,
    current: RwLock<Arc<Lanes>>,
    /// The entry the running instances were built from.
    spec: Mutex<WasmExporterSpec>,
    /// Set while a reload is prepared and not yet committed or dropped: one at a time.
    reloading: AtomicBool,
    closed: AtomicBool,
    stats: Arc<ExporterStats>,
    /// The rank and the guest-output copy of the installation, for the next instances.
    rank: u32,
    output: GuestOutputCopy,
    /// What a new component's `init` answers must satisfy (a metric reader's temporality).
    accept: OnceLock<Accept>,
    /// The compilation cache of the last load (its index knows files unmodified since).
    cache: Mutex<Option<&'static ArtifactCache>>,
}

impl Reloadable {
    /// The started `lanes` of the entry `spec`; `stats` learns which component runs.
    pub(crate) fn new(
        lanes: Lanes,
        spec: &WasmExporterSpec,
        signal: Signal,
        batch: BatchConfig,
        inputs: &HostInputs<'_>,
        stats: Arc<ExporterStats>,
    ) -> Self {
        stats.record_component(lanes.sha256());
        Self {
            name: lanes.name().to_string(),
            signal,
            role: Role::Exporter,
            batch,
            current: RwLock::new(Arc::new(lanes)),
            spec: Mutex::new(spec.clone()),
            reloading: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            stats,
            rank: inputs.rank,
            output: inputs.output.clone(),
            accept: OnceLock::new(),
            cache: Mutex::new(cache::shared(inputs.cache, inputs.env)),
        }
    }

    /// The started `lanes` of a processor entry's component `spec`, its call deadline and
    /// instance count in `batch` (`export_timeout_ms`, `max_concurrent_exports`).
    pub(crate) fn processor(
        lanes: Lanes,
        spec: &WasmExporterSpec,
        signal: Signal,
        batch: BatchConfig,
        inputs: &HostInputs<'_>,
        stats: Arc<ExporterStats>,
    ) -> Self {
        Self {
            role: Role::Processor,
            ..Self::new(lanes, spec, signal, batch, inputs, stats)
        }
    }

    /// From now on, a reload refuses a component whose `init` answers fail `accept`.
    pub(crate) fn set_accept(&self, accept: Accept) {
        let _ = self.accept.set(accept);
    }

    /// The exporter's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The batch encoding the running guest asked for, once started.
    pub(crate) fn encoding(&self) -> Option<&'static str> {
        self.current().encoding()
    }

    /// Hands the running instances `resource` (a reload starts the next ones with theirs).
    pub(crate) fn set_resource(&self, resource: &Resource) {
        self.current().set_resource(resource);
    }

    /// The running instances.
    pub(crate) fn current(&self) -> Arc<Lanes> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The entry the running instances were built from.
    pub(crate) fn spec(&self) -> WasmExporterSpec {
        self.spec.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Exports on the running instances; a batch that reached instances a reload had just
    /// replaced goes to the new ones, untouched.
    pub(crate) fn export<F>(&self, items: u64, make: F) -> OTelSdkResult
    where
        F: FnOnce(&Preferences, &Resource) -> Payload,
    {
        self.on_current(make, |lanes, make| lanes.export(items, make))
    }

    /// Runs a processor's `process` on the running instances, as [`export`](Self::export).
    pub(crate) fn process<F>(&self, make: F) -> Result<Vec<ItemEdit>, OTelSdkError>
    where
        F: FnOnce(&Preferences, &Resource) -> Payload,
    {
        self.on_current(make, |lanes, make| lanes.process(make))
    }

    /// `run` on the running instances, again on the next ones while a reload hands the batch
    /// (`make`) back from instances it retired.
    fn on_current<F, T>(&self, make: F, run: impl Fn(&Lanes, F) -> Result<T, F>) -> T {
        let mut make = make;
        loop {
            match run(&self.current(), make) {
                Ok(result) => return result,
                Err(back) => make = back,
            }
        }
    }

    /// Flushes the running instances.
    pub(crate) fn force_flush(&self, timeout: Option<Duration>) -> OTelSdkResult {
        self.current().force_flush(timeout)
    }

    /// Shuts the running instances down; a reload under way is then refused.
    pub(crate) fn shutdown(&self, timeout: Option<Duration>) -> OTelSdkResult {
        self.closed.store(true, Ordering::SeqCst);
        self.current().shutdown(timeout)
    }

    /// Whether `spec` names the file and settings the exporter runs now: the same entry, and
    /// a file whose SHA-256 is the running component's (a file rebuilt in place is a change;
    /// the file is read with the loader's checks, or not at all when the cache's index knows
    /// it unmodified).
    pub(crate) fn unchanged(&self, spec: &WasmExporterSpec) -> bool {
        *spec == self.spec()
            && load::file_sha256(&spec.path, LoadChecks::of(spec), self.cache())
                .is_ok_and(|sha| sha == self.current().sha256())
    }

    /// The compilation cache the running instances were loaded through.
    fn cache(&self) -> Option<&'static ArtifactCache> {
        *self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Replaces the running instances with the component of `spec`, built beside them (see
    /// the module's documentation), its grants read from `env` and compiled through `cache`.
    /// Errors name the exporter, the file and the step; the running instances stay.
    pub(crate) fn reload(
        self: &Arc<Self>,
        spec: &WasmExporterSpec,
        env: &dyn EnvSource,
        cache: &WasmCacheConfig,
    ) -> Result<Reloaded, LensError> {
        Ok(self.prepare(spec, env, cache)?.commit()?.retire())
    }

    /// The first step of [`reload`](Self::reload): the new instances, started and checked,
    /// not yet exporting (dropped unused, they are shut down). Another reload of this exporter
    /// is refused until this one is committed or dropped.
    pub(crate) fn prepare(
        self: &Arc<Self>,
        spec: &WasmExporterSpec,
        env: &dyn EnvSource,
        cache: &WasmCacheConfig,
    ) -> Result<Prepared, LensError> {
        if self.reloading.swap(true, Ordering::AcqRel) {
            return Err(self.refused("another reload of this exporter is under way"));
        }
        // From here on, dropping `prepared` (an early return included) ends the reload.
        let mut prepared = Prepared {
            owner: self.clone(),
            lanes: None,
            spec: spec.clone(),
            running: self.current(),
            cache: cache::shared(cache, env),
        };
        if self.closed.load(Ordering::SeqCst) {
            return Err(self.refused("the exporter is shut down"));
        }
        if spec.batch != self.spec().batch {
            return Err(self.refused(
                "its `batch` settings differ from the running entry's; they size the exporter's \
                 queue, fixed when it was built (from a telemetry handle, a reload rebuilds the \
                 span or log entry's processor for them)",
            ));
        }
        let resource = prepared.running.resource();
        let inputs = HostInputs {
            env,
            rank: self.rank,
            resource: &resource,
            cache,
            output: self.output.clone(),
        };
        let fail = |source: WasmSetupError| LensError::Reload {
            exporter: self.name.clone(),
            path: spec.path.clone(),
            step: ReloadStep::of(&source),
            source,
        };
        let lanes = match self.role {
            Role::Exporter => start_lanes(
                &self.name,
                spec,
                self.signal,
                &self.batch,
                &inputs,
                self.stats.clone(),
            ),
            Role::Processor => start_role_lanes(
                &self.name,
                spec,
                (self.signal, Role::Processor),
                self.batch.max_concurrent_exports,
                &self.batch,
                &inputs,
                self.stats.clone(),
            ),
        }
        .map_err(fail)?;
        prepared.lanes = Some(Arc::new(lanes));
        let preferences = prepared.lanes.as_ref().and_then(|l| l.preferences());
        if let (Some(p), Some(accept)) = (preferences.as_ref(), self.accept.get())
            && let Err(message) = accept(p)
        {
            return Err(fail(WasmSetupError::Incompatible(message)));
        }
        Ok(prepared)
    }

    /// What it is, in messages.
    fn label(&self) -> &'static str {
        match self.role {
            Role::Exporter => "wasm exporter",
            Role::Processor => "wasm processor",
        }
    }

    fn refused(&self, message: &str) -> LensError {
        LensError::ReloadUnsupported {
            exporter: self.name.clone(),
            message: message.to_string(),
        }
    }

    /// How long the replaced instances get to end the batch they hold (its retries
    /// included), then to flush and shut down.
    fn retire_timeout(&self) -> Duration {
        Duration::from_millis(
            self.batch
                .export_timeout_ms
                .saturating_add(self.batch.shutdown_timeout_ms),
        )
    }
}

/// A new component's instances, started beside the running ones: [`Prepared::commit`] swaps
/// them in; dropped instead, they are shut down.
pub(crate) struct Prepared {
    owner: Arc<Reloadable>,
    lanes: Option<Arc<Lanes>>,
    spec: WasmExporterSpec,
    /// The instances running when they were prepared.
    running: Arc<Lanes>,
    /// The compilation cache the new instances were loaded through.
    cache: Option<&'static ArtifactCache>,
}

/// A reload swapped in, whose replaced instances are still to end ([`Swapped::retire`]).
pub(crate) struct Swapped {
    owner: Arc<Reloadable>,
    replaced: Arc<Lanes>,
    reloaded: Reloaded,
}

impl Prepared {
    /// Swaps the new instances in: the switch falls between batches.
    pub(crate) fn commit(mut self) -> Result<Swapped, LensError> {
        let owner = self.owner.clone();
        let lanes = self.lanes.take().expect("prepared instances");
        let sha256 = lanes.sha256().to_string();
        {
            let mut current = owner.current.write().unwrap_or_else(|p| p.into_inner());
            if owner.closed.load(Ordering::SeqCst) {
                drop(current);
                let _ = lanes.shutdown(Some(owner.retire_timeout()));
                return Err(owner.refused("the exporter was shut down during the reload"));
            }
            // Reloads of one exporter are serialised, so the running instances are still the
            // ones this reload started beside.
            *current = lanes;
        }
        *owner.spec.lock().unwrap_or_else(|p| p.into_inner()) = self.spec.clone();
        *owner.cache.lock().unwrap_or_else(|p| p.into_inner()) = self.cache;
        owner.stats.record_reload(&sha256);
        log::info!(
            "{} `{}`: reloaded {} (sha256 {sha256}, was {})",
            owner.label(),
            owner.name,
            self.spec.path.display(),
            self.running.sha256()
        );
        Ok(Swapped {
            reloaded: Reloaded {
                exporter: owner.name.clone(),
                signal: owner.signal,
                previous_sha256: self.running.sha256().to_string(),
                sha256,
                retire_error: None,
            },
            replaced: self.running.clone(),
            owner,
        })
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if let Some(lanes) = self.lanes.take() {
            let _ = lanes.shutdown(Some(self.owner.retire_timeout()));
        }
        self.owner.reloading.store(false, Ordering::Release);
    }
}

impl Swapped {
    /// Ends the replaced instances: they finish the batch they hold and get `force-flush`
    /// and `shutdown`.
    pub(crate) fn retire(self) -> Reloaded {
        let Self {
            owner,
            replaced,
            mut reloaded,
        } = self;
        reloaded.retire_error = replaced
            .retire(owner.retire_timeout())
            .err()
            .map(|e| e.to_string());
        if let Some(e) = &reloaded.retire_error {
            log::warn!(
                "{} `{}`: the replaced component's force-flush/shutdown: {e}",
                owner.label(),
                owner.name
            );
        }
        reloaded
    }
}

/// `lanes` as a [`Reloadable`] for the entry `spec` (setup of an exporter).
pub(crate) fn reloadable(
    name: &str,
    spec: &WasmExporterSpec,
    signal: Signal,
    batch: &BatchConfig,
    inputs: &HostInputs<'_>,
    stats: Arc<ExporterStats>,
) -> Result<Reloadable, WasmSetupError> {
    let lanes = start_lanes(name, spec, signal, batch, inputs, stats.clone())?;
    Ok(Reloadable::new(lanes, spec, signal, *batch, inputs, stats))
}

/// What a `.wasm` exporter built outside a telemetry installation (tests, benchmarks, tools)
/// starts from: the process environment for `from_host` grants, the cache and the batch
/// defaults of the signal (with the entry's own `batch` overrides), rank 0. Errors name the
/// exporter and the file.
pub(crate) fn reloadable_from_config(
    name: &str,
    spec: &WasmExporterSpec,
    signal: Signal,
    resource: &Resource,
    output: GuestOutputCopy,
) -> Result<(Reloadable, Arc<ExporterStats>), LensError> {
    let config = crate::LensConfig::from_env()?;
    let inputs = HostInputs::standalone(resource, &config.wasm_cache, output);
    let stats = Arc::new(ExporterStats::new(name));
    let batch = checked_batch(name, spec, signal, &config)?;
    let exporter = reloadable(name, spec, signal, &batch, &inputs, stats.clone())
        .map_err(|source| setup_error(name, spec, source))?;
    Ok((exporter, stats))
}

/// The effective batch settings of an entry built in code, after the checks a config file
/// gets.
fn checked_batch(
    name: &str,
    spec: &WasmExporterSpec,
    signal: Signal,
    config: &crate::LensConfig,
) -> Result<BatchConfig, LensError> {
    let defaults = *config.batch_for(signal);
    crate::config::ExporterSpec::Wasm(spec.clone())
        .validate(&defaults)
        .map_err(|message| LensError::Config {
            source_name: format!("wasm exporter `{name}`"),
            message,
            source: None,
        })?;
    Ok(defaults.with_overrides(&spec.batch))
}

/// Reloads a `.wasm` exporter built outside a telemetry installation with the entry `spec`:
/// checked as at setup, its grants from the process environment, compiled through the cache
/// of the environment's configuration.
pub(crate) fn reload_from_config(
    exporter: &Arc<Reloadable>,
    spec: &WasmExporterSpec,
    signal: Signal,
) -> Result<Reloaded, LensError> {
    let config = crate::LensConfig::from_env()?;
    checked_batch(exporter.name(), spec, signal, &config)?;
    exporter.reload(spec, &ProcessEnv, &config.wasm_cache)
}
