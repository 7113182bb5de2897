//! A well-behaved exporter of all three signals for tests: writes what it receives as JSON
//! lines to `settings.out` (a file in a pre-opened directory), in the encoding
//! `settings.encoding` asks for. `retryable = N` answers the first N exports `retryable`
//! (with `retry_delay_ms`, if set) before accepting; `partial = K` accepts every batch but
//! reports K items rejected; `temporality` (metrics) is `cumulative` or `delta`; `discard =
//! true` accepts batches without writing them; `panic_on = NAME` panics (traps) on a typed
//! batch holding a span, metric or log body of that name; `hang = true` blocks every export in
//! a host call (a sleep) until the host's deadline cancels it; `lifecycle = true` also writes
//! a line for each `force-flush` and `shutdown`.

use std::fs::File;
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value as Json, json};

wit_bindgen::generate!({ path: "../../../../wit", world: "all-signals" });

mod signals;

use exports::lens::exporter::span_exporter::Guest;
use lens::exporter::types::{
    Batch, Encoding, ExportError, KeyValue, PartialSuccess, Resource, RetryHint, SpanKind, Status,
    Value,
};

static OUT: Mutex<Option<File>> = Mutex::new(None);
/// `retryable`, `retry_delay_ms` and `partial` of the settings.
static RETRYABLE: AtomicU64 = AtomicU64::new(0);
static RETRY_DELAY_MS: AtomicU64 = AtomicU64::new(u64::MAX);
static PARTIAL: AtomicU64 = AtomicU64::new(0);
/// `discard = true`: accept every batch without writing it (the no-op guest of the
/// benchmarks' metric and log rows).
static DISCARD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// `panic_on`: the name that makes a typed export trap.
static PANIC_ON: Mutex<Option<String>> = Mutex::new(None);
/// `hang = true`: every export sleeps for good.
static HANG: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// `lifecycle = true`: `force-flush` and `shutdown` write a line each.
static LIFECYCLE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn value(v: &Value) -> Json {
    match v {
        Value::String(s) => json!({"string": s}),
        Value::Bool(b) => json!({"bool": b}),
        Value::S64(i) => json!({"s64": i}),
        Value::F64(f) => json!({"f64": f}),
        Value::Bytes(b) => json!({"bytes": b}),
        Value::StringArray(a) => json!({"string-array": a}),
        Value::BoolArray(a) => json!({"bool-array": a}),
        Value::S64Array(a) => json!({"s64-array": a}),
        Value::F64Array(a) => json!({"f64-array": a}),
    }
}

fn attrs(kvs: &[KeyValue]) -> Json {
    Json::Object(
        kvs.iter()
            .map(|kv| (kv.key.clone(), value(&kv.value)))
            .collect(),
    )
}

/// The setting `key`.
fn get(settings: &[(String, String)], key: &str) -> Option<String> {
    settings
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
}

/// Opens the output, reads the behaviour settings, records the init; returns the encoding.
fn setup(settings: &[(String, String)], resource: &Resource) -> Result<Encoding, String> {
    let path = get(settings, "out").ok_or("setting `out` is required")?;
    let file = File::create(&path).map_err(|e| format!("cannot create {path}: {e}"))?;
    *OUT.lock().unwrap() = Some(file);
    let number = |k: &str| -> Result<Option<u64>, String> {
        get(settings, k)
            .map(|v| v.parse().map_err(|_| format!("`{k}` must be a number")))
            .transpose()
    };
    RETRYABLE.store(number("retryable")?.unwrap_or(0), Ordering::Relaxed);
    RETRY_DELAY_MS.store(
        number("retry_delay_ms")?.unwrap_or(u64::MAX),
        Ordering::Relaxed,
    );
    PARTIAL.store(number("partial")?.unwrap_or(0), Ordering::Relaxed);
    DISCARD.store(
        get(settings, "discard").as_deref() == Some("true"),
        Ordering::Relaxed,
    );
    *PANIC_ON.lock().unwrap() = get(settings, "panic_on");
    HANG.store(
        get(settings, "hang").as_deref() == Some("true"),
        Ordering::Relaxed,
    );
    LIFECYCLE.store(
        get(settings, "lifecycle").as_deref() == Some("true"),
        Ordering::Relaxed,
    );
    let encoding = match get(settings, "encoding").as_deref() {
        None | Some("typed") => Encoding::Typed,
        Some("otlp") => Encoding::OtlpProtobuf,
        Some("otlp-json") => Encoding::OtlpJson,
        Some(other) => return Err(format!("unknown encoding `{other}`")),
    };
    write(json!({"init": {"settings": settings, "resource": attrs(&resource.attributes)}}))?;
    Ok(encoding)
}

/// Whether batches are accepted unread (`discard`).
fn discarding() -> bool {
    DISCARD.load(Ordering::Relaxed)
}

