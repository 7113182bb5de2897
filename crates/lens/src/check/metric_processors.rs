//! The conformance cases of a metric processor, as a span processor's (`processors`): an empty
//! collection answered with no edit, every test collection answered without a fault and
//! accepted, and each answer's edits found on the metrics as stated (checked from the answer:
//! names, and each stated attribute on every data point of the metric).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::AnyValue;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::Temporality;

use super::SignalReport;
use super::processors::{begin, end, kept_as_stated};
use crate::bindings::edit_types::{Action, Change, ItemEdit};
use crate::config::WasmExporterSpec;
use crate::error::LensError;
use crate::testing::{every_metric_kind, many_data_points};
use crate::wasm::processors::{edit, metric_edit};
use crate::wasm::{GuestOutputBuffer, Signal, WasmProcessor};

/// Whether `after` keeps what `edits` promise about `before`: dropped metrics gone, the others
/// in order, the edited ones with their stated name and, on every data point, their stated
/// attributes; every metric not named unchanged.
fn applied_as_stated(
    before: &ExportMetricsServiceRequest,
    edits: &[ItemEdit],
    after: &ExportMetricsServiceRequest,
) -> Result<(), String> {
    let (before, after) = (metric_edit::metrics(before), metric_edit::metrics(after));
    let (by_index, kept) = kept_as_stated(&before, edits, after.len())?;
    for ((i, original), out) in kept.into_iter().zip(after) {
        let Some(Action::Edit(changes)) = by_index.get(&(i as u32)) else {
            if *original != out {
                return Err(format!(
                    "metric {i} changed, but the answer does not name it"
                ));
            }
            continue;
        };
        let mut name = original.name.as_str();
        let mut attributes: BTreeMap<&str, Option<AnyValue>> = BTreeMap::new();
        for change in changes.iter() {
            match change {
                Change::Rename(n) => name = n,
                Change::SetAttribute(kv) => {
                    let value = AnyValue::from(edit::value(kv.value.clone()));
                    attributes.insert(&kv.key, Some(value));
                }
                Change::RemoveAttribute(key) => {
                    attributes.insert(key, None);
                }
                Change::SetStatus(_) | Change::SetBody(_) => {}
            }
        }
        if out.name != name {
            return Err(format!("metric {i} is named `{}`", out.name));
        }
        for point in metric_edit::data_point_attributes(out) {
            for (key, value) in &attributes {
                let found = point.iter().find(|a| a.key == *key);
                if found.and_then(|a| a.value.as_ref()) != value.as_ref() {
                    return Err(format!("metric {i}: attribute `{key}` is not as stated"));
                }
            }
        }
    }
    Ok(())
}

/// One collection through the processor: no fault, an answer the host accepts, applied as
/// stated.
fn one(p: &WasmProcessor, request: ExportMetricsServiceRequest) -> Result<Duration, String> {
    let started = Instant::now();
    let edits = p.answer_metrics(&request)?;
    let elapsed = started.elapsed();
    let mut after = request.clone();
    metric_edit::apply(&mut after, &edits).map_err(|e| format!("the host refuses {e}"))?;
    applied_as_stated(&request, &edits, &after)?;
    Ok(elapsed)
}

/// Metric processors: an empty collection, every metric kind (cumulative and delta), 1,000
/// data points in one collection (as a metric exporter's suite), shutdown.
pub(super) fn metric_processor(
    spec: &WasmExporterSpec,
    resource: &Resource,
    output: &Arc<GuestOutputBuffer>,
) -> Result<SignalReport, LensError> {
    let (p, stats, mut c) = begin(spec, Signal::Metrics, resource, output, |p| {
        p.answer_metrics(&ExportMetricsServiceRequest::default())
    })?;
    let request = |t| ExportMetricsServiceRequest::from(&every_metric_kind(t));
    c.case(
        "every metric kind, cumulative",
        one(&p, request(Temporality::Cumulative)),
    );
    c.case(
        "every metric kind, delta",
        one(&p, request(Temporality::Delta)),
    );
    let many = ExportMetricsServiceRequest::from(&many_data_points(1_000));
    c.bulk_outcome("1,000 data points in one collection", 1_000, || {
        one(&p, many)
    });
    Ok(end(p, &stats, c, Signal::Metrics))
}
