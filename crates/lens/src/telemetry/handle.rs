//! [`TelemetryHandle`]: the installed telemetry of one rank, its statistics, its logging
//! bridge and its life cycle (flush, idempotent shutdown, shutdown on drop).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry::metrics::Meter;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::SdkLoggerProvider;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{SpanExporter, SpanProcessor};

use super::reload::ReloadState;
use crate::config::BatchConfig;
use crate::error::LensError;
use crate::logs::{LogBridge, LogFanOut};
use crate::rank::RankInfo;
use crate::signal::Signal;
use crate::slots::StatsList;
use crate::trace::{
    BatchSpanProcessor, DeliveryStats, ExporterSnapshot, ExporterStats, FanOutCore, LensTracer,
    LensTracerProvider, self_metrics::Instruments,
};

pub(super) struct HandleInner {
    pub(super) tracer_provider: LensTracerProvider,
    pub(super) meter_provider: SdkMeterProvider,
    pub(super) logger_provider: SdkLoggerProvider,
    /// One per log exporter, in configuration order (then those a reload added).
    pub(super) log_stats: StatsList,
    /// The log processors' own statistics.
    pub(super) log_processor_stats: StatsList,
    /// The metric processors' own statistics.
    pub(super) metric_processor_stats: StatsList,
    pub(super) metric_stats: Vec<Arc<ExporterStats>>,
    /// The spools of metric entries that have one: a flush and a shutdown replay them (the
    /// SDK's reader calls no exporter when nothing was recorded).
    pub(super) metric_spools: Vec<Arc<crate::pipeline::metric_spool::MetricSpool>>,
    pub(super) fanout: Option<Arc<FanOutCore>>,
    pub(super) log_fanout: Option<Arc<LogFanOut>>,
    /// What a reload needs (`None` on a rank that does not export).
    pub(super) reload: Option<ReloadState>,
    pub(super) rank: RankInfo,
    pub(super) exporting: bool,
    pub(super) sampler_keeps: bool,
    pub(super) run_id: String,
    pub(super) resource: Resource,
    pub(super) batch: BatchConfig,
    pub(super) shutdown: Mutex<Option<Result<(), String>>>,
    pub(super) shutdown_timeout: Duration,
    pub(super) _self_metrics: Instruments,
}

impl Drop for HandleInner {
    fn drop(&mut self) {
        let _ = shutdown_inner(self, self.shutdown_timeout);
    }
}

/// The installed telemetry of one rank. Cloning shares it; dropping the last clone shuts it down.
#[derive(Clone)]
pub struct TelemetryHandle {
    pub(super) inner: Arc<HandleInner>,
}

impl std::fmt::Debug for TelemetryHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelemetryHandle")
            .field("rank", &self.inner.rank)
            .field("exporting", &self.inner.exporting)
            .field("run_id", &self.inner.run_id)
            .finish()
    }
}

impl TelemetryHandle {
    /// A tracer from this installation's provider: its root spans join the launcher's trace
    /// (`TRACEPARENT`), and the spans still open at shutdown are closed there.
    pub fn tracer(&self, name: impl Into<std::borrow::Cow<'static, str>>) -> LensTracer {
        self.inner.tracer_provider.tracer(name)
    }

    /// A meter from this installation's provider.
    pub fn meter(&self, name: &'static str) -> Meter {
        use opentelemetry::metrics::MeterProvider as _;
        self.inner.meter_provider.meter(name)
    }

    /// The tracer provider (for code that wants to build its own tracers; the SDK's provider is
    /// [`LensTracerProvider::sdk_provider`]).
    pub fn tracer_provider(&self) -> &LensTracerProvider {
        &self.inner.tracer_provider
    }

    /// The meter provider.
    pub fn meter_provider(&self) -> &SdkMeterProvider {
        &self.inner.meter_provider
    }

    /// The logger provider: batch log processors on an exporting rank with `logs_enabled`,
    /// none otherwise (its loggers then record nothing).
    pub fn logger_provider(&self) -> &SdkLoggerProvider {
        &self.inner.logger_provider
    }

    /// A `log` bridge into this installation's logger provider, for the records at `level` or
    /// above whose target is `target` or below it (`""`: every target); to call from an
    /// application's own logger. See [`setup_logging_bridge`](Self::setup_logging_bridge).
    pub fn log_bridge(&self, level: log::LevelFilter, target: &str) -> LogBridge {
        LogBridge::new(&self.inner.logger_provider, level, target)
    }

