//! [`WasmSpanExporter`]: a component running behind the batch processor, on its own thread.
//!
//! Each instance lives on a worker thread that owns its `Store`. The batch processor's thread
//! hands it a batch and waits at most the call deadline (plus a small grace): the epoch
//! deadline stops a guest spinning in wasm, and the wait bound covers a guest blocked inside a
//! host call (which epochs cannot interrupt) — that worker is abandoned and traps as soon as it
//! re-enters wasm. After a fault (trap, deadline, lost worker) the instance is discarded and
//! the next batch gets a fresh one from the `InstancePre`; repeated faults back off
//! exponentially (1 s → 30 s, reset after 10 s without one), counting spans as dropped rather
//! than queueing them forever.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use wasmtime::component::{Func, Instance};
use wasmtime::{Engine, Store};

use super::bindings::exports::lens::exporter::span_exporter::Guest;
use super::bindings::types::{Batch, Encoding};
use super::bindings::{Exporter, ExporterPre};
use super::encode;
use super::engine::ticks;
use super::load::EXPORT_NAME;
use super::lower::{self, TypedBatchRef};
use super::otlp_bytes::{self, EncodedResource};
use super::otlp_json::{self, JsonResource};
use super::sandbox::{Grants, HostState, MemoryLimitExceeded};
use crate::trace::ExporterStats;

/// Longest guest error message kept (the rest is cut, with a note).
pub const MAX_GUEST_ERROR: usize = 1024;
/// Faults closer together than this count as consecutive (and back off).
pub const HEALTHY_PERIOD: Duration = Duration::from_secs(10);
/// Longest backoff after repeated faults.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// In a setting value, replaced by the instance's number (0 up to `max_concurrent_exports`).
pub const INSTANCE_PLACEHOLDER: &str = "{lens.instance}";
/// Extra wait beyond the call deadline before a worker counts as stuck in a host call.
const GRACE: Duration = Duration::from_millis(250);

/// Everything a worker thread needs to run an instance.
pub(crate) struct Runtime {
    pub name: Arc<str>,
    pub engine: Engine,
    pub pre: ExporterPre<HostState>,
    pub grants: Grants,
    pub settings: Vec<(String, String)>,
    pub call_timeout: Duration,
    pub fuel: Option<u64>,
    pub stats: Arc<ExporterStats>,
    /// The encoding the last instance asked for in `init`.
    pub encoding: Mutex<Option<Encoding>>,
}

enum Job {
    Export(Vec<SpanData>, Sender<Outcome>),
    Flush(Sender<Outcome>),
    Shutdown(Sender<Outcome>),
}

/// How one guest call ended.
#[derive(Debug)]
enum Outcome {
    Ok,
    /// The guest returned `err`: a failed call, the instance stays.
    GuestError(String),
    /// A trap or host-side failure: the instance is gone. `(kind, detail)`.
    Fault(String, String),
}

struct Worker {
    jobs: Sender<Job>,
}

struct State {
    /// This lane's number, for `{lens.instance}` in setting values.
    instance: usize,
    worker: Option<Worker>,
    resource: Resource,
    started_once: bool,
    consecutive_faults: u32,
    last_fault: Option<Instant>,
    backoff_until: Option<Instant>,
    shut_down: bool,
}

/// A span exporter running a sandboxed WebAssembly component: one instance per lane, as
/// many lanes as the batch processor's `max_concurrent_exports`. Each lane has its own
/// instance, worker thread, fault count and backoff; an export takes a free lane.
pub struct WasmSpanExporter {
    rt: Arc<Runtime>,
    lanes: Box<[Mutex<State>]>,
    /// Where the next export starts looking for a free lane.
    next: AtomicUsize,
}

impl std::fmt::Debug for WasmSpanExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmSpanExporter")
            .field("name", &self.rt.name)
            .finish()
    }
}

fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let total = s.len();
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str(&format!("… [{} more bytes]", total - cut));
    }
    s
}

