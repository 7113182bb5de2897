
/// Spans, to `<endpoint>/v1/traces`.
struct SpanVendor(Vendor);

impl lens_exporter_sdk::SpanExporter for SpanVendor {
    fn new(config: Config) -> Result<Self, String> {
        Vendor::new(&config, "/v1/traces").map(SpanVendor)
    }

    fn encoding(&self) -> Encoding {
        Encoding::OtlpProtobuf
    }

    fn export(&mut self, batch: lens_exporter_sdk::SpanBatch<'_>) -> ExportResult {
        self.0.post(batch.otlp_protobuf())
    }
}
