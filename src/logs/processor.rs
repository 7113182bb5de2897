//! Lens's batch log processor: a [`BatchQueue`] of emitted log records feeding one log
//! exporter, with the span processor's exact accounting ([`ExporterStats`], counts in records).

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::InstrumentationScope;
use opentelemetry::logs::LogRecord as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::logs::{LogBatch, LogExporter, LogProcessor, SdkLogRecord};

use crate::batch::{BatchExport, BatchQueue, ExporterStats};
use crate::config::BatchConfig;

/// A log record as queued: the SDK hands the processor borrowed records, the queue owns them.
type Queued = (SdkLogRecord, InstrumentationScope);

/// A log exporter driven by the batch queue.
struct Records<E>(E);

impl<E: LogExporter + 'static> BatchExport for Records<E> {
    type Item = Queued;

    fn export(&self, batch: Vec<Queued>) -> OTelSdkResult {
        let refs: Vec<(&SdkLogRecord, &InstrumentationScope)> =
            batch.iter().map(|(r, s)| (r, s)).collect();
        futures_executor::block_on(self.0.export(LogBatch::new(&refs)))
    }

    fn force_flush(&mut self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&mut self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.0.set_resource(resource)
    }
}

/// A batch log processor feeding one exporter: every record emitted is exported or counted as
/// dropped, by reason, as for spans.
#[derive(Debug)]
pub struct BatchLogProcessor {
    queue: BatchQueue<Queued>,
}

impl BatchLogProcessor {
    /// Starts the worker thread for `exporter`, counting into `stats`.
    pub fn new<E>(exporter: E, config: BatchConfig, stats: Arc<ExporterStats>) -> Self
    where
        E: LogExporter + 'static,
    {
        Self {
            queue: BatchQueue::new(Records(exporter), config, stats, "blrp", "log records"),
        }
    }

    /// The live statistics of this processor's exporter.
    pub fn stats(&self) -> &Arc<ExporterStats> {
        self.queue.stats()
    }
}

impl LogProcessor for BatchLogProcessor {
    fn emit(&self, record: &mut SdkLogRecord, scope: &InstrumentationScope) {
        // The bridges leave the event time unset; OpenTelemetry-Python's handler stamps each
        // record with its creation time, and so does Lens (the moment it was emitted).
        if record.timestamp().is_none() {
            let at = record
                .observed_timestamp()
                .unwrap_or_else(std::time::SystemTime::now);
            record.set_timestamp(at);
        }
        self.queue.push((record.clone(), scope.clone()));
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.queue.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.queue.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.queue.set_resource(resource)
    }
}
