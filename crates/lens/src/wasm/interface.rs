//! The exporter interfaces a component may export, and the calls into one of them.
//!
//! A component exports any of `span-exporter`, `metric-exporter` and `log-exporter` of
//! `lens:exporter@0.3.0`, or the `span-exporter` of 0.2.0. The host looks the four functions
//! up by interface name and calls them with the types generated from the 0.3.0 WIT: wasmtime
//! checks them against the component's own, field by field, so a 0.2.0 component (same
//! records, `result<_, string>` from `export`) is served by the same code.

use wasmtime::Store;
use wasmtime::component::{Func, Instance, Lower};

use super::sandbox::HostState;
use crate::bindings::log_types::LogBatch;
use crate::bindings::metric_types::{MetricBatch, MetricPreferences, Temporality};
use crate::bindings::types::{Batch, Encoding, ExportError, Resource};

pub use crate::signal::{LEGACY_WIT_VERSION, Signal, WIT_VERSION};

/// One exporter interface of a component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuestInterface {
    /// The signal it exports.
    pub signal: Signal,
    /// Built for `lens:exporter@0.2.0` (spans only; its `export` error is a string).
    pub legacy: bool,
}

impl GuestInterface {
    /// The current interface of `signal`.
    pub fn current(signal: Signal) -> Self {
        Self {
            signal,
            legacy: false,
        }
    }

    /// Its export name, e.g. `lens:exporter/metric-exporter@0.3.0`.
    pub fn name(&self) -> String {
        let version = if self.legacy {
            LEGACY_WIT_VERSION
        } else {
            WIT_VERSION
        };
        self.signal.interface_name(version)
    }

    /// The interfaces among a component's `exports` this host serves, in signal order.
    pub fn detect(exports: &[String]) -> Vec<GuestInterface> {
        let mut found: Vec<GuestInterface> = Signal::ALL
            .into_iter()
            .map(Self::current)
            .filter(|i| exports.contains(&i.name()))
            .collect();
        let legacy = GuestInterface {
            signal: Signal::Traces,
            legacy: true,
        };
        if !found.iter().any(|i| i.signal == Signal::Traces) && exports.contains(&legacy.name()) {
            found.insert(0, legacy);
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

/// The four functions of one exporter interface of an instance.
#[derive(Clone, Copy)]
pub(crate) struct GuestFuncs {
    pub interface: GuestInterface,
    init: Func,
    export: Func,
    flush: Func,
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
        let funcs = Self {
            interface,
            init: func("init")?,
            export: func("export")?,
            flush: func("force-flush")?,
            shutdown: func("shutdown")?,
        };
        match interface.signal {
            Signal::Metrics => {
                funcs
                    .init
                    .typed::<Settings<'_>, (Result<MetricPreferences, String>,)>(&*store)?;
            }
            Signal::Traces | Signal::Logs => {
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
        funcs.flush.typed::<(), (Result<(), String>,)>(&*store)?;
        funcs.shutdown.typed::<(), (Result<(), String>,)>(&*store)?;
        Ok(funcs)
    }

    fn check_export<B: Lower + Sync + 'static>(
        &self,
        store: &Store<HostState>,
    ) -> wasmtime::Result<()> {
        if self.interface.legacy {
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
        if self.interface.signal == Signal::Metrics {
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
        if self.interface.legacy {
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

    /// Calls `force-flush` (`shutdown` with `shutdown`).
    pub(crate) async fn flush_or_shutdown(
        &self,
        store: &mut Store<HostState>,
        shutdown: bool,
    ) -> wasmtime::Result<Result<(), String>> {
        let func = if shutdown { self.shutdown } else { self.flush };
        let f = func.typed::<(), (Result<(), String>,)>(&*store)?;
        let (r,) = f.call_async(&mut *store, ()).await?;
        Ok(r)
    }
}
