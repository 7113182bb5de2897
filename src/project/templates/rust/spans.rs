
/// One line per span on stdout (setting `prefix`, default `span`).
struct SpanLines {
    prefix: String,
    rank: String,
}

impl lens_exporter_sdk::SpanExporter for SpanLines {
    fn new(config: Config) -> Result<Self, String> {
        Ok(SpanLines {
            prefix: config.setting("prefix").unwrap_or("span").to_string(),
            rank: config
                .resource_attribute("dl.rank")
                .map(|v| v.to_string())
                .unwrap_or_default(),
        })
    }

    fn export(&mut self, batch: lens_exporter_sdk::SpanBatch<'_>) -> ExportResult {
        // One write per batch: every write is a call out of the sandbox.
        let mut out = String::new();
        for span in batch.spans() {
            let ms = span.duration_nanos() as f64 / 1e6;
            let trace = span.span_context.trace_id;
            out.push_str(&format!(
                "{} rank={} {} {ms:.3}ms trace={trace}",
                self.prefix, self.rank, span.name
            ));
            for (key, value) in span.attributes() {
                out.push_str(&format!(" {key}={value}"));
            }
            out.push('\n');
        }
        write_out(&out)
    }
}
