//! Lens's batch queue, shared by the span and log processors: the SDK's design (bounded queue,
//! worker thread, size- and time-triggered batches) with exact delivery accounting.
//!
//! The SDK's batch processors keep their drop counters private and fix their flush timeouts;
//! Lens must account for every item per exporter. Every item pushed ends up in exactly one
//! counter of [`ExporterStats`]: exported, dropped because the queue was full, dropped because
//! its batch failed, or dropped at shutdown (still queued or in flight when the deadline passed,
//! or pushed after shutdown). The application thread only ever does a non-blocking `try_send`;
//! it never waits on the exporter.
//!
//! [`BatchQueue`] knows nothing of spans or logs: a [`BatchExport`] adapts one kind of exporter
//! (`trace::processor`, `logs::processor`).

mod chain;
pub(crate) mod last_error;
pub(crate) mod retry;
#[cfg(test)]
mod spool_tests;
mod spooling;
mod stats;
#[cfg(test)]
mod tests;

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError, bounded, select};
use opentelemetry::Context;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};

use crate::config::BatchConfig;
use crate::signal::Signal;
#[cfg(test)]
use crate::spool::{Opened, Spool};
pub use chain::{Chain, Retained, Stages};
pub(crate) use spooling::{Spooling, Turn};
pub use stats::{
    DeliveryStats, DirectExport, DropReason, ExporterSnapshot, ExporterStats, Processed,
    ProcessorCounts,
};

/// One kind of exporter as the batch queue drives it: exports run on the worker thread (and,
/// with `max_concurrent_exports`, on scoped threads beside it), the rest on the worker alone.
pub(crate) trait BatchExport: Send + Sync + 'static {
    /// What is queued: a span, a log record with its scope.
    type Item: Send + 'static;
    /// Runs the batch through the processors before the exporter (`[[traces.processors]]`):
    /// what is left, and what each did. None by default.
    fn process(&self, batch: Vec<Self::Item>) -> (Vec<Self::Item>, Processed) {
        (batch, Processed::default())
    }
    /// Exports one batch to completion.
    fn export(&self, batch: Vec<Self::Item>) -> OTelSdkResult;
    /// The batch as a spool record (the OTLP request of its signal).
    fn encode(&self, batch: &[Self::Item]) -> Vec<u8>;
    /// A spool record read back (bytes from disk: anything may be in them).
    fn decode(&self, record: &[u8]) -> Result<Vec<Self::Item>, String>;
    /// Flushes what the exporter itself buffers.
    fn force_flush(&mut self) -> OTelSdkResult;
    /// Shuts the exporter down.
    fn shutdown_with_timeout(&mut self, timeout: Duration) -> OTelSdkResult;
    /// Hands the exporter the provider's resource.
    fn set_resource(&mut self, resource: &Resource);
}

/// A stage each batch goes through on its way to an exporter, on the exporter's worker thread
/// (the sandboxed processors of `[[traces.processors]]` and `[[logs.processors]]`:
/// `lens::wasm::WasmProcessor`). One stage may serve several exporters' queues at once.
pub trait ExportStage<T>: Send + Sync + 'static {
    /// Its name, in statistics.
    fn name(&self) -> &Arc<str>;
    /// What goes on, and what it did; never fails (a fault is the stage's to count and
    /// resolve).
    fn process(&self, items: Vec<T>) -> (Vec<T>, ProcessorCounts);
    /// One more queue uses it.
    fn retain(&self);
    /// A queue using it shut down (the last one shuts it down within `timeout`).
    fn release(&self, timeout: Duration);
    /// The provider's resource.
    fn set_resource(&self, resource: &Resource);
}

/// `batch` through `stages` in order (until none is left), and what each did.
pub fn run_stages<T: 'static>(
    stages: &[Arc<dyn ExportStage<T>>],
    mut batch: Vec<T>,
) -> (Vec<T>, Processed) {
    let mut processed = Processed::default();
    for stage in stages {
        if batch.is_empty() {
            break;
        }
        let counts;
        (batch, counts) = stage.process(batch);
        processed.by.push((stage.name().clone(), counts));
    }
    (batch, processed)
}

