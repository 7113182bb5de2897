//! Delivery statistics: per exporter, every item (span or log record) handed to it is exported
//! or counted as dropped.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};

use super::last_error::LastError;
use crate::error::FaultKind;

/// Why spans were dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The exporter's queue was full when the span ended.
    QueueFull,
    /// The export call failed (error, trap, timeout) or the exporter was backing off.
    ExportFailed,
    /// Still queued or in flight when shutdown gave up, or ended after shutdown.
    Shutdown,
    /// The exporter was disabled at setup (`on_setup_failure = "disable"`).
    Disabled,
    /// The exporter accepted the batch but refused these items (a wasm guest's `partial`).
    Rejected,
    /// A processor before the exporter dropped them (its decision, or `on_fault = "drop"`).
    Processor,
    /// The spool had no room (its `max_mib`, or a full disk).
    SpoolFull,
    /// Damaged records of the spool, skipped.
    SpoolCorrupt,
}

/// What one processor did to the items on their way to one exporter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessorCounts {
    /// Items it dropped (by its answer, or after its fault with `on_fault = "drop"`).
    pub dropped: u64,
    /// Items that met its fault (a trap, a deadline, an error, an answer refused, the
    /// processor disabled): passed on unprocessed, or dropped under `on_fault = "drop"`.
    pub faults: u64,
}

/// What the processors did to one batch before its export: one entry per processor the batch
/// went through, in order.
#[derive(Debug, Default)]
pub struct Processed {
    /// Each processor's name and counts.
    pub by: Vec<(std::sync::Arc<str>, ProcessorCounts)>,
}

impl Processed {
    /// Items the processors dropped in all.
    pub fn dropped(&self) -> u64 {
        self.by.iter().map(|(_, c)| c.dropped).sum()
    }
}

/// Live counters of one exporter (cheap atomics, updated by the processor).
#[derive(Debug)]
pub struct ExporterStats {
    name: String,
    received: AtomicU64,
    exported: AtomicU64,
    dropped_queue_full: AtomicU64,
    dropped_export_failed: AtomicU64,
    dropped_shutdown: AtomicU64,
    dropped_disabled: AtomicU64,
    dropped_processor: AtomicU64,
    processor_faults: AtomicU64,
    spool: SpoolCounters,
    /// By processor name.
    processors: Mutex<BTreeMap<String, ProcessorCounts>>,
    /// Items of accepted batches the exporter refused; counted as exported first.
    rejected: AtomicU64,
    retries: AtomicU64,
    retries_exhausted: AtomicU64,
    /// Why the exporter was disabled at setup, if it was.
    disabled: Mutex<Option<String>>,
    batches_exported: AtomicU64,
    batches_failed: AtomicU64,
    latency: LatencyHistogram,
    restarts: AtomicU64,
    /// Sandboxed exporters: components swapped in by a reload.
    reloads: AtomicU64,
    /// Sandboxed exporters: the SHA-256 of the component running now.
    component: Mutex<Option<String>>,
    guest_errors: AtomicU64,
    peak_memory_bytes: AtomicU64,
    traps: Mutex<BTreeMap<FaultKind, u64>>,
    /// Its last failure, in one line.
    last_error: LastError,
    /// Exports made outside Lens's batch queue and still running.
    direct: Mutex<DirectExports>,
}

/// A spool's counters (all zero without one).
#[derive(Debug, Default)]
struct SpoolCounters {
    spooled: AtomicU64,
    replayed: AtomicU64,
    found: AtomicU64,
    /// Items in the spool now.
    held: AtomicU64,
    dropped_full: AtomicU64,
    dropped_corrupt: AtomicU64,
}

/// Exports made outside Lens's batch queue (a metric reader's, the Python package's): counted
/// when they start, so that one still running when the installation shuts down (a guest hung
/// in `export`, which the SDK's reader stops waiting for) ends in `dropped_shutdown` instead of
/// in no counter at all.
#[derive(Debug, Default)]
struct DirectExports {
    next: u64,
    /// Items of each export still running, by ticket.
    running: BTreeMap<u64, u64>,
    /// Set by [`ExporterStats::close_direct`]: what starts later is dropped at once.
    closed: bool,
}

