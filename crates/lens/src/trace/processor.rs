//! Lens's batch span processor: a [`BatchQueue`] of ended spans feeding one span exporter, with
//! exact delivery accounting ([`ExporterStats`]).

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};

use crate::batch::{
    BatchExport, BatchQueue, Chain, DropReason, ExportStage, ExporterStats, Processed, Spooling,
    run_stages,
};
use crate::config::BatchConfig;
use crate::signal::Signal;
use crate::spool::otlp::EncodedResource;
use crate::spool::{Opened, Spool};

/// A span exporter driven by the batch queue, after the stages that apply to it.
struct Spans<E> {
    exporter: E,
    processors: Arc<Chain<dyn ExportStage<SpanData>>>,
    /// The provider's resource, for spool records.
    resource: EncodedResource,
}

impl<E: SpanExporter + 'static> BatchExport for Spans<E> {
    type Item = SpanData;

    fn process(&self, batch: Vec<SpanData>) -> (Vec<SpanData>, Processed) {
        run_stages(self.processors.current().list(), batch)
    }

    fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        futures_executor::block_on(self.exporter.export(batch))
    }

    fn encode(&self, batch: &[SpanData]) -> Vec<u8> {
        crate::spool::otlp::encode_spans(batch, &self.resource)
    }

    fn decode(&self, record: &[u8]) -> Result<Vec<SpanData>, String> {
        crate::spool::otlp::decode_spans(record).map_err(|e| e.to_string())
    }

    fn force_flush(&mut self) -> OTelSdkResult {
        self.exporter.force_flush()
    }

    fn shutdown_with_timeout(&mut self, timeout: Duration) -> OTelSdkResult {
        let result = self.exporter.shutdown_with_timeout(timeout);
        self.processors.shutdown(timeout);
        result
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.resource = EncodedResource::new(resource);
        self.exporter.set_resource(resource);
        for p in self.processors.current().list() {
            p.set_resource(resource);
        }
    }
}

/// A batch span processor feeding one exporter, with exact per-exporter statistics: every span
/// that reaches [`SpanProcessor::on_end`] is exported or counted as dropped, by reason.
#[derive(Debug)]
pub struct BatchSpanProcessor {
    queue: BatchQueue<SpanData>,
    /// The processors before its exporter (a reload replaces them).
    chain: Arc<Chain<dyn ExportStage<SpanData>>>,
}

impl BatchSpanProcessor {
    /// Starts the worker thread for `exporter`, counting into `stats`.
    pub fn new<E>(exporter: E, config: BatchConfig, stats: Arc<ExporterStats>) -> Self
    where
        E: SpanExporter + 'static,
    {
        Self::with_processors(exporter, Vec::new(), config, stats)
    }

    /// [`new`](Self::new), each batch going through `processors` in order before the exporter
    /// (what they drop is counted as `dropped_processor`, by processor).
    pub fn with_processors<E>(
        exporter: E,
        processors: Vec<Arc<dyn ExportStage<SpanData>>>,
        config: BatchConfig,
        stats: Arc<ExporterStats>,
    ) -> Self
    where
        E: SpanExporter + 'static,
    {
        Self::with_spool(exporter, processors, config, stats, None)
    }

    /// [`with_processors`](Self::with_processors), the batches the exporter cannot take going
    /// to `spool` (opened, with what it found there) and replayed from it.
    pub fn with_spool<E>(
        exporter: E,
        processors: Vec<Arc<dyn ExportStage<SpanData>>>,
        config: BatchConfig,
        stats: Arc<ExporterStats>,
        spool: Option<(Spool, Opened)>,
    ) -> Self
    where
        E: SpanExporter + 'static,
    {
        let spooling = spool.map(|(spool, opened)| Arc::new(Spooling::new(spool, opened, &stats)));
        Self::with_spooling(exporter, processors, config, stats, spooling)
    }

    /// [`with_spool`](Self::with_spool) on a spool already open (adopted by a reload).
    pub(crate) fn with_spooling<E>(
        exporter: E,
        processors: Vec<Arc<dyn ExportStage<SpanData>>>,
        config: BatchConfig,
        stats: Arc<ExporterStats>,
        spooling: Option<Arc<Spooling>>,
    ) -> Self
    where
        E: SpanExporter + 'static,
    {
        let processors = Arc::new(Chain::new(processors));
        let chain = processors.clone();
        let spans = Spans {
            exporter,
            processors,
            resource: EncodedResource::new(&Resource::builder_empty().build()),
        };
        Self {
            queue: BatchQueue::with_spooling(spans, config, stats, Signal::Traces, spooling),
            chain,
        }
    }

    /// The processors before its exporter, which a reload replaces.
    pub fn chain(&self) -> Arc<Chain<dyn ExportStage<SpanData>>> {
        self.chain.clone()
    }

    /// Its spool, if it has one.
    pub(crate) fn spooling(&self) -> Option<Arc<Spooling>> {
        self.queue.spooling().cloned()
    }

    /// The live statistics of this processor's exporter.
    pub fn stats(&self) -> &Arc<ExporterStats> {
        self.queue.stats()
    }

    /// Queues a batch of ended spans as it is (a batch another processor made: the Python
    /// SDK's), each counted as [`on_end`](SpanProcessor::on_end) counts it, and has the worker
    /// export it without waiting for its timer.
    pub fn hand_off(&self, spans: impl IntoIterator<Item = SpanData>) {
        self.queue.push_batch(spans);
    }

    /// Exports what is queued, then flushes the exporter, within `timeout` (the SDK's
    /// `force_flush` takes `shutdown_timeout_ms`).
    pub fn force_flush_within(&self, timeout: Duration) -> OTelSdkResult {
        self.queue.force_flush_within(timeout)
    }

    /// Settles what is queued within `timeout`: each span exported, or spooled when the
    /// exporter cannot take it now (its spool is left to its replay), or dropped.
    pub fn settle_within(&self, timeout: Duration) -> OTelSdkResult {
        self.queue.settle_within(timeout)
    }
}

impl SpanProcessor for BatchSpanProcessor {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        self.queue.push(span);
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

/// In place of an exporter disabled at setup: every span it would have got is counted as
/// dropped (reason `disabled`), so the accounting still adds up.
#[derive(Debug)]
pub struct DisabledSpanProcessor {
    stats: Arc<ExporterStats>,
}

impl DisabledSpanProcessor {
    /// Records `reason` in `stats` and counts every span from now on as dropped.
    pub fn new(stats: Arc<ExporterStats>, reason: String) -> Self {
        stats.record_disabled(reason);
        Self { stats }
    }
}

impl SpanProcessor for DisabledSpanProcessor {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, _span: SpanData) {
        self.stats.record_received();
        self.stats.record_dropped(DropReason::Disabled, 1);
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}
