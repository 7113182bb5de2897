//! [`WasmProcessor`]: a component's `span-processor`, `log-processor` or `metric-processor`
//! (`lens:exporter@0.4.0`), run on each batch (or metric collection) before the exporters it
//! applies to.
//!
//! The items stay on the host: the guest gets them encoded (as an exporter would) and answers
//! with edits, which the `edit` module checks whole and applies. A fault of any kind — a trap,
//! a deadline, an error returned, an answer refused, lanes backing off after faults, the
//! processor disabled at setup — sends the batch on unprocessed (`on_fault = "pass"`) or drops
//! it (`"drop"`), and counts it.
//!
//! A role (stage 7): [`edit`] (spans), [`metric_edit`] (metrics, on the OTLP request or the
//! console's JSON) and `log_edit` (log records) check and apply the answers. May call: the
//! reload, lanes and sandbox stages; never [`super::exporters`] (nor does an exporter call a
//! processor: the pipeline puts one before the other).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::LogBatch;
use opentelemetry_sdk::trace::SpanData;

pub mod edit;
pub(crate) mod log_edit;
pub mod metric_edit;
mod metrics;

pub(crate) use metrics::MetricsOutcome;
pub use metrics::run_metric_processors;
pub(crate) use metrics::run_metric_processors_answers;

use crate::batch::{ExporterStats, Processed, ProcessorCounts};
use crate::bindings::edit_types::{Action, ItemEdit};
use crate::config::{
    BatchConfig, DEFAULT_PROCESSOR_CALL_TIMEOUT_MS, OnFault, ProcessorSpec, WasmExporterSpec,
};
use crate::encoding::logs::encode_logs;
use crate::error::{LensError, WasmSetupError};
use crate::trace::ExportStage;
use crate::wasm::lanes::start::{HostInputs, start_role_lanes};
use crate::wasm::reload::Reloadable;
use crate::wasm::sandbox::guest_output::GuestOutputCopy;
use crate::wasm::sandbox::instance::Payload;
use crate::wasm::sandbox::interface::{Role, Signal};
use crate::wasm::sandbox::link::setup_error;
use edit::EditError;
use log_edit::LogItem;

/// A processor running a sandboxed WebAssembly component, shared by the exporters it
/// applies to: as many instances as batches may go through it at once (each exporter's batches
/// run on that exporter's worker threads).
pub struct WasmProcessor {
    name: Arc<str>,
    /// What it processes.
    signal: Signal,
    /// `None` when it was disabled at setup (`on_setup_failure = "disable"`).
    lanes: Option<Arc<Reloadable>>,
    on_fault: OnFault,
    stats: Arc<ExporterStats>,
    /// The exporters' batch processors still using it: the last to shut down shuts it down.
    users: AtomicUsize,
}

impl std::fmt::Debug for WasmProcessor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmProcessor")
            .field("name", &self.name)
            .field("on_fault", &self.on_fault)
            .field("disabled", &self.lanes.is_none())
            .finish()
    }
}

impl WasmProcessor {
    /// Loads, links and starts a processor entry's instances (`lanes` of them), each
    /// initialised before this returns. Its call deadline defaults to
    /// [`DEFAULT_PROCESSOR_CALL_TIMEOUT_MS`].
    pub fn build(
        name: &str,
        spec: &ProcessorSpec,
        signal: Signal,
        lanes: usize,
        inputs: &HostInputs<'_>,
        stats: Arc<ExporterStats>,
    ) -> Result<Self, WasmSetupError> {
        let component = component_of(spec);
        let batch = BatchConfig {
            export_timeout_ms: component
                .call_timeout_ms
                .unwrap_or(DEFAULT_PROCESSOR_CALL_TIMEOUT_MS),
            max_concurrent_exports: lanes.max(1),
            ..BatchConfig::default()
        };
        let lanes = start_role_lanes(
            name,
            &component,
            (signal, Role::Processor),
            batch.max_concurrent_exports,
            &batch,
            inputs,
            stats.clone(),
        )?;
        let lanes = Reloadable::processor(lanes, &component, signal, batch, inputs, stats.clone());
        Ok(Self {
            name: name.into(),
            signal,
            lanes: Some(Arc::new(lanes)),
            on_fault: spec.on_fault(),
            stats,
            users: AtomicUsize::new(0),
        })
    }

