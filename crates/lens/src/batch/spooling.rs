//! A batch queue's spool (`spool = {…}` on its exporter entry): where batches go when the
//! exporter cannot take them, and how they come back.
//!
//! - **Down.** An export that fails (after the exporter's own retries) sends its batch to the
//!   spool and marks the exporter down; while it is down every batch is spooled, and every
//!   [`backoff`](Health) (1 s, doubling to 5 s: the OTLP exporters' own retry cap) the oldest
//!   record is tried again. Its success marks the exporter up.
//! - **Busy.** While the worker is inside an export (a collector that hangs, a retry loop), or
//!   whenever the queue passes half full (the worker is not keeping up), the spiller thread
//!   takes batches from the queue into the spool, so that the application thread's queue does
//!   not overflow.
//! - **Replay.** While up, new data goes first: the worker replays spooled records, oldest
//!   first, only while less than a batch waits in the queue, so a backlog takes the exporter's
//!   spare capacity and never delays new data by more than one batch. A flush and a shutdown
//!   replay everything they can within their timeout; what is left stays on disk for the next
//!   process given the same spool (or `lens spool replay`).
//!
//! A batch is spooled as the exporter would receive it: after the processors, so a processor
//! that removes secrets runs before anything reaches the disk.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_sdk::error::OTelSdkError;

use super::{BatchExport, DropReason, ExporterStats};
use crate::spool::{Appended, Opened, Replay, Spool};

/// The first wait before an exporter that failed is tried again, and its cap.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// What the worker knows of its exporter's health.
#[derive(Debug, Default)]
struct Health {
    /// Set while the exporter is down: when to try again.
    retry_at: Option<Instant>,
    backoff: Duration,
}

/// An open spool and the state around it, shared by the worker and the spiller, and by two
/// queues of one exporter while a reload replaces one with the other (the new one adopts the
/// spool instead of opening it again: the running one holds its lock).
pub(crate) struct Spooling {
    spool: Mutex<Spool>,
    health: Mutex<Health>,
    /// The worker is inside an export call: the spiller may take batches from the queue.
    exporting: AtomicBool,
    /// The queues using it: the last one to shut down releases it.
    holders: AtomicUsize,
    /// Someone is replaying (a worker, a metric reader's export, a flush, a shutdown): one at
    /// a time, so that no record is sent twice by this process. A flag rather than a mutex: a
    /// metric export replays across `.await`s, where a guard cannot be held.
    replaying: AtomicBool,
}

/// A turn at replaying a spool ([`Spooling::try_turn`]), given back when dropped.
pub(crate) struct Turn<'a>(&'a AtomicBool);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Spooling {
    /// Takes `spool`, counting what earlier processes left (`opened`) into `stats` and logging
    /// the damaged files it skipped.
    pub(crate) fn new(spool: Spool, opened: Opened, stats: &ExporterStats) -> Self {
        for warning in &opened.warnings {
            log::warn!("exporter `{}`: {warning}", stats.name());
        }
        stats.record_dropped(DropReason::SpoolCorrupt, opened.corrupt_items);
        let found = spool.status().items;
        if found > 0 {
            log::info!(
                "exporter `{}`: {found} item(s) left in spool {} by an earlier process are \
                 sent first",
                stats.name(),
                spool.dir().display()
            );
            stats.record_spool_found(found);
        }
        Self {
            spool: Mutex::new(spool),
            health: Mutex::default(),
            exporting: AtomicBool::new(false),
            holders: AtomicUsize::new(1),
            replaying: AtomicBool::new(false),
        }
    }

    /// Another queue of the same exporter takes the spool on (a reload rebuilding it).
    pub(crate) fn adopt(self: &Arc<Self>) -> Arc<Self> {
        self.holders.fetch_add(1, Ordering::SeqCst);
        self.clone()
    }

    /// Bounds it by `limits` from now on.
    pub(crate) fn set_limits(&self, limits: crate::spool::SpoolLimits) {
        self.spool().set_limits(limits);
    }

    /// Whether another queue uses it too (what stays in it is theirs to send).
    pub(crate) fn is_shared(&self) -> bool {
        self.holders.load(Ordering::SeqCst) > 1
    }

