//! The default job's log records: the console log exporter's lines (OpenTelemetry-Python's
//! `LogRecord.to_json`) written into `rank-N.logs.jsonl` beside the rank's spans, since stdout
//! is the rank's channel to the launcher. The file is created with the first record.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use lens::exporter::{ConsoleLogExporter, ConsoleOut};

/// A file opened on the first write (a rank that logs nothing leaves none behind).
struct LazyFile {
    path: PathBuf,
    file: Option<std::fs::File>,
}

impl LazyFile {
    fn file(&mut self) -> std::io::Result<&mut std::fs::File> {
        if self.file.is_none() {
            self.file = Some(std::fs::File::create(&self.path)?);
        }
        Ok(self.file.as_mut().expect("opened above"))
    }

    /// An I/O error naming the file.
    fn named(&self, e: std::io::Error) -> std::io::Error {
        std::io::Error::new(e.kind(), format!("{}: {e}", self.path.display()))
    }
}

impl Write for LazyFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let written = self.file().and_then(|f| f.write(buf));
        written.map_err(|e| self.named(e))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.file.as_mut() {
            Some(f) => f.flush().map_err(|e| self.named(e)),
            None => Ok(()),
        }
    }
}

/// The console log exporter writing into `path`.
pub(super) fn log_file_exporter(path: PathBuf) -> ConsoleLogExporter {
    let file = LazyFile { path, file: None };
    ConsoleLogExporter::new(ConsoleOut::Writer(Arc::new(Mutex::new(file))))
}
