//! The recorder's metric and log exporters: what they receive, as JSON lines.

use serde_json::{Value as Json, json};

use crate::exports::lens::exporter::{log_exporter, metric_exporter};
use crate::lens::exporter::log_types::{AnyValue, LogBatch};
use crate::lens::exporter::metric_types::{
    MetricBatch, MetricData, MetricNumber, MetricPreferences, Temporality,
};
use crate::lens::exporter::types::{Encoding, ExportError, Resource};
use crate::{
    Recorder, answer, attrs, discarding, get, hang_if_asked, panic_on, partial, setup, write,
};

fn number(n: &MetricNumber) -> Json {
    match n {
        MetricNumber::F64(f) => json!({"f64": f}),
        MetricNumber::S64(i) => json!({"s64": i}),
        MetricNumber::U64(u) => json!({"u64": u}),
    }
}

fn body(v: &AnyValue) -> Json {
    match v {
        AnyValue::Empty => json!("empty"),
        AnyValue::String(s) => json!({"string": s}),
        AnyValue::Bool(b) => json!({"bool": b}),
        AnyValue::S64(i) => json!({"s64": i}),
        AnyValue::F64(f) => json!({"f64": f}),
        AnyValue::Bytes(b) => json!({"bytes": b}),
        AnyValue::Array(t) => json!({"array": t}),
        AnyValue::Kvlist(t) => json!({"kvlist": t}),
    }
}

fn finish(written: Result<(), String>) -> Result<(), ExportError> {
    written.map_err(ExportError::Rejected)?;
    partial()
}

impl metric_exporter::Guest for Recorder {
    fn init(
        settings: Vec<(String, String)>,
        resource: Resource,
    ) -> Result<MetricPreferences, String> {
        let temporality = match get(&settings, "temporality").as_deref() {
            None | Some("cumulative") => Temporality::Cumulative,
            Some("delta") => Temporality::Delta,
            Some(other) => return Err(format!("unknown temporality `{other}`")),
        };
        let encoding = setup(&settings, &resource)?;
        Ok(MetricPreferences {
            encoding,
            temporality,
        })
    }

    fn export(batch: MetricBatch) -> Result<(), ExportError> {
        hang_if_asked();
        answer()?;
        if discarding() {
            return Ok(());
        }
        finish(match batch {
            MetricBatch::OtlpProtobuf(bytes) => write(json!({"otlp": bytes})),
            MetricBatch::OtlpJson(text) => write(json!({"otlp_json": text})),
            MetricBatch::Typed(scopes) => {
                panic_on(
                    scopes
                        .iter()
                        .flat_map(|s| s.metrics.iter().map(|m| m.name.as_str())),
                );
                let mut metrics = Vec::new();
                for s in &scopes {
                    for m in &s.metrics {
                        let (kind, points) = match &m.data {
                            MetricData::Gauge(g) => ("gauge", g.data_points.iter().map(|p| json!({
                                "attributes": attrs(&p.attributes), "value": number(&p.value),
                                "start": p.start_time, "time": p.time,
                            })).collect::<Vec<_>>()),
                            MetricData::Sum(x) => ("sum", x.data_points.iter().map(|p| json!({
                                "attributes": attrs(&p.attributes), "value": number(&p.value),
                                "monotonic": x.is_monotonic,
                                "temporality": format!("{:?}", x.temporality),
                                "start": p.start_time, "time": p.time,
                            })).collect()),
                            MetricData::Histogram(h) => ("histogram", h.data_points.iter().map(|p| json!({
                                "attributes": attrs(&p.attributes), "count": p.count, "sum": p.sum,
                                "min": p.min, "max": p.max, "bounds": p.explicit_bounds,
                                "counts": p.bucket_counts,
                                "temporality": format!("{:?}", h.temporality),
                            })).collect()),
                            MetricData::ExponentialHistogram(h) => ("exponential_histogram", h.data_points.iter().map(|p| json!({
                                "attributes": attrs(&p.attributes), "count": p.count, "sum": p.sum,
                                "min": p.min, "max": p.max, "scale": p.scale,
                                "zero_count": p.zero_count,
                                "positive": [p.positive.offset, p.positive.counts],
                                "negative": [p.negative.offset, p.negative.counts],
                            })).collect()),
                        };
                        metrics.push(json!({
                            "scope": s.scope.name, "name": m.name, "description": m.description,
                            "unit": m.unit, "kind": kind, "points": points,
                        }));
                    }
                }
                write(json!({"metrics": metrics}))
            }
        })
    }

    fn force_flush() -> Result<(), String> {
        <Recorder as crate::Guest>::force_flush()
    }

    fn shutdown() -> Result<(), String> {
        <Recorder as crate::Guest>::shutdown()
    }
}

impl log_exporter::Guest for Recorder {
    fn init(settings: Vec<(String, String)>, resource: Resource) -> Result<Encoding, String> {
        setup(&settings, &resource)
    }

    fn export(batch: LogBatch) -> Result<(), ExportError> {
        hang_if_asked();
        answer()?;
        if discarding() {
            return Ok(());
        }
        finish(match batch {
            LogBatch::OtlpProtobuf(bytes) => write(json!({"otlp": bytes})),
            LogBatch::OtlpJson(text) => write(json!({"otlp_json": text})),
            LogBatch::Typed(scopes) => {
                panic_on(scopes.iter().flat_map(|s| {
                    s.records.iter().filter_map(|r| match &r.body {
                        AnyValue::String(b) => Some(b.as_str()),
                        _ => None,
                    })
                }));
                let mut records = Vec::new();
                for s in &scopes {
                    for r in &s.records {
                        records.push(json!({
                            "scope": s.scope.name,
                            "time": r.timestamp, "observed": r.observed_timestamp,
                            "severity_text": r.severity_text, "severity_number": r.severity_number,
                            "body": body(&r.body), "attributes": attrs(&r.attributes),
                            "event_name": r.event_name,
                            "trace_id": r.trace_id.map(|t| format!("{:016x}{:016x}", t.0, t.1)),
                            "span_id": r.span_id.map(|x| format!("{x:016x}")),
                            "trace_flags": r.trace_flags,
                        }));
                    }
                }
                write(json!({"logs": records}))
            }
        })
    }

    fn force_flush() -> Result<(), String> {
        <Recorder as crate::Guest>::force_flush()
    }

    fn shutdown() -> Result<(), String> {
        <Recorder as crate::Guest>::shutdown()
    }
}
