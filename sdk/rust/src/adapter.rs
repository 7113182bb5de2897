//! The glue [`crate::export!`] expands to: the bindings' `Guest` functions, each forwarding to the
//! exporter kept in one slot per signal. The host calls one function at a time per instance, and
//! an instance serves one signal, so a thread-local slot per signal is all the state there is.

use std::cell::RefCell;
use std::thread::LocalKey;

use crate::bindings::logs::lens::exporter::log_types::LogBatch as WitLogBatch;
use crate::bindings::metrics::lens::exporter::metric_types::{
    MetricBatch as WitMetricBatch, MetricPreferences,
};
use crate::bindings::processors::lens::exporter::edit_types::ItemEdit;
use crate::bindings::spans::lens::exporter::types::{
    Batch, Encoding as WitEncoding, ExportError as WitExportError, Resource,
};
use crate::export::{Config, ExportError};
use crate::logs::{LogBatch, LogExporter};
use crate::metrics::{MetricBatch, MetricExporter};
use crate::process::{Edits, LogProcessor, MetricProcessor, SpanProcessor};
use crate::trace::{SpanBatch, SpanExporter};
use crate::wire;

/// Where one signal's exporter lives between calls.
pub struct Slot<T>(RefCell<State<T>>);

enum State<T> {
    Uninitialized,
    Live(T),
    ShutDown,
}

impl<T> Slot<T> {
    /// An empty slot (before `init`).
    pub const fn new() -> Self {
        Slot(RefCell::new(State::Uninitialized))
    }
}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Self::new()
    }
}

type Key<T> = &'static LocalKey<Slot<T>>;

/// Runs `f` on the live exporter; an exporter shut down (or never built) refuses the call.
fn with_live<T, R>(
    slot: Key<T>,
    refused: impl FnOnce(&str) -> R,
    f: impl FnOnce(&mut T) -> R,
) -> R {
    slot.with(|s| match &mut *s.0.borrow_mut() {
        State::Live(exporter) => f(exporter),
        State::ShutDown => refused("the exporter is shut down"),
        State::Uninitialized => refused("the exporter was not initialized"),
    })
}

/// Runs an export over a view of the batch; a batch the views could not read is rejected.
fn export_with<T>(
    slot: Key<T>,
    export: impl FnOnce(&mut T) -> Result<(), ExportError>,
) -> Result<(), WitExportError> {
    wire::reset_malformed();
    let refused = |why: &str| Err(ExportError::rejected(why));
    let result = with_live(slot, refused, export);
    if wire::malformed() {
        return Err(WitExportError::Rejected(
            "the batch's OTLP protobuf bytes are malformed: some items could not be read".into(),
        ));
    }
    result.map_err(ExportError::wit)
}

fn otlp_json_refused() -> ExportError {
    ExportError::rejected("the Rust SDK reads typed or OTLP protobuf batches, not OTLP/JSON")
}

/// Builds the exporter into its slot; `answer` reads what `init` returns from it.
fn init<T, R>(
    slot: Key<T>,
    exporter: Result<T, String>,
    answer: impl FnOnce(&T) -> R,
) -> Result<R, String> {
    let exporter = exporter?;
    let answer = answer(&exporter);
    slot.with(|s| *s.0.borrow_mut() = State::Live(exporter));
    Ok(answer)
}

/// `span-exporter.init`.
pub fn span_init<T: SpanExporter>(
    slot: Key<T>,
    settings: Vec<(String, String)>,
    resource: Resource,
) -> Result<WitEncoding, String> {
    init(slot, T::new(Config::new(settings, resource)), |e| {
        e.encoding().wit()
    })
}

/// `span-exporter.export`.
pub fn span_export<T: SpanExporter>(slot: Key<T>, batch: Batch) -> Result<(), WitExportError> {
    export_with(slot, |exporter| match &batch {
        Batch::Typed(groups) => exporter.export(SpanBatch::from_typed(groups)),
        Batch::OtlpProtobuf(bytes) => exporter.export(SpanBatch::from_otlp_protobuf(bytes)),
        Batch::OtlpJson(_) => Err(otlp_json_refused()),
    })
}

/// `metric-exporter.init`.
pub fn metric_init<T: MetricExporter>(
    slot: Key<T>,
    settings: Vec<(String, String)>,
    resource: Resource,
) -> Result<MetricPreferences, String> {
    init(slot, T::new(Config::new(settings, resource)), |e| {
        MetricPreferences {
            encoding: e.encoding().wit(),
            temporality: e.temporality(),
        }
    })
}

/// `metric-exporter.export`.
pub fn metric_export<T: MetricExporter>(
    slot: Key<T>,
    batch: WitMetricBatch,
) -> Result<(), WitExportError> {
    export_with(slot, |exporter| match &batch {
        WitMetricBatch::Typed(scopes) => exporter.export(MetricBatch::Scopes(scopes)),
        WitMetricBatch::OtlpProtobuf(bytes) => exporter.export(MetricBatch::OtlpProtobuf(bytes)),
        WitMetricBatch::OtlpJson(_) => Err(otlp_json_refused()),
    })
}

/// `log-exporter.init`.
pub fn log_init<T: LogExporter>(
    slot: Key<T>,
    settings: Vec<(String, String)>,
    resource: Resource,
) -> Result<WitEncoding, String> {
    init(slot, T::new(Config::new(settings, resource)), |e| {
        e.encoding().wit()
    })
}

