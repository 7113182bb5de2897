//! The conformance cases of a span processor: an empty batch answered with no edit, every
//! test batch answered without a fault and with an answer the host accepts, and each answer's
//! edits found on the spans as stated (checked here from the answer, independently of the
//! host's own application).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry::trace::Status;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SpanData;

use super::suites::Cases;
use super::{NAME, SignalReport};
use crate::batch::ExporterStats;
use crate::bindings::edit_types::{Action, Change, ItemEdit};
use crate::bindings::types::Status as WitStatus;
use crate::config::{ProcessorSpec, WasmExporterSpec, WasmProcessorSpec};
use crate::error::LensError;
use crate::testing::spans;
use crate::wasm::processors::edit;
use crate::wasm::{GuestOutputBuffer, GuestOutputCopy, Signal, WasmProcessor};

/// What an item's changes promise about it once applied.
#[derive(Default)]
struct Promised {
    name: Option<String>,
    status: Option<Status>,
    /// Key → the value it ends with (`None`: removed).
    attributes: BTreeMap<String, Option<opentelemetry::Value>>,
}

fn promised(changes: &[Change]) -> Promised {
    let mut p = Promised::default();
    for change in changes {
        match change {
            Change::Rename(name) => p.name = Some(name.clone()),
            Change::SetStatus(s) => {
                p.status = Some(match s {
                    WitStatus::Unset => Status::Unset,
                    WitStatus::Ok => Status::Ok,
                    WitStatus::Error(d) => Status::error(d.clone()),
                })
            }
            Change::SetAttribute(kv) => {
                p.attributes
                    .insert(kv.key.clone(), Some(edit::value(kv.value.clone())));
            }
            Change::RemoveAttribute(key) => {
                p.attributes.insert(key.clone(), None);
            }
            Change::SetBody(_) => {}
        }
    }
    p
}

/// Whether `after` (the output) keeps what `edits` promise about `before`: dropped spans gone,
/// the others in order, the edited ones with their stated name, status and attributes, and
/// every span not named unchanged.
fn applied_as_stated(
    before: &[SpanData],
    edits: &[ItemEdit],
    after: &[SpanData],
) -> Result<(), String> {
    let (by_index, kept) = kept_as_stated(before, edits, after.len())?;
    for ((i, original), out) in kept.into_iter().zip(after) {
        let Some(Action::Edit(changes)) = by_index.get(&(i as u32)) else {
            if original != out {
                return Err(format!("span {i} changed, but the answer does not name it"));
            }
            continue;
        };
        let p = promised(changes);
        if out.name.as_ref() != p.name.as_deref().unwrap_or(original.name.as_ref()) {
            return Err(format!("span {i} is named `{}`", out.name));
        }
        if out.status != p.status.unwrap_or_else(|| original.status.clone()) {
            return Err(format!("span {i} has status {:?}", out.status));
        }
        for (key, wanted) in &p.attributes {
            let found = out.attributes.iter().find(|a| a.key.as_str() == key);
            if found.map(|a| &a.value) != wanted.as_ref() {
                return Err(format!(
                    "span {i}: attribute `{key}` is {found:?}, not {wanted:?}"
                ));
            }
        }
        if out.span_context != original.span_context || out.events != original.events {
            return Err(format!("span {i}: its identity or events changed"));
        }
    }
    Ok(())
}

/// An answer by index, and the items it keeps (with their index), in order.
pub(super) type Kept<'a, 'e, T> = (BTreeMap<u32, &'e Action>, Vec<(usize, &'a T)>);

/// [`Kept`] of `before`; `Err` when `left` items are not that many.
pub(super) fn kept_as_stated<'a, 'e, T>(
    before: &'a [T],
    edits: &'e [ItemEdit],
    left: usize,
) -> Result<Kept<'a, 'e, T>, String> {
    let by_index: BTreeMap<u32, &Action> = edits.iter().map(|e| (e.index, &e.action)).collect();
    let kept: Vec<(usize, &T)> = before
        .iter()
        .enumerate()
        .filter(|(i, _)| !matches!(by_index.get(&(*i as u32)), Some(Action::Drop)))
        .collect();
    if kept.len() != left {
        return Err(format!(
            "{left} items left where the answer keeps {}",
            kept.len()
        ));
    }
    Ok((by_index, kept))
}

