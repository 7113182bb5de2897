//! A collection of metrics that arrives as an OTLP `ExportMetricsServiceRequest` (the Python
//! package's: the Rust SDK's `ResourceMetrics` cannot be built outside the SDK) in the encoding
//! a guest asked for. The protobuf and OTLP/JSON encodings are the message itself; the typed
//! encoding is built from it here, the same records [`super::metrics`] builds from the SDK's
//! data (checked against it in `encoding::tests::signals`).

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as OtlpValue;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, Exemplar, Metric, NumberDataPoint, exemplar, metric::Data,
    number_data_point,
};
use prost::Message;

use crate::bindings::metric_types as wit;
use crate::bindings::types::{self as types, Encoding};

/// Data points in a request (what the metric exporters count). Summaries (which no SDK
/// aggregation produces) count too: they reach the OTLP encodings, not the typed one.
pub fn otlp_data_points(request: &ExportMetricsServiceRequest) -> u64 {
    request
        .resource_metrics
        .iter()
        .flat_map(|r| &r.scope_metrics)
        .flat_map(|s| &s.metrics)
        .map(metric_data_points)
        .sum()
}

/// Data points of one metric.
pub(crate) fn metric_data_points(m: &Metric) -> u64 {
    (match &m.data {
        Some(Data::Gauge(g)) => g.data_points.len(),
        Some(Data::Sum(s)) => s.data_points.len(),
        Some(Data::Histogram(h)) => h.data_points.len(),
        Some(Data::ExponentialHistogram(h)) => h.data_points.len(),
        Some(Data::Summary(s)) => s.data_points.len(),
        None => 0,
    }) as u64
}

/// Where each metric of the typed encoding of `request` is among all of its metrics (the
/// typed encoding leaves out summaries and metrics without data).
pub(crate) fn typed_positions(request: &ExportMetricsServiceRequest) -> Vec<usize> {
    request
        .resource_metrics
        .iter()
        .flat_map(|r| &r.scope_metrics)
        .flat_map(|s| &s.metrics)
        .enumerate()
        .filter(|(_, m)| !matches!(m.data, None | Some(Data::Summary(_))))
        .map(|(i, _)| i)
        .collect()
}

/// `request` in `encoding`.
pub(crate) fn encode_otlp_metrics(
    request: &ExportMetricsServiceRequest,
    encoding: Encoding,
) -> wit::MetricBatch {
    match encoding {
        Encoding::Typed => wit::MetricBatch::Typed(typed(request)),
        Encoding::OtlpProtobuf => wit::MetricBatch::OtlpProtobuf(request.encode_to_vec()),
        Encoding::OtlpJson => wit::MetricBatch::OtlpJson(
            serde_json::to_string(request).expect("OTLP messages serialize"),
        ),
    }
}

/// The typed records of `request`, grouped by scope as it groups them (every resource's).
pub(crate) fn typed(request: &ExportMetricsServiceRequest) -> Vec<wit::ScopeMetrics> {
    request
        .resource_metrics
        .iter()
        .flat_map(|r| &r.scope_metrics)
        .map(|s| wit::ScopeMetrics {
            scope: scope(s.scope.as_ref(), &s.schema_url),
            metrics: s.metrics.iter().filter_map(metric).collect(),
        })
        .collect()
}

fn scope(s: Option<&InstrumentationScope>, schema_url: &str) -> types::InstrumentationScope {
    let non_empty = |v: &str| (!v.is_empty()).then(|| v.to_string());
    types::InstrumentationScope {
        name: s.map(|s| s.name.clone()).unwrap_or_default(),
        version: s.and_then(|s| non_empty(&s.version)),
        schema_url: non_empty(schema_url),
        attributes: s.map(|s| attributes(&s.attributes)).unwrap_or_default(),
    }
}

/// OTLP key-values as WIT ones.
fn attributes(kvs: &[KeyValue]) -> Vec<types::KeyValue> {
    kvs.iter()
        .map(|kv| types::KeyValue {
            key: kv.key.clone(),
            value: value(kv.value.as_ref()),
        })
        .collect()
}

/// An OTLP value as the WIT attribute value: the scalars and homogeneous arrays of scalars
/// that attributes hold; anything else (bytes, maps, mixed arrays) as its JSON text, as the
/// typed span encoding renders a value kind it has no variant for.
fn value(v: Option<&AnyValue>) -> types::Value {
    match v.and_then(|v| v.value.as_ref()) {
        Some(OtlpValue::StringValue(s)) => types::Value::String(s.clone()),
        Some(OtlpValue::BoolValue(b)) => types::Value::Bool(*b),
        Some(OtlpValue::IntValue(i)) => types::Value::S64(*i),
        Some(OtlpValue::DoubleValue(f)) => types::Value::F64(*f),
        Some(OtlpValue::ArrayValue(a)) => array(&a.values).unwrap_or_else(|| {
            types::Value::String(serde_json::to_string(a).expect("OTLP messages serialize"))
        }),
        Some(other) => {
            types::Value::String(serde_json::to_string(other).expect("OTLP messages serialize"))
        }
        None => types::Value::String(String::new()),
    }
}