/// `log-exporter.export`.
pub fn log_export<T: LogExporter>(slot: Key<T>, batch: WitLogBatch) -> Result<(), WitExportError> {
    export_with(slot, |exporter| match &batch {
        WitLogBatch::Typed(scopes) => exporter.export(LogBatch::Scopes(scopes)),
        WitLogBatch::OtlpProtobuf(bytes) => exporter.export(LogBatch::OtlpProtobuf(bytes)),
        WitLogBatch::OtlpJson(_) => Err(otlp_json_refused()),
    })
}

/// `span-processor.init`.
pub fn span_processor_init<T: SpanProcessor>(
    slot: Key<T>,
    settings: Vec<(String, String)>,
    resource: Resource,
) -> Result<WitEncoding, String> {
    processor_init(slot, T::new(Config::new(settings, resource)), T::encoding)
}

/// A processor's `init`: `processor` into its slot, answering the encoding it asks for.
fn processor_init<T>(
    slot: Key<T>,
    processor: Result<T, String>,
    encoding: fn(&T) -> crate::export::Encoding,
) -> Result<WitEncoding, String> {
    init(slot, processor, |p| encoding(p).wit())
}

/// A processor's `process`: `run` gives the live processor the batch and the edits to fill;
/// its error, or an OTLP batch the views could not read, is the call's error (the host then
/// applies the entry's `on_fault`).
fn process_with<T>(
    slot: Key<T>,
    run: impl FnOnce(&mut T, &mut Edits) -> Result<(), String>,
) -> Result<Vec<ItemEdit>, String> {
    wire::reset_malformed();
    let mut edits = Edits::new();
    with_live(slot, |why| Err(why.to_string()), |p| run(p, &mut edits))?;
    if wire::malformed() {
        return Err("the batch's OTLP protobuf bytes are malformed".into());
    }
    Ok(edits.into_wit())
}

const NOT_OTLP_JSON: &str = "the Rust SDK reads typed or OTLP protobuf batches, not OTLP/JSON";

/// `span-processor.process`.
pub fn span_process<T: SpanProcessor>(slot: Key<T>, batch: Batch) -> Result<Vec<ItemEdit>, String> {
    process_with(slot, |processor, edits| match &batch {
        Batch::Typed(groups) => processor.process(SpanBatch::from_typed(groups), edits),
        Batch::OtlpProtobuf(bytes) => {
            processor.process(SpanBatch::from_otlp_protobuf(bytes), edits)
        }
        Batch::OtlpJson(_) => Err(NOT_OTLP_JSON.into()),
    })
}

/// `metric-processor.init`.
pub fn metric_processor_init<T: MetricProcessor>(
    slot: Key<T>,
    settings: Vec<(String, String)>,
    resource: Resource,
) -> Result<WitEncoding, String> {
    processor_init(slot, T::new(Config::new(settings, resource)), T::encoding)
}

/// `metric-processor.process`.
pub fn metric_process<T: MetricProcessor>(
    slot: Key<T>,
    batch: WitMetricBatch,
) -> Result<Vec<ItemEdit>, String> {
    process_with(slot, |processor, edits| match &batch {
        WitMetricBatch::Typed(scopes) => processor.process(MetricBatch::Scopes(scopes), edits),
        WitMetricBatch::OtlpProtobuf(bytes) => {
            processor.process(MetricBatch::OtlpProtobuf(bytes), edits)
        }
        WitMetricBatch::OtlpJson(_) => Err(NOT_OTLP_JSON.into()),
    })
}

/// `log-processor.init`.
pub fn log_processor_init<T: LogProcessor>(
    slot: Key<T>,
    settings: Vec<(String, String)>,
    resource: Resource,
) -> Result<WitEncoding, String> {
    processor_init(slot, T::new(Config::new(settings, resource)), T::encoding)
}

/// `log-processor.process`.
pub fn log_process<T: LogProcessor>(
    slot: Key<T>,
    batch: WitLogBatch,
) -> Result<Vec<ItemEdit>, String> {
    process_with(slot, |processor, edits| match &batch {
        WitLogBatch::Typed(scopes) => processor.process(LogBatch::Scopes(scopes), edits),
        WitLogBatch::OtlpProtobuf(bytes) => processor.process(LogBatch::OtlpProtobuf(bytes), edits),
        WitLogBatch::OtlpJson(_) => Err(NOT_OTLP_JSON.into()),
    })
}

/// `force-flush`, for any signal.
pub fn force_flush<T>(slot: Key<T>, flush: fn(&mut T) -> Result<(), String>) -> Result<(), String> {
    with_live(slot, |why| Err(why.to_string()), flush)
}

/// `shutdown`, for any signal: the exporter's own shutdown, then it is dropped; a second
/// shutdown is an error.
pub fn shutdown<T>(slot: Key<T>, shutdown: fn(&mut T) -> Result<(), String>) -> Result<(), String> {
    slot.with(|s| {
        let state = std::mem::replace(&mut *s.0.borrow_mut(), State::ShutDown);
        match state {
            State::Live(mut exporter) => shutdown(&mut exporter),
            State::ShutDown => Err("already shut down".into()),
            State::Uninitialized => Err("the exporter was not initialized".into()),
        }
    })
}