enum Control {
    /// Export what is queued now, full batches or not (a hand-off of a whole batch).
    ExportQueued,
    /// Export what is queued, replay the spool until the deadline (unless only settling what
    /// is queued: exported or spooled), flush the exporter.
    Flush(Sender<OTelSdkResult>, Instant, Replay),
    Shutdown(Sender<OTelSdkResult>, Duration),
    SetResource(Resource),
}

/// What the worker holds out of the queue (every chunk being exported), shared with a
/// shutdown that may give up on it.
#[derive(Default)]
struct InFlight {
    items: u64,
    abandoned: bool,
}

struct Shared<T> {
    stats: Arc<ExporterStats>,
    /// What the queue holds, in log messages: "spans", "log records".
    noun: &'static str,
    in_flight: Mutex<InFlight>,
    items_rx: Receiver<T>,
    /// The exporter's spool, if its entry has one.
    spooling: Option<Arc<Spooling>>,
    /// Set at shutdown: the spiller stops.
    stopping: AtomicBool,
}

impl<T> Shared<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, InFlight> {
        self.in_flight.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes up to `lanes` chunks of at most `max` queued items each (the first may be empty;
    /// with `full_only`, the others are taken only when full), unless shutdown gave up on this
    /// queue.
    fn take_chunks(&self, max: usize, lanes: usize, full_only: bool) -> Option<Vec<Vec<T>>> {
        let mut state = self.lock();
        if state.abandoned {
            return None;
        }
        let mut chunks = Vec::with_capacity(lanes);
        for _ in 0..lanes {
            if full_only && !chunks.is_empty() && self.items_rx.len() < max {
                break;
            }
            let chunk: Vec<T> = self.items_rx.try_iter().take(max).collect();
            state.items += chunk.len() as u64;
            let last = chunk.len() < max;
            if !chunk.is_empty() || chunks.is_empty() {
                chunks.push(chunk);
            }
            if last {
                break;
            }
        }
        Some(chunks)
    }

    /// Accounts for a chunk of `n` items just processed and exported (none left by the
    /// processors: no export); `false` when shutdown gave up meanwhile.
    fn resolve(&self, n: u64, processed: &Processed, outcome: Outcome, elapsed: Duration) -> bool {
        let mut state = self.lock();
        if state.abandoned {
            return false;
        }
        self.resolve_locked(&mut state, n, processed, outcome, elapsed);
        true
    }

    /// Spools `record` (`items` of the chunk of `n`) and accounts for the chunk at once, unless
    /// shutdown gave up on it meanwhile (it counted them, so they are not spooled too); `None`
    /// then, else whether the spool took them.
    fn spool_resolved(
        &self,
        spooling: &Spooling,
        (items, record): (u64, &[u8]),
        n: u64,
        processed: &Processed,
        elapsed: Duration,
    ) -> Option<bool> {
        let mut state = self.lock();
        if state.abandoned {
            return None;
        }
        let spooled = spooling.append(&self.stats, items, record);
        self.resolve_locked(&mut state, n, processed, Outcome::Spooled, elapsed);
        Some(spooled)
    }

    fn resolve_locked(
        &self,
        state: &mut InFlight,
        n: u64,
        processed: &Processed,
        outcome: Outcome,
        elapsed: Duration,
    ) {
        self.stats.record_processed(processed);
        let exported = n - processed.dropped();
        if exported > 0 {
            match outcome {
                Outcome::Exported => self.stats.record_batch(exported, true, elapsed),
                Outcome::Failed => self.stats.record_batch(exported, false, elapsed),
                // Counted by the spool (spooled, or dropped for want of room).
                Outcome::Spooled => {}
            }
        }
        state.items -= n;
    }

    /// Gives up on everything held or queued: counted as dropped at shutdown.
    fn abandon(&self) {
        let mut state = self.lock();
        if !state.abandoned {
            state.abandoned = true;
            self.stats.record_dropped(DropReason::Shutdown, state.items);
            state.items = 0;
        }
        let queued = self.items_rx.try_iter().count() as u64;
        self.stats.record_dropped(DropReason::Shutdown, queued);
    }
}

/// Whether a flush replays the spool too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Replay {
    /// Everything delivered: the queue, then the spool.
    All,
    /// The queue settled: each item exported, spooled or dropped.
    QueueOnly,
}