/// A short name for what stopped a guest.
pub fn fault_kind(e: &wasmtime::Error) -> String {
    if e.chain().any(|c| c.is::<MemoryLimitExceeded>()) {
        return "memory limit".into();
    }
    match e.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::Interrupt) => "deadline".into(),
        Some(wasmtime::Trap::OutOfFuel) => "fuel".into(),
        Some(wasmtime::Trap::UnreachableCodeReached) => "unreachable".into(),
        Some(wasmtime::Trap::StackOverflow) => "stack overflow".into(),
        Some(wasmtime::Trap::MemoryOutOfBounds) => "memory out of bounds".into(),
        Some(other) => other.to_string(),
        None => "host error".into(),
    }
}

/// How one instance's batches are encoded; the resource is rendered once per instance.
enum Encoder {
    Typed,
    OtlpProtobuf(EncodedResource),
    OtlpJson(JsonResource),
}

impl Encoder {
    fn new(encoding: Encoding, resource: &Resource) -> Self {
        match encoding {
            Encoding::Typed => Self::Typed,
            Encoding::OtlpProtobuf => Self::OtlpProtobuf(EncodedResource::new(resource)),
            Encoding::OtlpJson => Self::OtlpJson(JsonResource::new(resource)),
        }
    }
}

/// An instantiated guest: its store, bindings and the raw `export` function.
struct Live {
    store: Store<HostState>,
    bindings: Exporter,
    export: Func,
}

/// The guest's `export` function, for calls lowered from borrowed spans.
fn export_func(instance: &Instance, store: &mut Store<HostState>) -> wasmtime::Result<Func> {
    let interface = instance
        .get_export_index(&mut *store, None, EXPORT_NAME)
        .ok_or_else(|| wasmtime::format_err!("no `{EXPORT_NAME}` export"))?;
    let func = instance
        .get_export_index(&mut *store, Some(&interface), "export")
        .ok_or_else(|| wasmtime::format_err!("no `export` function in `{EXPORT_NAME}`"))?;
    instance
        .get_func(&mut *store, func)
        .ok_or_else(|| wasmtime::format_err!("`export` of `{EXPORT_NAME}` is not a function"))
}

impl Runtime {
    /// Arms the deadline (and fuel) for the next guest call.
    fn arm(&self, store: &mut Store<HostState>) -> wasmtime::Result<()> {
        store.set_epoch_deadline(ticks(self.call_timeout));
        if let Some(fuel) = self.fuel {
            store.set_fuel(fuel)?;
        }
        Ok(())
    }

    fn outcome(
        &self,
        store: &Store<HostState>,
        r: wasmtime::Result<Result<(), String>>,
    ) -> Outcome {
        self.stats.record_memory(store.data().limiter.peak as u64);
        match r {
            Ok(Ok(())) => Outcome::Ok,
            Ok(Err(msg)) => Outcome::GuestError(truncate(msg, MAX_GUEST_ERROR)),
            Err(e) => Outcome::Fault(fault_kind(&e), truncate(format!("{e:#}"), MAX_GUEST_ERROR)),
        }
    }

    /// The settings passed to instance number `instance`: `{lens.instance}` in a value
    /// becomes that number, so that concurrent instances can write separate files.
    fn settings(&self, instance: usize) -> Vec<(String, String)> {
        let n = instance.to_string();
        self.settings
            .iter()
            .map(|(k, v)| (k.clone(), v.replace(INSTANCE_PLACEHOLDER, &n)))
            .collect()
    }

