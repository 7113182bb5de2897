//! A log processor's answer checked against its batch and applied to the records: drops,
//! attributes set and removed, the event name (`rename`), the body (`set-body`).
//!
//! The SDK's records can gain an attribute but not lose one, and hold their event name as a
//! `&'static str`: a record whose attributes change is rebuilt (every other field copied), and
//! a new event name is kept for the life of the process, at most [`MAX_EVENT_NAMES`] of them
//! (an answer past that is refused whole, as any other bad answer).

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, LoggerProvider as _};
use opentelemetry::{Key, StringValue};
use opentelemetry_sdk::logs::{SdkLogRecord, SdkLogger, SdkLoggerProvider};

use super::edit::{EditError, MAX_EVENT_NAMES, check_with};
use crate::bindings::edit_types::{Change, ItemEdit};
use crate::bindings::types::Value as WitValue;

/// A queued log record and the scope of its logger.
pub use crate::logs::Queued as LogItem;

/// The event names processors set, kept for the process's life.
static EVENT_NAMES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);

/// `name` as a `&'static str`, kept once; `None` past [`MAX_EVENT_NAMES`] distinct names.
fn event_name(name: &str) -> Option<&'static str> {
    let mut names = EVENT_NAMES.lock().unwrap_or_else(|p| p.into_inner());
    let names = names.get_or_insert_with(HashSet::new);
    if let Some(kept) = names.get(name) {
        return Some(kept);
    }
    if names.len() >= MAX_EVENT_NAMES {
        return None;
    }
    let kept: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(kept);
    Some(kept)
}

/// Checks `edits` against a batch of `items` log records (new event names are kept here).
pub(crate) fn check(edits: &[ItemEdit], items: usize) -> Result<(), EditError> {
    check_with(edits, items, |index, change| match change {
        Change::SetStatus(_) => Err(EditError::NotForSignal {
            change: "set-status",
            items: "log records",
            index,
        }),
        Change::Rename(name) if event_name(name).is_none() => {
            Err(EditError::TooManyEventNames { index })
        }
        _ => Ok(()),
    })
}

/// Applies `edits` (checked whole first) to `records`: the records dropped, or why the answer
/// was refused (the records then untouched).
pub(crate) fn apply(records: &mut Vec<LogItem>, edits: Vec<ItemEdit>) -> Result<u64, EditError> {
    check(&edits, records.len())?;
    Ok(super::edit::apply_checked(
        records,
        edits,
        |(record, _), c| change(record, c),
    ))
}

/// Applies one checked change to `record`.
fn change(record: &mut SdkLogRecord, change: Change) {
    match change {
        Change::SetAttribute(kv) => {
            let key = Key::from(kv.key);
            let value = any_value(kv.value);
            let mut attributes = attributes(record);
            match attributes.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => *v = value,
                None => attributes.push((key, value)),
            }
            *record = rebuilt(record, attributes);
        }
        Change::RemoveAttribute(key) => {
            if record.attributes_iter().any(|(k, _)| k.as_str() == key) {
                let mut attributes = attributes(record);
                attributes.retain(|(k, _)| k.as_str() != key);
                *record = rebuilt(record, attributes);
            }
        }
        Change::Rename(name) => {
            // Kept by `check`.
            if let Some(name) = event_name(&name) {
                record.set_event_name(name);
            }
        }
        Change::SetBody(body) => record.set_body(AnyValue::String(body.into())),
        // Refused by `check` before any change is applied.
        Change::SetStatus(_) => {}
    }
}

fn attributes(record: &SdkLogRecord) -> Vec<(Key, AnyValue)> {
    record.attributes_iter().cloned().collect()
}

/// A logger of no provider's processors: where rebuilt records come from (the SDK's records
/// have no public constructor).
fn logger() -> &'static SdkLogger {
    static LOGGER: OnceLock<SdkLogger> = OnceLock::new();
    LOGGER.get_or_init(|| {
        SdkLoggerProvider::builder()
            .build()
            .logger("lens.processors")
    })
}

/// `record` with `attributes` in place of its own, every other field copied.
fn rebuilt(record: &SdkLogRecord, attributes: Vec<(Key, AnyValue)>) -> SdkLogRecord {
    let mut out = logger().create_log_record();
    if let Some(name) = record.event_name() {
        out.set_event_name(name);
    }
    if let Some(target) = record.target() {
        out.set_target(target.clone());
    }
    if let Some(t) = record.timestamp() {
        out.set_timestamp(t);
    }
    if let Some(t) = record.observed_timestamp() {
        out.set_observed_timestamp(t);
    }
    if let Some(text) = record.severity_text() {
        out.set_severity_text(text);
    }
    if let Some(number) = record.severity_number() {
        out.set_severity_number(number);
    }
    if let Some(body) = record.body() {
        out.set_body(body.clone());
    }
    if let Some(cx) = record.trace_context() {
        out.set_trace_context(cx.trace_id, cx.span_id, cx.trace_flags);
    }
    out.add_attributes(attributes);
    out
}

/// A WIT attribute value as a log record's.
fn any_value(v: WitValue) -> AnyValue {
    let list = |items: Vec<AnyValue>| AnyValue::ListAny(Box::new(items));
    match v {
        WitValue::String(s) => AnyValue::String(StringValue::from(s)),
        WitValue::Bool(b) => AnyValue::Boolean(b),
        WitValue::S64(i) => AnyValue::Int(i),
        WitValue::F64(f) => AnyValue::Double(f),
        WitValue::Bytes(b) => AnyValue::Bytes(Box::new(b)),
        WitValue::StringArray(a) => {
            list(a.into_iter().map(|s| AnyValue::String(s.into())).collect())
        }
        WitValue::BoolArray(a) => list(a.into_iter().map(AnyValue::Boolean).collect()),
        WitValue::S64Array(a) => list(a.into_iter().map(AnyValue::Int).collect()),
        WitValue::F64Array(a) => list(a.into_iter().map(AnyValue::Double).collect()),
    }
}