/// What became of a chunk taken from the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Exported,
    Failed,
    /// Handed to the spool (which counts it as spooled or dropped).
    Spooled,
}

/// A bounded queue feeding one exporter from a worker thread, with exact statistics.
pub(crate) struct BatchQueue<T> {
    items_tx: Sender<T>,
    wake_tx: Sender<()>,
    control_tx: Sender<Control>,
    shared: Arc<Shared<T>>,
    worker: Mutex<Option<JoinHandle<()>>>,
    /// With a spool: the thread that spills a filling queue while the worker exports, woken
    /// by `pressure_tx`.
    spiller: Mutex<Option<JoinHandle<()>>>,
    pressure_tx: Option<Sender<()>>,
    /// Queue length past which the spiller is woken.
    high_water: usize,
    is_shutdown: AtomicBool,
    max_batch: usize,
    flush_timeout: Duration,
}

impl<T> std::fmt::Debug for BatchQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchQueue")
            .field("exporter", &self.shared.stats.name())
            .field("max_batch", &self.max_batch)
            .finish()
    }
}

impl<T: Send + 'static> BatchQueue<T> {
    /// Starts the worker thread (`lens-bsp-{exporter name}` for spans, `lens-blrp-…` for log
    /// records, after the SDKs' processors) for `exporter`, counting into `stats`.
    #[cfg(test)]
    pub(crate) fn new<E>(
        exporter: E,
        config: BatchConfig,
        stats: Arc<ExporterStats>,
        signal: Signal,
    ) -> Self
    where
        E: BatchExport<Item = T>,
    {
        Self::with_spool(exporter, config, stats, signal, None)
    }

    /// [`new`](Self::new), batches the exporter cannot take going to `spool` (opened, with
    /// what it found) instead of being dropped.
    #[cfg(test)]
    pub(crate) fn with_spool<E>(
        exporter: E,
        config: BatchConfig,
        stats: Arc<ExporterStats>,
        signal: Signal,
        spool: Option<(Spool, Opened)>,
    ) -> Self
    where
        E: BatchExport<Item = T>,
    {
        let spooling = spool.map(|(spool, opened)| Arc::new(Spooling::new(spool, opened, &stats)));
        Self::with_spooling(exporter, config, stats, signal, spooling)
    }

    /// [`with_spool`](Self::with_spool) on a spool already open (one another queue of this
    /// exporter used: see [`Spooling::adopt`]).
    pub(crate) fn with_spooling<E>(
        exporter: E,
        config: BatchConfig,
        stats: Arc<ExporterStats>,
        signal: Signal,
        spooling: Option<Arc<Spooling>>,
    ) -> Self
    where
        E: BatchExport<Item = T>,
    {
        let capacity = config.max_queue_size.max(1);
        let (items_tx, items_rx) = bounded(capacity);
        let (wake_tx, wake_rx) = bounded(1);
        let (control_tx, control_rx) = bounded(16);
        let shared = Arc::new(Shared {
            stats,
            noun: signal.items(),
            in_flight: Mutex::default(),
            items_rx,
            spooling,
            stopping: AtomicBool::new(false),
        });
        let max_batch = config.max_export_batch_size.max(1);
        let exporter = Arc::new(RwLock::new(exporter));
        let delay = Duration::from_millis(config.scheduled_delay_ms.max(1));
        let worker = Worker {
            exporter: exporter.clone(),
            shared: shared.clone(),
            max_batch,
            lanes: config.max_concurrent_exports.max(1),
            delay,
        };
        let name = format!("lens-{}-{}", thread_prefix(signal), shared.stats.name());
        let handle = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || worker.run(control_rx, wake_rx))
            .expect("spawning a batch processor thread");
        let (mut spiller, mut pressure_tx) = (None, None);
        if shared.spooling.is_some() {
            let (tx, rx) = bounded(1);
            let spill = Spiller {
                exporter,
                shared: shared.clone(),
                max_batch,
                low_water: capacity / 4,
                delay,
            };
            spiller = Some(
                std::thread::Builder::new()
                    .name(format!("{name}-spill"))
                    .spawn(move || spill.run(rx))
                    .expect("spawning a spool thread"),
            );
            pressure_tx = Some(tx);
        }
        Self {
            items_tx,
            wake_tx,
            control_tx,
            shared,
            worker: Mutex::new(Some(handle)),
            spiller: Mutex::new(spiller),
            pressure_tx,
            high_water: capacity / 2,
            is_shutdown: AtomicBool::new(false),
            max_batch,
            flush_timeout: Duration::from_millis(config.shutdown_timeout_ms),
        }
    }

    /// The live statistics of this queue's exporter.
    pub(crate) fn stats(&self) -> &Arc<ExporterStats> {
        &self.shared.stats
    }

    /// Its spool, if it has one.
    pub(crate) fn spooling(&self) -> Option<&Arc<Spooling>> {
        self.shared.spooling.as_ref()
    }

    /// Queues `item` without waiting; counted as dropped when the queue is full or shut down.
    pub(crate) fn push(&self, item: T) {
        let stats = &self.shared.stats;
        stats.record_received();
        if self.is_shutdown.load(Ordering::Relaxed) {
            stats.record_dropped(DropReason::Shutdown, 1);
            return;
        }
        match self.items_tx.try_send(item) {
            Ok(()) => {
                let queued = self.items_tx.len();
                if queued >= self.max_batch {
                    let _ = self.wake_tx.try_send(());
                }
                if let Some(pressure) = &self.pressure_tx
                    && queued >= self.high_water
                {
                    let _ = pressure.try_send(());
                }
            }
            Err(TrySendError::Full(_)) => stats.record_dropped(DropReason::QueueFull, 1),
            Err(TrySendError::Disconnected(_)) => stats.record_dropped(DropReason::Shutdown, 1),
        }
    }

    /// Queues a batch that is complete as it is (one the Python SDK's processor handed off):
    /// the worker exports what is queued without waiting for its timer or a full batch.
    pub(crate) fn push_batch(&self, items: impl IntoIterator<Item = T>) {
        for item in items {
            self.push(item);
        }
        let _ = self.control_tx.try_send(Control::ExportQueued);
    }

    /// Exports everything queued, then flushes the exporter, within `shutdown_timeout_ms`.
    pub(crate) fn force_flush(&self) -> OTelSdkResult {
        self.force_flush_within(self.flush_timeout)
    }

    /// Exports everything queued, replays the spool, then flushes the exporter, within
    /// `timeout`.
    pub(crate) fn force_flush_within(&self, timeout: Duration) -> OTelSdkResult {
        self.flush(timeout, Replay::All)
    }

    /// Settles everything queued (exported, or spooled when the exporter cannot take it now),
    /// then flushes the exporter, within `timeout`; the spool is left to its replay.
    pub(crate) fn settle_within(&self, timeout: Duration) -> OTelSdkResult {
        self.flush(timeout, Replay::QueueOnly)
    }

    fn flush(&self, timeout: Duration, replay: Replay) -> OTelSdkResult {
        if self.is_shutdown.load(Ordering::Relaxed) {
            return Err(OTelSdkError::AlreadyShutdown);
        }
        // The worker's replay of the spool ends a little before the caller stops waiting.
        let deadline = Instant::now() + timeout.mul_f64(0.8);
        self.request(|tx| Control::Flush(tx, deadline, replay), timeout)
            .unwrap_or(Err(OTelSdkError::Timeout(timeout)))
    }

    /// Exports what is queued and shuts the exporter down within `timeout`; what is left then
    /// is counted as dropped at shutdown.
    pub(crate) fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        if self.is_shutdown.swap(true, Ordering::SeqCst) {
            return Err(OTelSdkError::AlreadyShutdown);
        }
        match self.request(|tx| Control::Shutdown(tx, timeout), timeout) {
            Some(result) => {
                if let Some(h) = self.worker.lock().unwrap_or_else(|p| p.into_inner()).take() {
                    let _ = h.join();
                }
                self.stop_spiller();
                if let Some(spooling) = &self.shared.spooling {
                    spooling.release();
                }
                // Items that raced with shutdown into the queue.
                self.shared.abandon();
                result
            }
            None => {
                // The worker is stuck (a slow or hung exporter): count what it holds and leave it,
                // giving its spool up (what it spools later is refused, already counted), so
                // that a new installation in this process or another one can open it.
                self.shared.stopping.store(true, Ordering::SeqCst);
                self.shared.abandon();
                if let Some(spooling) = &self.shared.spooling {
                    spooling.release();
                }
                log::warn!(
                    "exporter `{}`: shutdown timed out after {timeout:?}; queued and in-flight {} counted as dropped",
                    self.shared.stats.name(),
                    self.shared.noun
                );
                Err(OTelSdkError::Timeout(timeout))
            }
        }
    }

    /// Stops the spiller (it ends once its queue is closed or abandoned; never waited on past
    /// a chunk it is writing).
    fn stop_spiller(&self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        if let Some(tx) = &self.pressure_tx {
            let _ = tx.try_send(());
        }
        if let Some(h) = self
            .spiller
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            let _ = h.join();
        }
    }

    /// Hands the exporter the provider's resource (on the worker, before the next batch).
    pub(crate) fn set_resource(&self, resource: &Resource) {
        let _ = self
            .control_tx
            .try_send(Control::SetResource(resource.clone()));
    }

    /// Sends a control message and waits for the worker's reply, both bounded by `timeout`.
    /// `None` when the worker did not answer in time.
    fn request(
        &self,
        make: impl FnOnce(Sender<OTelSdkResult>) -> Control,
        timeout: Duration,
    ) -> Option<OTelSdkResult> {
        let (tx, rx) = bounded(1);
        let started = Instant::now();
        self.control_tx.send_timeout(make(tx), timeout).ok()?;
        rx.recv_timeout(timeout.saturating_sub(started.elapsed()))
            .ok()
    }
}