    /// In place of a processor whose guest failed at setup: every batch meets its `on_fault`,
    /// counted as a fault.
    pub(crate) fn disabled(
        name: &str,
        signal: Signal,
        on_fault: OnFault,
        stats: Arc<ExporterStats>,
        reason: String,
    ) -> Self {
        stats.record_disabled(reason);
        Self {
            name: name.into(),
            signal,
            lanes: None,
            on_fault,
            stats,
            users: AtomicUsize::new(0),
        }
    }

    /// Loads a `.wasm` span processor outside a telemetry installation (tests, benchmarks,
    /// tools): the process environment for `from_host` grants and the cache of its
    /// configuration, rank 0, one instance. Errors name the processor and the file.
    pub fn from_config(
        name: &str,
        spec: &ProcessorSpec,
        resource: &Resource,
    ) -> Result<(Self, Arc<ExporterStats>), LensError> {
        Self::from_config_with_output(name, spec, Signal::Traces, resource, GuestOutputCopy::None)
    }

    /// [`from_config`](Self::from_config) for the processor of `signal` (`Signal::Metrics`: a
    /// `metric-processor`, `Signal::Logs`: a `log-processor`), with a copy of the guest's
    /// output sent to `output` (`lens check` shows it per case).
    pub fn from_config_with_output(
        name: &str,
        spec: &ProcessorSpec,
        signal: Signal,
        resource: &Resource,
        output: GuestOutputCopy,
    ) -> Result<(Self, Arc<ExporterStats>), LensError> {
        let config = crate::LensConfig::from_env()?;
        let named = spec.exporters().iter().cloned().collect();
        spec.validate(&named).map_err(|message| LensError::Config {
            source_name: format!("wasm processor `{name}`"),
            message,
            source: None,
        })?;
        let inputs = HostInputs::standalone(resource, &config.wasm_cache, output);
        let stats = Arc::new(ExporterStats::new(name));
        let processor = Self::build(name, spec, signal, 1, &inputs, stats.clone())
            .map_err(|source| setup_error(name, spec.component(), source))?;
        Ok((processor, stats))
    }

    /// Its name.
    pub fn name(&self) -> &Arc<str> {
        &self.name
    }

    /// Its own counts (spans seen, passed on, dropped, met a fault) and its guest's faults.
    pub fn stats(&self) -> &Arc<ExporterStats> {
        &self.stats
    }

    /// Runs the processor on `spans`: what goes on, and what it did. Never fails: a fault sends
    /// the batch on unprocessed or drops it, as `on_fault` says.
    pub fn process_spans(&self, spans: Vec<SpanData>) -> (Vec<SpanData>, ProcessorCounts) {
        if spans.is_empty() {
            return (spans, ProcessorCounts::default());
        }
        let (mut spans, answer) = match &self.lanes {
            None => (spans, Err(None)),
            Some(_) => {
                let (spans, answer) = self.answer(spans);
                (spans, answer.map_err(Some))
            }
        };
        let applied =
            answer.and_then(|edits| edit::apply(&mut spans, edits).map_err(|e| self.refused(e)));
        self.settle(spans, applied)
    }

    /// Runs the processor on `records` (log records with their scopes): what goes on, and
    /// what it did, as [`process_spans`](Self::process_spans).
    pub fn process_logs(&self, records: Vec<LogItem>) -> (Vec<LogItem>, ProcessorCounts) {
        let (records, counts, _) = self.process_logs_kept(records);
        (records, counts)
    }