/// One export made outside Lens's batch queue, from [`ExporterStats::begin_direct_export`] to
/// [`ExporterStats::end_direct_export`].
#[derive(Debug)]
#[must_use = "end it with ExporterStats::end_direct_export"]
pub struct DirectExport {
    ticket: u64,
    items: u64,
    /// Failures the exporter had recorded when it began.
    errors_at: u64,
}

impl DirectExport {
    /// The items the export was begun with.
    pub fn items(&self) -> u64 {
        self.items
    }
}

impl ExporterStats {
    /// Counters for the exporter called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            received: AtomicU64::new(0),
            exported: AtomicU64::new(0),
            dropped_queue_full: AtomicU64::new(0),
            dropped_export_failed: AtomicU64::new(0),
            dropped_shutdown: AtomicU64::new(0),
            dropped_disabled: AtomicU64::new(0),
            dropped_processor: AtomicU64::new(0),
            processor_faults: AtomicU64::new(0),
            spool: SpoolCounters::default(),
            processors: Mutex::default(),
            rejected: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            retries_exhausted: AtomicU64::new(0),
            disabled: Mutex::default(),
            batches_exported: AtomicU64::new(0),
            batches_failed: AtomicU64::new(0),
            latency: LatencyHistogram::default(),
            restarts: AtomicU64::new(0),
            reloads: AtomicU64::new(0),
            component: Mutex::default(),
            guest_errors: AtomicU64::new(0),
            peak_memory_bytes: AtomicU64::new(0),
            traps: Mutex::default(),
            last_error: LastError::default(),
            direct: Mutex::default(),
        }
    }

    /// A sandboxed exporter was rebuilt after a fault.
    pub(crate) fn record_restart(&self) {
        self.restarts.fetch_add(1, Relaxed);
    }

    /// A sandboxed exporter runs the component whose SHA-256 is `sha256`.
    pub(crate) fn record_component(&self, sha256: &str) {
        *self.component.lock().unwrap_or_else(|p| p.into_inner()) = Some(sha256.to_string());
    }

    /// A reload swapped in the component whose SHA-256 is `sha256`.
    pub(crate) fn record_reload(&self, sha256: &str) {
        self.record_component(sha256);
        self.reloads.fetch_add(1, Relaxed);
    }

    /// Of a batch the exporter accepted, it refused `items`.
    pub(crate) fn record_rejected(&self, items: u64) {
        self.rejected.fetch_add(items, Relaxed);
    }

    /// A batch is sent again after a retryable failure.
    pub(crate) fn record_retry(&self) {
        self.record_retries(1);
    }

    /// `n` more attempts were made for one batch.
    pub(crate) fn record_retries(&self, n: u64) {
        self.retries.fetch_add(n, Relaxed);
    }

    /// A batch still failing retryably at its deadline was given up.
    pub(crate) fn record_retries_exhausted(&self) {
        self.retries_exhausted.fetch_add(1, Relaxed);
    }

    /// A guest returned an error (not a trap).
    pub(crate) fn record_guest_error(&self) {
        self.guest_errors.fetch_add(1, Relaxed);
    }

    /// A guest instance was discarded: it trapped or overran its deadline.
    pub(crate) fn record_trap(&self, kind: FaultKind) {
        *self
            .traps
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(kind)
            .or_default() += 1;
    }

    /// Its last failure, in one line (`rejected: 401 Unauthorized from 127.0.0.1:18401`): by
    /// an exporter that knows more than the error it returns says.
    pub(crate) fn record_error(&self, line: &str) {
        self.last_error.record(line);
    }

    /// Failures recorded so far (take it before an export, pass it to
    /// [`record_failure`](Self::record_failure) after).
    pub(crate) fn errors_recorded(&self) -> u64 {
        self.last_error.recorded()
    }

    /// An export failed with `e`: its last error, unless the exporter recorded a line of its
    /// own since `since` ([`errors_recorded`](Self::errors_recorded) before the export).
    pub(crate) fn record_failure(&self, e: &OTelSdkError, since: u64) {
        self.last_error.record_failure(e, since);
    }

    /// The exporter was disabled at setup, for `reason`.
    pub(crate) fn record_disabled(&self, reason: String) {
        *self.disabled.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason);
    }

    /// A guest instance's memories and tables reached `bytes` in all.
    pub(crate) fn record_memory(&self, bytes: u64) {
        self.peak_memory_bytes.fetch_max(bytes, Relaxed);
    }

    /// The exporter's display name.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn record_received(&self) {
        self.received.fetch_add(1, Relaxed);
    }

    pub(crate) fn record_dropped(&self, reason: DropReason, spans: u64) {
        let counter = match reason {
            DropReason::QueueFull => &self.dropped_queue_full,
            DropReason::ExportFailed => &self.dropped_export_failed,
            DropReason::Shutdown => &self.dropped_shutdown,
            DropReason::Disabled => &self.dropped_disabled,
            DropReason::Rejected => &self.rejected,
            DropReason::Processor => &self.dropped_processor,
            DropReason::SpoolFull => &self.spool.dropped_full,
            DropReason::SpoolCorrupt => &self.spool.dropped_corrupt,
        };
        counter.fetch_add(spans, Relaxed);
    }

    /// What the processors did to a batch on its way here: their drops end those items here.
    pub(crate) fn record_processed(&self, processed: &Processed) {
        if processed.by.is_empty() {
            return;
        }
        let mut by = self.processors.lock().unwrap_or_else(|p| p.into_inner());
        for (name, counts) in &processed.by {
            self.dropped_processor.fetch_add(counts.dropped, Relaxed);
            self.processor_faults.fetch_add(counts.faults, Relaxed);
            let entry = by.entry(name.to_string()).or_default();
            entry.dropped += counts.dropped;
            entry.faults += counts.faults;
        }
    }

    /// Only the by-processor counts of `processed` (its items counted elsewhere, by
    /// [`record_processor_batch`](Self::record_processor_batch)).
    pub fn record_processed_by(&self, processed: &Processed) {
        let mut by = self.processors.lock().unwrap_or_else(|p| p.into_inner());
        for (name, counts) in &processed.by {
            self.processor_faults.fetch_add(counts.faults, Relaxed);
            let entry = by.entry(name.to_string()).or_default();
            entry.dropped += counts.dropped;
            entry.faults += counts.faults;
        }
    }

    /// A processor's own count of one batch: `items` in, `counts` of them dropped or faulted
    /// (the rest passed on, counted as `exported`).
    pub fn record_processor_batch(&self, items: u64, counts: ProcessorCounts) {
        self.received.fetch_add(items, Relaxed);
        self.exported
            .fetch_add(items.saturating_sub(counts.dropped), Relaxed);
        self.dropped_processor.fetch_add(counts.dropped, Relaxed);
        self.processor_faults.fetch_add(counts.faults, Relaxed);
    }

    pub(crate) fn record_batch(&self, spans: u64, ok: bool, elapsed: Duration) {
        if ok {
            self.exported.fetch_add(spans, Relaxed);
            self.batches_exported.fetch_add(1, Relaxed);
        } else {
            self.dropped_export_failed.fetch_add(spans, Relaxed);
            self.batches_failed.fetch_add(1, Relaxed);
        }
        self.latency.record(elapsed);
    }

    /// An export of `items` starts outside Lens's batch processor (a metric reader's, the
    /// Python SDK's processor's): they are received now. After [`close_direct`](Self::close_direct)
    /// they are dropped at shutdown at once (and the exporter should refuse them).
    pub fn begin_direct_export(&self, items: u64) -> DirectExport {
        self.received.fetch_add(items, Relaxed);
        let mut direct = self.direct.lock().unwrap_or_else(|p| p.into_inner());
        let ticket = direct.next;
        direct.next += 1;
        if direct.closed {
            self.dropped_shutdown.fetch_add(items, Relaxed);
        } else {
            direct.running.insert(ticket, items);
        }
        DirectExport {
            ticket,
            items,
            errors_at: self.errors_recorded(),
        }
    }

    /// The export ended with `result`: its items exported or dropped as failed, unless the
    /// shutdown already counted them; a failure is the last error (unless the exporter
    /// recorded a more precise one meanwhile).
    pub fn end_direct_export(
        &self,
        export: DirectExport,
        result: &OTelSdkResult,
        elapsed: Duration,
    ) {
        if let Err(e) = result {
            self.record_failure(e, export.errors_at);
        }
        if self.finish_direct(&export) {
            self.record_batch(export.items, result.is_ok(), elapsed);
        }
    }

    /// The export goes to the spool instead (it failed with `failure`, or the exporter is
    /// down): whether its items are still to be counted (by the spool: spooled, or dropped for
    /// want of room), which they are not once the shutdown counted them.
    pub(crate) fn end_direct_spooled(
        &self,
        export: DirectExport,
        failure: Option<&OTelSdkError>,
    ) -> bool {
        if let Some(e) = failure {
            self.record_failure(e, export.errors_at);
        }
        self.finish_direct(&export)
    }

    /// Whether `export` was still running (the shutdown had not counted it); it no longer is.
    fn finish_direct(&self, export: &DirectExport) -> bool {
        self.direct
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .running
            .remove(&export.ticket)
            .is_some()
    }

    /// What the processors did to the items of `export` before it is made: their drops end
    /// those items here (unless the shutdown already counted them all). `None` when no item is
    /// left: the export is over.
    pub fn processed_direct(
        &self,
        mut export: DirectExport,
        processed: &Processed,
    ) -> Option<DirectExport> {
        let dropped = processed.dropped().min(export.items);
        let mut direct = self.direct.lock().unwrap_or_else(|p| p.into_inner());
        let Some(items) = direct.running.get_mut(&export.ticket) else {
            drop(direct);
            self.record_processed_by(processed);
            return None;
        };
        *items -= dropped;
        export.items -= dropped;
        if export.items == 0 {
            direct.running.remove(&export.ticket);
        }
        drop(direct);
        self.record_processed(processed);
        (export.items > 0).then_some(export)
    }

    /// The export was not made (the exporter is shut down): its items are dropped at shutdown,
    /// unless the shutdown already counted them.
    pub fn abandon_direct_export(&self, export: DirectExport) {
        if self.finish_direct(&export) {
            self.dropped_shutdown.fetch_add(export.items, Relaxed);
        }
    }

    /// The export was not made for `reason` (a full hand-off queue): its items are dropped for
    /// it, unless the shutdown already counted them.
    pub fn refuse_direct_export(&self, export: DirectExport, reason: DropReason) {
        if self.finish_direct(&export) {
            self.record_dropped(reason, export.items);
        }
    }

    /// The installation is shut down: the items of exports still running are dropped at
    /// shutdown, and so will be those of any export starting later.
    pub fn close_direct(&self) {
        let mut direct = self.direct.lock().unwrap_or_else(|p| p.into_inner());
        direct.closed = true;
        let items: u64 = std::mem::take(&mut direct.running).values().sum();
        self.dropped_shutdown.fetch_add(items, Relaxed);
    }

    /// Records `items` received and dropped for `reason` at once (a metric collection for an
    /// exporter disabled at setup).
    pub(crate) fn record_direct_dropped(&self, reason: DropReason, items: u64) {
        self.received.fetch_add(items, Relaxed);
        self.record_dropped(reason, items);
    }

    /// `items` went to the spool; it holds `held` now.
    pub(crate) fn record_spooled(&self, items: u64, held: u64) {
        self.spool.spooled.fetch_add(items, Relaxed);
        self.spool.held.store(held, Relaxed);
    }

    /// `items` came back out of the spool and were exported; it holds `held` now.
    pub(crate) fn record_replayed(&self, items: u64, held: u64) {
        self.spool.replayed.fetch_add(items, Relaxed);
        self.exported.fetch_add(items, Relaxed);
        self.spool.held.store(held, Relaxed);
    }

    /// The spool holds `held` items now (after an eviction or a skipped record).
    pub(crate) fn record_spool_held(&self, held: u64) {
        self.spool.held.store(held, Relaxed);
    }

    /// Opening the spool found `items` left by earlier processes.
    pub(crate) fn record_spool_found(&self, items: u64) {
        self.spool.found.fetch_add(items, Relaxed);
        self.spool.held.fetch_add(items, Relaxed);
    }

    /// A consistent-enough copy of the counters.
    pub fn snapshot(&self) -> ExporterSnapshot {
        let rejected = self.rejected.load(Relaxed);
        ExporterSnapshot {
            name: self.name.clone(),
            received: self.received.load(Relaxed),
            exported: self.exported.load(Relaxed).saturating_sub(rejected),
            dropped_rejected: rejected,
            retries: self.retries.load(Relaxed),
            retries_exhausted: self.retries_exhausted.load(Relaxed),
            dropped_queue_full: self.dropped_queue_full.load(Relaxed),
            dropped_export_failed: self.dropped_export_failed.load(Relaxed),
            dropped_shutdown: self.dropped_shutdown.load(Relaxed),
            dropped_disabled: self.dropped_disabled.load(Relaxed),
            dropped_processor: self.dropped_processor.load(Relaxed),
            processor_faults: self.processor_faults.load(Relaxed),
            spooled: self.spool.spooled.load(Relaxed),
            replayed: self.spool.replayed.load(Relaxed),
            spool_found: self.spool.found.load(Relaxed),
            in_spool: self.spool.held.load(Relaxed),
            dropped_spool_full: self.spool.dropped_full.load(Relaxed),
            dropped_spool_corrupt: self.spool.dropped_corrupt.load(Relaxed),
            processors: self
                .processors
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            disabled: self
                .disabled
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            batches_exported: self.batches_exported.load(Relaxed),
            batches_failed: self.batches_failed.load(Relaxed),
            latency_p50: self.latency.quantile(0.50),
            latency_p99: self.latency.quantile(0.99),
            restarts: self.restarts.load(Relaxed),
            reloads: self.reloads.load(Relaxed),
            component_sha256: self
                .component
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            guest_errors: self.guest_errors.load(Relaxed),
            traps: self.traps.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            peak_memory_bytes: self.peak_memory_bytes.load(Relaxed),
            last_error: self.last_error.get(),
        }
    }
}