struct Worker<E: BatchExport> {
    /// Shared with the spiller, which processes and encodes beside an export; written only
    /// by the worker (flush, shutdown, resource).
    exporter: Arc<RwLock<E>>,
    shared: Arc<Shared<E::Item>>,
    max_batch: usize,
    /// Chunks exported at once (`max_concurrent_exports`).
    lanes: usize,
    delay: Duration,
}

impl<E: BatchExport> Worker<E> {
    fn run(mut self, control_rx: Receiver<Control>, wake_rx: Receiver<()>) {
        // The exporter's own telemetry (an HTTP client's spans, say) must not feed back in.
        let _suppress = Context::enter_telemetry_suppressed_scope();
        let mut next_timer = Instant::now() + self.delay;
        loop {
            let wait = next_timer.saturating_duration_since(Instant::now());
            select! {
                recv(control_rx) -> msg => match msg {
                    Ok(Control::ExportQueued) => {
                        if self.export_queued().is_err() && self.shared.lock().abandoned {
                            return;
                        }
                        let _ = self.replay_between(Instant::now() + self.delay);
                    }
                    Ok(Control::Flush(reply, deadline, replay)) => {
                        // Queued items first, then the spool, then whatever the exporter
                        // itself buffers.
                        let mut exported = self.export_queued();
                        if replay == Replay::All {
                            exported = exported.and(self.replay_all(deadline));
                        }
                        let flushed = write(&self.exporter).force_flush();
                        let _ = reply.send(exported.and(flushed));
                    }
                    Ok(Control::Shutdown(reply, timeout)) => {
                        let started = Instant::now();
                        let result = self.export_queued();
                        let replayed = self.replay_all(started + timeout.mul_f64(0.8));
                        let left = timeout.saturating_sub(started.elapsed());
                        let shut = write(&self.exporter).shutdown_with_timeout(left);
                        self.report_spooled();
                        let _ = reply.send(result.and(replayed).and(shut));
                        return;
                    }
                    Ok(Control::SetResource(resource)) => {
                        write(&self.exporter).set_resource(&resource);
                    }
                    Err(_) => return,
                },
                recv(wake_rx) -> _ => {
                    while self.shared.items_rx.len() >= self.max_batch {
                        if self.export_round(true).is_none() {
                            return;
                        }
                    }
                    // Under steady load the timer below never fires: the backlog is replayed
                    // between full batches too.
                    let _ = self.replay_between(Instant::now() + self.delay);
                    next_timer = Instant::now() + self.delay;
                }
                default(wait) => {
                    if self.export_queued().is_err() && self.shared.lock().abandoned {
                        return;
                    }
                    let backlog = self.replay_between(Instant::now() + self.delay);
                    // A backlog the exporter can take goes on at once, not a delay later.
                    next_timer = if backlog {
                        Instant::now()
                    } else {
                        Instant::now() + self.delay
                    };
                }
            }
        }
    }

