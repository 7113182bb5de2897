//! How a collection of metrics reaches a guest: `lens:exporter/metric-types.metric-batch` as
//! WIT records, or an OTLP `ExportMetricsServiceRequest` as protobuf or OTLP/JSON (through
//! `opentelemetry-proto`, the messages the OTLP exporter sends).

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::{
    AggregatedMetrics, Exemplar, ExponentialBucket, Metric, MetricData, ResourceMetrics,
};
use prost::Message;

use super::typed::owned::{attributes, scope};
use super::unix_nanos;
use crate::bindings::metric_types as wit;
use crate::bindings::types::Encoding;

/// Data points in a collection (what the metric exporters count).
pub fn data_points(metrics: &ResourceMetrics) -> u64 {
    fn points<T>(data: &MetricData<T>) -> usize {
        match data {
            MetricData::Gauge(g) => g.data_points().count(),
            MetricData::Sum(s) => s.data_points().count(),
            MetricData::Histogram(h) => h.data_points().count(),
            MetricData::ExponentialHistogram(h) => h.data_points().count(),
        }
    }
    metrics
        .scope_metrics()
        .flat_map(|s| s.metrics())
        .map(|m| match m.data() {
            AggregatedMetrics::F64(d) => points(d),
            AggregatedMetrics::U64(d) => points(d),
            AggregatedMetrics::I64(d) => points(d),
        } as u64)
        .sum()
}

/// `metrics` in `encoding`.
pub(crate) fn encode_metrics(metrics: &ResourceMetrics, encoding: Encoding) -> wit::MetricBatch {
    match encoding {
        Encoding::Typed => wit::MetricBatch::Typed(typed(metrics)),
        Encoding::OtlpProtobuf => wit::MetricBatch::OtlpProtobuf(
            ExportMetricsServiceRequest::from(metrics).encode_to_vec(),
        ),
        Encoding::OtlpJson => wit::MetricBatch::OtlpJson(otlp_json(metrics)),
    }
}

/// The OTLP/JSON text of `metrics`.
pub(crate) fn otlp_json(metrics: &ResourceMetrics) -> String {
    serde_json::to_string(&ExportMetricsServiceRequest::from(metrics))
        .expect("OTLP messages serialize")
}

/// `metrics` as WIT records, grouped by scope as the SDK groups them.
pub(crate) fn typed(metrics: &ResourceMetrics) -> Vec<wit::ScopeMetrics> {
    metrics
        .scope_metrics()
        .map(|s| wit::ScopeMetrics {
            scope: scope(s.scope()),
            metrics: s.metrics().map(metric).collect(),
        })
        .collect()
}

/// A measured number in the instrument's type.
trait Number: Copy {
    fn wit(self) -> wit::MetricNumber;
    fn f64(self) -> f64;
}

impl Number for f64 {
    fn wit(self) -> wit::MetricNumber {
        wit::MetricNumber::F64(self)
    }
    fn f64(self) -> f64 {
        self
    }
}

impl Number for i64 {
    fn wit(self) -> wit::MetricNumber {
        wit::MetricNumber::S64(self)
    }
    fn f64(self) -> f64 {
        self as f64
    }
}

impl Number for u64 {
    fn wit(self) -> wit::MetricNumber {
        wit::MetricNumber::U64(self)
    }
    fn f64(self) -> f64 {
        self as f64
    }
}

fn metric(m: &Metric) -> wit::Metric {
    let data = match m.data() {
        AggregatedMetrics::F64(d) => data(d),
        AggregatedMetrics::U64(d) => data(d),
        AggregatedMetrics::I64(d) => data(d),
    };
    wit::Metric {
        name: m.name().to_string(),
        description: m.description().to_string(),
        unit: m.unit().to_string(),
        data,
    }
}

fn temporality(t: Temporality) -> wit::Temporality {
    match t {
        Temporality::Delta => wit::Temporality::Delta,
        Temporality::LowMemory => wit::Temporality::LowMemory,
        _ => wit::Temporality::Cumulative,
    }
}

