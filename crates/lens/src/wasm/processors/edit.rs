//! A span processor's answer (`batch-edit`, `lens:exporter@0.4.0`) checked against its batch
//! and applied to the spans: drops, attributes set and removed, names, status.
//!
//! An answer is checked whole before any span changes: an index out of range or named twice, a
//! change that does not apply to spans, a value spans cannot hold or too many changes on one
//! span refuses the whole answer (the processor's fault: the batch meets its `on_fault`). What
//! a processor can never do through an edit: create spans, change ids, timestamps, events or
//! links.

use std::borrow::Cow;

use opentelemetry::trace::Status;
use opentelemetry::{Array, KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::SpanData;

use crate::bindings::edit_types::{Action, Change, ItemEdit};
use crate::bindings::types::{Status as WitStatus, Value as WitValue};

/// Most changes one answer may make to one span (a processor that sets more attributes than
/// this on one span is refused, rather than growing the span without bound).
pub const MAX_CHANGES_PER_ITEM: usize = 256;

/// Why an answer was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    /// An index past the batch.
    #[error("its answer names item {index}, but the batch has {items}")]
    OutOfRange {
        /// The index named.
        index: u32,
        /// Items in the batch.
        items: usize,
    },
    /// An index named twice.
    #[error("its answer names item {index} twice")]
    Duplicate {
        /// The index named.
        index: u32,
    },
    /// A change of another signal.
    #[error("its answer makes a `{change}` change, which does not apply to {items} (item {index})")]
    NotForSignal {
        /// The change, as the WIT names it.
        change: &'static str,
        /// What the batch holds: `spans`, `log records`.
        items: &'static str,
        /// The item.
        index: u32,
    },
    /// A new event name past the process's bound of distinct ones.
    #[error(
        "its answer renames item {index} to a new event name, past the {MAX_EVENT_NAMES} distinct names processors may set in a process"
    )]
    TooManyEventNames {
        /// The item.
        index: u32,
    },
    /// A value an attribute of a span or a metric cannot hold.
    #[error(
        "its answer sets attribute `{key}` of item {index} to bytes, which an attribute of {items} cannot hold"
    )]
    Bytes {
        /// What the batch holds: `spans`, `metrics`.
        items: &'static str,
        /// The attribute.
        key: String,
        /// The item.
        index: u32,
    },
    /// Too many changes on one item.
    #[error("its answer makes {count} changes to item {index} (at most {MAX_CHANGES_PER_ITEM})")]
    TooManyChanges {
        /// The item.
        index: u32,
        /// Its changes.
        count: usize,
    },
}

/// Most distinct event names processors may give log records in one process: the SDK's
/// records hold a `&'static str`, so each new name is kept for the life of the process.
pub const MAX_EVENT_NAMES: usize = 1024;

/// Checks `edits` against a batch of `items` spans.
pub(crate) fn check(edits: &[ItemEdit], items: usize) -> Result<(), EditError> {
    check_with(edits, items, |index, change| match change {
        Change::SetBody(_) => Err(EditError::NotForSignal {
            change: "set-body",
            items: "spans",
            index,
        }),
        Change::SetAttribute(kv) if matches!(kv.value, WitValue::Bytes(_)) => {
            Err(EditError::Bytes {
                items: "spans",
                key: kv.key.clone(),
                index,
            })
        }
        _ => Ok(()),
    })
}

/// Checks the indices of `edits` against a batch of `items` items, the number of changes per
/// item, and each change with `change`.
pub(crate) fn check_with(
    edits: &[ItemEdit],
    items: usize,
    change: impl Fn(u32, &Change) -> Result<(), EditError>,
) -> Result<(), EditError> {
    if edits.is_empty() {
        return Ok(());
    }
    let mut seen = vec![false; items];
    for edit in edits {
        let index = edit.index;
        let Some(slot) = seen.get_mut(index as usize) else {
            return Err(EditError::OutOfRange { index, items });
        };
        if std::mem::replace(slot, true) {
            return Err(EditError::Duplicate { index });
        }
        let Action::Edit(changes) = &edit.action else {
            continue;
        };
        if changes.len() > MAX_CHANGES_PER_ITEM {
            return Err(EditError::TooManyChanges {
                index,
                count: changes.len(),
            });
        }
        for c in changes {
            change(index, c)?;
        }
    }
    Ok(())
}

/// Applies `edits` (checked whole first) to `spans`: the spans dropped, or why the answer was
/// refused (the spans then untouched).
pub(crate) fn apply(spans: &mut Vec<SpanData>, edits: Vec<ItemEdit>) -> Result<u64, EditError> {
    check(&edits, spans.len())?;
    Ok(apply_checked(spans, edits, change))
}

/// Applies checked `edits` to `items`, each item's changes with `change`: the items dropped.
pub(crate) fn apply_checked<T>(
    items: &mut Vec<T>,
    edits: Vec<ItemEdit>,
    change: impl Fn(&mut T, Change),
) -> u64 {
    let mut dropped = Vec::new();
    for edit in edits {
        let item = &mut items[edit.index as usize];
        match edit.action {
            Action::Drop => dropped.push(edit.index as usize),
            Action::Edit(changes) => changes.into_iter().for_each(|c| change(item, c)),
        }
    }
    if dropped.is_empty() {
        return 0;
    }
    dropped.sort_unstable();
    let mut next = dropped.iter().peekable();
    let mut i = 0;
    items.retain(|_| {
        let drop = next.next_if(|&&d| d == i).is_some();
        i += 1;
        !drop
    });
    dropped.len() as u64
}

