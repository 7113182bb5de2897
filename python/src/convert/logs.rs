//! The Python SDK's log records (`ReadableLogRecord`, or the older `LogData`) read, under the
//! GIL, into the Rust SDK's `SdkLogRecord`s with their scope: what Lens's batch log processor
//! queues and its log exporter encodes. Every field the Python SDK's OTLP encoder writes is
//! read (times, trace context and flags, severity, body of any shape, attributes, event name);
//! `python/tests/test_signals.py` compares the two encodings.
//!
//! The Rust SDK keeps a record's severity text and event name as `&'static str`: each distinct
//! text is kept once for the life of the process, at most [`MAX_INTERNED`] of them; past that
//! a record's event name is left out (and said once), its severity text becomes
//! [`TOO_MANY_TEXTS`].

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use lens::opentelemetry::InstrumentationScope;
use lens::opentelemetry::logs::{
    AnyValue, LogRecord as _, Logger as _, LoggerProvider as _, Severity,
};
use lens::opentelemetry::trace::{SpanId, TraceFlags, TraceId};
use lens::opentelemetry::{Key, StringValue};
use lens::opentelemetry_sdk::logs::{SdkLogRecord, SdkLogger, SdkLoggerProvider};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyFloat, PyInt, PyMapping, PyString};

use super::{each_attribute, instrumentation_scope, text};

/// Distinct severity texts and event names kept (see the module's doc).
pub const MAX_INTERNED: usize = 4096;
/// The severity text of a record whose own would pass [`MAX_INTERNED`].
pub const TOO_MANY_TEXTS: &str = "(too many distinct texts)";
/// How deep a body's lists and maps are read; deeper values are their `str()`.
const MAX_DEPTH: usize = 32;

/// A record as Lens's log processor queues it.
pub type Record = (SdkLogRecord, InstrumentationScope);

/// The records of one batch, and the Python object of the first one's resource.
pub struct Records<'py> {
    pub records: Vec<Record>,
    pub resource: Option<Bound<'py, PyAny>>,
}

/// Reads every record of `batch`.
pub fn records<'py>(batch: &Bound<'py, PyAny>) -> PyResult<Records<'py>> {
    let py = batch.py();
    let mut records = Vec::with_capacity(batch.len().unwrap_or(0));
    let mut resource = None;
    let mut scopes: HashMap<usize, InstrumentationScope> = HashMap::new();
    for item in batch.try_iter()? {
        let item = item?;
        let record = item.getattr(intern!(py, "log_record"))?;
        // `ReadableLogRecord` (opentelemetry-sdk 1.39+) holds the resource; `LogData`'s record
        // does.
        let owner = if item.hasattr(intern!(py, "resource"))? {
            &item
        } else {
            &record
        };
        if resource.is_none() {
            resource = Some(owner.getattr(intern!(py, "resource"))?);
        }
        let scope_object = item.getattr(intern!(py, "instrumentation_scope"))?;
        let scope = match scopes.get(&(scope_object.as_ptr() as usize)) {
            Some(s) => s.clone(),
            None => {
                let s = instrumentation_scope(&scope_object)?;
                scopes.insert(scope_object.as_ptr() as usize, s.clone());
                s
            }
        };
        records.push((record_of(&record)?, scope));
    }
    Ok(Records { records, resource })
}

/// A blank record: the Rust SDK makes them through a logger only.
fn blank() -> SdkLogRecord {
    static LOGGER: OnceLock<SdkLogger> = OnceLock::new();
    LOGGER
        .get_or_init(|| SdkLoggerProvider::builder().build().logger("lens-python"))
        .create_log_record()
}

