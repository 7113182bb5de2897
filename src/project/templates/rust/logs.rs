
/// One line per log record on stdout (setting `prefix`, default `log`).
struct LogLines {
    prefix: String,
}

impl lens_exporter_sdk::LogExporter for LogLines {
    fn new(config: Config) -> Result<Self, String> {
        Ok(LogLines {
            prefix: config.setting("prefix").unwrap_or("log").to_string(),
        })
    }

    fn export(&mut self, batch: lens_exporter_sdk::LogBatch<'_>) -> ExportResult {
        use lens_exporter_sdk::logs::AnyValue;
        let mut out = String::new();
        for record in batch.records() {
            let body = match &record.body {
                AnyValue::String(s) => s.clone(),
                AnyValue::Empty => String::new(),
                other => format!("{other:?}"),
            };
            let severity = record.severity_text.as_deref().unwrap_or("-");
            out.push_str(&format!("{} {severity} {body}\n", self.prefix));
        }
        write_out(&out)
    }
}