    fn spool(&self) -> std::sync::MutexGuard<'_, Spool> {
        self.spool.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn health(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `export` with the worker marked as exporting (the spiller's cue).
    pub(crate) fn exporting<R>(&self, export: impl FnOnce() -> R) -> R {
        self.exporting.store(true, Ordering::SeqCst);
        let result = export();
        self.exporting.store(false, Ordering::SeqCst);
        result
    }

    /// Whether the worker is inside an export.
    pub(crate) fn is_exporting(&self) -> bool {
        self.exporting.load(Ordering::SeqCst)
    }

    /// Items in the spool now.
    pub(crate) fn held(&self) -> u64 {
        self.spool().status().items
    }

    /// Whether the exporter is down (its batches go to the spool).
    pub(crate) fn is_down(&self) -> bool {
        self.health().retry_at.is_some()
    }

    pub(crate) fn mark_up(&self) {
        *self.health() = Health::default();
    }

    pub(crate) fn mark_down(&self) {
        let mut h = self.health();
        h.backoff = if h.backoff.is_zero() {
            FIRST_BACKOFF
        } else {
            (h.backoff * 2).min(MAX_BACKOFF)
        };
        h.retry_at = Some(Instant::now() + h.backoff);
    }

    /// Writes one batch of `items` (as `payload`) to the spool, counting it as spooled or, when
    /// it has no room (its limit, a full disk), as dropped; what an append evicts is counted
    /// dropped too. Returns whether it was spooled.
    pub(crate) fn append(&self, stats: &ExporterStats, items: u64, payload: &[u8]) -> bool {
        let mut spool = self.spool();
        if spool.is_released() {
            // A shutdown that timed out gave the spool up and counted these items as dropped
            // at shutdown already: another process may hold it now.
            return false;
        }
        match spool.append(items, payload) {
            Ok(Appended::Spooled { evicted }) => {
                stats.record_dropped(DropReason::SpoolFull, evicted);
                stats.record_spooled(items, spool.status().items);
                true
            }
            Ok(Appended::Full) => {
                stats.record_dropped(DropReason::SpoolFull, items);
                stats.record_spool_held(spool.status().items);
                false
            }
            Err(e) => {
                let line = format!("spool: {e}");
                log::warn!(
                    "exporter `{}`: {items} item(s) dropped: {line}",
                    stats.name()
                );
                stats.record_error(&line);
                stats.record_dropped(DropReason::SpoolFull, items);
                stats.record_spool_held(spool.status().items);
                false
            }
        }
    }

    /// After an export of the live path: an error marks the exporter down (its batch is then
    /// spooled by the caller), a success up.
    pub(crate) fn exported(&self, result: &Result<(), OTelSdkError>) {
        match result {
            Ok(()) => self.mark_up(),
            Err(_) => self.mark_down(),
        }
    }

    /// Replays spooled records through `exporter`, oldest first, while `more` says go on and
    /// `deadline` has not passed; with `patient`, not before the backoff of an exporter that
    /// is down (a flush and a shutdown try at once). Stops at the first failure (the exporter
    /// is down again). Returns the items still spooled.
    pub(crate) fn replay<E: BatchExport>(
        &self,
        exporter: &E,
        stats: &ExporterStats,
        deadline: Instant,
        patient: bool,
        more: impl Fn() -> bool,
    ) -> u64 {
        if patient && !self.retry_due() {
            return self.held();
        }
        let Some(_turn) = self.turn_until(deadline) else {
            return self.held();
        };
        while Instant::now() < deadline && more() {
            let Some(record) = self.next_record(stats) else {
                break;
            };
            match exporter.decode(&record.payload) {
                Err(e) => self.skip(stats, &record, &e),
                Ok(batch) => {
                    let result = self.exporting(|| super::export_caught(exporter, batch));
                    if !self.replayed(stats, &record, result) {
                        break;
                    }
                }
            }
        }
        self.held()
    }

    /// The turn at replaying, if no one else has it.
    pub(crate) fn try_turn(&self) -> Option<Turn<'_>> {
        self.replaying
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
            // Lazily: a turn made and dropped on a failed attempt would give the holder's up.
            .then(|| Turn(&self.replaying))
    }

    /// The turn at replaying, waiting for a replay already running to end, until `deadline`.
    pub(crate) fn turn_until(&self, deadline: Instant) -> Option<Turn<'_>> {
        loop {
            if let Some(turn) = self.try_turn() {
                return Some(turn);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// What a flush or a shutdown leaves: an error naming the spool while it holds `noun`
    /// (`spans`, …), delivered later by this process or the next.
    pub(crate) fn delivered(&self, noun: &str) -> Result<(), OTelSdkError> {
        match self.held() {
            0 => Ok(()),
            left => Err(OTelSdkError::InternalFailure(format!(
                "{left} {noun} are spooled in {}, not yet delivered",
                self.dir().display()
            ))),
        }
    }

    /// At shutdown: says what stays in the spool for the next process.
    pub(crate) fn report_left(&self, stats: &ExporterStats, noun: &str) {
        let left = self.held();
        if left > 0 {
            log::warn!(
                "exporter `{}`: {left} {noun} stay spooled in {}: the next process given this \
                 spool sends them (or `lens spool replay`)",
                stats.name(),
                self.dir().display()
            );
        }
    }

    /// Says that an export of `items` `noun` failed with `e`, and where they went.
    pub(crate) fn report_failed(
        stats: &ExporterStats,
        items: u64,
        noun: &str,
        e: &OTelSdkError,
        spooled: bool,
    ) {
        log::warn!(
            "exporter `{}`: export of {items} {noun} failed ({e}){}",
            stats.name(),
            if spooled {
                "; spooled, sent when it recovers"
            } else {
                "; the spool has no room: dropped"
            }
        );
    }

    /// Whether an exporter that is down may be tried again now (always, when it is up).
    pub(crate) fn retry_due(&self) -> bool {
        self.health().retry_at.is_none_or(|at| Instant::now() >= at)
    }

    /// The oldest record not yet replayed; `None` when there is none, the spool was released,
    /// or it cannot be read (the exporter is then treated as down, to try again later).
    pub(crate) fn next_record(&self, stats: &ExporterStats) -> Option<Replay> {
        let mut spool = self.spool();
        if spool.is_released() {
            return None;
        }
        match spool.oldest() {
            Ok(record) => record,
            Err(e) => {
                drop(spool);
                log::warn!("exporter `{}`: cannot read its spool: {e}", stats.name());
                self.mark_down();
                None
            }
        }
    }

    /// `record` cannot be read back (`why`): skipped, its items counted as dropped (damaged).
    pub(crate) fn skip(&self, stats: &ExporterStats, record: &Replay, why: &str) {
        let mut spool = self.spool();
        log::warn!(
            "exporter `{}`: a record of spool {} is not readable ({why}): its {} item(s) are \
             skipped",
            stats.name(),
            spool.dir().display(),
            record.items
        );
        Self::ack(&mut spool, stats, record);
        stats.record_dropped(DropReason::SpoolCorrupt, record.items);
        stats.record_spool_held(spool.status().items);
    }

    /// The export of `record` ended with `result`: a success acknowledges it and counts its
    /// items as replayed (the exporter is up); a failure leaves it spooled and marks the
    /// exporter down. Returns whether it was delivered.
    pub(crate) fn replayed(
        &self,
        stats: &ExporterStats,
        record: &Replay,
        result: Result<(), OTelSdkError>,
    ) -> bool {
        if let Err(e) = result {
            log::warn!(
                "exporter `{}`: replaying its spool failed ({e}); tried again later",
                stats.name()
            );
            self.mark_down();
            return false;
        }
        self.mark_up();
        let mut spool = self.spool();
        Self::ack(&mut spool, stats, record);
        stats.record_replayed(record.items, spool.status().items);
        true
    }

    fn ack(spool: &mut Spool, stats: &ExporterStats, record: &Replay) {
        if spool.is_released() {
            // Given up meanwhile (another process may hold it): sent again from there.
            return;
        }
        if let Err(e) = spool.ack(record) {
            log::warn!("exporter `{}`: {e}", stats.name());
        }
    }

    /// One queue gives the spool up (it shut down); the last one releases it (its lock).
    pub(crate) fn release(&self) {
        if self.holders.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.spool().release();
        }
    }

    /// Where the spool is, for messages.
    pub(crate) fn dir(&self) -> std::path::PathBuf {
        self.spool().dir().to_path_buf()
    }
}
