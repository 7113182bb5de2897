//! Lens's batch log processor: a [`BatchQueue`] of emitted log records feeding one log
//! exporter, with the span processor's exact accounting ([`ExporterStats`], counts in records).

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::InstrumentationScope;
use opentelemetry::logs::LogRecord as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::logs::{LogBatch, LogExporter, LogProcessor, SdkLogRecord};

use crate::batch::{
    BatchExport, BatchQueue, Chain, DropReason, ExportStage, ExporterStats, Processed, Spooling,
    run_stages,
};
use crate::config::BatchConfig;
use crate::signal::Signal;
use crate::spool::{Opened, Spool};

/// A log record as queued: the SDK hands the processor borrowed records, the queue owns them.
pub type Queued = (SdkLogRecord, InstrumentationScope);

/// A log exporter driven by the batch queue, with how to flush it (the SDK's `LogExporter`
/// has no `force_flush`, a wasm guest does), after the stages that apply to it.
struct Records<E> {
    exporter: E,
    flush: fn(&E) -> OTelSdkResult,
    processors: Arc<Chain<dyn ExportStage<Queued>>>,
    /// The provider's resource, for spool records.
    resource: Resource,
}

impl<E: LogExporter + 'static> BatchExport for Records<E> {
    type Item = Queued;

    fn process(&self, batch: Vec<Queued>) -> (Vec<Queued>, Processed) {
        run_stages(self.processors.current().list(), batch)
    }

    fn export(&self, batch: Vec<Queued>) -> OTelSdkResult {
        let refs: Vec<(&SdkLogRecord, &InstrumentationScope)> =
            batch.iter().map(|(r, s)| (r, s)).collect();
        futures_executor::block_on(self.exporter.export(LogBatch::new(&refs)))
    }

    fn encode(&self, batch: &[Queued]) -> Vec<u8> {
        crate::spool::otlp::encode_logs(batch, &self.resource)
    }

    fn decode(&self, record: &[u8]) -> Result<Vec<Queued>, String> {
        crate::spool::otlp::decode_logs(record).map_err(|e| e.to_string())
    }

    fn force_flush(&mut self) -> OTelSdkResult {
        (self.flush)(&self.exporter)
    }

    fn shutdown_with_timeout(&mut self, timeout: Duration) -> OTelSdkResult {
        let result = self.exporter.shutdown_with_timeout(timeout);
        self.processors.shutdown(timeout);
        result
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.resource = resource.clone();
        self.exporter.set_resource(resource);
        for p in self.processors.current().list() {
            p.set_resource(resource);
        }
    }
}

/// A batch log processor feeding one exporter: every record emitted is exported or counted as
/// dropped, by reason, as for spans.
#[derive(Debug)]
pub struct BatchLogProcessor {
    /// `None`: the exporter was disabled at setup; every record is counted as dropped.
    queue: Option<BatchQueue<Queued>>,
    stats: Arc<ExporterStats>,
    /// The processors before its exporter (a reload replaces them; none when disabled).
    chain: Option<Arc<Chain<dyn ExportStage<Queued>>>>,
}

impl BatchLogProcessor {
    /// Starts the worker thread for `exporter`, counting into `stats`.
    pub fn new<E>(exporter: E, config: BatchConfig, stats: Arc<ExporterStats>) -> Self
    where
        E: LogExporter + 'static,
    {
        Self::with_flush(exporter, |_| Ok(()), config, stats)
    }

    /// As [`new`](Self::new), for an exporter with buffered work of its own: `flush` runs
    /// after the queue is drained on `force_flush`.
    pub fn with_flush<E>(
        exporter: E,
        flush: fn(&E) -> OTelSdkResult,
        config: BatchConfig,
        stats: Arc<ExporterStats>,
    ) -> Self
    where
        E: LogExporter + 'static,
    {
        Self::with_processors(exporter, flush, Vec::new(), config, stats)
    }

    /// [`with_flush`](Self::with_flush), each batch going through `processors` in order before
    /// the exporter (what they drop is counted as `dropped_processor`, by processor).
    pub fn with_processors<E>(
        exporter: E,
        flush: fn(&E) -> OTelSdkResult,
        processors: Vec<Arc<dyn ExportStage<Queued>>>,
        config: BatchConfig,
        stats: Arc<ExporterStats>,
    ) -> Self
    where
        E: LogExporter + 'static,
    {
        Self::with_spool(exporter, flush, processors, config, stats, None)
    }