    /// [`process_logs`](Self::process_logs), and whether each record that came in is left.
    fn process_logs_kept(
        &self,
        records: Vec<LogItem>,
    ) -> (Vec<LogItem>, ProcessorCounts, Vec<bool>) {
        let mut kept = vec![true; records.len()];
        if records.is_empty() {
            return (records, ProcessorCounts::default(), kept);
        }
        let mut records = records;
        let answer = match &self.lanes {
            None => Err(None),
            Some(_) => self.answer_logs(&records).map_err(Some),
        };
        let applied = answer.and_then(|edits| {
            let dropped: Vec<usize> = edits
                .iter()
                .filter(|e| matches!(e.action, Action::Drop))
                .map(|e| e.index as usize)
                .collect();
            let n = log_edit::apply(&mut records, edits).map_err(|e| self.refused(e))?;
            dropped.into_iter().for_each(|i| kept[i] = false);
            Ok(n)
        });
        let (records, counts) = self.settle(records, applied);
        if records.is_empty() {
            kept.fill(false);
        }
        (records, counts, kept)
    }

    /// An answer the host refused: a guest error, and why.
    fn refused(&self, e: EditError) -> Option<String> {
        self.stats.record_guest_error();
        Some(format!("wasm processor `{}`: {e}", self.name))
    }

    /// The items after the processor: edited (`applied` holds the number dropped), or after
    /// a fault (`Err`, with what to log) passed on or dropped as `on_fault` says; counted.
    fn settle<T>(
        &self,
        mut items: Vec<T>,
        applied: Result<u64, Option<String>>,
    ) -> (Vec<T>, ProcessorCounts) {
        let n = items.len() as u64 + applied.as_ref().map_or(0, |d| *d);
        let counts = match applied {
            Ok(dropped) => ProcessorCounts { dropped, faults: 0 },
            Err(why) => {
                let counts = self.fault(why, n, self.signal.items());
                if counts.dropped > 0 {
                    items.clear();
                }
                counts
            }
        };
        self.stats.record_processor_batch(n, counts);
        (items, counts)
    }

    /// What a fault does to `n` items (`noun`): logged with `why` when there is one, all
    /// dropped or all passed on as `on_fault` says, all counted as having met it.
    fn fault(&self, why: Option<String>, n: u64, noun: &str) -> ProcessorCounts {
        if let Some(why) = why {
            log::warn!("{why}; the batch of {n} {noun} is {}", self.fault_fate());
        }
        let drop = self.on_fault == OnFault::Drop;
        ProcessorCounts {
            dropped: if drop { n } else { 0 },
            faults: n,
        }
    }

    /// The guest's raw answer to `spans` (not checked, not applied), with the spans back:
    /// what `lens check` examines. `Err` on a fault or a guest error.
    pub(crate) fn answer(
        &self,
        spans: Vec<SpanData>,
    ) -> (Vec<SpanData>, Result<Vec<ItemEdit>, String>) {
        let Some(lanes) = &self.lanes else {
            return (spans, Err("the processor is disabled".into()));
        };
        let shared = Arc::new(spans);
        let edits = lanes.process(|_, _| Payload::SharedSpans(shared.clone()));
        // The worker drops its reference before answering; one it abandoned (a host call
        // that never yields) may still hold it.
        let spans = Arc::try_unwrap(shared).unwrap_or_else(|s| s.as_ref().clone());
        (spans, edits.map_err(|e| e.to_string()))
    }

    /// The guest's raw answer to `records` (not checked, not applied): what `lens check`
    /// examines. `Err` on a fault or a guest error.
    pub(crate) fn answer_logs(&self, records: &[LogItem]) -> Result<Vec<ItemEdit>, String> {
        let Some(lanes) = &self.lanes else {
            return Err("the processor is disabled".into());
        };
        lanes
            .process(|preferences, resource| {
                let refs: Vec<_> = records.iter().map(|(r, s)| (r, s)).collect();
                let batch = LogBatch::new(&refs);
                Payload::Logs(encode_logs(&batch, resource, preferences.encoding))
            })
            .map_err(|e| e.to_string())
    }

