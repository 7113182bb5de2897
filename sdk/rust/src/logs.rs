//! The log exporter trait and the batch it receives: WIT records borrowed from the batch
//! (`ScopeLogs` → `LogRecord`), or OTLP bytes.

pub use crate::bindings::logs::lens::exporter::log_types::{AnyValue, LogRecord, ScopeLogs};

use crate::export::{Config, Encoding, ExportResult};

/// A log exporter: OpenTelemetry's `LogExporter`, as a Lens guest.
///
/// ```no_run
/// use lens_exporter_sdk::logs::AnyValue;
/// use lens_exporter_sdk::{Config, ExportResult, LogBatch, LogExporter};
///
/// struct Records;
///
/// impl LogExporter for Records {
///     fn new(_config: Config) -> Result<Self, String> {
///         Ok(Records)
///     }
///
///     fn export(&mut self, batch: LogBatch<'_>) -> ExportResult {
///         for record in batch.records() {
///             if let AnyValue::String(body) = &record.body {
///                 println!("{} {body}", record.severity_text.as_deref().unwrap_or("-"));
///             }
///         }
///         Ok(())
///     }
/// }
///
/// lens_exporter_sdk::export!(logs: Records);
/// ```
pub trait LogExporter: Sized + 'static {
    /// Builds the exporter from its settings and the rank's resource.
    fn new(config: Config) -> Result<Self, String>;

    /// The encoding to receive batches in (default: typed records).
    fn encoding(&self) -> Encoding {
        Encoding::Typed
    }

    /// Exports one batch.
    fn export(&mut self, batch: LogBatch<'_>) -> ExportResult;

    /// Completes buffered work.
    fn force_flush(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// Releases everything.
    fn shutdown(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// One batch of log records, in the encoding the exporter asked for.
#[derive(Clone, Copy, Debug)]
pub enum LogBatch<'a> {
    /// Records grouped by scope.
    Scopes(&'a [ScopeLogs]),
    /// An OTLP `ExportLogsServiceRequest`.
    OtlpProtobuf(&'a [u8]),
}

impl LogBatch<'_> {
    /// The records, scope by scope (none for bytes).
    pub fn records(&self) -> impl Iterator<Item = &LogRecord> {
        let scopes: &[ScopeLogs] = match self {
            LogBatch::Scopes(s) => s,
            LogBatch::OtlpProtobuf(_) => &[],
        };
        scopes.iter().flat_map(|s| &s.records)
    }
}
