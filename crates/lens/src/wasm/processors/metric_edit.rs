//! A metric processor's answer checked against its collection and applied: a metric dropped
//! (with its data points), attributes set and removed on every data point of a metric, a
//! metric renamed. `set-status` and `set-body` do not apply to metrics, and an attribute
//! cannot be set to bytes (the metrics API cannot record one); either refuses the answer whole.
//!
//! The SDK's collections cannot be edited, so the answer is applied to the collection in the
//! form the exporter after the processor takes: the OTLP request (OTLP and wasm exporters) or
//! the console's JSON, through [`MetricCollection`]; the same answer gives the same result in
//! each.

use opentelemetry::Value;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::Metric;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;

use super::edit::{EditError, check_with, value};
use crate::bindings::edit_types::{Action, Change, ItemEdit};
use crate::bindings::types::Value as WitValue;
use crate::encoding::metrics_otlp::metric_data_points;

/// A collection of metrics in some exporter's form, grouped as the SDK groups them.
pub trait MetricCollection {
    /// One metric.
    type Metric;
    /// Each group's metrics, in batch order (resource, then scope).
    fn groups(&mut self) -> Vec<&mut Vec<Self::Metric>>;
    /// Its data points.
    fn points(metric: &Self::Metric) -> u64;
    /// Gives it a new name.
    fn rename(metric: &mut Self::Metric, name: String);
    /// Sets `key` to `value` on each of its data points (replacing the attribute there).
    fn set_attribute(metric: &mut Self::Metric, key: &str, value: &Value);
    /// Removes `key` from each of its data points.
    fn remove_attribute(metric: &mut Self::Metric, key: &str);
}

/// Checks `edits` against a collection of `items` metrics.
pub(crate) fn check(edits: &[ItemEdit], items: usize) -> Result<(), EditError> {
    let not_for = |change, index| EditError::NotForSignal {
        change,
        items: "metrics",
        index,
    };
    check_with(edits, items, |index, change| match change {
        Change::SetStatus(_) => Err(not_for("set-status", index)),
        Change::SetBody(_) => Err(not_for("set-body", index)),
        Change::SetAttribute(kv) if matches!(kv.value, WitValue::Bytes(_)) => {
            Err(EditError::Bytes {
                items: "metrics",
                key: kv.key.clone(),
                index,
            })
        }
        _ => Ok(()),
    })
}

/// Metrics in `collection`.
pub(crate) fn count<C: MetricCollection>(collection: &mut C) -> usize {
    collection.groups().iter().map(|g| g.len()).sum()
}

/// Applies `edits` (checked whole first) to `collection`: the data points dropped, or why the
/// answer was refused (the collection then untouched).
pub(crate) fn apply<C: MetricCollection>(
    collection: &mut C,
    edits: &[ItemEdit],
) -> Result<u64, EditError> {
    let items = count(collection);
    check(edits, items)?;
    Ok(apply_checked(collection, edits, items))
}

/// Applies checked `edits` to `collection` of `items` metrics: the data points dropped.
pub(crate) fn apply_checked<C: MetricCollection>(
    collection: &mut C,
    edits: &[ItemEdit],
    items: usize,
) -> u64 {
    if edits.is_empty() {
        return 0;
    }
    let mut actions: Vec<Option<&Action>> = vec![None; items];
    for edit in edits {
        // Checked against this collection's count, or (a replay on the console's JSON) against
        // the same collection's: an index past it is skipped rather than trusted.
        if let Some(slot) = actions.get_mut(edit.index as usize) {
            *slot = Some(&edit.action);
        }
    }
    let mut next = actions.into_iter();
    let mut dropped = 0;
    for group in collection.groups() {
        group.retain_mut(|metric| match next.next().flatten() {
            Some(Action::Drop) => {
                dropped += C::points(metric);
                false
            }
            Some(Action::Edit(changes)) => {
                changes.iter().for_each(|c| change::<C>(metric, c));
                true
            }
            None => true,
        });
    }
    dropped
}

