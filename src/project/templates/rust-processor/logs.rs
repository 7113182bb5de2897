
/// Log records, by event name.
struct LogRules(Rules);

impl lens_exporter_sdk::LogProcessor for LogRules {
    fn new(config: Config) -> Result<Self, String> {
        Ok(LogRules(Rules::new(&config)))
    }

    fn process(
        &mut self,
        batch: lens_exporter_sdk::LogBatch<'_>,
        edits: &mut Edits,
    ) -> Result<(), String> {
        for (i, record) in batch.records().enumerate() {
            let name = record.event_name.as_deref().unwrap_or("");
            let keys = record.attributes.iter().map(|kv| kv.key.as_str());
            self.0.apply(i, name, keys, edits);
        }
        Ok(())
    }
}
