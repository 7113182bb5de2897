//! The metric exporter trait and the collection it receives. Metrics arrive as WIT records
//! borrowed from the collection (`ScopeMetrics` → `Metric` → `MetricData`), or as OTLP bytes.

pub use crate::bindings::metrics::lens::exporter::metric_types::{
    Exemplar, ExponentialBucket, ExponentialHistogram, ExponentialHistogramDataPoint, Gauge,
    Histogram, HistogramDataPoint, Metric, MetricData, MetricNumber, NumberDataPoint, ScopeMetrics,
    Sum, Temporality,
};

use crate::export::{Config, Encoding, ExportResult};

impl Metric {
    /// The attributes of each of its data points, in order (what a metric processor's
    /// attribute changes apply to).
    pub fn data_point_attributes(&self) -> Vec<&[crate::wit::KeyValue]> {
        match &self.data {
            MetricData::Gauge(g) => g.data_points.iter().map(|p| &p.attributes[..]).collect(),
            MetricData::Sum(s) => s.data_points.iter().map(|p| &p.attributes[..]).collect(),
            MetricData::Histogram(h) => h.data_points.iter().map(|p| &p.attributes[..]).collect(),
            MetricData::ExponentialHistogram(h) => {
                h.data_points.iter().map(|p| &p.attributes[..]).collect()
            }
        }
    }
}

impl Config {
    /// The `temporality` setting, the metric exporters' convention: `cumulative` (the default),
    /// `delta` or `low-memory`.
    pub fn temporality(&self) -> Result<Temporality, String> {
        match self.setting("temporality") {
            None | Some("cumulative") => Ok(Temporality::Cumulative),
            Some("delta") => Ok(Temporality::Delta),
            Some("low-memory") => Ok(Temporality::LowMemory),
            Some(other) => Err(format!(
                "`temporality` must be cumulative, delta or low-memory, not `{other}`"
            )),
        }
    }
}

/// A metric exporter: OpenTelemetry's `PushMetricExporter`, as a Lens guest. The host's periodic
/// reader calls `export` once per interval with every instrument's data.
///
/// ```no_run
/// use lens_exporter_sdk::metrics::{MetricData, Temporality};
/// use lens_exporter_sdk::{Config, ExportResult, MetricBatch, MetricExporter};
///
/// struct Points;
///
/// impl MetricExporter for Points {
///     fn new(_config: Config) -> Result<Self, String> {
///         Ok(Points)
///     }
///
///     fn temporality(&self) -> Temporality {
///         Temporality::Delta
///     }
///
///     fn export(&mut self, batch: MetricBatch<'_>) -> ExportResult {
///         let MetricBatch::Scopes(scopes) = batch else {
///             return Ok(());
///         };
///         for metric in scopes.iter().flat_map(|s| &s.metrics) {
///             if let MetricData::Sum(sum) = &metric.data {
///                 println!("{} {} points", metric.name, sum.data_points.len());
///             }
///         }
///         Ok(())
///     }
/// }
///
/// lens_exporter_sdk::export!(metrics: Points);
/// ```
pub trait MetricExporter: Sized + 'static {
    /// Builds the exporter from its settings and the rank's resource.
    fn new(config: Config) -> Result<Self, String>;

    /// The encoding to receive collections in (default: typed records).
    fn encoding(&self) -> Encoding {
        Encoding::Typed
    }

    /// How sums and histograms should accumulate (default: cumulative).
    fn temporality(&self) -> Temporality {
        Temporality::Cumulative
    }

    /// Exports one collection.
    fn export(&mut self, batch: MetricBatch<'_>) -> ExportResult;

    /// Completes buffered work.
    fn force_flush(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// Releases everything.
    fn shutdown(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// One collection, in the encoding the exporter asked for.
#[derive(Clone, Copy, Debug)]
pub enum MetricBatch<'a> {
    /// Metrics grouped by scope.
    Scopes(&'a [ScopeMetrics]),
    /// An OTLP `ExportMetricsServiceRequest`.
    OtlpProtobuf(&'a [u8]),
}

impl MetricBatch<'_> {
    /// How many data points the collection holds (typed collections; 0 for bytes).
    pub fn data_points(&self) -> usize {
        let MetricBatch::Scopes(scopes) = self else {
            return 0;
        };
        scopes
            .iter()
            .flat_map(|s| &s.metrics)
            .map(|m| match &m.data {
                MetricData::Gauge(g) => g.data_points.len(),
                MetricData::Sum(s) => s.data_points.len(),
                MetricData::Histogram(h) => h.data_points.len(),
                MetricData::ExponentialHistogram(h) => h.data_points.len(),
            })
            .sum()
    }
}