/// Applies one change (checked) to `span`.
fn change(span: &mut SpanData, change: Change) {
    match change {
        Change::SetAttribute(kv) => {
            let value = value(kv.value);
            match span
                .attributes
                .iter_mut()
                .find(|a| a.key.as_str() == kv.key)
            {
                Some(existing) => existing.value = value,
                None => span.attributes.push(KeyValue::new(kv.key, value)),
            }
        }
        Change::RemoveAttribute(key) => span.attributes.retain(|a| a.key.as_str() != key),
        Change::Rename(name) => span.name = Cow::Owned(name),
        Change::SetStatus(status) => {
            span.status = match status {
                WitStatus::Unset => Status::Unset,
                WitStatus::Ok => Status::Ok,
                WitStatus::Error(description) => Status::error(description),
            }
        }
        // Refused by `check` before any change is applied.
        Change::SetBody(_) => {}
    }
}

/// A WIT attribute value as OpenTelemetry's (bytes, which a span attribute cannot hold, are
/// refused by `check` before any change is applied).
pub(crate) fn value(v: WitValue) -> Value {
    let strings = |v: Vec<String>| v.into_iter().map(StringValue::from).collect();
    match v {
        WitValue::String(s) => Value::String(s.into()),
        WitValue::Bool(b) => Value::Bool(b),
        WitValue::S64(i) => Value::I64(i),
        WitValue::F64(f) => Value::F64(f),
        WitValue::StringArray(v) => Value::Array(Array::String(strings(v))),
        WitValue::BoolArray(v) => Value::Array(Array::Bool(v)),
        WitValue::S64Array(v) => Value::Array(Array::I64(v)),
        WitValue::F64Array(v) => Value::Array(Array::F64(v)),
        // Refused by `check` before any change is applied.
        WitValue::Bytes(_) => Value::String(StringValue::from("")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::types::KeyValue as WitKeyValue;

    fn spans(n: usize) -> Vec<SpanData> {
        let mut batch = crate::testing::spans::many(n);
        for (i, s) in batch.iter_mut().enumerate() {
            s.name = format!("s{i}").into();
            s.attributes = vec![KeyValue::new("keep", 1), KeyValue::new("secret", "x")];
        }
        batch
    }

    fn edit(index: u32, changes: Vec<Change>) -> ItemEdit {
        ItemEdit {
            index,
            action: Action::Edit(changes),
        }
    }

    #[test]
    fn drops_and_changes_land_on_the_items_named() {
        let mut batch = spans(4);
        let edits = vec![
            ItemEdit {
                index: 2,
                action: Action::Drop,
            },
            edit(
                1,
                vec![
                    Change::RemoveAttribute("secret".into()),
                    Change::SetAttribute(WitKeyValue {
                        key: "keep".into(),
                        value: WitValue::String("changed".into()),
                    }),
                    Change::SetAttribute(WitKeyValue {
                        key: "new".into(),
                        value: WitValue::S64Array(vec![1, 2]),
                    }),
                    Change::Rename("renamed".into()),
                    Change::SetStatus(WitStatus::Error("bad".into())),
                ],
            ),
            ItemEdit {
                index: 0,
                action: Action::Drop,
            },
        ];
        assert_eq!(apply(&mut batch, edits), Ok(2));
        let names: Vec<&str> = batch.iter().map(|s| s.name.as_ref()).collect();
        assert_eq!(names, ["renamed", "s3"]);
        assert_eq!(
            batch[0].attributes,
            [
                KeyValue::new("keep", "changed"),
                KeyValue::new("new", Value::Array(Array::I64(vec![1, 2])))
            ]
        );
        assert_eq!(batch[0].status, Status::error("bad"));
        assert_eq!(batch[1].attributes.len(), 2);
    }

    #[test]
    fn a_bad_answer_changes_nothing() {
        let rename = |i| edit(i, vec![Change::Rename("x".into())]);
        let cases = [
            (
                vec![rename(0), rename(3)],
                "its answer names item 3, but the batch has 3",
            ),
            (vec![rename(1), rename(1)], "its answer names item 1 twice"),
            (
                vec![rename(0), edit(1, vec![Change::SetBody("b".into())])],
                "its answer makes a `set-body` change, which does not apply to spans (item 1)",
            ),
            (
                vec![edit(
                    2,
                    vec![Change::SetAttribute(WitKeyValue {
                        key: "k".into(),
                        value: WitValue::Bytes(vec![1]),
                    })],
                )],
                "its answer sets attribute `k` of item 2 to bytes, which an attribute of spans cannot hold",
            ),
            (
                vec![edit(
                    0,
                    vec![Change::Rename("y".into()); MAX_CHANGES_PER_ITEM + 1],
                )],
                "its answer makes 257 changes to item 0 (at most 256)",
            ),
        ];
        for (edits, message) in cases {
            let mut batch = spans(3);
            let before = batch.clone();
            assert_eq!(apply(&mut batch, edits).unwrap_err().to_string(), message);
            assert_eq!(batch, before);
        }
    }

    #[test]
    fn an_empty_answer_passes_the_batch_as_it_is() {
        let mut batch = spans(3);
        let before = batch.clone();
        assert_eq!(apply(&mut batch, Vec::new()), Ok(0));
        assert_eq!(batch, before);
    }
}