/// A copy of one exporter's counters.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExporterSnapshot {
    /// Exporter name.
    pub name: String,
    /// Spans handed to the exporter's processor (ended and sampled).
    pub received: u64,
    /// Spans the exporter accepted.
    pub exported: u64,
    /// Spans dropped because the queue was full.
    pub dropped_queue_full: u64,
    /// Spans in batches whose export failed.
    pub dropped_export_failed: u64,
    /// Spans lost to shutdown (timed out, or ended after it).
    pub dropped_shutdown: u64,
    /// Spans dropped because the exporter was disabled at setup.
    pub dropped_disabled: u64,
    /// Spans of accepted batches the exporter refused (a wasm guest's `partial`).
    #[serde(default)]
    pub dropped_rejected: u64,
    /// Spans the processors before this exporter dropped (`[[traces.processors]]`); for a
    /// processor's own entry, the spans it dropped.
    #[serde(default)]
    pub dropped_processor: u64,
    /// Spans that met a processor's fault on their way (passed on unprocessed, or dropped
    /// under `on_fault = "drop"`): not an ending of its own, a count beside them.
    #[serde(default)]
    pub processor_faults: u64,
    /// `dropped_processor` and `processor_faults` by processor name.
    #[serde(default)]
    pub processors: BTreeMap<String, ProcessorCounts>,
    /// Export attempts repeated after a retryable failure.
    #[serde(default)]
    pub retries: u64,
    /// Batches dropped because they were still failing retryably at their deadline ("export
    /// failed after N attempts"; their spans are in `dropped_export_failed`).
    #[serde(default)]
    pub retries_exhausted: u64,
    /// Why the exporter was disabled at setup (`on_setup_failure = "disable"`), if it was.
    pub disabled: Option<String>,
    /// Successful export calls.
    pub batches_exported: u64,
    /// Failed export calls.
    pub batches_failed: u64,
    /// Median export call latency (bucket upper bound).
    pub latency_p50: Duration,
    /// 99th percentile export call latency (bucket upper bound).
    pub latency_p99: Duration,
    /// Sandboxed exporters: instances rebuilt after a fault.
    pub restarts: u64,
    /// Sandboxed exporters: components swapped in by a reload (counts carry across one).
    #[serde(default)]
    pub reloads: u64,
    /// Sandboxed exporters: the SHA-256 (hex) of the component running now.
    #[serde(default)]
    pub component_sha256: Option<String>,
    /// Sandboxed exporters: calls where the guest returned an error.
    pub guest_errors: u64,
    /// Sandboxed exporters: discarded instances by fault kind (`deadline`, `memory limit`,
    /// `unreachable`, …).
    pub traps: BTreeMap<FaultKind, u64>,
    /// Sandboxed exporters: peak memory of an instance (all its memories and tables), bytes.
    pub peak_memory_bytes: u64,
    /// Items written to the exporter's spool (`spool = {…}`) instead of being dropped.
    #[serde(default)]
    pub spooled: u64,
    /// Items read back from the spool and exported (counted in `exported` too).
    #[serde(default)]
    pub replayed: u64,
    /// Items an earlier process left in the spool, found at start.
    #[serde(default)]
    pub spool_found: u64,
    /// Items in the spool now: not exported, not lost (sent by the next process given the
    /// same spool, or `lens spool replay`).
    #[serde(default)]
    pub in_spool: u64,
    /// Items dropped because the spool had no room (its `max_mib`, or a full disk).
    #[serde(default)]
    pub dropped_spool_full: u64,
    /// Items of damaged spool records, skipped.
    #[serde(default)]
    pub dropped_spool_corrupt: u64,
    /// The exporter's last failure, in one line: e.g. `rejected: 401 Unauthorized from
    /// 127.0.0.1:18401` (a guest's answer and the HTTP answer the host saw), `retryable, given
    /// up after 4 attempts: 503 Service Unavailable from …`, `deadline: …`.
    #[serde(default)]
    pub last_error: Option<String>,
}

