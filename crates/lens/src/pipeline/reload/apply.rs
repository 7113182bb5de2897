//! A planned reload built beside the running exporters, then applied at one instant.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry_sdk::logs::LogProcessor as _;
use opentelemetry_sdk::trace::SpanProcessor;

use super::plan::{Planned, Step, not_applied, plan};
use super::{Registry, ReloadReport, Running, RunningProcessor};
use crate::batch::ExporterStats;
use crate::config::{BatchConfig, ExporterSpec, LensConfig, ProcessorSpec, WasmExporterSpec};
use crate::error::{LensError, ReloadStep};
use crate::logs::{BatchLogProcessor, LogFanOut};
use crate::pipeline::{BuildContext, Built};
use crate::signal::Signal;
use crate::slots::{Change, StatsList};
use crate::trace::FanOutCore;
use crate::wasm::WasmProcessor;
use crate::wasm::reload::{Prepared, Reloadable, Swapped};

/// The fan-outs a reload changes, with the statistics lists of their exporters, and those
/// of each signal's processors.
pub(crate) struct Fanouts<'a> {
    pub traces: Option<&'a FanOutCore>,
    pub logs: Option<(&'a LogFanOut, &'a StatsList)>,
    pub processor_stats: Vec<(Signal, &'a StatsList)>,
}

/// A signal's new processors (its configuration's order) for every exporter's chain.
struct Rechain {
    signal: Signal,
    processors: Vec<(ProcessorSpec, Arc<WasmProcessor>)>,
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
    rechains: Vec<Rechain>,
    /// Processors built for the reload (not running ones it keeps): shut down if abandoned.
    built: Vec<Arc<WasmProcessor>>,
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
    ctx: &mut BuildContext<'_>,
    fanouts: &Fanouts<'_>,
) -> Result<Pending, LensError> {
    let planned = plan(registry, &new)?;
    let mut report = ReloadReport {
        not_applied: not_applied(&registry.config, &new),
        ..ReloadReport::default()
    };
    let (mut rechains, mut new_processors) = (Vec::new(), Vec::new());
    let processors = processors(
        registry,
        &planned,
        &new,
        (ctx, fanouts),
        &mut rechains,
        &mut new_processors,
    );
    if let Err(e) = processors {
        let timeout = shutdown_timeout(&new.batch);
        new_processors.iter().for_each(|p| p.shutdown(timeout));
        return Err(e);
    }
    report.processors = rechains.iter().map(|r| r.signal).collect();
    let ctx = &*ctx;
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
        rechains,
        built: new_processors,
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
        let timeout = shutdown_timeout(&self.new.batch);
        self.built.iter().for_each(|p| p.shutdown(timeout));
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
            rechains,
            built: _,
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
        // Each exporter of a signal whose processors changed takes the new chain: its batches
        // starting from now go through it; those running finish on the old one, whose
        // processors no exporter uses any more then shut down.
        for r in rechains {
            for entry in registry.entries.iter().filter(|e| e.signal == r.signal) {
                if let Some(chain) = &entry.chain {
                    chain.replace(&r.processors, &entry.name);
                }
            }
            // Listed once each: those kept are listed already.
            if let Some((_, list)) = fanouts.processor_stats.iter().find(|(s, _)| *s == r.signal) {
                r.processors
                    .iter()
                    .for_each(|(_, p)| list.add(p.stats().clone()));
            }
            registry.processors.retain(|p| p.signal != r.signal);
            registry
                .processors
                .extend(
                    r.processors
                        .into_iter()
                        .map(|(spec, processor)| RunningProcessor {
                            signal: r.signal,
                            name: spec.display_name(),
                            processor,
                        }),
                );
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

/// The processors of every signal the reload builds exporters of, in `ctx` before them: those
/// of a signal whose processors changed places (`Rechain`) kept where their entry did not
/// change and built otherwise (listed in `rechains`, the built ones in `built`); those of any
/// other signal the running ones (a file swapped in place stays the same processor).
fn processors(
    registry: &Registry,
    planned: &[Planned],
    new: &LensConfig,
    (ctx, fanouts): (&mut BuildContext<'_>, &Fanouts<'_>),
    rechains: &mut Vec<Rechain>,
    built: &mut Vec<Arc<WasmProcessor>>,
) -> Result<(), LensError> {
    for &signal in &registry.signals {
        let rechain = planned
            .iter()
            .any(|p| p.signal == signal && matches!(p.step, Step::Rechain));
        let running = |name: &str| {
            registry
                .processors
                .iter()
                .find(|p| p.signal == signal && p.name == name)
                .map(|p| p.processor.clone())
        };
        let old = &registry.config.signal(signal).processors;
        let reuse = |spec: &ProcessorSpec| {
            let name = spec.display_name();
            let unchanged = !rechain || old.iter().any(|o| o == spec);
            running(&name).filter(|_| unchanged)
        };
        // A processor of a name seen before counts on in its counters.
        let listed = fanouts.processor_stats.iter().find(|(s, _)| *s == signal);
        let stats_for = |name: &str| match (running(name), listed) {
            (Some(p), _) => p.stats().clone(),
            (None, Some((_, list))) => list.named_or_new(name),
            (None, None) => Arc::new(ExporterStats::new(name)),
        };
        let exporters = new.exporters_of(signal);
        let made = ctx.build_processors_reusing(signal, &exporters, &reuse, &stats_for)?;
        built.extend(
            made.iter()
                .filter(|(_, _, new)| *new)
                .map(|(_, p, _)| p.clone()),
        );
        if rechain {
            let processors = made.into_iter().map(|(spec, p, _)| (spec, p)).collect();
            rechains.push(Rechain { signal, processors });
        }
    }
    Ok(())
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
            Step::Rechain => continue,
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
                    chain,
                } = ctx.span_processor(spec, &p.name, &stats).map_err(refused)?;
                let running =
                    Running::new(p.signal, spec.clone(), new, stats, wasm).with_parts(spool, chain);
                staged.spans.push((change(p, processor), Some(running)));
            }
            _ => {
                let Built {
                    processor,
                    wasm,
                    spool,
                    chain,
                } = ctx.log_processor(spec, &p.name, &stats).map_err(refused)?;
                let running =
                    Running::new(p.signal, spec.clone(), new, stats, wasm).with_parts(spool, chain);
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
