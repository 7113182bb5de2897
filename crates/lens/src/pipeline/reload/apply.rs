//! A planned reload built beside the running exporters, then applied at one instant.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry_sdk::logs::LogProcessor as _;
use opentelemetry_sdk::trace::SpanProcessor;

use super::plan::{Planned, Step, not_applied, plan};
use super::{Registry, ReloadReport, Running};
use crate::batch::ExporterStats;
use crate::config::{BatchConfig, ExporterSpec, LensConfig, WasmExporterSpec};
use crate::error::{LensError, ReloadStep};
use crate::logs::{BatchLogProcessor, LogFanOut};
use crate::pipeline::{BuildContext, Built};
use crate::signal::Signal;
use crate::slots::{Change, StatsList};
use crate::trace::FanOutCore;
use crate::wasm::reload::{Prepared, Reloadable, Swapped};

/// The fan-outs a reload changes, with the statistics lists of their exporters.
pub(crate) struct Fanouts<'a> {
    pub traces: Option<&'a FanOutCore>,
    pub logs: Option<(&'a LogFanOut, &'a StatsList)>,
}

/// One change to a signal's processors, with the registry's record of the entry after it.
type Staged<P> = (Change<P>, Option<Running>);

/// What was built for the changes before any is applied.
struct Stage {
    /// The wasm entries whose new component is swapped in place, with their new entry.
    reloadables: Vec<(Arc<Reloadable>, WasmExporterSpec)>,
    /// Each change, with the registry's record of the entry after it (`None`: removed).
    spans: Vec<Staged<Box<dyn SpanProcessor>>>,
    logs: Vec<Staged<BatchLogProcessor>>,
}

/// A reload built and checked, not yet applied: [`Pending::commit`] applies it,
/// [`Pending::abandon`] shuts down what it built.
pub(crate) struct Pending {
    planned: Vec<Planned>,
    new: LensConfig,
    report: ReloadReport,
    prepared: Vec<Prepared>,
    staged: Stage,
}

/// A reload applied, whose replaced exporters are still to end ([`Committed::finish`]).
pub(crate) struct Committed {
    report: ReloadReport,
    swapped: Vec<Swapped>,
    spans: Vec<(Box<dyn SpanProcessor>, Duration)>,
    logs: Vec<(BatchLogProcessor, Duration)>,
}

/// Builds and checks everything `new`'s exporter entries need (see the module's
/// documentation) while the running exporters keep exporting; `ctx` builds from `new` and
/// never disables an entry that fails. On an error nothing has changed, and what was built is
/// shut down.
pub(crate) fn prepare(
    registry: &Registry,
    new: LensConfig,
    ctx: &BuildContext<'_>,
    fanouts: &Fanouts<'_>,
) -> Result<Pending, LensError> {
    let planned = plan(registry, &new)?;
    let mut report = ReloadReport {
        not_applied: not_applied(&registry.config, &new),
        ..ReloadReport::default()
    };
    let mut staged = Stage {
        reloadables: Vec::new(),
        spans: Vec::new(),
        logs: Vec::new(),
    };
    let mut prepared = Vec::new();
    let built = stage(
        registry,
        &planned,
        &new,
        ctx,
        fanouts,
        &mut staged,
        &mut report,
    )
    .and_then(|()| {
        for (reloadable, spec) in &staged.reloadables {
            prepared.push(reloadable.prepare(spec, ctx.env, &new.wasm_cache)?);
        }
        Ok(())
    });
    let pending = Pending {
        planned,
        new,
        report,
        prepared,
        staged,
    };
    match built {
        Ok(()) => Ok(pending),
        Err(e) => {
            pending.abandon();
            Err(e)
        }
    }
}

impl Pending {
    /// Shuts down what the reload built (nothing of it ever exported).
    pub(crate) fn abandon(self) {
        drop(self.prepared);
        abandon(self.staged.spans, |p, t| p.shutdown_with_timeout(t));
        abandon(self.staged.logs, |p, t| p.shutdown_with_timeout(t));
    }