/// A homogeneous array of scalars (an empty one is a string array, as the SDK's default).
fn array(values: &[AnyValue]) -> Option<types::Value> {
    macro_rules! all {
        ($variant:ident) => {
            values
                .iter()
                .map(|v| match &v.value {
                    Some(OtlpValue::$variant(x)) => Some(x.clone()),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()
        };
    }
    match values.first().and_then(|v| v.value.as_ref()) {
        None if values.is_empty() => Some(types::Value::StringArray(Vec::new())),
        Some(OtlpValue::StringValue(_)) => all!(StringValue).map(types::Value::StringArray),
        Some(OtlpValue::BoolValue(_)) => all!(BoolValue).map(types::Value::BoolArray),
        Some(OtlpValue::IntValue(_)) => all!(IntValue).map(types::Value::S64Array),
        Some(OtlpValue::DoubleValue(_)) => all!(DoubleValue).map(types::Value::F64Array),
        _ => None,
    }
}

fn temporality(t: i32) -> wit::Temporality {
    match AggregationTemporality::try_from(t) {
        Ok(AggregationTemporality::Delta) => wit::Temporality::Delta,
        _ => wit::Temporality::Cumulative,
    }
}

/// A trace id's bytes as the WIT pair (anything but 16 bytes is no trace: zeros).
fn trace_id(bytes: &[u8]) -> (u64, u64) {
    match <[u8; 16]>::try_from(bytes) {
        Ok(b) => {
            let id = u128::from_be_bytes(b);
            ((id >> 64) as u64, id as u64)
        }
        Err(_) => (0, 0),
    }
}

fn span_id(bytes: &[u8]) -> u64 {
    <[u8; 8]>::try_from(bytes).map_or(0, u64::from_be_bytes)
}

fn exemplars(e: &[Exemplar]) -> Vec<wit::Exemplar> {
    e.iter()
        .map(|e| wit::Exemplar {
            filtered_attributes: attributes(&e.filtered_attributes),
            time: e.time_unix_nano,
            value: match e.value {
                Some(exemplar::Value::AsInt(i)) => wit::MetricNumber::S64(i),
                Some(exemplar::Value::AsDouble(f)) => wit::MetricNumber::F64(f),
                None => wit::MetricNumber::F64(0.0),
            },
            trace_id: trace_id(&e.trace_id),
            span_id: span_id(&e.span_id),
        })
        .collect()
}

/// Number points; a gauge's start time is kept only when set (OTLP's zero is "none").
fn number_points(points: &[NumberDataPoint], gauge: bool) -> Vec<wit::NumberDataPoint> {
    points
        .iter()
        .map(|p| wit::NumberDataPoint {
            attributes: attributes(&p.attributes),
            start_time: (!gauge || p.start_time_unix_nano != 0).then_some(p.start_time_unix_nano),
            time: p.time_unix_nano,
            value: match p.value {
                Some(number_data_point::Value::AsInt(i)) => wit::MetricNumber::S64(i),
                Some(number_data_point::Value::AsDouble(f)) => wit::MetricNumber::F64(f),
                None => wit::MetricNumber::F64(0.0),
            },
            exemplars: exemplars(&p.exemplars),
        })
        .collect()
}

/// One metric; `None` for a summary, which the typed encoding has no record for.
fn metric(m: &Metric) -> Option<wit::Metric> {
    let data = match m.data.as_ref()? {
        Data::Gauge(g) => wit::MetricData::Gauge(wit::Gauge {
            data_points: number_points(&g.data_points, true),
        }),
        Data::Sum(s) => wit::MetricData::Sum(wit::Sum {
            data_points: number_points(&s.data_points, false),
            temporality: temporality(s.aggregation_temporality),
            is_monotonic: s.is_monotonic,
        }),
        Data::Histogram(h) => wit::MetricData::Histogram(wit::Histogram {
            data_points: h
                .data_points
                .iter()
                .map(|p| wit::HistogramDataPoint {
                    attributes: attributes(&p.attributes),
                    start_time: p.start_time_unix_nano,
                    time: p.time_unix_nano,
                    count: p.count,
                    sum: p.sum.unwrap_or(0.0),
                    min: p.min,
                    max: p.max,
                    explicit_bounds: p.explicit_bounds.clone(),
                    bucket_counts: p.bucket_counts.clone(),
                    exemplars: exemplars(&p.exemplars),
                })
                .collect(),
            temporality: temporality(h.aggregation_temporality),
        }),
        Data::ExponentialHistogram(h) => {
            wit::MetricData::ExponentialHistogram(wit::ExponentialHistogram {
                data_points: h
                    .data_points
                    .iter()
                    .map(|p| {
                        let bucket = |b: Option<&_>| {
                            let b: Option<&opentelemetry_proto::tonic::metrics::v1::exponential_histogram_data_point::Buckets> = b;
                            wit::ExponentialBucket {
                                offset: b.map_or(0, |b| b.offset),
                                counts: b.map(|b| b.bucket_counts.clone()).unwrap_or_default(),
                            }
                        };
                        wit::ExponentialHistogramDataPoint {
                            attributes: attributes(&p.attributes),
                            start_time: p.start_time_unix_nano,
                            time: p.time_unix_nano,
                            count: p.count,
                            sum: p.sum.unwrap_or(0.0),
                            min: p.min,
                            max: p.max,
                            scale: p.scale as i8,
                            zero_count: p.zero_count,
                            zero_threshold: p.zero_threshold,
                            positive: bucket(p.positive.as_ref()),
                            negative: bucket(p.negative.as_ref()),
                            exemplars: exemplars(&p.exemplars),
                        }
                    })
                    .collect(),
                temporality: temporality(h.aggregation_temporality),
            })
        }
        Data::Summary(_) => return None,
    };
    Some(wit::Metric {
        name: m.name.clone(),
        description: m.description.clone(),
        unit: m.unit.clone(),
        data,
    })
}