/// With `hang`, blocks for good in a host call (only the host's deadline ends it).
fn hang_if_asked() {
    while HANG.load(Ordering::Relaxed) {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

/// Traps when one of `names` is the `panic_on` setting.
fn panic_on<'a>(mut names: impl Iterator<Item = &'a str>) {
    if let Some(bad) = PANIC_ON.lock().unwrap().clone()
        && names.any(|n| n == bad)
    {
        panic!("a batch holding `{bad}`");
    }
}

/// `retryable` while the setting's count lasts.
fn answer() -> Result<(), ExportError> {
    let left = RETRYABLE.load(Ordering::Relaxed);
    if left == 0 {
        return Ok(());
    }
    RETRYABLE.store(left - 1, Ordering::Relaxed);
    let delay = RETRY_DELAY_MS.load(Ordering::Relaxed);
    Err(ExportError::Retryable(RetryHint {
        message: format!("unavailable ({left} more)"),
        delay_ms: (delay != u64::MAX).then_some(delay),
    }))
}

/// `partial` when the setting asks for it.
fn partial() -> Result<(), ExportError> {
    match PARTIAL.load(Ordering::Relaxed) {
        0 => Ok(()),
        rejected => Err(ExportError::Partial(PartialSuccess {
            rejected,
            message: "some refused".into(),
        })),
    }
}

fn write(line: Json) -> Result<(), String> {
    let mut out = OUT.lock().unwrap();
    let file = out.as_mut().ok_or("export after shutdown")?;
    // One write per line: unbuffered small writes are one host call each.
    let mut text = line.to_string();
    text.push('\n');
    file.write_all(text.as_bytes()).map_err(|e| e.to_string())
}

struct Recorder;

impl Guest for Recorder {
    fn init(settings: Vec<(String, String)>, resource: Resource) -> Result<Encoding, String> {
        setup(&settings, &resource)
    }

    fn export(batch: Batch) -> Result<(), ExportError> {
        hang_if_asked();
        answer()?;
        if discarding() {
            return Ok(());
        }
        match batch {
            Batch::OtlpProtobuf(bytes) => write(json!({"otlp": bytes})),
            Batch::OtlpJson(text) => write(json!({"otlp_json": text})),
            Batch::Typed(groups) => {
                panic_on(groups.iter().flat_map(|g| g.spans.iter().map(|s| s.name.as_str())));
                let mut spans = Vec::new();
                for g in &groups {
                    for s in &g.spans {
                        let cx = &s.span_context;
                        spans.push(json!({
                            "scope": g.scope.name,
                            "scope_version": g.scope.version,
                            "name": s.name,
                            "trace_id": format!("{:016x}{:016x}", cx.trace_id.0, cx.trace_id.1),
                            "span_id": format!("{:016x}", cx.span_id),
                            "flags": cx.trace_flags,
                            "remote": cx.is_remote,
                            "trace_state": cx.trace_state,
                            "dropped": [s.dropped_attributes, s.dropped_events, s.dropped_links],
                            "parent_span_id": s.parent_span_id.map(|p| format!("{p:016x}")),
                            "kind": match s.span_kind {
                                SpanKind::Client => "client", SpanKind::Server => "server",
                                SpanKind::Producer => "producer", SpanKind::Consumer => "consumer",
                                SpanKind::Internal => "internal",
                            },
                            "start": s.start_time,
                            "end": s.end_time,
                            "attributes": attrs(&s.attributes),
                            "events": s.events.iter().map(|e| json!({"name": e.name, "time": e.time, "attributes": attrs(&e.attributes)})).collect::<Vec<_>>(),
                            "links": s.links.iter().map(|l| json!({"span_id": format!("{:016x}", l.span_context.span_id), "attributes": attrs(&l.attributes)})).collect::<Vec<_>>(),
                            "status": match &s.status { Status::Unset => json!("unset"), Status::Ok => json!("ok"), Status::Error(m) => json!({"error": m}) },
                        }));
                    }
                }
                write(json!({"typed": spans}))
            }
        }
        .map_err(ExportError::Rejected)?;
        partial()
    }

    fn force_flush() -> Result<(), String> {
        if LIFECYCLE.load(Ordering::Relaxed) {
            write(json!({"force_flush": true}))?;
        }
        let mut out = OUT.lock().unwrap();
        out.as_mut()
            .map(|f| f.flush().map_err(|e| e.to_string()))
            .unwrap_or(Ok(()))
    }

    fn shutdown() -> Result<(), String> {
        if LIFECYCLE.load(Ordering::Relaxed) {
            write(json!({"shutdown": true}))?;
        }
        let file = OUT.lock().unwrap().take();
        match file {
            Some(mut f) => f.flush().map_err(|e| e.to_string()),
            None => Err("already shut down".into()),
        }
    }
}

export!(Recorder);
