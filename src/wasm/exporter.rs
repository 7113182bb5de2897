//! [`WasmSpanExporter`]: a component behind the batch processor, as one or more lanes.
//!
//! Each lane holds one instance (the `instance` module) and its fault history (the `backoff`
//! module). An export takes a free lane that is not backing off; after a fault (trap, deadline,
//! lost worker) the lane's instance is discarded and the next batch gets a fresh one from the
//! factory. Repeated faults back off, counting spans as dropped rather than queueing them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

use super::backoff::Backoff;
use super::instance::{Fault, InstanceFactory, Job, Outcome, StartError, Worker};
use crate::encoding::encoding_name;
use crate::error::FaultKind;

/// One instance slot of the exporter.
struct Lane {
    /// This lane's number, for `{lens.instance}` in setting values.
    instance: usize,
    worker: Option<Worker>,
    resource: Resource,
    started_once: bool,
    backoff: Backoff,
    shut_down: bool,
}

/// A span exporter running a sandboxed WebAssembly component: one instance per lane, as
/// many lanes as the batch processor's `max_concurrent_exports`. Each lane has its own
/// instance, worker thread, fault count and backoff; an export takes a free lane.
pub struct WasmSpanExporter {
    factory: Arc<InstanceFactory>,
    lanes: Box<[Mutex<Lane>]>,
    /// Where the next export starts looking for a free lane.
    next: AtomicUsize,
}

impl std::fmt::Debug for WasmSpanExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmSpanExporter")
            .field("name", &self.factory.name)
            .finish()
    }
}

fn lock(lane: &Mutex<Lane>) -> MutexGuard<'_, Lane> {
    lane.lock().unwrap_or_else(|p| p.into_inner())
}

impl WasmSpanExporter {
    /// An exporter with `lanes` instances (at least one), none started yet.
    pub(crate) fn new(factory: InstanceFactory, resource: Resource, lanes: usize) -> Self {
        let lane = |instance| {
            Mutex::new(Lane {
                instance,
                worker: None,
                resource: resource.clone(),
                started_once: false,
                backoff: Backoff::default(),
                shut_down: false,
            })
        };
        Self {
            factory: Arc::new(factory),
            lanes: (0..lanes.max(1)).map(lane).collect(),
            next: AtomicUsize::new(0),
        }
    }

    /// The batch encoding the guest asked for (`typed`, `otlp-protobuf` or `otlp-json`), once
    /// started.
    pub fn encoding(&self) -> Option<&'static str> {
        let e = *self
            .factory
            .encoding
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        e.map(encoding_name)
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
                        },
                        StartError::Fault(f) => f,
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
        let Fault { kind, detail } = fault;
        log::warn!("wasm exporter `{}`: {kind}: {detail}", self.factory.name);
        let error = OTelSdkError::InternalFailure(format!(
            "wasm exporter `{}`: {kind}: {detail}",
            self.factory.name
        ));
        self.factory.stats.record_trap(kind);
        error
    }

    /// Runs one job on the lane's instance, bounded by the call deadline.
    fn call(&self, lane: &mut Lane, job: Job) -> OTelSdkResult {
        if let Some(left) = lane.backoff.remaining(Instant::now()) {
            return Err(OTelSdkError::InternalFailure(format!(
                "wasm exporter `{}`: backing off for {left:?} after {} consecutive faults",
                self.factory.name,
                lane.backoff.consecutive()
            )));
        }
        let outcome = match self.ensure_worker(lane) {
            Ok(worker) => worker.call(job),
            Err(fault) => Outcome::Fault(fault),
        };
        match outcome {
            Outcome::Ok => Ok(()),
            Outcome::GuestError(msg) => {
                self.factory.stats.record_guest_error();
                Err(OTelSdkError::InternalFailure(format!(
                    "wasm exporter `{}`: {msg}",
                    self.factory.name
                )))
            }
            Outcome::Fault(fault) => Err(self.fault(lane, fault)),
        }
    }
}

impl SpanExporter for WasmSpanExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let mut lane = self.acquire();
        if lane.shut_down {
            return Err(OTelSdkError::AlreadyShutdown);
        }
        self.call(&mut lane, Job::Export(batch))
    }

    fn force_flush(&self) -> OTelSdkResult {
        let mut result = Ok(());
        for lane in &self.lanes {
            let mut lane = lock(lane);
            if lane.shut_down || lane.worker.is_none() {
                continue;
            }
            result = result.and(self.call(&mut lane, Job::Flush));
        }
        result
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        let mut result = Ok(());
        for lane in &self.lanes {
            let mut lane = lock(lane);
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

    fn set_resource(&mut self, resource: &Resource) {
        for lane in self.lanes.iter_mut() {
            let lane = lane.get_mut().unwrap_or_else(|p| p.into_inner());
            if lane.resource != *resource {
                lane.resource = resource.clone();
                lane.worker = None; // the next batch initialises a fresh instance with it
                lane.started_once = false; // not a restart after a fault
            }
        }
    }
}