    /// Instantiates and initialises a guest; on success the thread serves `jobs`.
    fn run_worker(
        self: Arc<Self>,
        resource: Resource,
        number: usize,
        ready: Sender<Outcome>,
        jobs: Receiver<Job>,
    ) {
        let _suppress = opentelemetry::Context::enter_telemetry_suppressed_scope();
        let started = (|| -> wasmtime::Result<(Live, Result<Encoding, String>)> {
            let mut store = Store::new(&self.engine, HostState::new(&self.grants)?);
            store.limiter(|s| &mut s.limiter);
            store.epoch_deadline_trap();
            self.arm(&mut store)?;
            let instance = self.pre.instance_pre().instantiate(&mut store)?;
            let bindings = Exporter::new(&mut store, &instance)?;
            let export = export_func(&instance, &mut store)?;
            self.arm(&mut store)?;
            let init = bindings.lens_exporter_span_exporter().call_init(
                &mut store,
                &self.settings(number),
                &encode::resource(&resource),
            )?;
            Ok((
                Live {
                    store,
                    bindings,
                    export,
                },
                init,
            ))
        })();
        let (mut store, bindings, export, encoding) = match started {
            Ok((live, Ok(enc))) => (live.store, live.bindings, live.export, enc),
            Ok((Live { store, .. }, Err(msg))) => {
                let _ = ready.send(self.outcome(&store, Ok(Err(format!("init: {msg}")))));
                return;
            }
            Err(e) => {
                let _ = ready.send(Outcome::Fault(
                    fault_kind(&e),
                    truncate(format!("{e:#}"), MAX_GUEST_ERROR),
                ));
                return;
            }
        };
        *self.encoding.lock().unwrap_or_else(|p| p.into_inner()) = Some(encoding);
        if ready.send(Outcome::Ok).is_err() {
            return; // the host gave up waiting
        }
        let guest: &Guest = bindings.lens_exporter_span_exporter();
        let encoder = Encoder::new(encoding, &resource);
        for job in jobs {
            let (result, reply) = match job {
                Job::Export(batch, reply) => {
                    let r = self.arm(&mut store).and_then(|()| match &encoder {
                        Encoder::Typed => match lower::typed_batch(&batch) {
                            Some(typed) => export
                                .typed::<(&TypedBatchRef<'_>,), (Result<(), String>,)>(&store)
                                .and_then(|f| f.call(&mut store, (&typed,)))
                                .map(|(r,)| r),
                            // A value kind newer than this host: the owned encoding renders
                            // it as a string.
                            None => guest.call_export(
                                &mut store,
                                &Batch::Typed(encode::typed_batch(&batch)),
                            ),
                        },
                        Encoder::OtlpProtobuf(resource) => guest.call_export(
                            &mut store,
                            &Batch::OtlpProtobuf(otlp_bytes::encode(&batch, resource)),
                        ),
                        Encoder::OtlpJson(resource) => guest.call_export(
                            &mut store,
                            &Batch::OtlpJson(otlp_json::encode(&batch, resource)),
                        ),
                    });
                    (r, reply)
                }
                Job::Flush(reply) => {
                    let r = self
                        .arm(&mut store)
                        .and_then(|()| guest.call_force_flush(&mut store));
                    (r, reply)
                }
                Job::Shutdown(reply) => {
                    let r = self
                        .arm(&mut store)
                        .and_then(|()| guest.call_shutdown(&mut store));
                    (r, reply)
                }
            };
            let outcome = self.outcome(&store, result);
            let fault = matches!(outcome, Outcome::Fault(..));
            let _ = reply.send(outcome);
            if fault {
                return; // a trapped instance can never be entered again
            }
            // After `shutdown` the host drops its sender, which ends this loop.
        }
    }
}

impl WasmSpanExporter {
    /// An exporter with `lanes` instances (at least one), none started yet.
    pub(crate) fn new(rt: Runtime, resource: Resource, lanes: usize) -> Self {
        let lane = |instance| {
            Mutex::new(State {
                instance,
                worker: None,
                resource: resource.clone(),
                started_once: false,
                consecutive_faults: 0,
                last_fault: None,
                backoff_until: None,
                shut_down: false,
            })
        };
        Self {
            rt: Arc::new(rt),
            lanes: (0..lanes.max(1)).map(lane).collect(),
            next: AtomicUsize::new(0),
        }
    }