    /// [`with_processors`](Self::with_processors), the batches the exporter cannot take going
    /// to `spool` (opened, with what it found there) and replayed from it.
    pub fn with_spool<E>(
        exporter: E,
        flush: fn(&E) -> OTelSdkResult,
        processors: Vec<Arc<dyn ExportStage<Queued>>>,
        config: BatchConfig,
        stats: Arc<ExporterStats>,
        spool: Option<(Spool, Opened)>,
    ) -> Self
    where
        E: LogExporter + 'static,
    {
        let spooling = spool.map(|(spool, opened)| Arc::new(Spooling::new(spool, opened, &stats)));
        Self::with_spooling(exporter, flush, processors, config, stats, spooling)
    }

    /// [`with_spool`](Self::with_spool) on a spool already open (adopted by a reload).
    pub(crate) fn with_spooling<E>(
        exporter: E,
        flush: fn(&E) -> OTelSdkResult,
        processors: Vec<Arc<dyn ExportStage<Queued>>>,
        config: BatchConfig,
        stats: Arc<ExporterStats>,
        spooling: Option<Arc<Spooling>>,
    ) -> Self
    where
        E: LogExporter + 'static,
    {
        let processors = Arc::new(Chain::new(processors));
        let chain = processors.clone();
        let records = Records {
            exporter,
            flush,
            processors,
            resource: Resource::builder_empty().build(),
        };
        Self {
            queue: Some(BatchQueue::with_spooling(
                records,
                config,
                stats.clone(),
                Signal::Logs,
                spooling,
            )),
            stats,
            chain: Some(chain),
        }
    }

    /// The processors before its exporter, which a reload replaces (none when disabled).
    pub fn chain(&self) -> Option<Arc<Chain<dyn ExportStage<Queued>>>> {
        self.chain.clone()
    }

    /// Its spool, if it has one.
    pub(crate) fn spooling(&self) -> Option<Arc<Spooling>> {
        self.queue.as_ref()?.spooling().cloned()
    }

    /// The processor of an exporter disabled at setup (`on_setup_failure = "disable"`):
    /// records `reason` and counts every record from now on as dropped.
    pub fn disabled(stats: Arc<ExporterStats>, reason: String) -> Self {
        stats.record_disabled(reason);
        Self {
            queue: None,
            stats,
            chain: None,
        }
    }

    /// The live statistics of this processor's exporter.
    pub fn stats(&self) -> &Arc<ExporterStats> {
        &self.stats
    }

    /// Queues a batch of records as it is (one another processor made: the Python SDK's), each
    /// counted as [`emit`](LogProcessor::emit) counts it, and has the worker export it without
    /// waiting for its timer. Their timestamps are theirs: that processor stamped them.
    pub fn hand_off(&self, records: Vec<(SdkLogRecord, InstrumentationScope)>) {
        match &self.queue {
            Some(queue) => queue.push_batch(records),
            None => self
                .stats
                .record_direct_dropped(DropReason::Disabled, records.len() as u64),
        }
    }

    /// Exports what is queued, then flushes the exporter, within `timeout`.
    pub fn force_flush_within(&self, timeout: Duration) -> OTelSdkResult {
        self.queue
            .as_ref()
            .map_or(Ok(()), |q| q.force_flush_within(timeout))
    }

    /// Settles what is queued within `timeout`: each record exported, or spooled when the
    /// exporter cannot take it now (its spool is left to its replay), or dropped.
    pub fn settle_within(&self, timeout: Duration) -> OTelSdkResult {
        self.queue
            .as_ref()
            .map_or(Ok(()), |q| q.settle_within(timeout))
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
        match &self.queue {
            Some(queue) => queue.push((record.clone(), scope.clone())),
            None => {
                self.stats.record_received();
                self.stats.record_dropped(DropReason::Disabled, 1);
            }
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.queue.as_ref().map_or(Ok(()), |q| q.force_flush())
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.queue
            .as_ref()
            .map_or(Ok(()), |q| q.shutdown_with_timeout(timeout))
    }

    fn set_resource(&mut self, resource: &Resource) {
        if let Some(q) = &self.queue {
            q.set_resource(resource)
        }
    }
}