fn record_of(r: &Bound<'_, PyAny>) -> PyResult<SdkLogRecord> {
    let py = r.py();
    let mut out = blank();
    if let Some(t) = time(&r.getattr(intern!(py, "timestamp"))?)? {
        out.set_timestamp(t);
    }
    if let Some(t) = time(&r.getattr(intern!(py, "observed_timestamp"))?)? {
        out.set_observed_timestamp(t);
    }
    let trace_id: u128 = r
        .getattr(intern!(py, "trace_id"))?
        .extract::<Option<u128>>()?
        .unwrap_or(0);
    if trace_id != 0 {
        let span_id: u64 = r
            .getattr(intern!(py, "span_id"))?
            .extract::<Option<u64>>()?
            .unwrap_or(0);
        let flags = r.getattr(intern!(py, "trace_flags"))?;
        let flags = if flags.is_none() {
            0
        } else {
            flags.extract::<u8>()?
        };
        out.set_trace_context(
            TraceId::from(trace_id),
            SpanId::from(span_id),
            Some(TraceFlags::new(flags)),
        );
    }
    let severity_text = r.getattr(intern!(py, "severity_text"))?;
    if !severity_text.is_none() {
        out.set_severity_text(intern(&text(&severity_text)?).unwrap_or(TOO_MANY_TEXTS));
    }
    let severity_number = r.getattr(intern!(py, "severity_number"))?;
    if !severity_number.is_none() {
        let n: i32 = match severity_number.getattr(intern!(py, "value")) {
            Ok(v) => v.extract()?,
            Err(_) => severity_number.extract()?,
        };
        if let Some(s) = severity(n) {
            out.set_severity_number(s);
        }
    }
    let body = r.getattr(intern!(py, "body"))?;
    if let Some(body) = any_value(&body, 0)? {
        out.set_body(body);
    }
    if let Ok(name) = r.getattr(intern!(py, "event_name"))
        && !name.is_none()
    {
        match intern(&text(&name)?) {
            Some(name) => out.set_event_name(name),
            None => warn_once(),
        }
    }
    each_attribute(&r.getattr(intern!(py, "attributes"))?, |key, value| {
        if let Some(value) = any_value(value, 0)? {
            out.add_attribute(Key::from(text(key)?), value);
        }
        Ok(())
    })?;
    Ok(out)
}

/// A Python value as a log `AnyValue` (`None`: absent); an integer beyond `i64` is its digits,
/// an unknown object its `str()`, as for span attributes.
fn any_value(v: &Bound<'_, PyAny>, depth: usize) -> PyResult<Option<AnyValue>> {
    if v.is_none() {
        return Ok(None);
    }
    if v.is_instance_of::<PyBool>() {
        return Ok(Some(AnyValue::Boolean(v.extract()?)));
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(Some(match v.extract::<i64>() {
            Ok(i) => AnyValue::Int(i),
            Err(_) => AnyValue::String(text(v)?.into()),
        }));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(Some(AnyValue::Double(v.extract()?)));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(Some(AnyValue::String(StringValue::from(text(v)?))));
    }
    if v.is_instance_of::<PyBytes>() || v.is_instance_of::<PyByteArray>() {
        return Ok(Some(AnyValue::Bytes(Box::new(v.extract()?))));
    }
    if depth >= MAX_DEPTH {
        return Ok(Some(AnyValue::String(text(v)?.into())));
    }
    if let Ok(map) = v.cast::<PyMapping>() {
        let mut out = HashMap::new();
        for item in map.items()?.try_iter()? {
            let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
            // The Python encoder writes an empty value for `None`; so does this.
            let value = any_value(&value, depth + 1)?.unwrap_or(AnyValue::String("".into()));
            out.insert(Key::from(text(&key)?), value);
        }
        return Ok(Some(AnyValue::Map(Box::new(out))));
    }
    if let Ok(items) = v.try_iter() {
        let mut out = Vec::new();
        for item in items {
            if let Some(value) = any_value(&item?, depth + 1)? {
                out.push(value);
            }
        }
        return Ok(Some(AnyValue::ListAny(Box::new(out))));
    }
    Ok(Some(AnyValue::String(text(v)?.into())))
}

/// Nanoseconds since the epoch, if set.
fn time(v: &Bound<'_, PyAny>) -> PyResult<Option<SystemTime>> {
    Ok(v.extract::<Option<u64>>()?
        .map(|n| SystemTime::UNIX_EPOCH + Duration::from_nanos(n)))
}

/// OpenTelemetry's severity number `n` (1 to 24).
fn severity(n: i32) -> Option<Severity> {
    use Severity::*;
    const ALL: [Severity; 24] = [
        Trace, Trace2, Trace3, Trace4, Debug, Debug2, Debug3, Debug4, Info, Info2, Info3, Info4,
        Warn, Warn2, Warn3, Warn4, Error, Error2, Error3, Error4, Fatal, Fatal2, Fatal3, Fatal4,
    ];
    usize::try_from(n - 1)
        .ok()
        .and_then(|i| ALL.get(i).copied())
}

/// `s` for the life of the process (see the module's doc); `None` past [`MAX_INTERNED`].
fn intern(s: &str) -> Option<&'static str> {
    static TEXTS: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut texts = TEXTS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(kept) = texts.get(s) {
        return Some(kept);
    }
    if texts.len() >= MAX_INTERNED {
        return None;
    }
    let kept: &'static str = Box::leak(s.to_owned().into_boxed_str());
    texts.insert(kept);
    Some(kept)
}

fn warn_once() {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        log::warn!(
            "log records: more than {MAX_INTERNED} distinct event names and severity texts; \
             the event names of later records are left out"
        )
    });
}