impl ExporterSnapshot {
    /// All dropped spans.
    pub fn dropped(&self) -> u64 {
        self.dropped_queue_full
            + self.dropped_export_failed
            + self.dropped_shutdown
            + self.dropped_disabled
            + self.dropped_rejected
            + self.dropped_processor
            + self.dropped_spool_full
            + self.dropped_spool_corrupt
    }

    /// Spans neither exported nor dropped yet: queued or in flight.
    pub fn pending(&self) -> u64 {
        (self.received + self.spool_found)
            .saturating_sub(self.exported + self.dropped() + self.in_spool)
    }
}

/// Statistics of a whole telemetry installation.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct DeliveryStats {
    /// Spans ended (and recorded) on this rank.
    pub spans_produced: u64,
    /// Spans still open at shutdown, ended there and marked truncated.
    pub spans_truncated: u64,
    /// One entry per span exporter, in configuration order.
    pub exporters: Vec<ExporterSnapshot>,
    /// One entry per log exporter, in configuration order (counts are log records).
    #[serde(default)]
    pub log_exporters: Vec<ExporterSnapshot>,
    /// One entry per metric exporter, in configuration order (counts are data points).
    #[serde(default)]
    pub metric_exporters: Vec<ExporterSnapshot>,
    /// One entry per span processor (`[[traces.processors]]`), in configuration order: spans
    /// it saw (`received`, once per exporter batch it ran in), passed on (`exported`), dropped
    /// (`dropped_processor`), met its fault (`processor_faults`), and its guest's faults.
    #[serde(default)]
    pub span_processors: Vec<ExporterSnapshot>,
    /// One entry per log processor (`[[logs.processors]]`), as `span_processors` (counts are
    /// log records).
    #[serde(default)]
    pub log_processors: Vec<ExporterSnapshot>,
    /// One entry per metric processor (`[[metrics.processors]]`), as `span_processors` (counts
    /// are data points, once per exporter collection it ran on).
    #[serde(default)]
    pub metric_processors: Vec<ExporterSnapshot>,
}

