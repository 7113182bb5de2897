//! One guest instance on its own worker thread: started from the [`InstanceFactory`]
//! (instantiate, `init`), then serving calls until a fault or shutdown.
//!
//! The worker owns the instance's `Store` and a single-threaded tokio runtime; every guest call
//! is an async wasmtime call bounded by the call deadline. Two things end a call that overruns:
//! the epoch deadline traps a guest spinning in wasm, and the timeout drops the call's future
//! when the guest is blocked inside a host call (a WASI sleep or poll, an HTTP request), which
//! epochs cannot interrupt. Either way the call is a fault, and the worker then returns: its
//! store, and with it every byte of the instance's memory, is freed at once. (A trapped
//! instance can never be entered again anyway.) The caller's wait is bounded too, by the
//! deadline plus a grace, in case a host function blocks without yielding.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use std::future::Future;

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SpanData;
use wasmtime::component::InstancePre;
use wasmtime::{Engine, Store};

use crate::batch::ExporterStats;
use crate::bindings::edit_types::ItemEdit;
use crate::bindings::log_types::LogBatch;
use crate::bindings::metric_types::MetricBatch;
use crate::bindings::types::{Batch, ExportError};
use crate::encoding::typed::owned::resource as wit_resource;
use crate::encoding::{BatchEncoder, EncodedBatch};
use crate::error::FaultKind;
use crate::wasm::artefact::engine::{EPOCH_TICK, ticks};
use crate::wasm::sandbox::guest_output::shown;
use crate::wasm::sandbox::http::HttpAnswer;
use crate::wasm::sandbox::interface::{GuestFuncs, GuestInterface, Preferences};
use crate::wasm::sandbox::{Grants, HostState, MemoryLimitExceeded};

/// Default of `init_timeout_ms`: how long an instance's instantiation, then its `init`, may
/// each take.
pub const DEFAULT_INIT_TIMEOUT_MS: u64 = 5000;

/// Longest guest error message or fault detail kept (the rest is cut, with a note), before
/// its control characters are escaped.
pub const MAX_GUEST_ERROR: usize = 1024;
/// In a setting value, replaced by the instance's number (0 up to `max_concurrent_exports`).
pub const INSTANCE_PLACEHOLDER: &str = "{lens.instance}";
/// Extra wait beyond the call deadline before the caller gives up on a worker that did not
/// answer (a host function blocking without yielding); the worker's own timeout fires first.
const GRACE: Duration = Duration::from_millis(250);
/// The worker's timeout on a call comes this much after the epoch deadline, so that a guest
/// spinning in wasm is reported as the trap it is.
const TIMEOUT_SLACK: Duration = Duration::from_millis(2 * EPOCH_TICK.as_millis() as u64);

/// What stopped an instance, and the host's or wasmtime's account of it.
#[derive(Debug, Clone)]
pub(crate) struct Fault {
    pub kind: FaultKind,
    /// One line: the trap and the innermost wasm frame (what a warning shows).
    pub detail: String,
    /// The guest's whole backtrace, when wasmtime took one (what a debug message shows).
    pub backtrace: Option<String>,
}

impl Fault {
    pub(crate) fn new(kind: FaultKind, detail: impl Into<String>) -> Self {
        Self {
            kind,
            detail: shown(detail.into(), MAX_GUEST_ERROR),
            backtrace: None,
        }
    }

    /// The trap's message and the innermost frame in `detail`; the full account (every
    /// frame) in `backtrace`: a warning stays one readable line.
    fn from_wasmtime(e: &wasmtime::Error) -> Self {
        let Some(trace) = e.downcast_ref::<wasmtime::WasmBacktrace>() else {
            return Self::new(fault_kind(e), format!("{e:#}"));
        };
        let frames = trace.frames();
        let innermost = frames.first().map_or(String::new(), |f| {
            let name = f.func_name().map_or_else(
                || format!("<wasm function {}>", f.func_index()),
                str::to_string,
            );
            let more = match frames.len() - 1 {
                0 => String::new(),
                n => format!(", {n} more frames at debug level"),
            };
            let offset = f
                .module_offset()
                .map_or(String::new(), |o| format!("{o:#x} "));
            format!(" (in {offset}{name}{more})")
        });
        Self {
            backtrace: Some(shown(format!("{e:#}"), 16 * MAX_GUEST_ERROR)),
            ..Self::new(fault_kind(e), format!("{}{innermost}", e.root_cause()))
        }
    }

    /// This fault with what the instance last wrote to stderr (a panic's location and
    /// message), already escaped and cut.
    fn with_stderr(mut self, store: &Store<HostState>) -> Self {
        if let Some(said) = store.data().stderr_tail.said() {
            self.detail = format!("{}; its stderr: {said}", self.detail);
        }
        self
    }
}