    /// NeMo Lens's `setup_logging_bridge(logger_name, level)`: makes the bridge the process's
    /// `log` logger, so `log::info!` & co. at `level` or above under `target` become log
    /// records carrying the active span's ids. `false` (and a line on stderr saying why) when
    /// another logger is installed: the application is never broken by it.
    pub fn setup_logging_bridge(&self, level: log::LevelFilter, target: &str) -> bool {
        self.log_bridge(level, target).install().is_ok()
    }

    /// A `tracing` layer sending `tracing` events at `level` or above under `target` (`""`:
    /// every target) to this installation's logger provider; inside a span of
    /// [`tracing_layer`](Self::tracing_layer) they carry its ids.
    #[cfg(feature = "tracing")]
    pub fn tracing_log_layer<S>(
        &self,
        level: tracing::Level,
        target: &str,
    ) -> crate::logs::TracingLogLayer<S>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        crate::logs::tracing_log_layer(&self.inner.logger_provider, level, target)
    }

    /// Whether this rank exports (strategy decision and `enabled`).
    pub fn is_exporting(&self) -> bool {
        self.inner.exporting
    }

    /// Whether the rank-aware sampler keeps this rank's spans (`is_exporting` when no sampler).
    pub fn sampler_keeps(&self) -> bool {
        self.inner.sampler_keeps
    }

    /// This rank's identity.
    pub fn rank(&self) -> RankInfo {
        self.inner.rank
    }

    /// The run id shared by the job's ranks.
    pub fn run_id(&self) -> &str {
        &self.inner.run_id
    }

    /// The resource every signal carries.
    pub fn resource(&self) -> &Resource {
        &self.inner.resource
    }

    /// Delivery statistics: spans produced, and per span and log exporter exported and
    /// dropped.
    pub fn stats(&self) -> DeliveryStats {
        delivery_stats(
            self.inner.fanout.as_deref(),
            &self.inner.log_stats,
            &self.inner.log_processor_stats,
            &self.inner.metric_processor_stats,
            &self.inner.metric_stats,
        )
    }

    /// Adds a span processor after setup (the Rust equivalent of the seed's
    /// `provider.add_span_processor(...)`): it receives every span ended from now on.
    /// A no-op on a non-exporting rank.
    pub fn add_span_processor(&self, processor: impl SpanProcessor + 'static) {
        if let Some(f) = &self.inner.fanout {
            f.add(None, Box::new(processor), None);
        }
    }

    /// Adds a span exporter after setup, on its own Lens batch processor with statistics.
    pub fn add_span_exporter<E: SpanExporter + 'static>(
        &self,
        name: impl Into<String>,
        exporter: E,
    ) {
        if let Some(f) = &self.inner.fanout {
            let stats = Arc::new(ExporterStats::new(name));
            f.add(
                None,
                Box::new(BatchSpanProcessor::new(
                    exporter,
                    self.inner.batch,
                    stats.clone(),
                )),
                Some(stats),
            );
        }
    }

    /// Exports everything ended so far, waiting at most `timeout`.
    pub fn force_flush(&self, timeout: Duration) -> Result<(), LensError> {
        let inner = self.inner.clone();
        let (tx, rx) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || {
            let mut failed = Vec::new();
            if let Err(e) = inner.tracer_provider.sdk_provider().force_flush() {
                failed.push((Signal::Traces, e));
            }
            if let Err(e) = inner.meter_provider.force_flush() {
                failed.push((Signal::Metrics, e));
            }
            for spool in &inner.metric_spools {
                spool.drain(timeout);
                if let Err(e) = spool.delivered() {
                    failed.push((Signal::Metrics, e));
                }
            }
            if inner.log_fanout.is_some()
                && let Err(e) = inner.logger_provider.force_flush()
            {
                failed.push((Signal::Logs, e));
            }
            // The exporters' counts are read only to say why something failed.
            let outcome = if failed.is_empty() {
                Ok(())
            } else {
                failures(&failed, &snapshots(&inner))
            };
            let _ = tx.send(outcome);
        });
        match rx.recv_timeout(timeout) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(details)) => Err(LensError::Incomplete {
                operation: "force_flush",
                details,
            }),
            Err(_) => Err(LensError::Incomplete {
                operation: "force_flush",
                details: format!("timed out after {timeout:?}"),
            }),
        }
    }

    /// Flushes and shuts down, waiting at most `timeout`; idempotent (later calls return the
    /// first call's outcome). Logs the delivery statistics.
    pub fn shutdown(&self, timeout: Duration) -> Result<(), LensError> {
        shutdown_inner(&self.inner, timeout)
    }

    /// A `tracing` layer sending `tracing` spans (e.g. from `#[instrument]`) to this
    /// installation's tracer.
    #[cfg(feature = "tracing")]
    pub fn tracing_layer<S>(&self) -> tracing_opentelemetry::OpenTelemetryLayer<S, LensTracer>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        tracing_opentelemetry::layer().with_tracer(self.tracer("lens.tracing"))
    }
}