    /// The batch encoding the guest asked for, once started.
    pub fn encoding(&self) -> Option<&'static str> {
        self.lanes.as_ref().and_then(|l| l.encoding())
    }

    fn fault_fate(&self) -> &'static str {
        match self.on_fault {
            OnFault::Pass => "passed on unprocessed (on_fault = \"pass\")",
            OnFault::Drop => "dropped (on_fault = \"drop\")",
        }
    }

    /// One more exporter uses it.
    pub(crate) fn retain(&self) {
        self.users.fetch_add(1, Ordering::AcqRel);
    }

    /// An exporter using it shut down: the last one shuts its instances down.
    pub(crate) fn release(&self, timeout: Duration) {
        if self.users.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.shutdown(timeout);
        }
    }

    /// Its running instances, which a reload from the telemetry handle swaps (`None`:
    /// disabled at setup).
    pub(crate) fn reloadable(&self) -> Option<Arc<Reloadable>> {
        self.lanes.clone()
    }

    /// Whether it runs the entry `spec` as it is: the same component entry, and a file whose
    /// SHA-256 is the running component's (a reload would keep it).
    pub fn runs(&self, spec: &ProcessorSpec) -> bool {
        self.lanes
            .as_ref()
            .is_some_and(|l| l.unchanged(&component_of(spec)))
    }

    /// Shuts its instances down (each `shutdown` within the call deadline; all within
    /// `timeout`).
    pub fn shutdown(&self, timeout: Duration) {
        if let Some(lanes) = &self.lanes
            && let Err(e) = lanes.shutdown(Some(timeout))
        {
            log::debug!("wasm processor `{}`: shutdown: {e}", self.name);
        }
    }
}

impl ExportStage<SpanData> for WasmProcessor {
    fn name(&self) -> &Arc<str> {
        &self.name
    }

    fn process(&self, spans: Vec<SpanData>) -> (Vec<SpanData>, ProcessorCounts) {
        self.process_spans(spans)
    }

    fn retain(&self) {
        WasmProcessor::retain(self)
    }

    fn release(&self, timeout: Duration) {
        WasmProcessor::release(self, timeout)
    }

    fn set_resource(&self, resource: &Resource) {
        if let Some(lanes) = &self.lanes {
            lanes.set_resource(resource);
        }
    }
}

impl ExportStage<LogItem> for WasmProcessor {
    fn name(&self) -> &Arc<str> {
        &self.name
    }

    fn process(&self, records: Vec<LogItem>) -> (Vec<LogItem>, ProcessorCounts) {
        self.process_logs(records)
    }

    fn retain(&self) {
        WasmProcessor::retain(self)
    }

    fn release(&self, timeout: Duration) {
        WasmProcessor::release(self, timeout)
    }

    fn set_resource(&self, resource: &Resource) {
        <Self as ExportStage<SpanData>>::set_resource(self, resource)
    }
}

/// What the processors did to one batch (or metric collection).
#[derive(Debug, Default)]
pub struct ProcessedItems {
    /// Each processor's counts (metrics: in data points), in order.
    pub by: Processed,
    /// Where the items left were in the batch as it came, in order (processors never reorder
    /// items, nor a metric's data points).
    pub kept: Vec<usize>,
}

/// `records` through `processors` in order (until none is left): what is left, what each
/// processor did, and which records are left (what `lens.ProcessingLogExporter` maps back to
/// the Python SDK's records).
pub fn run_log_processors(
    processors: &[Arc<WasmProcessor>],
    mut records: Vec<LogItem>,
) -> (Vec<LogItem>, ProcessedItems) {
    let mut done = ProcessedItems {
        by: Processed::default(),
        kept: (0..records.len()).collect(),
    };
    for p in processors {
        if records.is_empty() {
            break;
        }
        let (left, counts, kept) = p.process_logs_kept(records);
        records = left;
        done.by.by.push((p.name().clone(), counts));
        let mut i = 0;
        done.kept.retain(|_| {
            i += 1;
            kept[i - 1]
        });
    }
    (records, done)
}

/// A processor entry's component entry, with its call deadline's default (what its instances
/// run, and what a reload compares).
pub(crate) fn component_of(spec: &ProcessorSpec) -> WasmExporterSpec {
    let mut component = spec.component().clone();
    component
        .call_timeout_ms
        .get_or_insert(DEFAULT_PROCESSOR_CALL_TIMEOUT_MS);
    component
}