    /// Replays spooled records while less than a batch of new data waits (new data first),
    /// until `deadline`.
    /// Returns whether some is left that the exporter, up, could take now.
    fn replay_between(&self, deadline: Instant) -> bool {
        let Some(spooling) = &self.shared.spooling else {
            return false;
        };
        let exporter = read(&self.exporter);
        let queue = &self.shared.items_rx;
        let max = self.max_batch;
        let left = spooling.replay(&*exporter, &self.shared.stats, deadline, true, || {
            queue.len() < max
        });
        left > 0 && !spooling.is_down()
    }

    /// Replays the whole spool, until `deadline`: an error when some is left.
    fn replay_all(&self, deadline: Instant) -> OTelSdkResult {
        let Some(spooling) = &self.shared.spooling else {
            return Ok(());
        };
        let exporter = read(&self.exporter);
        spooling.replay(&*exporter, &self.shared.stats, deadline, false, || true);
        spooling.delivered(self.shared.noun)
    }

    /// At shutdown: says what stays in the spool for the next process.
    fn report_spooled(&self) {
        if let Some(spooling) = self.shared.spooling.as_ref().filter(|s| !s.is_shared()) {
            spooling.report_left(&self.shared.stats, self.shared.noun);
        }
    }

    /// Exports everything queued now, a batch at a time.
    fn export_queued(&mut self) -> OTelSdkResult {
        let mut result = Ok(());
        let mut remaining = self.shared.items_rx.len();
        while remaining > 0 {
            match self.export_round(false) {
                None => return Err(OTelSdkError::InternalFailure("abandoned".into())),
                Some((0, _)) => break,
                Some((n, r)) => {
                    remaining = remaining.saturating_sub(n);
                    if r.is_err() {
                        result = r;
                    }
                }
            }
        }
        result
    }

