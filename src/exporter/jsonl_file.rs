//! JSON lines into a file: one compact object per span (the console format), buffered.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

use super::json::span_json;

/// Appends each span as one JSON line to a file.
#[derive(Debug)]
pub struct JsonLinesFileExporter {
    path: PathBuf,
    out: Mutex<Option<BufWriter<File>>>,
}

impl JsonLinesFileExporter {
    /// Creates (truncates) `path`.
    pub fn create(path: impl AsRef<Path>) -> std::io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = File::create(&path)?;
        Ok(Self {
            path,
            out: Mutex::new(Some(BufWriter::new(file))),
        })
    }

    /// The file written to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn with_writer(
        &self,
        f: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
    ) -> OTelSdkResult {
        let mut guard = self.out.lock().unwrap_or_else(|p| p.into_inner());
        let w = guard.as_mut().ok_or(OTelSdkError::AlreadyShutdown)?;
        f(w).map_err(|e| OTelSdkError::InternalFailure(format!("{}: {e}", self.path.display())))
    }
}

impl SpanExporter for JsonLinesFileExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.with_writer(|w| {
            for span in &batch {
                serde_json::to_writer(&mut *w, &span_json(span))?;
                w.write_all(b"\n")?;
            }
            w.flush()
        })
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.with_writer(|w| w.flush())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        let result = self.with_writer(|w| w.flush());
        self.out.lock().unwrap_or_else(|p| p.into_inner()).take();
        result
    }
}
