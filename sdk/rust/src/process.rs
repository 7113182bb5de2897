//! The processor traits (`lens:exporter@0.4.0`: `span-processor`, `metric-processor`,
//! `log-processor`) and the edits they answer with.
//!
//! A processor sees each batch before the exporters it applies to and says, item by item
//! (by index, in the order of [`SpanBatch::spans`], of the metrics of [`MetricBatch::Scopes`],
//! of [`LogBatch::records`]), what changes: dropped, attributes set or removed, renamed, status
//! set (spans), body set (log records). Items it does not name pass unchanged; a processor that
//! names none answers an empty list, and nothing is copied back to the host.
//!
//! ```no_run
//! use lens_exporter_sdk::{Config, Edits, SpanBatch, SpanProcessor};
//!
//! /// Drops the spans named in the `names` setting.
//! struct Quiet {
//!     names: Vec<String>,
//! }
//!
//! impl SpanProcessor for Quiet {
//!     fn new(config: Config) -> Result<Self, String> {
//!         let names = config.setting("names").unwrap_or("").split(',').map(String::from);
//!         Ok(Quiet { names: names.collect() })
//!     }
//!
//!     fn process(&mut self, batch: SpanBatch<'_>, edits: &mut Edits) -> Result<(), String> {
//!         for (i, span) in batch.spans().enumerate() {
//!             if self.names.iter().any(|n| n == span.name) {
//!                 edits.drop(i);
//!             }
//!         }
//!         Ok(())
//!     }
//! }
//!
//! lens_exporter_sdk::export!(span_processor: Quiet);
//! ```

use std::collections::BTreeMap;

use crate::bindings::processors::lens::exporter::edit_types::{Action, Change, ItemEdit};
use crate::bindings::spans::lens::exporter::types;
use crate::export::{Config, Encoding};
use crate::logs::LogBatch;
use crate::metrics::MetricBatch;
use crate::trace::SpanBatch;