    /// Exports up to `lanes` chunks at once (only full ones beyond the first if `full_only`),
    /// each on its own thread beyond the first; `None` once shutdown gave up on this queue.
    /// Returns the items taken and the first error.
    fn export_round(&mut self, full_only: bool) -> Option<(usize, OTelSdkResult)> {
        let mut chunks = self
            .shared
            .take_chunks(self.max_batch, self.lanes, full_only)?;
        let n: usize = chunks.iter().map(Vec::len).sum();
        if n == 0 {
            return Some((0, Ok(())));
        }
        let first = chunks.remove(0);
        let exporter = read(&self.exporter);
        let (shared, exporter) = (&*self.shared, &*exporter);
        let results: Vec<Option<OTelSdkResult>> = std::thread::scope(|scope| {
            let others: Vec<_> = chunks
                .into_iter()
                .map(|chunk| {
                    scope.spawn(move || {
                        let _suppress = Context::enter_telemetry_suppressed_scope();
                        export_one(shared, exporter, chunk)
                    })
                })
                .collect();
            let mut results = vec![export_one(shared, exporter, first)];
            // `export_one` catches the exporter's panics: joining cannot fail.
            results.extend(others.into_iter().map(|h| h.join().unwrap_or(None)));
            results
        });
        let mut result = Ok(());
        for r in results {
            match r? {
                Err(e) if result.is_ok() => result = Err(e),
                _ => {}
            }
        }
        Some((n, result))
    }
}