    /// The batch encoding the guest asked for (`typed`, `otlp-protobuf` or `otlp-json`), once
    /// started.
    pub fn encoding(&self) -> Option<&'static str> {
        let e = *self.rt.encoding.lock().unwrap_or_else(|p| p.into_inner());
        e.map(|e| match e {
            Encoding::Typed => "typed",
            Encoding::OtlpProtobuf => "otlp-protobuf",
            Encoding::OtlpJson => "otlp-json",
        })
    }

    fn lock(lane: &Mutex<State>) -> MutexGuard<'_, State> {
        lane.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A free lane that is not backing off after faults, if there is one (looking from the
    /// next in turn); else a free lane backing off (the export fails fast); else waits for the
    /// next in turn.
    fn acquire(&self) -> MutexGuard<'_, State> {
        let n = self.lanes.len();
        let first = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let now = Instant::now();
        let mut backing_off = None;
        for i in 0..n {
            let st = match self.lanes[(first + i) % n].try_lock() {
                Ok(st) => st,
                Err(TryLockError::Poisoned(p)) => p.into_inner(),
                Err(TryLockError::WouldBlock) => continue,
            };
            if st.backoff_until.is_none_or(|until| until <= now) {
                return st;
            }
            backing_off.get_or_insert(st);
        }
        backing_off.unwrap_or_else(|| Self::lock(&self.lanes[first]))
    }

    /// Starts every instance now (at setup: init errors surface before any span flows).
    pub(crate) fn start(&self) -> Result<(), String> {
        for lane in &self.lanes {
            let mut st = Self::lock(lane);
            self.ensure_worker(&mut st)
                .map_err(|(kind, detail)| format!("{kind}: {detail}"))?;
        }
        Ok(())
    }

    fn ensure_worker(&self, st: &mut State) -> Result<(), (String, String)> {
        if st.worker.is_some() {
            return Ok(());
        }
        let (ready_tx, ready_rx) = bounded(1);
        let (jobs_tx, jobs_rx) = unbounded();
        let rt = self.rt.clone();
        let resource = st.resource.clone();
        let instance = st.instance;
        std::thread::Builder::new()
            .name(format!("lens-wasm-{}", self.rt.name))
            .spawn(move || rt.run_worker(resource, instance, ready_tx, jobs_rx))
            .map_err(|e| {
                (
                    "host error".to_string(),
                    format!("cannot start a worker thread: {e}"),
                )
            })?;
        match ready_rx.recv_timeout(self.rt.call_timeout + GRACE) {
            Ok(Outcome::Ok) => {
                if st.started_once {
                    self.rt.stats.record_restart();
                }
                st.started_once = true;
                st.worker = Some(Worker { jobs: jobs_tx });
                Ok(())
            }
            Ok(Outcome::GuestError(msg)) => Err(("init failed".into(), msg)),
            Ok(Outcome::Fault(kind, detail)) => Err((kind, detail)),
            Err(_) => Err((
                "deadline".into(),
                format!("instantiation took longer than {:?}", self.rt.call_timeout),
            )),
        }
    }

    /// Records a fault: the instance is gone, and repeated faults back off.
    fn fault(&self, st: &mut State, kind: &str, detail: &str) -> OTelSdkError {
        st.worker = None;
        let now = Instant::now();
        if st
            .last_fault
            .is_none_or(|t| now.duration_since(t) > HEALTHY_PERIOD)
        {
            st.consecutive_faults = 0;
        }
        st.consecutive_faults += 1;
        st.last_fault = Some(now);
        if st.consecutive_faults >= 2 {
            let exp = (st.consecutive_faults - 2).min(5);
            st.backoff_until =
                Some(now + (Duration::from_secs(1) * (1u32 << exp)).min(MAX_BACKOFF));
        }
        self.rt.stats.record_trap(kind);
        log::warn!("wasm exporter `{}`: {kind}: {detail}", self.rt.name);
        OTelSdkError::InternalFailure(format!(
            "wasm exporter `{}`: {kind}: {detail}",
            self.rt.name
        ))
    }