/// A span processor: one value per instance, built by [`SpanProcessor::new`] when the host
/// calls `init`. An `Err` from `process` (or a panic) sends the batch on unprocessed, or drops
/// it, as the entry's `on_fault` says.
pub trait SpanProcessor: Sized + 'static {
    /// Builds the processor from its config entry's settings and the rank's resource.
    fn new(config: Config) -> Result<Self, String>;

    /// The encoding to receive batches in (the views read typed and OTLP protobuf batches).
    fn encoding(&self) -> Encoding {
        Encoding::Typed
    }

    /// Decides the batch: records in `edits` what happens to the spans that change.
    fn process(&mut self, batch: SpanBatch<'_>, edits: &mut Edits) -> Result<(), String>;

    /// Releases everything. The processor is dropped afterwards.
    fn shutdown(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// A log processor: as [`SpanProcessor`], over a batch of log records (index: the record's
/// position in [`LogBatch::records`]).
pub trait LogProcessor: Sized + 'static {
    /// Builds the processor from its config entry's settings and the rank's resource.
    fn new(config: Config) -> Result<Self, String>;

    /// The encoding to receive batches in (typed records by default; the records are read
    /// from typed batches).
    fn encoding(&self) -> Encoding {
        Encoding::Typed
    }

    /// Decides the batch: records in `edits` what happens to the records that change.
    fn process(&mut self, batch: LogBatch<'_>, edits: &mut Edits) -> Result<(), String>;

    /// Releases everything. The processor is dropped afterwards.
    fn shutdown(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// A metric processor: as [`SpanProcessor`], over one collection (index: the metric's position
/// among the metrics of [`MetricBatch::Scopes`], scope after scope). A metric dropped takes its
/// data points with it; an attribute set or removed applies to each of its data points; a
/// rename renames the metric.
pub trait MetricProcessor: Sized + 'static {
    /// Builds the processor from its config entry's settings and the rank's resource.
    fn new(config: Config) -> Result<Self, String>;

    /// The encoding to receive collections in (typed by default: the metrics are read from
    /// typed collections).
    fn encoding(&self) -> Encoding {
        Encoding::Typed
    }

    /// Decides the collection: records in `edits` what happens to the metrics that change.
    fn process(&mut self, batch: MetricBatch<'_>, edits: &mut Edits) -> Result<(), String>;

    /// Releases everything. The processor is dropped afterwards.
    fn shutdown(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// A span's new status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NewStatus {
    /// No status.
    Unset,
    /// Successful.
    Ok,
    /// Failed, with a description.
    Error(String),
}

/// What a processor does to the spans of one batch, by index. A span dropped stays dropped
/// (later changes to it are ignored); changes to one span apply in the order made.
#[derive(Debug, Default)]
pub struct Edits {
    items: BTreeMap<u32, Action>,
}

impl Edits {
    /// No edit yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Drops item `index`: no exporter after this processor sees it.
    pub fn drop(&mut self, index: usize) {
        self.items.insert(index as u32, Action::Drop);
    }

    /// Sets attribute `key` of item `index` (replacing one with that key; on a metric, on each
    /// of its data points), e.g. `edits.set_attribute(i, "cost.centre", "research")`.
    pub fn set_attribute(
        &mut self,
        index: usize,
        key: impl Into<String>,
        value: impl Into<types::Value>,
    ) {
        self.change(
            index,
            Change::SetAttribute(types::KeyValue {
                key: key.into(),
                value: value.into(),
            }),
        );
    }

    /// Removes attribute `key` of item `index`, if it has one (on a metric, from each of its
    /// data points).
    pub fn remove_attribute(&mut self, index: usize, key: impl Into<String>) {
        self.change(index, Change::RemoveAttribute(key.into()));
    }

    /// Renames item `index`: a span, a metric (for a log record: sets its event name).
    pub fn rename(&mut self, index: usize, name: impl Into<String>) {
        self.change(index, Change::Rename(name.into()));
    }

    /// Replaces the body of log record `index` with `text` (log processors only), e.g.
    /// `[redacted]`.
    pub fn set_body(&mut self, index: usize, text: impl Into<String>) {
        self.change(index, Change::SetBody(text.into()));
    }

    /// Sets the status of span `index` (span processors only).
    pub fn set_status(&mut self, index: usize, status: NewStatus) {
        let status = match status {
            NewStatus::Unset => types::Status::Unset,
            NewStatus::Ok => types::Status::Ok,
            NewStatus::Error(description) => types::Status::Error(description),
        };
        self.change(index, Change::SetStatus(status));
    }

    /// Whether no span changes.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// How many spans change (dropped or edited).
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether span `index` is dropped.
    pub fn is_dropped(&self, index: usize) -> bool {
        matches!(self.items.get(&(index as u32)), Some(Action::Drop))
    }

    fn change(&mut self, index: usize, change: Change) {
        match self
            .items
            .entry(index as u32)
            .or_insert_with(|| Action::Edit(Vec::new()))
        {
            Action::Edit(changes) => changes.push(change),
            Action::Drop => {}
        }
    }

    /// The answer `process` returns to the host.
    pub fn into_wit(self) -> Vec<ItemEdit> {
        self.items
            .into_iter()
            .map(|(index, action)| ItemEdit { index, action })
            .collect()
    }
}

impl From<&str> for types::Value {
    fn from(s: &str) -> Self {
        types::Value::String(s.to_string())
    }
}

impl From<String> for types::Value {
    fn from(s: String) -> Self {
        types::Value::String(s)
    }
}

impl From<bool> for types::Value {
    fn from(b: bool) -> Self {
        types::Value::Bool(b)
    }
}

impl From<i64> for types::Value {
    fn from(i: i64) -> Self {
        types::Value::S64(i)
    }
}

impl From<f64> for types::Value {
    fn from(f: f64) -> Self {
        types::Value::F64(f)
    }
}
