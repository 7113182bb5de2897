
/// Spans, by name.
struct SpanRules(Rules);

impl lens_exporter_sdk::SpanProcessor for SpanRules {
    fn new(config: Config) -> Result<Self, String> {
        Ok(SpanRules(Rules::new(&config)))
    }

    fn process(
        &mut self,
        batch: lens_exporter_sdk::SpanBatch<'_>,
        edits: &mut Edits,
    ) -> Result<(), String> {
        for (i, span) in batch.spans().enumerate() {
            let keys = span.attributes().map(|(key, _)| key);
            self.0.apply(i, span.name, keys, edits);
        }
        Ok(())
    }
}