/// How one guest call ended.
#[derive(Debug)]
pub(crate) enum Outcome {
    Ok,
    /// The guest returned `err` (or `rejected`): a failed call, the instance stays.
    GuestError(String),
    /// The guest asked for the batch again later (`retryable`), which it hands back.
    Retryable {
        message: String,
        delay: Option<Duration>,
        payload: Payload,
    },
    /// The guest refused `rejected` items and accepted the rest.
    Partial {
        rejected: u64,
        message: String,
    },
    /// A processor's answer, not yet checked against the batch.
    Edits(Vec<ItemEdit>),
    /// A trap or host-side failure: the instance is gone.
    Fault(Fault),
}

impl Outcome {
    /// This outcome with `note` (what the sandbox denied during the call, `sockets`) after
    /// its message.
    fn noted(self, note: Option<String>) -> Self {
        if note.is_none() {
            return self;
        }
        let add = |m: String| with_note(m, note.as_deref());
        match self {
            Outcome::GuestError(m) => Outcome::GuestError(add(m)),
            Outcome::Retryable {
                message,
                delay,
                payload,
            } => Outcome::Retryable {
                message: add(message),
                delay,
                payload,
            },
            Outcome::Partial { rejected, message } => Outcome::Partial {
                rejected,
                message: add(message),
            },
            Outcome::Fault(mut f) => {
                f.detail = add(f.detail);
                Outcome::Fault(f)
            }
            other => other,
        }
    }
}

/// `message`, then what the sandbox denied during the call (`note`), if anything.
fn with_note(message: String, note: Option<&str>) -> String {
    match note {
        Some(note) => format!("{message}; {note}"),
        None => message,
    }
}

/// One batch for a guest: spans are encoded on the worker (borrowed from the spans while the
/// call lasts); metrics and logs arrive encoded, since the SDK only lends them.
pub(crate) enum Payload {
    Spans(Vec<SpanData>),
    /// Spans a processor looks at: the caller keeps them, to pass them on (edited or not)
    /// whatever the guest does.
    SharedSpans(Arc<Vec<SpanData>>),
    Metrics(MetricBatch),
    Logs(LogBatch),
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Payload::Spans(_) | Payload::SharedSpans(_) => "spans",
            Payload::Metrics(_) => "metrics",
            Payload::Logs(_) => "log records",
        })
    }
}

/// What a worker is asked to do.
pub(crate) enum Job {
    Export(Payload),
    /// A processor's `process`.
    Process(Payload),
    Flush,
    Shutdown,
}

impl Job {
    /// The guest function the job calls, as the WIT names it.
    pub(crate) fn call_name(&self) -> &'static str {
        match self {
            Job::Export(_) => "export",
            Job::Process(_) => "process",
            Job::Flush => "force-flush",
            Job::Shutdown => "shutdown",
        }
    }
}

/// Why an instance did not start.
#[derive(Debug)]
pub(crate) enum StartError {
    /// `init` returned this error.
    Refused(String),
    /// It faulted (or did not answer) before it was ready.
    Fault(Fault),
    /// Its interface does not have this host's types.
    Mismatch(String),
}

/// Everything needed to start instances of one exporter: the pre-linked component, the
/// sandbox's grants, the settings, the limits, and where to count.
pub(crate) struct InstanceFactory {
    pub name: Arc<str>,
    /// The SHA-256 of the component's file, in hex.
    pub sha256: String,
    pub engine: Engine,
    pub pre: InstancePre<HostState>,
    /// The interface the instances serve.
    pub interface: GuestInterface,
    pub grants: Grants,
    pub settings: Vec<(String, String)>,
    pub call_timeout: Duration,
    /// The deadline of instantiation, then of `init`.
    pub init_timeout: Duration,
    pub fuel: Option<u64>,
    pub stats: Arc<ExporterStats>,
    /// What the last instance asked for in `init`.
    pub preferences: Mutex<Option<Preferences>>,
}

/// A started instance: the sender of its worker's jobs. Dropping it ends the worker.
pub(crate) struct Worker {
    jobs: Sender<(Job, Sender<Outcome>)>,
    call_timeout: Duration,
    /// What this instance asked for in `init`.
    pub preferences: Preferences,
    /// The last HTTP exchange of the current call that went wrong.
    answer: HttpAnswer,
}

