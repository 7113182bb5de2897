//! The default job's log exporter: each rank's log records as JSON lines in
//! `rank-N.logs.jsonl` (the console's shape, OpenTelemetry-Python's `LogRecord.to_json`),
//! beside its spans; stdout is the rank's channel to the launcher.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

use lens::exporter::python_json::log_record_json;
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use lens::opentelemetry_sdk::logs::{LogBatch, LogExporter};

#[derive(Debug)]
pub(super) struct LogFileExporter {
    path: PathBuf,
    file: Mutex<Option<std::fs::File>>,
    resource: Resource,
}

impl LogFileExporter {
    pub(super) fn new(path: PathBuf) -> Self {
        Self {
            path,
            file: Mutex::new(None),
            resource: Resource::builder_empty().build(),
        }
    }
}

impl LogExporter for LogFileExporter {
    async fn export(&self, batch: LogBatch<'_>) -> OTelSdkResult {
        let fail = |e: std::io::Error| {
            OTelSdkError::InternalFailure(format!("{}: {e}", self.path.display()))
        };
        let mut text = String::new();
        for (record, _scope) in batch.iter() {
            text.push_str(&log_record_json(record, &self.resource).to_string());
            text.push('\n');
        }
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if file.is_none() {
            *file = Some(std::fs::File::create(&self.path).map_err(fail)?);
        }
        let f = file.as_mut().expect("opened above");
        f.write_all(text.as_bytes()).map_err(fail)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.resource = resource.clone();
    }
}
