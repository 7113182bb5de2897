//! The interfaces a component may export, and the calls into one of them.
//!
//! A component exports any of the exporter interfaces (`span-exporter`, `metric-exporter`,
//! `log-exporter`) of `lens:exporter@0.4.0` or 0.3.0 (the same interfaces), or the
//! `span-exporter` of 0.2.0, and any of the processor interfaces (`span-processor`,
//! `metric-processor`, `log-processor`, new in 0.4.0). The host looks the functions up by
//! interface name and calls them with the types generated from the 0.4.0 WIT: wasmtime checks
//! them against the component's own, field by field, so an older component (same records; for
//! 0.2.0, `result<_, string>` from `export`) is served by the same code.

use wasmtime::Store;
use wasmtime::component::{Func, Instance, Lower};

use crate::bindings::edit_types::ItemEdit;
use crate::bindings::log_types::LogBatch;
use crate::bindings::metric_types::{MetricBatch, MetricPreferences, Temporality};
use crate::bindings::types::{Batch, Encoding, ExportError, Resource};
use crate::wasm::sandbox::HostState;

pub use crate::signal::{LEGACY_WIT_VERSION, OLDER_WIT_VERSIONS, Role, Signal, WIT_VERSION};

/// One exporter or processor interface of a component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuestInterface {
    /// The signal it exports or processes.
    pub signal: Signal,
    /// Exporter or processor.
    pub role: Role,
    /// The version of `lens:exporter` it was built for: [`WIT_VERSION`], or one of
    /// [`OLDER_WIT_VERSIONS`] (exporters only).
    pub version: &'static str,
}

impl GuestInterface {
    /// The current exporter interface of `signal`.
    pub fn current(signal: Signal) -> Self {
        Self::of(signal, Role::Exporter)
    }

    /// The current interface of `role` for `signal`.
    pub fn of(signal: Signal, role: Role) -> Self {
        Self {
            signal,
            role,
            version: WIT_VERSION,
        }
    }

    /// Built for `lens:exporter@0.2.0` (spans only; its `export` error is a string).
    pub fn legacy(&self) -> bool {
        self.version == LEGACY_WIT_VERSION
    }

    /// Its export name, e.g. `lens:exporter/metric-exporter@0.4.0`.
    pub fn name(&self) -> String {
        self.signal.interface_name_of(self.role, self.version)
    }

    /// The versions in which `role` for `signal` exists, newest first.
    fn versions(signal: Signal, role: Role) -> Vec<&'static str> {
        let mut versions = vec![WIT_VERSION];
        if role == Role::Exporter {
            versions.extend(
                OLDER_WIT_VERSIONS
                    .into_iter()
                    .filter(|v| signal == Signal::Traces || *v != LEGACY_WIT_VERSION),
            );
        }
        versions
    }

    /// The interfaces among a component's `exports` this host serves: exporters then
    /// processors, in signal order, each at the newest version exported.
    pub fn detect(exports: &[String]) -> Vec<GuestInterface> {
        let mut found = Vec::new();
        for role in [Role::Exporter, Role::Processor] {
            for signal in Signal::ALL {
                let newest = Self::versions(signal, role)
                    .into_iter()
                    .map(|version| GuestInterface {
                        signal,
                        role,
                        version,
                    })
                    .find(|i| exports.contains(&i.name()));
                found.extend(newest);
            }
        }
        found
    }
}

/// What `init` answered.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Preferences {
    pub encoding: Encoding,
    /// Metric exporters only.
    pub temporality: Option<Temporality>,
}

/// The functions of one interface of an instance: `init`, `export` (a processor's `process`),
/// `force-flush` (exporters only) and `shutdown`.
#[derive(Clone, Copy)]
pub(crate) struct GuestFuncs {
    pub interface: GuestInterface,
    init: Func,
    export: Func,
    flush: Option<Func>,
    shutdown: Func,
}

type Settings<'a> = (&'a [(String, String)], &'a Resource);