impl Worker {
    /// Runs `job` on the instance and waits at most the call deadline (plus a grace).
    pub(crate) fn call(&self, job: Job) -> Outcome {
        self.answer.take();
        let (tx, rx) = bounded(1);
        if self.jobs.send((job, tx)).is_err() {
            return Outcome::Fault(Fault::new(
                FaultKind::HostError,
                "the worker thread is gone",
            ));
        }
        rx.recv_timeout(self.call_timeout + TIMEOUT_SLACK + GRACE)
            .unwrap_or_else(|_| {
                Outcome::Fault(Fault::new(
                    FaultKind::Deadline,
                    format!(
                        "the worker did not answer within {:?} (a host call that does not \
                         yield); its thread is abandoned",
                        self.call_timeout + TIMEOUT_SLACK + GRACE
                    ),
                ))
            })
    }

    /// What the server said in the last call's last HTTP exchange, when it went wrong (`401
    /// Unauthorized from 127.0.0.1:18401`), in the host's words.
    pub(crate) fn http_answer(&self) -> Option<String> {
        self.answer.take()
    }
}

/// An instantiated guest: its store and the functions of its interface.
struct Live {
    store: Store<HostState>,
    funcs: GuestFuncs,
}

/// What stopped a guest, from wasmtime's error.
pub(crate) fn fault_kind(e: &wasmtime::Error) -> FaultKind {
    if e.chain().any(|c| c.is::<MemoryLimitExceeded>()) {
        return FaultKind::MemoryLimit;
    }
    if super::limits::is_answer_limit(e) {
        return FaultKind::AnswerLimit;
    }
    match e.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::Interrupt) => FaultKind::Deadline,
        Some(wasmtime::Trap::OutOfFuel) => FaultKind::Fuel,
        Some(wasmtime::Trap::UnreachableCodeReached) => FaultKind::Unreachable,
        Some(wasmtime::Trap::StackOverflow) => FaultKind::StackOverflow,
        Some(wasmtime::Trap::MemoryOutOfBounds) => FaultKind::MemoryOutOfBounds,
        Some(other) => FaultKind::Trap(other.to_string()),
        None => FaultKind::HostError,
    }
}

impl InstanceFactory {
    /// Starts instance number `number` on a new worker thread, for spans carrying `resource`;
    /// returns once it is instantiated and initialised, or at the call deadline.
    pub(crate) fn start(
        self: &Arc<Self>,
        resource: &Resource,
        number: usize,
    ) -> Result<Worker, StartError> {
        let (ready_tx, ready_rx) = bounded::<Result<Preferences, StartError>>(1);
        let (jobs_tx, jobs_rx) = unbounded();
        let factory = self.clone();
        let resource = resource.clone();
        let answer = HttpAnswer::default();
        let instance_answer = answer.clone();
        std::thread::Builder::new()
            .name(format!("lens-wasm-{}", self.name))
            .spawn(move || factory.run(&resource, number, instance_answer, ready_tx, jobs_rx))
            .map_err(|e| {
                StartError::Fault(Fault::new(
                    FaultKind::HostError,
                    format!("cannot start a worker thread: {e}"),
                ))
            })?;
        // Instantiation and `init` each have the start deadline.
        match ready_rx.recv_timeout(2 * (self.init_timeout + TIMEOUT_SLACK) + GRACE) {
            Ok(Ok(preferences)) => Ok(Worker {
                jobs: jobs_tx,
                call_timeout: self.call_timeout,
                preferences,
                answer,
            }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(StartError::Fault(Fault::new(
                FaultKind::Deadline,
                "the worker did not answer while starting the instance (a host call that does \
                 not yield); its thread is abandoned",
            ))),
        }
    }

    /// The worker thread: start the instance, report, then serve jobs.
    fn run(
        self: Arc<Self>,
        resource: &Resource,
        number: usize,
        answer: HttpAnswer,
        ready: Sender<Result<Preferences, StartError>>,
        jobs: Receiver<(Job, Sender<Outcome>)>,
    ) {
        // Nothing the guest does on this thread is traced by Lens itself.
        let _suppress = opentelemetry::Context::enter_telemetry_suppressed_scope();
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                let fault =
                    Fault::new(FaultKind::HostError, format!("cannot start a runtime: {e}"));
                let _ = ready.send(Err(StartError::Fault(fault)));
                return;
            }
        };
        let (live, preferences) = match self.instantiate(&rt, resource, number, answer) {
            Ok(started) => started,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        *self.preferences.lock().unwrap_or_else(|p| p.into_inner()) = Some(preferences);
        if ready.send(Ok(preferences)).is_err() {
            return; // the host gave up waiting
        }
        let encoder = BatchEncoder::new(preferences.encoding, resource);
        self.serve(&rt, live, &encoder, jobs);
    }