impl DeliveryStats {
    /// The exporters of `signal` (`exporters`, `metric_exporters` or `log_exporters`).
    pub fn exporters_of(&self, signal: crate::Signal) -> &[ExporterSnapshot] {
        match signal {
            crate::Signal::Traces => &self.exporters,
            crate::Signal::Metrics => &self.metric_exporters,
            crate::Signal::Logs => &self.log_exporters,
        }
    }

    /// The entry of the exporter called `name`.
    pub fn exporter(&self, name: &str) -> Option<&ExporterSnapshot> {
        self.exporters.iter().find(|e| e.name == name)
    }

    /// The entry of the metric exporter called `name`.
    pub fn metric_exporter(&self, name: &str) -> Option<&ExporterSnapshot> {
        self.metric_exporters.iter().find(|e| e.name == name)
    }

    /// The entry of the span processor called `name`.
    pub fn span_processor(&self, name: &str) -> Option<&ExporterSnapshot> {
        self.span_processors.iter().find(|e| e.name == name)
    }

    /// The entry of the log processor called `name`.
    pub fn log_processor(&self, name: &str) -> Option<&ExporterSnapshot> {
        self.log_processors.iter().find(|e| e.name == name)
    }

    /// The entry of the metric processor called `name`.
    pub fn metric_processor(&self, name: &str) -> Option<&ExporterSnapshot> {
        self.metric_processors.iter().find(|e| e.name == name)
    }

