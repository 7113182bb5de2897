//! One line per metric data point: the instrument, its kind, the point's attributes and
//! times, and its value (sums and gauges) or distribution (histograms).

use lens_exporter_sdk::metrics::{MetricData, MetricNumber, Temporality};
use lens_exporter_sdk::{Attributes, Config, Encoding, ExportResult, MetricBatch, MetricExporter};
use serde_json::{Value as Json, json};

use crate::Output;

fn attributes(kvs: &[lens_exporter_sdk::wit::KeyValue]) -> Json {
    crate::attributes(Attributes::from_wit(kvs))
}

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

pub struct MetricLines {
    output: Output,
    temporality: Temporality,
}

impl MetricExporter for MetricLines {
    fn new(config: Config) -> Result<Self, String> {
        let temporality = config.temporality()?;
        Ok(MetricLines {
            output: Output::open(&config)?,
            temporality,
        })
    }

    fn encoding(&self) -> Encoding {
        Encoding::Typed
    }

    fn temporality(&self) -> Temporality {
        self.temporality
    }

    fn export(&mut self, batch: MetricBatch<'_>) -> ExportResult {
        let MetricBatch::Scopes(scopes) = batch else {
            return Err("this exporter asked for typed batches".into());
        };
        self.output.write(|lines| {
            for scope in scopes {
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
                                lines.serialize(&line)?;
                            }
                        }
                        MetricData::Sum(s) => {
                            for p in &s.data_points {
                                let mut line =
                                    base("sum", attributes(&p.attributes), p.start_time, p.time);
                                line["value"] = number(&p.value);
                                line["monotonic"] = json!(s.is_monotonic);
                                line["temporality"] = json!(temporality(s.temporality));
                                lines.serialize(&line)?;
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
                                lines.serialize(&line)?;
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
                                lines.serialize(&line)?;
                            }
                        }
                    }
                }
            }
            Ok(())
        })
    }

    fn force_flush(&mut self) -> Result<(), String> {
        self.output.flush()
    }

    fn shutdown(&mut self) -> Result<(), String> {
        self.output.flush()
    }
}