    /// Runs `call` on `rt` within `deadline`; a call still running then is dropped (and with
    /// it whatever host call the guest is blocked in) and reported as `what` overrunning.
    fn bounded<R>(
        &self,
        rt: &tokio::runtime::Runtime,
        what: &str,
        deadline: Duration,
        call: impl Future<Output = wasmtime::Result<R>>,
    ) -> Result<R, Fault> {
        let limit = deadline + TIMEOUT_SLACK;
        // The timer is created inside the runtime: it needs its time driver.
        match rt.block_on(async { tokio::time::timeout(limit, call).await }) {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => {
                let mut fault = Fault::from_wasmtime(&e);
                if fault.kind == FaultKind::AnswerLimit {
                    fault.detail = format!(
                        "`{what}`: the guest handed the host more than max_answer_mib ({} MiB) \
                         in one call; the call was refused and the instance discarded",
                        self.grants.max_answer >> 20
                    );
                }
                Err(fault)
            }
            Err(_) => Err(Fault::new(
                FaultKind::Deadline,
                format!(
                    "`{what}` did not return within {deadline:?} (blocked in a host call); the \
                     call was cancelled and the instance discarded",
                ),
            )),
        }
    }

    /// Instantiates the component in a fresh sandbox and calls `init`.
    fn instantiate(
        &self,
        rt: &tokio::runtime::Runtime,
        resource: &Resource,
        number: usize,
        answer: HttpAnswer,
    ) -> Result<(Live, Preferences), StartError> {
        let mut store = Store::new(
            &self.engine,
            HostState::new(&self.grants, answer)
                .map_err(|e| StartError::Fault(Fault::from_wasmtime(&e)))?,
        );
        store.limiter(|s| &mut s.limiter);
        // What the guest hands the host in one call (a lifted answer, the arguments of a host
        // call) is at most `max_answer_mib`: without it, one call may make the host allocate
        // wasmtime's default of 128 MiB whatever the memory limit (issue: an aliased answer).
        store.set_hostcall_fuel(self.grants.max_answer);
        store.set_max_component_handles(super::limits::MAX_COMPONENT_HANDLES);
        store.epoch_deadline_trap();
        let instantiated = self.bounded(rt, "instantiation", self.init_timeout, async {
            self.arm(&mut store, self.init_timeout)?;
            self.pre.instantiate_async(&mut store).await
        });
        let instance = instantiated.map_err(StartError::Fault)?;
        let funcs = GuestFuncs::lookup(&instance, &mut store, self.interface)
            .map_err(|e| StartError::Mismatch(format!("{e:#}")))?;
        let init = self.bounded(rt, "init", self.init_timeout, async {
            self.arm(&mut store, self.init_timeout)?;
            funcs
                .init(&mut store, &self.settings(number), &wit_resource(resource))
                .await
        });
        self.record_memory(&store);
        let note = store.data_mut().denials.take();
        let add = |m: String| with_note(m, note.as_deref());
        match init {
            Ok(Ok(preferences)) => Ok((Live { store, funcs }, preferences)),
            Ok(Err(msg)) => Err(StartError::Refused(add(shown(msg, MAX_GUEST_ERROR)))),
            Err(mut fault) => {
                fault.detail = add(fault.detail);
                Err(StartError::Fault(fault.with_stderr(&store)))
            }
        }
    }

    /// Runs jobs until the host drops its sender (after `shutdown`, or when it replaces the
    /// instance) or a fault ends the instance.
    fn serve(
        &self,
        rt: &tokio::runtime::Runtime,
        live: Live,
        encoder: &BatchEncoder,
        jobs: Receiver<(Job, Sender<Outcome>)>,
    ) {
        let Live { mut store, funcs } = live;
        for (job, reply) in jobs {
            let what = job.call_name();
            let outcome = match job {
                Job::Process(batch) => {
                    let result = self.bounded(rt, what, self.call_timeout, async {
                        self.arm(&mut store, self.call_timeout)?;
                        Self::process(&mut store, &funcs, encoder, &batch).await
                    });
                    // The caller takes shared spans back once this copy is gone.
                    drop(batch);
                    match result {
                        Ok(Ok(edits)) => Outcome::Edits(edits),
                        Ok(Err(msg)) => Outcome::GuestError(shown(msg, MAX_GUEST_ERROR)),
                        Err(fault) => Outcome::Fault(fault.with_stderr(&store)),
                    }
                }
                job => self.serve_export(rt, &mut store, &funcs, encoder, job),
            }
            .noted(store.data_mut().denials.take());
            self.record_memory(&store);
            let fault = matches!(outcome, Outcome::Fault(_));
            let _ = reply.send(outcome);
            if fault {
                // A trapped or cancelled instance can never be entered again: returning drops
                // its store and frees its memory now.
                return;
            }
        }
    }