    /// The entry of the log exporter called `name`.
    pub fn log_exporter(&self, name: &str) -> Option<&ExporterSnapshot> {
        self.log_exporters.iter().find(|e| e.name == name)
    }
}

/// Log2-bucketed latency histogram in microseconds (bucket `i` holds `< 2^i µs`).
#[derive(Debug, Default)]
struct LatencyHistogram {
    buckets: [AtomicU64; 32],
}

impl LatencyHistogram {
    fn record(&self, d: Duration) {
        let micros = d.as_micros().min(u128::from(u32::MAX)) as u32;
        let idx = (32 - micros.leading_zeros()).min(31) as usize;
        self.buckets[idx].fetch_add(1, Relaxed);
    }

    fn quantile(&self, q: f64) -> Duration {
        let counts: Vec<u64> = self.buckets.iter().map(|b| b.load(Relaxed)).collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return Duration::ZERO;
        }
        let target = ((total as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, c) in counts.iter().enumerate() {
            seen += c;
            if seen >= target {
                return Duration::from_micros(1u64 << i);
            }
        }
        Duration::from_micros(1u64 << 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_bound_the_samples() {
        let h = LatencyHistogram::default();
        for _ in 0..98 {
            h.record(Duration::from_micros(100));
        }
        h.record(Duration::from_millis(50));
        h.record(Duration::from_millis(50));
        assert_eq!(h.quantile(0.5), Duration::from_micros(128));
        assert_eq!(h.quantile(0.99), Duration::from_micros(65_536));
    }

    #[test]
    fn every_direct_export_ends_in_one_counter_across_the_shutdown() {
        let s = ExporterStats::new("m");
        let ms = Duration::from_millis(1);
        let (ok, err) = (
            Ok(()),
            Err(OTelSdkError::InternalFailure("HTTP 503".into())),
        );
        let done = s.begin_direct_export(3);
        s.end_direct_export(done, &ok, ms);
        let failed = s.begin_direct_export(2);
        s.end_direct_export(failed, &err, ms);
        let hung = s.begin_direct_export(5);
        let refused = s.begin_direct_export(7);
        s.abandon_direct_export(refused);
        s.close_direct();
        // The hung one ends after the shutdown counted it: nothing more.
        s.end_direct_export(hung, &ok, ms);
        let late = s.begin_direct_export(4);
        s.end_direct_export(late, &ok, ms);
        let snap = s.snapshot();
        assert_eq!(snap.last_error.as_deref(), Some("HTTP 503"));
        assert_eq!(snap.received, 3 + 2 + 5 + 7 + 4);
        assert_eq!(
            (
                snap.exported,
                snap.dropped_export_failed,
                snap.dropped_shutdown
            ),
            (3, 2, 5 + 7 + 4)
        );
        assert_eq!(snap.received, snap.exported + snap.dropped());
    }
}
