//! Stage 5, lanes: [`Lanes`], the instances of one entry serving one signal, behind the
//! signal's exporter or processor, started from the installation's inputs (`start`).
//!
//! Each lane holds one instance (the `instance` module) and its fault history (the `backoff`
//! module). An export takes a free lane that is not backing off; after a fault (trap, deadline,
//! lost worker) the lane's instance is discarded and the next batch gets a fresh one from the
//! factory. Repeated faults back off, counting items as dropped rather than queueing them. A
//! batch the guest calls `retryable` is sent again on the same lane on the schedule of the
//! `retry` module, within the export deadline.
//!
//! May call: the sandbox stage (and through it the earlier ones); never reload or the roles.

pub(crate) mod backoff;
pub(crate) mod start;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};

use crate::batch::retry::RetrySchedule;
use crate::bindings::edit_types::ItemEdit;
use crate::encoding::encoding_name;
use crate::error::FaultKind;
use crate::wasm::lanes::backoff::Backoff;
use crate::wasm::sandbox::instance::{
    Fault, InstanceFactory, Job, Outcome, Payload, StartError, Worker,
};
use crate::wasm::sandbox::interface::Preferences;

/// One instance slot of the exporter.
struct Lane {
    /// This lane's number, for `{lens.instance}` in setting values.
    instance: usize,
    worker: Option<Worker>,
    resource: Resource,
    started_once: bool,
    backoff: Backoff,
    shut_down: bool,
    /// What the server said in the last call's last HTTP exchange, when it went wrong.
    answer: Option<String>,
}

/// The instances of a component serving one signal: one per lane, as many lanes as the
/// processor's `max_concurrent_exports`. Each lane has its own instance, worker thread, fault
/// count and backoff; an export takes a free lane.
pub(crate) struct Lanes {
    factory: Arc<InstanceFactory>,
    lanes: Box<[Mutex<Lane>]>,
    /// Where the next export starts looking for a free lane.
    next: AtomicUsize,
    /// The deadline of one export, retries included.
    export_timeout: Duration,
    /// Set when the shutdown starts: an export waiting to retry gives up at once.
    closing: AtomicBool,
    /// Set when a reload replaced these instances: a batch not yet started on one goes to
    /// the new ones (see `reload`).
    retired: AtomicBool,
}

/// How often a wait (to retry, or for a lane) looks again at what it waits for.
const POLL: Duration = Duration::from_millis(5);

/// A lane and the batch to run on it; the lanes' shutdown; or the batch back (see `Lanes::live`).
type Live<'a, F> = Result<Result<(MutexGuard<'a, Lane>, F), OTelSdkError>, F>;

/// `1 attempt`, `4 attempts`.
fn attempts(n: u32) -> String {
    format!("{n} attempt{}", if n == 1 { "" } else { "s" })
}

fn lock(lane: &Mutex<Lane>) -> MutexGuard<'_, Lane> {
    lane.lock().unwrap_or_else(|p| p.into_inner())
}

impl Lanes {
    /// `lanes` instances (at least one), none started yet; an export and its retries end
    /// within `export_timeout`.
    pub(crate) fn new(
        factory: InstanceFactory,
        resource: Resource,
        lanes: usize,
        export_timeout: Duration,
    ) -> Self {
        let lane = |instance| {
            Mutex::new(Lane {
                instance,
                worker: None,
                resource: resource.clone(),
                started_once: false,
                backoff: Backoff::default(),
                shut_down: false,
                answer: None,
            })
        };
        Self {
            factory: Arc::new(factory),
            lanes: (0..lanes.max(1)).map(lane).collect(),
            next: AtomicUsize::new(0),
            export_timeout,
            closing: AtomicBool::new(false),
            retired: AtomicBool::new(false),
        }
    }