    /// Applies the reload: each signal's changes at one instant, each wasm swap between two
    /// batches. Quick: what was replaced ends in [`Committed::finish`].
    pub(crate) fn commit(self, registry: &mut Registry, fanouts: &Fanouts<'_>) -> Committed {
        let Self {
            planned,
            new,
            report,
            prepared,
            staged,
        } = self;
        let mut swapped = Vec::new();
        for p in prepared {
            match p.commit() {
                Ok(s) => swapped.push(s),
                // Only a shutdown racing the reload refuses here: it ends the exporter anyway.
                Err(e) => log::warn!("{e}"),
            }
        }
        // A wasm entry's spec is the one its instances run now (swapped or not).
        for entry in &mut registry.entries {
            if let Some(r) = &entry.wasm {
                entry.spec = ExporterSpec::Wasm(r.spec());
            }
        }
        let (old_spans, span_entries) = match fanouts.traces {
            Some(t) => apply_signal(
                Signal::Traces,
                staged.spans,
                registry,
                t.exporter_stats(),
                |c| t.apply(c),
            ),
            None => (Vec::new(), Vec::new()),
        };
        let (old_logs, log_entries) = match fanouts.logs {
            Some((l, stats)) => {
                apply_signal(Signal::Logs, staged.logs, registry, stats, |c| l.apply(c))
            }
            None => (Vec::new(), Vec::new()),
        };
        for p in planned.iter().filter(|p| matches!(p.step, Step::Remove)) {
            registry
                .entries
                .retain(|e| !(e.signal == p.signal && e.name == p.name));
        }
        for entry in span_entries.into_iter().chain(log_entries) {
            match registry
                .entries
                .iter_mut()
                .find(|e| e.signal == entry.signal && e.name == entry.name)
            {
                Some(slot) => *slot = entry,
                None => registry.entries.push(entry),
            }
        }
        registry.config = new;
        Committed {
            report,
            swapped,
            spans: old_spans,
            logs: old_logs,
        }
    }
}

impl Committed {
    /// Ends what the reload replaced or removed: a replaced component's instances finish the
    /// batch they hold and get `force-flush` and `shutdown`; a replaced or removed processor
    /// exports what it queued, within its shutdown timeout.
    pub(crate) fn finish(self) -> ReloadReport {
        let mut report = self.report;
        report.reloaded = self.swapped.into_iter().map(Swapped::retire).collect();
        for (p, timeout) in self.spans {
            if let Err(e) = p.shutdown_with_timeout(timeout) {
                log::warn!("reload: a replaced span processor's shutdown: {e}");
            }
        }
        for (p, timeout) in self.logs {
            if let Err(e) = p.shutdown_with_timeout(timeout) {
                log::warn!(
                    "reload: the replaced log processor of `{}`: shutdown: {e}",
                    p.stats().name()
                );
            }
        }
        report
    }
}

fn shutdown_timeout(batch: &BatchConfig) -> Duration {
    Duration::from_millis(batch.shutdown_timeout_ms)
}

/// Applies one signal's staged changes to its fan-out (`apply`, at one instant), the new
/// entries' statistics listed first: the processors taken out, each with its entry's shutdown
/// timeout, and the registry's records of the new entries.
fn apply_signal<P>(
    signal: Signal,
    staged: Vec<Staged<P>>,
    registry: &Registry,
    stats: &StatsList,
    apply: impl FnOnce(Vec<Change<P>>) -> Vec<(String, P)>,
) -> (Vec<(P, Duration)>, Vec<Running>) {
    let (changes, entries): (Vec<_>, Vec<_>) = staged.into_iter().unzip();
    let entries: Vec<Running> = entries.into_iter().flatten().collect();
    for entry in &entries {
        stats.add(entry.stats.clone());
    }
    let taken_out = apply(changes)
        .into_iter()
        .map(|(name, p)| {
            let batch = registry
                .entries
                .iter()
                .find(|e| e.signal == signal && e.name == name)
                .map_or(registry.config.batch, |e| e.batch);
            (p, shutdown_timeout(&batch))
        })
        .collect();
    (taken_out, entries)
}