/// Exports one chunk and accounts for it (a panic is a failed export); `None` once shutdown
/// gave up on this queue.
fn export_one<E: BatchExport>(
    shared: &Shared<E::Item>,
    exporter: &E,
    chunk: Vec<E::Item>,
) -> Option<OTelSdkResult> {
    let n = chunk.len();
    // The processors and the exporter each fail the batch if they panic; the worker thread
    // carries on. (A panicking processor stage has consumed the batch: it is counted as failed.)
    // The latency recorded is the export call's.
    let mut elapsed = Duration::ZERO;
    let errors_at = shared.stats.errors_recorded();
    let (result, processed) =
        match std::panic::catch_unwind(AssertUnwindSafe(|| exporter.process(chunk))) {
            Err(_) => (
                Err(OTelSdkError::InternalFailure(
                    "the processors before the exporter panicked".into(),
                )),
                Processed::default(),
            ),
            Ok((chunk, processed)) if chunk.is_empty() => (Ok(()), processed),
            Ok((chunk, processed)) => {
                debug_assert_eq!(chunk.len() as u64 + processed.dropped(), n as u64);
                if let Some(spooling) = &shared.spooling {
                    return spool_or_export(shared, spooling, exporter, chunk, n, processed);
                }
                let started = Instant::now();
                let exported = export_caught(exporter, chunk);
                elapsed = started.elapsed();
                (exported, processed)
            }
        };
    if let Err(e) = &result {
        shared.stats.record_failure(e, errors_at);
        log::warn!(
            "exporter `{}`: export of {n} {} failed: {e}",
            shared.stats.name(),
            shared.noun
        );
    }
    let outcome = if result.is_ok() {
        Outcome::Exported
    } else {
        Outcome::Failed
    };
    shared
        .resolve(n as u64, &processed, outcome, elapsed)
        .then_some(result)
}

/// Exports `batch`, a panic of the exporter being a failed export (the worker carries on).
fn export_caught<E: BatchExport>(exporter: &E, batch: Vec<E::Item>) -> OTelSdkResult {
    std::panic::catch_unwind(AssertUnwindSafe(|| exporter.export(batch))).unwrap_or_else(|_| {
        Err(OTelSdkError::InternalFailure(
            "the exporter panicked".into(),
        ))
    })
}