fn change<C: MetricCollection>(metric: &mut C::Metric, change: &Change) {
    match change {
        Change::SetAttribute(kv) => C::set_attribute(metric, &kv.key, &value(kv.value.clone())),
        Change::RemoveAttribute(key) => C::remove_attribute(metric, key),
        Change::Rename(name) => C::rename(metric, name.clone()),
        // Refused by `check` before any change is applied.
        Change::SetStatus(_) | Change::SetBody(_) => {}
    }
}

/// The metrics of `request`, in batch order (resource, scope, metric): what an answer's
/// indices count.
pub fn metrics(request: &ExportMetricsServiceRequest) -> Vec<&Metric> {
    request
        .resource_metrics
        .iter()
        .flat_map(|r| &r.scope_metrics)
        .flat_map(|s| &s.metrics)
        .collect()
}

/// The attributes of each data point of `metric`, in order.
pub fn data_point_attributes(metric: &Metric) -> Vec<&[KeyValue]> {
    match &metric.data {
        Some(Data::Gauge(g)) => g.data_points.iter().map(|p| &p.attributes[..]).collect(),
        Some(Data::Sum(s)) => s.data_points.iter().map(|p| &p.attributes[..]).collect(),
        Some(Data::Histogram(h)) => h.data_points.iter().map(|p| &p.attributes[..]).collect(),
        Some(Data::ExponentialHistogram(h)) => {
            h.data_points.iter().map(|p| &p.attributes[..]).collect()
        }
        Some(Data::Summary(s)) => s.data_points.iter().map(|p| &p.attributes[..]).collect(),
        None => Vec::new(),
    }
}

/// The attribute lists of each data point of `metric`, to change.
fn point_attributes(metric: &mut Metric) -> Vec<&mut Vec<KeyValue>> {
    match &mut metric.data {
        Some(Data::Gauge(g)) => g
            .data_points
            .iter_mut()
            .map(|p| &mut p.attributes)
            .collect(),
        Some(Data::Sum(s)) => s
            .data_points
            .iter_mut()
            .map(|p| &mut p.attributes)
            .collect(),
        Some(Data::Histogram(h)) => h
            .data_points
            .iter_mut()
            .map(|p| &mut p.attributes)
            .collect(),
        Some(Data::ExponentialHistogram(h)) => h
            .data_points
            .iter_mut()
            .map(|p| &mut p.attributes)
            .collect(),
        Some(Data::Summary(s)) => s
            .data_points
            .iter_mut()
            .map(|p| &mut p.attributes)
            .collect(),
        None => Vec::new(),
    }
}

impl MetricCollection for ExportMetricsServiceRequest {
    type Metric = Metric;

    fn groups(&mut self) -> Vec<&mut Vec<Metric>> {
        self.resource_metrics
            .iter_mut()
            .flat_map(|r| &mut r.scope_metrics)
            .map(|s| &mut s.metrics)
            .collect()
    }

    fn points(metric: &Metric) -> u64 {
        metric_data_points(metric)
    }

    fn rename(metric: &mut Metric, name: String) {
        metric.name = name;
    }

    fn set_attribute(metric: &mut Metric, key: &str, value: &Value) {
        let value = Some(AnyValue::from(value.clone()));
        for attributes in point_attributes(metric) {
            match attributes.iter_mut().find(|a| a.key == key) {
                Some(existing) => existing.value = value.clone(),
                None => attributes.push(KeyValue {
                    key: key.to_string(),
                    value: value.clone(),
                    ..Default::default()
                }),
            }
        }
    }