    /// Runs one job on the instance, bounded by the call deadline.
    fn call(&self, st: &mut State, make: impl FnOnce(Sender<Outcome>) -> Job) -> OTelSdkResult {
        if let Some(until) = st.backoff_until {
            let now = Instant::now();
            if now < until {
                return Err(OTelSdkError::InternalFailure(format!(
                    "wasm exporter `{}`: backing off for {:?} after {} consecutive faults",
                    self.rt.name,
                    until - now,
                    st.consecutive_faults
                )));
            }
            st.backoff_until = None;
        }
        if let Err((kind, detail)) = self.ensure_worker(st) {
            return Err(self.fault(st, &kind, &detail));
        }
        let (tx, rx) = bounded(1);
        let sent = st
            .worker
            .as_ref()
            .map(|w| w.jobs.send(make(tx)).is_ok())
            .unwrap_or(false);
        if !sent {
            return Err(self.fault(st, "host error", "the worker thread is gone"));
        }
        match rx.recv_timeout(self.rt.call_timeout + GRACE) {
            Ok(Outcome::Ok) => Ok(()),
            Ok(Outcome::GuestError(msg)) => {
                self.rt.stats.record_guest_error();
                Err(OTelSdkError::InternalFailure(format!(
                    "wasm exporter `{}`: {msg}",
                    self.rt.name
                )))
            }
            Ok(Outcome::Fault(kind, detail)) => Err(self.fault(st, &kind, &detail)),
            Err(_) => Err(self.fault(
                st,
                "deadline",
                &format!(
                    "no answer within {:?} (blocked in a host call)",
                    self.rt.call_timeout
                ),
            )),
        }
    }
}

impl WasmSpanExporter {
    /// Conformance probe: shuts the guest down, then sends it `batch` anyway (bypassing the
    /// host's own refusal). `Ok(true)`: the guest refused with an error, as it must.
    pub(crate) fn export_after_guest_shutdown(&self, batch: Vec<SpanData>) -> Result<bool, String> {
        let mut st = Self::lock(&self.lanes[0]);
        self.call(&mut st, Job::Shutdown)
            .map_err(|e| format!("shutdown failed: {e}"))?;
        let traps_before = self.rt.stats.snapshot().traps.values().sum::<u64>();
        let result = self.call(&mut st, |reply| Job::Export(batch, reply));
        st.shut_down = true;
        st.worker = None;
        let trapped = self.rt.stats.snapshot().traps.values().sum::<u64>() > traps_before;
        match result {
            Ok(()) => Ok(false),
            Err(e) if trapped => Err(format!("trapped instead of returning an error: {e}")),
            Err(_) => Ok(true),
        }
    }
}

impl SpanExporter for WasmSpanExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let mut st = self.acquire();
        if st.shut_down {
            return Err(OTelSdkError::AlreadyShutdown);
        }
        self.call(&mut st, |reply| Job::Export(batch, reply))
    }

    fn force_flush(&self) -> OTelSdkResult {
        let mut result = Ok(());
        for lane in &self.lanes {
            let mut st = Self::lock(lane);
            if st.shut_down || st.worker.is_none() {
                continue;
            }
            result = result.and(self.call(&mut st, Job::Flush));
        }
        result
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        let mut result = Ok(());
        for lane in &self.lanes {
            let mut st = Self::lock(lane);
            if std::mem::replace(&mut st.shut_down, true) {
                return Err(OTelSdkError::AlreadyShutdown);
            }
            if st.worker.is_none() {
                continue;
            }
            st.backoff_until = None;
            result = result.and(self.call(&mut st, Job::Shutdown));
            st.worker = None;
        }
        result
    }

    fn set_resource(&mut self, resource: &Resource) {
        for lane in self.lanes.iter_mut() {
            let st = lane.get_mut().unwrap_or_else(|p| p.into_inner());
            if st.resource != *resource {
                st.resource = resource.clone();
                st.worker = None; // the next batch initialises a fresh instance with it
                st.started_once = false; // not a restart after a fault
            }
        }
    }
}
