//! A metric processor's side of [`WasmProcessor`]: a collection, as an OTLP request, edited in
//! place (`metric_edit`); the typed encoding's indices (which leave out summaries) mapped back
//! to the request's; several processors in a row, with each answer kept for another form of
//! the collection (the console's JSON).

use std::sync::Arc;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;

use super::{ProcessedItems, WasmProcessor};
use crate::batch::{Processed, ProcessorCounts};
use crate::bindings::edit_types::{Action, ItemEdit};
use crate::bindings::types::Encoding;
use crate::encoding::metrics_otlp::{encode_otlp_metrics, otlp_data_points, typed_positions};
use crate::wasm::processors::metric_edit;
use crate::wasm::sandbox::instance::Payload;

/// What a metric processor did to one collection.
#[derive(Debug, Clone)]
pub(crate) enum MetricsOutcome {
    /// Its answer, applied (to replay on another form of the same collection).
    Edited(Vec<ItemEdit>),
    /// Passed on unprocessed after a fault (`on_fault = "pass"`).
    Unprocessed,
    /// Dropped whole after a fault (`on_fault = "drop"`).
    Dropped,
}

impl WasmProcessor {
    /// Runs the processor on one metric collection (as an OTLP request: what an OTLP or wasm
    /// metric exporter after it takes), edited in place: what it did, counted in data points.
    /// Never fails: a fault leaves the collection as it is or empties it, as `on_fault` says.
    pub fn process_metrics(&self, request: &mut ExportMetricsServiceRequest) -> ProcessorCounts {
        self.process_metrics_outcome(request).1
    }

    /// [`process_metrics`](Self::process_metrics), with the answer applied (to replay on
    /// another form of the same collection).
    pub(crate) fn process_metrics_outcome(
        &self,
        request: &mut ExportMetricsServiceRequest,
    ) -> (MetricsOutcome, ProcessorCounts) {
        let points = otlp_data_points(request);
        if metric_edit::count(request) == 0 {
            return (
                MetricsOutcome::Edited(Vec::new()),
                ProcessorCounts::default(),
            );
        }
        let answer = match &self.lanes {
            None => Err(None),
            Some(_) => self.answer_metrics(request).map_err(Some),
        };
        let applied = answer.and_then(|edits| match metric_edit::apply(request, &edits) {
            Ok(dropped) => Ok((dropped, edits)),
            Err(e) => Err(self.refused(e)),
        });
        let (outcome, counts) = match applied {
            Ok((dropped, edits)) => (
                MetricsOutcome::Edited(edits),
                ProcessorCounts { dropped, faults: 0 },
            ),
            Err(why) => {
                let counts = self.fault(why, points, "data points");
                if counts.dropped > 0 {
                    request.resource_metrics.clear();
                    (MetricsOutcome::Dropped, counts)
                } else {
                    (MetricsOutcome::Unprocessed, counts)
                }
            }
        };
        self.stats.record_processor_batch(points, counts);
        (outcome, counts)
    }

    /// The guest's raw answer to `request` (not checked, not applied), its indices counted
    /// among all of the request's metrics. `Err` on a fault or a guest error.
    pub(crate) fn answer_metrics(
        &self,
        request: &ExportMetricsServiceRequest,
    ) -> Result<Vec<ItemEdit>, String> {
        let Some(lanes) = &self.lanes else {
            return Err("the processor is disabled".into());
        };
        let mut typed = false;
        let mut edits = lanes
            .process(|preferences, _| {
                typed = matches!(preferences.encoding, Encoding::Typed);
                Payload::Metrics(encode_otlp_metrics(request, preferences.encoding))
            })
            .map_err(|e| e.to_string())?;
        if typed {
            // The typed encoding leaves out summaries: its indices skip them.
            let positions = typed_positions(request);
            let all = metric_edit::metrics(request).len();
            if positions.len() != all {
                // An index past the typed batch stays past the request (refused as such).
                let past = |i: u32| (all as u32).saturating_add(i - positions.len() as u32);
                for e in &mut edits {
                    e.index = match positions.get(e.index as usize) {
                        Some(&p) => p as u32,
                        None => past(e.index),
                    };
                }
            }
        }
        Ok(edits)
    }
}

/// `request` through `processors` in order (until no metric is left), edited in place: what
/// each did, counted in data points, and which metrics are left. What a metric exporter's
/// queue runs before the export (the exporter's own statistics then take the result:
/// `ExporterStats::processed_direct`).
pub fn run_metric_processors(
    processors: &[Arc<WasmProcessor>],
    request: &mut ExportMetricsServiceRequest,
) -> ProcessedItems {
    run_metric_processors_answers(processors, request).0
}

/// [`run_metric_processors`], with each processor's answer (to replay on another form of the
/// same collection).
pub(crate) fn run_metric_processors_answers(
    processors: &[Arc<WasmProcessor>],
    request: &mut ExportMetricsServiceRequest,
) -> (ProcessedItems, Vec<MetricsOutcome>) {
    let mut done = ProcessedItems {
        by: Processed::default(),
        kept: (0..metric_edit::count(request)).collect(),
    };
    let mut outcomes = Vec::new();
    for p in processors {
        if done.kept.is_empty() {
            break;
        }
        let (outcome, counts) = p.process_metrics_outcome(request);
        done.by.by.push((p.name().clone(), counts));
        match &outcome {
            MetricsOutcome::Edited(edits) => {
                let dropped: std::collections::BTreeSet<usize> = edits
                    .iter()
                    .filter(|e| matches!(e.action, Action::Drop))
                    .map(|e| e.index as usize)
                    .collect();
                let mut i = 0;
                done.kept.retain(|_| {
                    i += 1;
                    !dropped.contains(&(i - 1))
                });
            }
            MetricsOutcome::Dropped => done.kept.clear(),
            MetricsOutcome::Unprocessed => {}
        }
        outcomes.push(outcome);
    }
    (done, outcomes)
}