/// The statistics of every signal's exporters.
fn delivery_stats(
    fanout: Option<&FanOutCore>,
    logs: &StatsList,
    log_processors: &StatsList,
    metric_processors: &StatsList,
    metrics: &[Arc<ExporterStats>],
) -> DeliveryStats {
    let mut stats = fanout.map(|f| f.stats()).unwrap_or_default();
    stats.log_exporters = logs.snapshots();
    stats.log_processors = log_processors.snapshots();
    stats.metric_processors = metric_processors.snapshots();
    stats.metric_exporters = metrics.iter().map(|s| s.snapshot()).collect();
    stats
}

/// What the health metrics read at each collection: [`delivery_stats`] of these.
pub(super) fn stats_source(
    fanout: Arc<FanOutCore>,
    logs: StatsList,
    log_processors: StatsList,
    metric_processors: StatsList,
    metrics: Vec<Arc<ExporterStats>>,
) -> crate::trace::self_metrics::StatsSource {
    Arc::new(move || {
        delivery_stats(
            Some(&fanout),
            &logs,
            &log_processors,
            &metric_processors,
            &metrics,
        )
    })
}

fn shutdown_inner(inner: &HandleInner, timeout: Duration) -> Result<(), LensError> {
    let mut done = inner.shutdown.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(outcome) = done.as_ref() {
        return outcome.clone().map_err(|details| LensError::Incomplete {
            operation: "shutdown",
            details,
        });
    }
    if let Some(state) = &inner.reload {
        state.stop.store(true, std::sync::atomic::Ordering::Release);
    }
    let mut failed = Vec::new();
    if inner.fanout.is_some()
        && let Err(e) = inner
            .tracer_provider
            .sdk_provider()
            .shutdown_with_timeout(timeout)
    {
        failed.push((Signal::Traces, e));
    }
    // Spooled collections first, within half the timeout: the reader's own shutdown then
    // exports the last collection (or spools it) and releases the spool.
    for spool in &inner.metric_spools {
        spool.drain(timeout / 2);
    }
    if let Err(e) = inner.meter_provider.shutdown_with_timeout(timeout)
        && !matches!(e, opentelemetry_sdk::error::OTelSdkError::AlreadyShutdown)
        && inner.exporting
    {
        failed.push((Signal::Metrics, e));
    }
    if inner.log_fanout.is_some()
        && let Err(e) = inner.logger_provider.shutdown_with_timeout(timeout)
    {
        failed.push((Signal::Logs, e));
    }
    // A metric export the reader stopped waiting for (a guest hung in `export`) is over for
    // this installation: its data points end as dropped at shutdown, and later ones too.
    for stats in &inner.metric_stats {
        stats.close_direct();
    }
    for spool in &inner.metric_spools {
        if let Err(e) = spool.delivered() {
            failed.push((Signal::Metrics, e));
        }
        // The reader's shutdown may have stopped waiting for a hung export before its
        // exporter released the spool: another installation or process may open it now.
        spool.release();
    }
    let exporters = snapshots(inner);
    for signal in [Signal::Traces, Signal::Logs, Signal::Metrics] {
        if signal != Signal::Traces || inner.fanout.is_some() {
            log_stats(inner.rank.rank, signal, of(&exporters, signal));
        }
    }
    let outcome = failures(&failed, &exporters);
    // The process stays set up, as in NeMo Lens: a later enabled setup needs `allow_reinit`.
    *done = Some(outcome.clone());
    outcome.map_err(|details| LensError::Incomplete {
        operation: "shutdown",
        details,
    })
}

