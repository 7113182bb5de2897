//! Metric helpers: an in-memory reader for tests, like the seed's `InMemoryMetricReader`, and
//! [`data_points`], what the metric exporters count.

use std::sync::{Arc, Weak};
use std::time::Duration;

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{InstrumentKind, ManualReader, Pipeline, Temporality};

pub use crate::encoding::metrics::data_points;

/// A metric reader you keep a clone of and collect from on demand.
///
/// ```
/// let reader = lens::InMemoryMetricReader::new();
/// let config = lens::LensConfig { enabled: true, exporter: "none".into(), ..Default::default() };
/// let handle = lens::Telemetry::builder(config)
///     .rank(0).world_size(1).metric_reader(reader.clone()).install_global(false).install().unwrap();
/// handle.meter("demo").u64_counter("steps").build().add(3, &[]);
/// let data = reader.get_metrics_data().unwrap();
/// assert!(data.scope_metrics().any(|s| s.scope().name() == "demo"));
/// ```
#[derive(Debug, Clone)]
pub struct InMemoryMetricReader {
    inner: Arc<ManualReader>,
}

impl Default for InMemoryMetricReader {
    fn default() -> Self {
        Self::new()
    }
}

impl InMemoryMetricReader {
    /// A cumulative reader.
    pub fn new() -> Self {
        Self::with_temporality(Temporality::Cumulative)
    }

    /// A reader aggregating sums and histograms in `temporality`.
    pub fn with_temporality(temporality: Temporality) -> Self {
        Self {
            inner: Arc::new(
                ManualReader::builder()
                    .with_temporality(temporality)
                    .build(),
            ),
        }
    }

    /// Collects the current metrics of the provider this reader is registered with.
    pub fn get_metrics_data(
        &self,
    ) -> Result<ResourceMetrics, opentelemetry_sdk::error::OTelSdkError> {
        let mut rm = ResourceMetrics::default();
        self.inner.collect(&mut rm)?;
        Ok(rm)
    }
}

impl MetricReader for InMemoryMetricReader {
    fn register_pipeline(&self, pipeline: Weak<Pipeline>) {
        self.inner.register_pipeline(pipeline)
    }

    fn collect(&self, rm: &mut ResourceMetrics) -> OTelSdkResult {
        self.inner.collect(rm)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.inner.temporality(kind)
    }
}