fn exemplars<'a, T: Number + 'a>(e: impl Iterator<Item = &'a Exemplar<T>>) -> Vec<wit::Exemplar> {
    e.map(|e| {
        let t = e.trace_id();
        wit::Exemplar {
            filtered_attributes: attributes(e.filtered_attributes()),
            time: unix_nanos(e.time()),
            value: e.value.wit(),
            trace_id: (
                u64::from_be_bytes(t[..8].try_into().expect("8 bytes")),
                u64::from_be_bytes(t[8..].try_into().expect("8 bytes")),
            ),
            span_id: u64::from_be_bytes(*e.span_id()),
        }
    })
    .collect()
}

fn bucket(b: &ExponentialBucket) -> wit::ExponentialBucket {
    wit::ExponentialBucket {
        offset: b.offset(),
        counts: b.counts().collect(),
    }
}

fn data<T: Number>(d: &MetricData<T>) -> wit::MetricData {
    match d {
        MetricData::Gauge(g) => {
            let (start, time) = (g.start_time().map(unix_nanos), unix_nanos(g.time()));
            wit::MetricData::Gauge(wit::Gauge {
                data_points: g
                    .data_points()
                    .map(|p| wit::NumberDataPoint {
                        attributes: attributes(p.attributes()),
                        start_time: start,
                        time,
                        value: p.value().wit(),
                        exemplars: exemplars(p.exemplars()),
                    })
                    .collect(),
            })
        }
        MetricData::Sum(s) => {
            let (start, time) = (unix_nanos(s.start_time()), unix_nanos(s.time()));
            wit::MetricData::Sum(wit::Sum {
                data_points: s
                    .data_points()
                    .map(|p| wit::NumberDataPoint {
                        attributes: attributes(p.attributes()),
                        start_time: Some(start),
                        time,
                        value: p.value().wit(),
                        exemplars: exemplars(p.exemplars()),
                    })
                    .collect(),
                temporality: temporality(s.temporality()),
                is_monotonic: s.is_monotonic(),
            })
        }
        MetricData::Histogram(h) => wit::MetricData::Histogram(histogram(h)),
        MetricData::ExponentialHistogram(h) => {
            wit::MetricData::ExponentialHistogram(exponential_histogram(h))
        }
    }
}

fn histogram<T: Number>(h: &opentelemetry_sdk::metrics::data::Histogram<T>) -> wit::Histogram {
    let (start, time) = (unix_nanos(h.start_time()), unix_nanos(h.time()));
    wit::Histogram {
        data_points: h
            .data_points()
            .map(|p| wit::HistogramDataPoint {
                attributes: attributes(p.attributes()),
                start_time: start,
                time,
                count: p.count(),
                sum: p.sum().f64(),
                min: p.min().map(Number::f64),
                max: p.max().map(Number::f64),
                explicit_bounds: p.bounds().collect(),
                bucket_counts: p.bucket_counts().collect(),
                exemplars: exemplars(p.exemplars()),
            })
            .collect(),
        temporality: temporality(h.temporality()),
    }
}

fn exponential_histogram<T: Number>(
    h: &opentelemetry_sdk::metrics::data::ExponentialHistogram<T>,
) -> wit::ExponentialHistogram {
    let (start, time) = (unix_nanos(h.start_time()), unix_nanos(h.time()));
    wit::ExponentialHistogram {
        data_points: h
            .data_points()
            .map(|p| wit::ExponentialHistogramDataPoint {
                attributes: attributes(p.attributes()),
                start_time: start,
                time,
                count: p.count() as u64,
                sum: p.sum().f64(),
                min: p.min().map(Number::f64),
                max: p.max().map(Number::f64),
                scale: p.scale(),
                zero_count: p.zero_count(),
                zero_threshold: p.zero_threshold(),
                positive: bucket(p.positive_bucket()),
                negative: bucket(p.negative_bucket()),
                exemplars: exemplars(p.exemplars()),
            })
            .collect(),
        temporality: temporality(h.temporality()),
    }
}