/// The exporters' counts of each signal, in [`Signal::ALL`]'s order (see [`of`]).
fn snapshots(inner: &HandleInner) -> [Vec<ExporterSnapshot>; 3] {
    [
        inner
            .fanout
            .as_ref()
            .map(|f| f.stats().exporters)
            .unwrap_or_default(),
        inner.metric_stats.iter().map(|s| s.snapshot()).collect(),
        inner.log_stats.snapshots(),
    ]
}

/// `signal`'s exporters in what [`snapshots`] read.
fn of(exporters: &[Vec<ExporterSnapshot>; 3], signal: Signal) -> &[ExporterSnapshot] {
    let i = Signal::ALL.iter().position(|s| *s == signal).unwrap_or(0);
    &exporters[i]
}

/// The signals that `failed` a flush or shutdown, each in one line (`signal_error`), or `Ok`.
fn failures(
    failed: &[(Signal, opentelemetry_sdk::error::OTelSdkError)],
    exporters: &[Vec<ExporterSnapshot>; 3],
) -> Result<(), String> {
    if failed.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = failed
        .iter()
        .map(|(signal, e)| signal_error(*signal, e, of(exporters, *signal)))
        .collect();
    Err(lines.join("; "))
}

/// Why `signal`'s flush or shutdown failed, in one line: what its exporters last failed with (the
/// guest's answer, the server's status), else the SDK's error (whose own text is nested debug
/// output: `Shutdown errors: [InternalFailure("BatchSpanProcessor { … }: …")]`).
fn signal_error(
    signal: Signal,
    e: &opentelemetry_sdk::error::OTelSdkError,
    exporters: &[ExporterSnapshot],
) -> String {
    let last: Vec<String> = exporters
        .iter()
        .filter_map(|x| {
            let line = x.last_error.as_deref()?;
            Some(format!("exporter `{}`: {line}", x.name))
        })
        .collect();
    let why = if !last.is_empty() {
        last.join("; ")
    } else if let Some(waited) = waited(&e.to_string()) {
        format!("timed out after {waited}")
    } else {
        crate::batch::last_error::one_line(&e.to_string())
    };
    format!("{}: {why}", signal.as_str())
}

/// How long the SDK's error says it waited: `Timeout(5s)` (a reader's own deadline) or
/// `timed out after 9.999997565s` (a processor's), as `5s` or `10.0s`.
fn waited(sdk: &str) -> Option<String> {
    if let Some(after) = sdk.split("Timeout(").nth(1) {
        return after.split(')').next().map(str::to_string);
    }
    let after = sdk.split("timed out after ").nth(1)?;
    let secs: f64 = after.split('s').next()?.parse().ok()?;
    Some(format!("{secs:.1}s"))
}

fn log_stats(rank: u32, signal: Signal, exporters: &[ExporterSnapshot]) {
    let noun = signal.items();
    for e in exporters {
        let line = format!(
            "rank {rank} exporter `{}`: {} {noun} received, {} exported, {} dropped (queue full {}, export failed {}, shutdown {})",
            e.name,
            e.received,
            e.exported,
            e.dropped(),
            e.dropped_queue_full,
            e.dropped_export_failed,
            e.dropped_shutdown
        );
        let spooling = e.spooled + e.spool_found + e.dropped_spool_full + e.dropped_spool_corrupt;
        let spool = if spooling > 0 {
            format!(
                "; spool: {} spooled, {} found from an earlier process, {} replayed, {} still \
                 spooled (not lost: the next process sends them), {} dropped full, {} corrupt",
                e.spooled,
                e.spool_found,
                e.replayed,
                e.in_spool,
                e.dropped_spool_full,
                e.dropped_spool_corrupt
            )
        } else {
            String::new()
        };
        let line = format!("{line}{spool}");
        if e.dropped() > 0 || e.in_spool > 0 {
            log::warn!("{line}");
        } else {
            log::info!("{line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::waited;

    #[test]
    fn the_sdks_timeouts_read_as_how_long_it_waited() {
        assert_eq!(waited("[Timeout(5s)]").as_deref(), Some("5s"));
        assert_eq!(
            waited(
                "Shutdown errors: [InternalFailure(\"…: Operation timed out after 9.999997565s\")]"
            )
            .as_deref(),
            Some("10.0s")
        );
        assert_eq!(waited("HTTP 503"), None);
    }
}