    fn remove_attribute(metric: &mut Metric, key: &str) {
        for attributes in point_attributes(metric) {
            attributes.retain(|a| a.key != key);
        }
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry_sdk::metrics::Temporality;

    use super::*;
    use crate::bindings::types::KeyValue as WitKeyValue;
    use crate::testing::every_metric_kind;

    fn request() -> ExportMetricsServiceRequest {
        ExportMetricsServiceRequest::from(&every_metric_kind(Temporality::Cumulative))
    }

    fn names(r: &mut ExportMetricsServiceRequest) -> Vec<String> {
        r.groups()
            .into_iter()
            .flat_map(|g| g.iter().map(|m| m.name.clone()))
            .collect()
    }

    fn edit(index: u32, changes: Vec<Change>) -> ItemEdit {
        ItemEdit {
            index,
            action: Action::Edit(changes),
        }
    }

    #[test]
    fn drops_renames_and_attributes_land_on_the_metrics_named() {
        let mut r = request();
        let before = names(&mut r);
        assert!(before.len() >= 3, "{before:?}");
        let points_of_0 = metric_data_points(r.groups()[0].first().unwrap());
        let edits = vec![
            ItemEdit {
                index: 0,
                action: Action::Drop,
            },
            edit(
                1,
                vec![
                    Change::Rename("renamed".into()),
                    Change::SetAttribute(WitKeyValue {
                        key: "cost.centre".into(),
                        value: WitValue::String("research".into()),
                    }),
                ],
            ),
        ];
        assert_eq!(apply(&mut r, &edits), Ok(points_of_0));
        let after = names(&mut r);
        assert_eq!(after[0], "renamed");
        assert_eq!(after[1..], before[2..]);
        let renamed = r.groups().into_iter().flatten().next().unwrap();
        let attributes = point_attributes(renamed);
        assert!(!attributes.is_empty());
        for a in attributes {
            let set = a.iter().find(|kv| kv.key == "cost.centre").unwrap();
            assert_eq!(set.value, Some(AnyValue::from(Value::from("research"))));
        }
    }

    #[test]
    fn a_removed_attribute_leaves_every_data_point() {
        let mut r = request();
        let key = {
            let metric = r.groups().into_iter().flatten().next().unwrap();
            point_attributes(metric)[0][0].key.clone()
        };
        apply(
            &mut r,
            &[edit(0, vec![Change::RemoveAttribute(key.clone())])],
        )
        .unwrap();
        let metric = r.groups().into_iter().flatten().next().unwrap();
        assert!(
            point_attributes(metric)
                .iter()
                .all(|a| a.iter().all(|kv| kv.key != key))
        );
    }

    #[test]
    fn changes_of_other_signals_and_bytes_are_refused_and_change_nothing() {
        let original = request();
        for (change, message) in [
            (
                Change::SetStatus(crate::bindings::types::Status::Ok),
                "its answer makes a `set-status` change, which does not apply to metrics (item 1)",
            ),
            (
                Change::SetBody("x".into()),
                "its answer makes a `set-body` change, which does not apply to metrics (item 1)",
            ),
            (
                Change::SetAttribute(WitKeyValue {
                    key: "k".into(),
                    value: WitValue::Bytes(vec![1]),
                }),
                "its answer sets attribute `k` of item 1 to bytes, which an attribute of metrics cannot hold",
            ),
        ] {
            let mut r = original.clone();
            let edits = [
                ItemEdit {
                    index: 0,
                    action: Action::Drop,
                },
                edit(1, vec![change]),
            ];
            assert_eq!(apply(&mut r, &edits).unwrap_err().to_string(), message);
            assert_eq!(r, original);
        }
        let mut r = original.clone();
        let past = count(&mut r) as u32;
        assert!(matches!(
            apply(&mut r, &[edit(past, vec![])]),
            Err(EditError::OutOfRange { .. })
        ));
    }

    #[test]
    fn a_replay_skips_an_index_past_the_collection() {
        let mut r = request();
        let before = r.clone();
        let n = count(&mut r);
        let past = ItemEdit {
            index: n as u32,
            action: Action::Drop,
        };
        assert_eq!(apply_checked(&mut r, &[past], n), 0);
        assert_eq!(r, before);
    }
}
