//! The conformance cases of a log processor, as a span processor's (`processors`): an empty
//! batch answered with no edit, every test batch answered without a fault and accepted, and
//! each answer's edits found on the records as stated (checked from the answer).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry::logs::AnyValue;
use opentelemetry_sdk::Resource;

use super::SignalReport;
use super::processors::{begin, bulk, end, kept_as_stated};
use crate::bindings::edit_types::{Action, Change, ItemEdit};
use crate::config::WasmExporterSpec;
use crate::error::LensError;
use crate::testing::{LogRecords, every_log_body, many_logs};
use crate::wasm::processors::log_edit;
use crate::wasm::{GuestOutputBuffer, Signal, WasmProcessor};

/// Whether `after` keeps what `edits` promise about `before`: dropped records gone, the others
/// in order, the edited ones with their stated event name, body and attributes (by key), every
/// record not named unchanged.
fn applied_as_stated(
    before: &LogRecords,
    edits: &[ItemEdit],
    after: &LogRecords,
) -> Result<(), String> {
    let (by_index, kept) = kept_as_stated(before, edits, after.len())?;
    for ((i, original), out) in kept.into_iter().zip(after) {
        let Some(Action::Edit(changes)) = by_index.get(&(i as u32)) else {
            if original != out {
                return Err(format!(
                    "record {i} changed, but the answer does not name it"
                ));
            }
            continue;
        };
        let record = &out.0;
        // The last rename and body set are what the record ends with.
        let name = changes.iter().rev().find_map(|c| match c {
            Change::Rename(name) => Some(name.as_str()),
            _ => None,
        });
        let body = changes.iter().rev().find_map(|c| match c {
            Change::SetBody(text) => Some(AnyValue::String(text.clone().into())),
            _ => None,
        });
        if name.is_some_and(|n| record.event_name() != Some(n)) {
            return Err(format!("record {i} is not renamed as stated"));
        }
        if body.is_some_and(|b| record.body() != Some(&b)) {
            return Err(format!("record {i} does not have the body stated"));
        }
        let mut attributes: BTreeMap<&str, bool> = BTreeMap::new();
        for change in changes.iter() {
            match change {
                Change::SetAttribute(kv) => attributes.insert(kv.key.as_str(), true),
                Change::RemoveAttribute(key) => attributes.insert(key.as_str(), false),
                _ => None,
            };
        }
        for (key, present) in attributes {
            if record.attributes_iter().any(|(k, _)| k.as_str() == key) != present {
                return Err(format!("record {i}: attribute `{key}` is not as stated"));
            }
        }
    }
    Ok(())
}

/// One batch through the processor: no fault, an answer the host accepts, applied as stated.
fn one(p: &WasmProcessor, batch: LogRecords) -> Result<Duration, String> {
    let started = Instant::now();
    let edits = p.answer_logs(&batch)?;
    let elapsed = started.elapsed();
    let mut after = batch.clone();
    log_edit::apply(&mut after, edits.clone()).map_err(|e| format!("the host refuses {e}"))?;
    applied_as_stated(&batch, &edits, &after)?;
    Ok(elapsed)
}

/// Log processors: an empty batch, one record per body type, 10k records in batches of 512.
pub(super) fn log_processor(
    spec: &WasmExporterSpec,
    resource: &Resource,
    output: &Arc<GuestOutputBuffer>,
) -> Result<SignalReport, LensError> {
    let (p, stats, mut c) = begin(spec, Signal::Logs, resource, output, |p| p.answer_logs(&[]))?;
    c.case("every body type", one(&p, every_log_body()));
    let many = many_logs(10_240);
    bulk(&mut c, "10k records in batches of 512", &many, |b| {
        one(&p, b)
    });
    Ok(end(p, &stats, c, Signal::Logs))
}