    /// Runs an exporter's job: `export`, `force-flush` or `shutdown`.
    fn serve_export(
        &self,
        rt: &tokio::runtime::Runtime,
        store: &mut Store<HostState>,
        funcs: &GuestFuncs,
        encoder: &BatchEncoder,
        job: Job,
    ) -> Outcome {
        let what = job.call_name();
        let mut payload = None;
        let result = self.bounded(rt, what, self.call_timeout, async {
            self.arm(store, self.call_timeout)?;
            match job {
                Job::Export(batch) | Job::Process(batch) => {
                    let r = Self::export(store, funcs, encoder, &batch).await;
                    payload = Some(batch);
                    r
                }
                Job::Flush => funcs
                    .flush_or_shutdown(store, false)
                    .await
                    .map(|r| r.map_err(ExportError::Rejected)),
                Job::Shutdown => funcs
                    .flush_or_shutdown(store, true)
                    .await
                    .map(|r| r.map_err(ExportError::Rejected)),
            }
        });
        match result {
            Ok(Ok(())) => Outcome::Ok,
            Ok(Err(ExportError::Rejected(msg))) => Outcome::GuestError(shown(msg, MAX_GUEST_ERROR)),
            Ok(Err(ExportError::Retryable(hint))) => match payload.take() {
                Some(payload) => Outcome::Retryable {
                    message: shown(hint.message, MAX_GUEST_ERROR),
                    delay: hint.delay_ms.map(Duration::from_millis),
                    payload,
                },
                None => Outcome::GuestError(shown(hint.message, MAX_GUEST_ERROR)),
            },
            Ok(Err(ExportError::Partial(p))) => Outcome::Partial {
                rejected: p.rejected,
                message: shown(p.message, MAX_GUEST_ERROR),
            },
            Err(fault) => Outcome::Fault(fault.with_stderr(store)),
        }
    }

    /// A processor's `process` on `payload`, encoded as the guest asked.
    async fn process(
        store: &mut Store<HostState>,
        funcs: &GuestFuncs,
        encoder: &BatchEncoder,
        payload: &Payload,
    ) -> wasmtime::Result<Result<Vec<ItemEdit>, String>> {
        let spans: &[SpanData] = match payload {
            Payload::Spans(spans) => spans,
            Payload::SharedSpans(spans) => spans,
            Payload::Metrics(batch) => return funcs.process(store, batch).await,
            Payload::Logs(batch) => return funcs.process(store, batch).await,
        };
        match encoder.encode(spans) {
            EncodedBatch::Typed(typed) => funcs.process(store, &typed).await,
            EncodedBatch::TypedOwned(groups) => funcs.process(store, &Batch::Typed(groups)).await,
            EncodedBatch::OtlpProtobuf(bytes) => {
                funcs.process(store, &Batch::OtlpProtobuf(bytes)).await
            }
            EncodedBatch::OtlpJson(text) => funcs.process(store, &Batch::OtlpJson(text)).await,
        }
    }

    async fn export(
        store: &mut Store<HostState>,
        funcs: &GuestFuncs,
        encoder: &BatchEncoder,
        payload: &Payload,
    ) -> wasmtime::Result<Result<(), ExportError>> {
        let spans: &[SpanData] = match payload {
            Payload::Spans(spans) => spans,
            Payload::SharedSpans(spans) => spans,
            Payload::Metrics(batch) => return funcs.export(store, batch).await,
            Payload::Logs(batch) => return funcs.export(store, batch).await,
        };
        match encoder.encode(spans) {
            EncodedBatch::Typed(typed) => funcs.export(store, &typed).await,
            EncodedBatch::TypedOwned(groups) => funcs.export(store, &Batch::Typed(groups)).await,
            EncodedBatch::OtlpProtobuf(bytes) => {
                funcs.export(store, &Batch::OtlpProtobuf(bytes)).await
            }
            EncodedBatch::OtlpJson(text) => funcs.export(store, &Batch::OtlpJson(text)).await,
        }
    }

    /// Arms `deadline` (and fuel) for the next guest call.
    fn arm(&self, store: &mut Store<HostState>, deadline: Duration) -> wasmtime::Result<()> {
        store.set_epoch_deadline(ticks(deadline));
        if let Some(fuel) = self.fuel {
            store.set_fuel(fuel)?;
        }
        Ok(())
    }

    fn record_memory(&self, store: &Store<HostState>) {
        self.stats.record_memory(store.data().limiter.peak as u64);
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
}