    /// The lane, once free, or `None` when `deadline` passes first (`None`: wait as long as it
    /// takes).
    fn lock_until<'a>(
        &self,
        lane: &'a Mutex<Lane>,
        deadline: Option<Instant>,
    ) -> Option<MutexGuard<'a, Lane>> {
        let Some(deadline) = deadline else {
            return Some(lock(lane));
        };
        loop {
            match lane.try_lock() {
                Ok(l) => return Some(l),
                Err(TryLockError::Poisoned(p)) => return Some(p.into_inner()),
                Err(TryLockError::WouldBlock) if Instant::now() >= deadline => return None,
                Err(TryLockError::WouldBlock) => std::thread::sleep(POLL),
            }
        }
    }

    /// Waits `wait` before a retry; `false` when the shutdown started meanwhile.
    fn wait_to_retry(&self, wait: Duration) -> bool {
        let until = Instant::now() + wait;
        while !self.closing.load(Ordering::Acquire) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            std::thread::sleep(left.min(POLL * 10));
        }
        false
    }

    /// The exporter's (or processor's) name.
    pub(crate) fn name(&self) -> &str {
        &self.factory.name
    }

    /// What messages call it, e.g. ``wasm exporter `vendor` ``, ``wasm processor `redact` ``.
    fn label(&self) -> String {
        format!(
            "wasm {} `{}`",
            self.factory.interface.role, self.factory.name
        )
    }

    /// The SHA-256 of the component these instances run, in hex.
    pub(crate) fn sha256(&self) -> &str {
        &self.factory.sha256
    }

    /// The resource the instances are (or will be) initialised with.
    pub(crate) fn resource(&self) -> Resource {
        lock(&self.lanes[0]).resource.clone()
    }

    /// What the last instance started asked for in `init`.
    pub(crate) fn preferences(&self) -> Option<Preferences> {
        *self
            .factory
            .preferences
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The batch encoding the guest asked for (`typed`, `otlp-protobuf` or `otlp-json`), once
    /// started.
    pub(crate) fn encoding(&self) -> Option<&'static str> {
        self.preferences().map(|p| encoding_name(p.encoding))
    }

    /// A free lane that is not backing off after faults, if there is one (looking from the
    /// next in turn); else a free lane backing off (the export fails fast); else waits for the
    /// next in turn.
    fn acquire(&self) -> MutexGuard<'_, Lane> {
        let n = self.lanes.len();
        let first = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let now = Instant::now();
        let mut backing_off = None;
        for i in 0..n {
            let lane = match self.lanes[(first + i) % n].try_lock() {
                Ok(lane) => lane,
                Err(TryLockError::Poisoned(p)) => p.into_inner(),
                Err(TryLockError::WouldBlock) => continue,
            };
            if lane.backoff.remaining(now).is_none() {
                return lane;
            }
            backing_off.get_or_insert(lane);
        }
        backing_off.unwrap_or_else(|| lock(&self.lanes[first]))
    }

    /// Starts every instance now (at setup: init errors surface before any span flows).
    pub(crate) fn start(&self) -> Result<(), StartError> {
        for lane in &self.lanes {
            let mut lane = lock(lane);
            let worker = self.factory.start(&lane.resource, lane.instance)?;
            lane.worker = Some(worker);
            lane.started_once = true;
        }
        Ok(())
    }

    /// The lane's worker, started if it has none (a restart after a fault counts as one).
    fn ensure_worker<'l>(&self, lane: &'l mut Lane) -> Result<&'l Worker, Fault> {
        if lane.worker.is_none() {
            let worker =
                self.factory
                    .start(&lane.resource, lane.instance)
                    .map_err(|e| match e {
                        StartError::Refused(msg) => Fault {
                            kind: FaultKind::InitFailed,
                            detail: format!("init: {msg}"),
                            backtrace: None,
                        },
                        StartError::Fault(f) => f,
                        StartError::Mismatch(detail) => Fault {
                            kind: FaultKind::HostError,
                            detail,
                            backtrace: None,
                        },
                    })?;
            if lane.started_once {
                self.factory.stats.record_restart();
            }
            lane.started_once = true;
            lane.worker = Some(worker);
        }
        Ok(lane.worker.as_ref().expect("a worker was just started"))
    }

    /// Records a fault: the instance is gone, and repeated faults back off.
    fn fault(&self, lane: &mut Lane, fault: Fault) -> OTelSdkError {
        lane.worker = None;
        lane.backoff.fault(Instant::now());
        let Fault {
            kind,
            detail,
            backtrace,
        } = fault;
        log::warn!("{}: {kind}: {detail}", self.label());
        self.factory
            .stats
            .record_error(&format!("{kind}: {detail}"));
        if let Some(backtrace) = backtrace {
            log::debug!("{}: {kind}: {backtrace}", self.label());
        }
        let error = OTelSdkError::InternalFailure(format!("{}: {kind}: {detail}", self.label()));
        self.factory.stats.record_trap(kind);
        error
    }

    /// An error while the lane backs off after faults: its batches fail fast.
    fn check_backoff(&self, lane: &Lane) -> OTelSdkResult {
        match lane.backoff.remaining(Instant::now()) {
            Some(left) => Err(OTelSdkError::InternalFailure(format!(
                "{}: backing off for {left:?} after {} consecutive faults",
                self.label(),
                lane.backoff.consecutive()
            ))),
            None => Ok(()),
        }
    }

    /// Records the exporter's last error: `what` happened, and what the server said in the
    /// call's last HTTP exchange when it went wrong, else the guest's `message`.
    fn record_error(&self, lane: &mut Lane, what: &str, message: &str) {
        let said = lane.answer.take();
        let said = said.as_deref().unwrap_or(message);
        self.factory.stats.record_error(&format!("{what}: {said}"));
    }

    /// Runs one job on the lane's instance, bounded by the call deadline: a guest error or a
    /// fault is an `Err`; any other outcome is the caller's to handle.
    fn call_outcome(&self, lane: &mut Lane, job: Job) -> Result<Outcome, OTelSdkError> {
        self.check_backoff(lane)?;
        let call = job.call_name();
        let (outcome, answer) = match self.ensure_worker(lane) {
            Ok(worker) => {
                let outcome = worker.call(job);
                (outcome, worker.http_answer())
            }
            Err(fault) => (Outcome::Fault(fault), None),
        };
        lane.answer = answer;
        match outcome {
            Outcome::GuestError(msg) => {
                self.factory.stats.record_guest_error();
                let failed = match call {
                    "export" => "rejected".to_string(),
                    other => format!("`{other}` failed"),
                };
                self.record_error(lane, &failed, &msg);
                Err(OTelSdkError::InternalFailure(format!(
                    "{}: {msg}",
                    self.label()
                )))
            }
            Outcome::Fault(fault) => Err(self.fault(lane, fault)),
            other => Ok(other),
        }
    }

    /// Runs a job whose only success is `ok` (flush, shutdown).
    fn call(&self, lane: &mut Lane, job: Job) -> OTelSdkResult {
        self.call_outcome(lane, job).map(|_| ())
    }

    /// Exports the batch of `items` items that `make` encodes for the lane's instance (from
    /// what it asked for in `init`, and the resource), sending it again while the guest calls
    /// it retryable and the export deadline allows. `Err(make)`, the batch untouched, when a
    /// reload retired these instances before it started on one.
    pub(crate) fn export<F>(&self, items: u64, make: F) -> Result<OTelSdkResult, F>
    where
        F: FnOnce(&Preferences, &Resource) -> Payload,
    {
        Ok(match self.live(make)? {
            Ok((mut lane, make)) => self.export_on(&mut lane, items, make),
            Err(e) => Err(e),
        })
    }

    /// A lane to run the batch `make` encodes on: `Err(make)` when a reload retired these
    /// instances (the batch goes to the new ones), `Ok(Err(..))` when they are shut down.
    fn live<F>(&self, make: F) -> Live<'_, F> {
        let lane = self.acquire();
        if lane.shut_down {
            if self.retired.load(Ordering::Acquire) {
                return Err(make);
            }
            return Ok(Err(OTelSdkError::AlreadyShutdown));
        }
        Ok(Ok((lane, make)))
    }

    /// Runs a processor's `process` on the batch `make` encodes for the lane's instance: the
    /// guest's edits, not yet checked; `Err` on a fault, a guest error, or while the lane
    /// backs off after faults. `Err(make)`, the batch untouched, when a reload retired these
    /// instances before it started on one (as [`export`](Self::export)).
    pub(crate) fn process<F>(&self, make: F) -> Result<Result<Vec<ItemEdit>, OTelSdkError>, F>
    where
        F: FnOnce(&Preferences, &Resource) -> Payload,
    {
        Ok(match self.live(make)? {
            Ok((mut lane, make)) => self.process_on(&mut lane, make),
            Err(e) => Err(e),
        })
    }

    fn process_on<F>(&self, lane: &mut Lane, make: F) -> Result<Vec<ItemEdit>, OTelSdkError>
    where
        F: FnOnce(&Preferences, &Resource) -> Payload,
    {
        self.check_backoff(lane)?;
        let preferences = match self.ensure_worker(lane) {
            Ok(worker) => worker.preferences,
            Err(fault) => return Err(self.fault(lane, fault)),
        };
        let payload = make(&preferences, &lane.resource);
        match self.call_outcome(lane, Job::Process(payload))? {
            Outcome::Edits(edits) => Ok(edits),
            other => Err(OTelSdkError::InternalFailure(format!(
                "{}: unexpected answer {other:?}",
                self.label()
            ))),
        }
    }

    fn export_on(
        &self,
        lane: &mut Lane,
        items: u64,
        make: impl FnOnce(&Preferences, &Resource) -> Payload,
    ) -> OTelSdkResult {
        self.check_backoff(lane)?;
        let preferences = match self.ensure_worker(lane) {
            Ok(worker) => worker.preferences,
            Err(fault) => return Err(self.fault(lane, fault)),
        };
        let mut payload = make(&preferences, &lane.resource);
        let mut schedule = RetrySchedule::new(Instant::now(), self.export_timeout);
        loop {
            let (message, delay, back) = match self.call_outcome(lane, Job::Export(payload)) {
                Err(e) => return Err(e),
                Ok(Outcome::Retryable {
                    message,
                    delay,
                    payload,
                }) => (message, delay, payload),
                Ok(Outcome::Partial { rejected, message }) => {
                    // A guest claiming more than the batch cannot unbalance the counts.
                    let rejected = rejected.min(items);
                    self.factory.stats.record_rejected(rejected);
                    self.record_error(lane, &format!("{rejected} of {items} rejected"), &message);
                    log::warn!(
                        "{}: {rejected} of the batch rejected: {message}",
                        self.label()
                    );
                    return Ok(());
                }
                Ok(_) => return Ok(()),
            };
            match schedule.next(Instant::now(), delay, rand::random()) {
                Some(wait) => {
                    self.factory.stats.record_retry();
                    // Said now, not only when given up: a shutdown may end the wait first.
                    let tried = attempts(schedule.attempts() - 1);
                    self.record_error(
                        lane,
                        &format!("retryable, retrying after {tried}"),
                        &message,
                    );
                    log::debug!(
                        "{}: retryable ({message}); attempt {} in {wait:?}",
                        self.label(),
                        schedule.attempts()
                    );
                    if !self.wait_to_retry(wait) {
                        self.factory.stats.record_retries_exhausted();
                        self.record_error(
                            lane,
                            &format!("retryable, given up at shutdown after {tried}"),
                            &message,
                        );
                        return Err(OTelSdkError::InternalFailure(format!(
                            "{}: export given up at shutdown after {tried}: {message}",
                            self.label(),
                        )));
                    }
                    payload = back;
                }
                None => {
                    self.factory.stats.record_retries_exhausted();
                    let tried = attempts(schedule.attempts());
                    self.record_error(
                        lane,
                        &format!("retryable, given up after {tried}"),
                        &message,
                    );
                    return Err(OTelSdkError::InternalFailure(format!(
                        "{}: export failed after {tried}: {message}",
                        self.label(),
                    )));
                }
            }
        }
    }

    /// Flushes every started instance, within `timeout` when given (an export in progress,
    /// retries included, holds its lane until it ends).
    pub(crate) fn force_flush(&self, timeout: Option<Duration>) -> OTelSdkResult {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut result = Ok(());
        for lane in &self.lanes {
            let Some(mut lane) = self.lock_until(lane, deadline) else {
                return Err(OTelSdkError::Timeout(timeout.unwrap_or_default()));
            };
            if lane.shut_down || lane.worker.is_none() {
                continue;
            }
            result = result.and(self.call(&mut lane, Job::Flush));
        }
        result
    }

    /// Shuts every started instance down (even one backing off) and ends its worker, within
    /// `timeout` when given: an export waiting to retry gives up at once (its batch counted as
    /// failed); one in a guest call ends within the call deadline.
    pub(crate) fn shutdown(&self, timeout: Option<Duration>) -> OTelSdkResult {
        self.closing.store(true, Ordering::Release);
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut result = Ok(());
        for lane in &self.lanes {
            let Some(mut lane) = self.lock_until(lane, deadline) else {
                return Err(OTelSdkError::Timeout(timeout.unwrap_or_default()));
            };
            if std::mem::replace(&mut lane.shut_down, true) {
                return Err(OTelSdkError::AlreadyShutdown);
            }
            if lane.worker.is_none() {
                continue;
            }
            lane.backoff.lift();
            result = result.and(self.call(&mut lane, Job::Shutdown));
            lane.worker = None;
        }
        result
    }

    /// After a reload swapped in new instances: a batch not yet started here goes to them
    /// from now on; one in progress (retries included) ends here, then every started instance
    /// gets its `force-flush` and `shutdown` (each within the call deadline). Waits at most
    /// `timeout` for a lane in use; a lane still exporting then is left to end its batch, and
    /// its instance ends with it, without the two calls.
    pub(crate) fn retire(&self, timeout: Duration) -> OTelSdkResult {
        self.retired.store(true, Ordering::Release);
        let deadline = Instant::now() + timeout;
        let mut result = Ok(());
        for lane in &self.lanes {
            let Some(mut lane) = self.lock_until(lane, Some(deadline)) else {
                log::warn!(
                    "{}: an export of the replaced component was still running \
                     after {timeout:?}; its instance ends with it, without force-flush and \
                     shutdown",
                    self.label()
                );
                result = Err(OTelSdkError::Timeout(timeout));
                continue;
            };
            if std::mem::replace(&mut lane.shut_down, true) || lane.worker.is_none() {
                continue;
            }
            lane.backoff.lift();
            let flushed = self.call(&mut lane, Job::Flush);
            let shut = self.call(&mut lane, Job::Shutdown);
            result = result.and(flushed).and(shut);
            lane.worker = None;
        }
        result
    }

    /// Hands the instances `resource`: a lane whose resource changes starts a fresh instance
    /// with it at its next batch.
    pub(crate) fn set_resource(&self, resource: &Resource) {
        for lane in self.lanes.iter() {
            let mut lane = lock(lane);
            if lane.resource != *resource {
                lane.resource = resource.clone();
                lane.worker = None; // the next batch initialises a fresh instance with it
                lane.started_once = false; // not a restart after a fault
            }
        }
    }
}