/// Shuts down what was built for changes never applied (`shut`, within the entry's shutdown
/// timeout).
fn abandon<P, R>(staged: Vec<Staged<P>>, shut: impl Fn(&P, Duration) -> R) {
    for (change, entry) in staged {
        if let (Change::Replace(_, p) | Change::Add(_, p), Some(e)) = (change, entry) {
            let _ = shut(&p, shutdown_timeout(&e.batch));
        }
    }
}

/// Builds the processors of replaced and added span and log entries, and lists the wasm
/// swaps, filling in the report's entry lists.
fn stage(
    registry: &Registry,
    planned: &[Planned],
    new: &LensConfig,
    ctx: &BuildContext<'_>,
    fanouts: &Fanouts<'_>,
    staged: &mut Stage,
    report: &mut ReloadReport,
) -> Result<(), LensError> {
    for p in planned {
        let entry = (p.signal, p.name.clone());
        let old = registry
            .entries
            .iter()
            .find(|e| e.signal == p.signal && e.name == p.name);
        let spec = match &p.step {
            Step::Keep => {
                report.kept.push(entry);
                continue;
            }
            Step::Remove => {
                match p.signal {
                    Signal::Traces => staged.spans.push((Change::Remove(p.name.clone()), None)),
                    _ => staged.logs.push((Change::Remove(p.name.clone()), None)),
                }
                report.removed.push(entry);
                continue;
            }
            Step::Swap(w) => {
                let reloadable = old.and_then(|o| o.wasm.clone()).expect("a swap has one");
                staged.reloadables.push((reloadable, w.clone()));
                continue;
            }
            Step::SwapProcessor(reloadable, w) => {
                staged.reloadables.push((reloadable.clone(), w.clone()));
                continue;
            }
            Step::Replace(spec) => {
                report.replaced.push(entry);
                spec
            }
            Step::Add(spec) => {
                report.added.push(entry);
                spec
            }
        };
        let stats = match (old, p.signal) {
            (Some(old), _) => old.stats.clone(),
            (None, Signal::Traces) => fanouts
                .traces
                .map(|t| t.exporter_stats().named_or_new(&p.name))
                .unwrap_or_else(|| Arc::new(ExporterStats::new(&p.name))),
            (None, _) => fanouts
                .logs
                .map(|(_, l)| l.named_or_new(&p.name))
                .unwrap_or_else(|| Arc::new(ExporterStats::new(&p.name))),
        };
        // A rebuilt entry keeps its spool (the running processor holds its lock until the
        // swap; both use it meanwhile, one replaying at a time).
        if let Some(spooling) = old.and_then(|o| o.spool.clone()) {
            ctx.offer_spool(spooling);
        }
        match p.signal {
            Signal::Traces => {
                let Built {
                    processor,
                    wasm,
                    spool,
                } = ctx.span_processor(spec, &p.name, &stats).map_err(refused)?;
                let running =
                    Running::new(p.signal, spec.clone(), new, stats, wasm).with_spool(spool);
                staged.spans.push((change(p, processor), Some(running)));
            }
            _ => {
                let Built {
                    processor,
                    wasm,
                    spool,
                } = ctx.log_processor(spec, &p.name, &stats).map_err(refused)?;
                let running =
                    Running::new(p.signal, spec.clone(), new, stats, wasm).with_spool(spool);
                staged.logs.push((change(p, processor), Some(running)));
            }
        }
    }
    Ok(())
}

/// A wasm entry's setup error as a refused reload, at its step.
fn refused(error: LensError) -> LensError {
    match error {
        LensError::WasmLoad {
            exporter,
            path,
            source,
        } => LensError::Reload {
            exporter,
            path,
            step: ReloadStep::of(&source),
            source,
        },
        other => other,
    }
}

/// The fan-out change putting `processor` in for a replaced or added entry.
fn change<P>(p: &Planned, processor: P) -> Change<P> {
    match p.step {
        Step::Add(_) => Change::Add(p.name.clone(), processor),
        _ => Change::Replace(p.name.clone(), processor),
    }
}
