
/// Log records, to `<endpoint>/v1/logs`.
struct LogVendor(Vendor);

impl lens_exporter_sdk::LogExporter for LogVendor {
    fn new(config: Config) -> Result<Self, String> {
        Vendor::new(&config, "/v1/logs").map(LogVendor)
    }

    fn encoding(&self) -> Encoding {
        Encoding::OtlpProtobuf
    }

    fn export(&mut self, batch: lens_exporter_sdk::LogBatch<'_>) -> ExportResult {
        self.0.post(match batch {
            lens_exporter_sdk::LogBatch::OtlpProtobuf(bytes) => Some(bytes),
            lens_exporter_sdk::LogBatch::Scopes(_) => None,
        })
    }
}