/// A processed chunk of an exporter with a spool: spooled while the exporter is down,
/// else exported, and spooled when that fails.
fn spool_or_export<E: BatchExport>(
    shared: &Shared<E::Item>,
    spooling: &Spooling,
    exporter: &E,
    chunk: Vec<E::Item>,
    n: usize,
    processed: Processed,
) -> Option<OTelSdkResult> {
    let items = chunk.len() as u64;
    if spooling.is_down() {
        let record = exporter.encode(&chunk);
        return shared
            .spool_resolved(
                spooling,
                (items, &record),
                n as u64,
                &processed,
                Duration::ZERO,
            )
            .map(|_| Ok(()));
    }
    let record = exporter.encode(&chunk);
    let errors_at = shared.stats.errors_recorded();
    let started = Instant::now();
    let result = spooling.exporting(|| export_caught(exporter, chunk));
    let elapsed = started.elapsed();
    spooling.exported(&result);
    match result {
        Ok(()) => shared
            .resolve(n as u64, &processed, Outcome::Exported, elapsed)
            .then_some(Ok(())),
        Err(e) => {
            shared.stats.record_failure(&e, errors_at);
            let spooled =
                shared.spool_resolved(spooling, (items, &record), n as u64, &processed, elapsed)?;
            Spooling::report_failed(&shared.stats, items, shared.noun, &e, spooled);
            Some(Ok(()))
        }
    }
}

/// With a spool: takes batches from a queue filling up while the worker is inside an export
/// (a hung collector, a long retry) into the spool, so that the queue does not overflow.
struct Spiller<E: BatchExport> {
    exporter: Arc<RwLock<E>>,
    shared: Arc<Shared<E::Item>>,
    max_batch: usize,
    /// Spills until the queue is this short.
    low_water: usize,
    delay: Duration,
}

impl<E: BatchExport> Spiller<E> {
    fn run(self, pressure: Receiver<()>) {
        let _suppress = Context::enter_telemetry_suppressed_scope();
        let spooling = self
            .shared
            .spooling
            .as_ref()
            .expect("a spiller has a spool");
        loop {
            // Woken by the queue passing half full: the worker is not keeping up (inside an
            // export, or starved of the CPU), so spill whatever it is doing; on the timer, only
            // beside an export.
            let pressed = match pressure.recv_timeout(self.delay) {
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
                _ if self.shared.stopping.load(Ordering::SeqCst) => return,
                Ok(()) => true,
                Err(_) => false,
            };
            while (pressed || spooling.is_exporting())
                && self.shared.items_rx.len() > self.low_water
            {
                let Some(mut chunks) = self.shared.take_chunks(self.max_batch, 1, false) else {
                    return;
                };
                let chunk = chunks.pop().unwrap_or_default();
                let n = chunk.len();
                if n == 0 {
                    break;
                }
                let exporter = read(&self.exporter);
                let processed = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    let (chunk, processed) = exporter.process(chunk);
                    let record = (!chunk.is_empty()).then(|| exporter.encode(&chunk));
                    (chunk.len() as u64, record, processed)
                }));
                // Spooled and resolved at once: a shutdown giving up on the queue meanwhile
                // counts the chunk, and then it is not spooled too.
                let mut state = self.shared.lock();
                if state.abandoned {
                    return;
                }
                match processed {
                    Ok((items, record, processed)) => {
                        self.shared.stats.record_processed(&processed);
                        if let Some(record) = record {
                            spooling.append(&self.shared.stats, items, &record);
                        }
                    }
                    Err(_) => {
                        let failed = n as u64;
                        self.shared
                            .stats
                            .record_batch(failed, false, Duration::ZERO);
                    }
                }
                state.items -= n as u64;
            }
        }
    }
}

fn read<E>(lock: &RwLock<E>) -> std::sync::RwLockReadGuard<'_, E> {
    lock.read().unwrap_or_else(|p| p.into_inner())
}

fn write<E>(lock: &RwLock<E>) -> std::sync::RwLockWriteGuard<'_, E> {
    lock.write().unwrap_or_else(|p| p.into_inner())
}

/// The worker thread's name prefix: the SDKs' abbreviation of the signal's batch processor.
fn thread_prefix(signal: Signal) -> &'static str {
    match signal {
        Signal::Traces => "bsp",
        Signal::Logs => "blrp",
        Signal::Metrics => "metrics",
    }
}
