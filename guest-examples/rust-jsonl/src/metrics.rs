//! One line per metric data point: the instrument, its kind, the point's attributes and
//! times, and its value (sums and gauges) or distribution (histograms).

use serde_json::{Value as Json, json};

use crate::exports::lens::exporter::metric_exporter::Guest;
use crate::lens::exporter::metric_types::{
    MetricBatch, MetricData, MetricNumber, MetricPreferences, Temporality,
};
use crate::lens::exporter::types::{Encoding, ExportError, Resource};
use crate::{JsonLines, attributes};

fn number(n: &MetricNumber) -> Json {
    match n {
        MetricNumber::F64(f) => json!(f),
        MetricNumber::S64(i) => json!(i),
        MetricNumber::U64(u) => json!(u),
    }
}

fn temporality(t: Temporality) -> &'static str {
    match t {
        Temporality::Cumulative => "cumulative",
        Temporality::Delta => "delta",
        Temporality::LowMemory => "low_memory",
    }
}

impl Guest for JsonLines {
    fn init(
        settings: Vec<(String, String)>,
        resource: Resource,
    ) -> Result<MetricPreferences, String> {
        let temporality = match settings.iter().find(|(k, _)| k == "temporality") {
            None => Temporality::Cumulative,
            Some((_, v)) => match v.as_str() {
                "cumulative" => Temporality::Cumulative,
                "delta" => Temporality::Delta,
                "low-memory" => Temporality::LowMemory,
                other => {
                    return Err(format!(
                        "`temporality` must be cumulative, delta or low-memory, not `{other}`"
                    ));
                }
            },
        };
        crate::open(&settings, &resource)?;
        Ok(MetricPreferences {
            encoding: Encoding::Typed,
            temporality,
        })
    }

    fn export(batch: MetricBatch) -> Result<(), ExportError> {
        let MetricBatch::Typed(scopes) = batch else {
            return Err(ExportError::Rejected(
                "this exporter asked for typed batches".into(),
            ));
        };
        crate::write_lines(|emit| {
            for scope in &scopes {
                for m in &scope.metrics {
                    let base = |kind: &str, attrs, start: Option<u64>, time: u64| {
                        json!({
                            "name": m.name, "description": m.description, "unit": m.unit,
                            "kind": kind, "attributes": attrs,
                            "start_unix_nano": start, "time_unix_nano": time,
                            "scope": scope.scope.name,
                        })
                    };
                    match &m.data {
                        MetricData::Gauge(g) => {
                            for p in &g.data_points {
                                let mut line =
                                    base("gauge", attributes(&p.attributes), p.start_time, p.time);
                                line["value"] = number(&p.value);
                                emit(line)?;
                            }
                        }
                        MetricData::Sum(s) => {
                            for p in &s.data_points {
                                let mut line =
                                    base("sum", attributes(&p.attributes), p.start_time, p.time);
                                line["value"] = number(&p.value);
                                line["monotonic"] = json!(s.is_monotonic);
                                line["temporality"] = json!(temporality(s.temporality));
                                emit(line)?;
                            }
                        }
                        MetricData::Histogram(h) => {
                            for p in &h.data_points {
                                let mut line = base(
                                    "histogram",
                                    attributes(&p.attributes),
                                    Some(p.start_time),
                                    p.time,
                                );
                                line["count"] = json!(p.count);
                                line["sum"] = json!(p.sum);
                                line["min"] = json!(p.min);
                                line["max"] = json!(p.max);
                                line["bounds"] = json!(p.explicit_bounds);
                                line["bucket_counts"] = json!(p.bucket_counts);
                                line["temporality"] = json!(temporality(h.temporality));
                                emit(line)?;
                            }
                        }
                        MetricData::ExponentialHistogram(h) => {
                            for p in &h.data_points {
                                let mut line = base(
                                    "exponential_histogram",
                                    attributes(&p.attributes),
                                    Some(p.start_time),
                                    p.time,
                                );
                                line["count"] = json!(p.count);
                                line["sum"] = json!(p.sum);
                                line["min"] = json!(p.min);
                                line["max"] = json!(p.max);
                                line["scale"] = json!(p.scale);
                                line["zero_count"] = json!(p.zero_count);
                                line["positive"] = json!({"offset": p.positive.offset, "counts": p.positive.counts});
                                line["negative"] = json!({"offset": p.negative.offset, "counts": p.negative.counts});
                                line["temporality"] = json!(temporality(h.temporality));
                                emit(line)?;
                            }
                        }
                    }
                }
            }
            Ok(())
        })
    }

    fn force_flush() -> Result<(), String> {
        crate::flush()
    }

    fn shutdown() -> Result<(), String> {
        crate::shutdown()
    }
}