/// One batch through the processor: no fault, an answer the host accepts, applied as stated.
fn one(p: &WasmProcessor, batch: Vec<SpanData>) -> Result<Duration, String> {
    let started = Instant::now();
    let (spans, answer) = p.answer(batch);
    let elapsed = started.elapsed();
    let edits = answer?;
    let mut after = spans.clone();
    edit::apply(&mut after, edits.clone()).map_err(|e| format!("the host refuses {e}"))?;
    applied_as_stated(&spans, &edits, &after)?;
    Ok(elapsed)
}

/// A processor of `signal` started for its suite, and its cases begun: `init`, then an empty
/// batch, which `empty` sends (it must be answered with no edit).
pub(super) fn begin(
    spec: &WasmExporterSpec,
    signal: Signal,
    resource: &Resource,
    output: &Arc<GuestOutputBuffer>,
    empty: impl FnOnce(&WasmProcessor) -> Result<Vec<ItemEdit>, String>,
) -> Result<(WasmProcessor, Arc<ExporterStats>, Cases), LensError> {
    let copy = GuestOutputCopy::Sink(output.clone());
    let spec = ProcessorSpec::Wasm(WasmProcessorSpec {
        component: spec.clone(),
        ..Default::default()
    });
    let (p, stats) = WasmProcessor::from_config_with_output(NAME, &spec, signal, resource, copy)?;
    let mut c = Cases::new(output);
    let started = Instant::now();
    let outcome = match empty(&p) {
        Ok(edits) if edits.is_empty() => Ok(started.elapsed()),
        Ok(edits) => Err(format!("answered {} edits to an empty batch", edits.len())),
        Err(e) => Err(e),
    };
    c.case("empty batch: no edit", outcome);
    Ok((p, stats, c))
}

/// The bulk case: `items` through `one` in batches of 512, its cost per item kept.
pub(super) fn bulk<T: Clone>(
    c: &mut Cases,
    name: &'static str,
    items: &[T],
    one: impl Fn(Vec<T>) -> Result<Duration, String>,
) {
    c.bulk_outcome(name, items.len() as u64, || {
        let mut total = Duration::ZERO;
        for chunk in items.chunks(512) {
            total += one(chunk.to_vec())?;
        }
        Ok(total)
    });
}

/// The suite's report, the processor shut down.
pub(super) fn end(
    p: WasmProcessor,
    stats: &ExporterStats,
    c: Cases,
    signal: Signal,
) -> SignalReport {
    let encoding = p.encoding();
    p.shutdown(Duration::from_secs(5));
    c.report(signal, encoding, stats)
}

/// Span processors: an empty batch, one span, every value type, unicode, events/links/status,
/// 10k spans in batches of 512, shutdown.
pub(super) fn span_processor(
    spec: &WasmExporterSpec,
    resource: &Resource,
    output: &Arc<GuestOutputBuffer>,
) -> Result<SignalReport, LensError> {
    let (p, stats, mut c) = begin(spec, Signal::Traces, resource, output, |p| {
        p.answer(Vec::new()).1
    })?;
    c.case("one span", one(&p, spans::one()));
    c.case(
        "every attribute value type",
        one(&p, spans::every_value_type()),
    );
    c.case("unicode names and values", one(&p, spans::unicode()));
    c.case(
        "events, links and status",
        one(&p, spans::events_links_status()),
    );
    let many = spans::many(10_240);
    bulk(&mut c, "10k spans in batches of 512", &many, |b| one(&p, b));
    Ok(end(p, &stats, c, Signal::Traces))
}
