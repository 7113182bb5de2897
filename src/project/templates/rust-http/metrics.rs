
/// Metrics, to `<endpoint>/v1/metrics`.
struct MetricVendor(Vendor);

impl lens_exporter_sdk::MetricExporter for MetricVendor {
    fn new(config: Config) -> Result<Self, String> {
        Vendor::new(&config, "/v1/metrics").map(MetricVendor)
    }

    fn encoding(&self) -> Encoding {
        Encoding::OtlpProtobuf
    }

    fn export(&mut self, batch: lens_exporter_sdk::MetricBatch<'_>) -> ExportResult {
        self.0.post(match batch {
            lens_exporter_sdk::MetricBatch::OtlpProtobuf(bytes) => Some(bytes),
            lens_exporter_sdk::MetricBatch::Scopes(_) => None,
        })
    }
}