impl GuestFuncs {
    /// Looks the functions up and checks their types against this host's WIT.
    pub(crate) fn lookup(
        instance: &Instance,
        store: &mut Store<HostState>,
        interface: GuestInterface,
    ) -> wasmtime::Result<Self> {
        let name = interface.name();
        let index = instance
            .get_export_index(&mut *store, None, &name)
            .ok_or_else(|| wasmtime::format_err!("no `{name}` export"))?;
        let mut func = |f: &str| {
            let i = instance
                .get_export_index(&mut *store, Some(&index), f)
                .ok_or_else(|| wasmtime::format_err!("no `{f}` function in `{name}`"))?;
            instance
                .get_func(&mut *store, i)
                .ok_or_else(|| wasmtime::format_err!("`{f}` of `{name}` is not a function"))
        };
        let processor = interface.role == Role::Processor;
        let funcs = Self {
            interface,
            init: func("init")?,
            export: func(if processor { "process" } else { "export" })?,
            flush: if processor {
                None
            } else {
                Some(func("force-flush")?)
            },
            shutdown: func("shutdown")?,
        };
        match interface.signal {
            Signal::Metrics if !processor => {
                funcs
                    .init
                    .typed::<Settings<'_>, (Result<MetricPreferences, String>,)>(&*store)?;
            }
            _ => {
                funcs
                    .init
                    .typed::<Settings<'_>, (Result<Encoding, String>,)>(&*store)?;
            }
        }
        match interface.signal {
            Signal::Traces => funcs.check_export::<Batch>(store)?,
            Signal::Metrics => funcs.check_export::<MetricBatch>(store)?,
            Signal::Logs => funcs.check_export::<LogBatch>(store)?,
        }
        if let Some(flush) = funcs.flush {
            flush.typed::<(), (Result<(), String>,)>(&*store)?;
        }
        funcs.shutdown.typed::<(), (Result<(), String>,)>(&*store)?;
        Ok(funcs)
    }

    fn check_export<B: Lower + Sync + 'static>(
        &self,
        store: &Store<HostState>,
    ) -> wasmtime::Result<()> {
        if self.interface.role == Role::Processor {
            self.export
                .typed::<(&B,), (Result<Vec<ItemEdit>, String>,)>(store)?;
        } else if self.interface.legacy() {
            self.export.typed::<(&B,), (Result<(), String>,)>(store)?;
        } else {
            self.export
                .typed::<(&B,), (Result<(), ExportError>,)>(store)?;
        }
        Ok(())
    }

    /// Calls `init`.
    pub(crate) async fn init(
        &self,
        store: &mut Store<HostState>,
        settings: &[(String, String)],
        resource: &Resource,
    ) -> wasmtime::Result<Result<Preferences, String>> {
        let args = (settings, resource);
        if self.interface.signal == Signal::Metrics && self.interface.role == Role::Exporter {
            let f = self
                .init
                .typed::<Settings<'_>, (Result<MetricPreferences, String>,)>(&*store)?;
            let (r,) = f.call_async(&mut *store, args).await?;
            return Ok(r.map(|p| Preferences {
                encoding: p.encoding,
                temporality: Some(p.temporality),
            }));
        }
        let f = self
            .init
            .typed::<Settings<'_>, (Result<Encoding, String>,)>(&*store)?;
        let (r,) = f.call_async(&mut *store, args).await?;
        Ok(r.map(|encoding| Preferences {
            encoding,
            temporality: None,
        }))
    }

    /// Calls `export` with `batch` (a record of the interface's batch type, or the borrowed
    /// typed span batch); a 0.2.0 guest's error is a rejection.
    pub(crate) async fn export<B: Lower + Sync>(
        &self,
        store: &mut Store<HostState>,
        batch: &B,
    ) -> wasmtime::Result<Result<(), ExportError>> {
        if self.interface.legacy() {
            let f = self.export.typed::<(&B,), (Result<(), String>,)>(&*store)?;
            let (r,) = f.call_async(&mut *store, (batch,)).await?;
            return Ok(r.map_err(ExportError::Rejected));
        }
        let f = self
            .export
            .typed::<(&B,), (Result<(), ExportError>,)>(&*store)?;
        let (r,) = f.call_async(&mut *store, (batch,)).await?;
        Ok(r)
    }

    /// Calls a processor's `process` with `batch`.
    pub(crate) async fn process<B: Lower + Sync>(
        &self,
        store: &mut Store<HostState>,
        batch: &B,
    ) -> wasmtime::Result<Result<Vec<ItemEdit>, String>> {
        let f = self
            .export
            .typed::<(&B,), (Result<Vec<ItemEdit>, String>,)>(&*store)?;
        let (r,) = f.call_async(&mut *store, (batch,)).await?;
        Ok(r)
    }

    /// Calls `force-flush` (`shutdown` with `shutdown`); a processor has nothing to flush.
    pub(crate) async fn flush_or_shutdown(
        &self,
        store: &mut Store<HostState>,
        shutdown: bool,
    ) -> wasmtime::Result<Result<(), String>> {
        let func = match (shutdown, self.flush) {
            (true, _) => self.shutdown,
            (false, Some(flush)) => flush,
            (false, None) => return Ok(Ok(())),
        };
        let f = func.typed::<(), (Result<(), String>,)>(&*store)?;
        let (r,) = f.call_async(&mut *store, ()).await?;
        Ok(r)
    }
}
