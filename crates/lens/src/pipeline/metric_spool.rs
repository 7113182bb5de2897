//! A metric entry's spool (`spool = {…}` on an OTLP or wasm `[[metrics.exporters]]` entry):
//! collections its exporter cannot take go to disk, and come back when it recovers.
//!
//! The periodic reader hands over one collection per interval and waits for its export, so
//! there is no queue to overflow: the spool covers an exporter that fails or is down.
//! - **Down.** A collection whose export fails (after the exporter's own retries) is spooled
//!   and the exporter marked down; while it is down every collection is spooled, and when its
//!   backoff has passed (1 s doubling to 5 s, as for spans) the oldest record is tried first.
//! - **Replay.** New data first: after a collection is exported, spooled records follow,
//!   oldest first, for at most [`replay_budget`] (half the export interval, at most 5 s), so a
//!   backlog never delays the next collection. A flush and a shutdown of the installation
//!   replay within their own timeout; what is left stays on disk for the next process
//!   (or `lens spool replay`).
//!
//! A record is the `ExportMetricsServiceRequest` after the processors, sent back as it was
//! collected (its resource and timestamps included). Every data point ends in one counter:
//! exported (now or replayed), spooled (`in_spool` while there), or dropped by reason.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::batch::Turn;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use prost::Message;

use crate::batch::{DirectExport, ExporterStats, Spooling};
use crate::exporter::otlp::OtlpRequestSender;
use crate::spool::otlp::decode_metrics;
use crate::spool::{Opened, Spool};
use crate::wasm::reload::Reloadable;

/// What a metric spool holds, in messages.
const NOUN: &str = "data points";

/// The longest one collection's export replays spooled records after it.
const MAX_REPLAY_BUDGET: Duration = Duration::from_secs(5);

/// How long a collection's export replays spooled records after it: half the export interval,
/// at most 5 s.
pub fn replay_budget(interval: Duration) -> Duration {
    (interval / 2).min(MAX_REPLAY_BUDGET)
}

/// A function exporting one request of `items` data points, to completion.
pub type SendRequest =
    Box<dyn Fn(&ExportMetricsServiceRequest, u64) -> OTelSdkResult + Send + Sync>;

/// Where a metric entry with a spool sends its requests, live or replayed.
pub struct RequestSink(Sink);

enum Sink {
    /// OTLP, the request as it is.
    Otlp(Box<OtlpRequestSender>),
    /// A sandboxed exporter's running instances.
    Wasm(Arc<Reloadable>),
    /// Any exporter, uncounted: the spool counts.
    Function(SendRequest),
}

impl RequestSink {
    pub(crate) fn otlp(sender: OtlpRequestSender) -> Self {
        Self(Sink::Otlp(Box::new(sender)))
    }

    pub(crate) fn wasm(inner: Arc<Reloadable>) -> Self {
        Self(Sink::Wasm(inner))
    }

    /// Requests go to `send` (the Python package's exporter, rebuilt when its resource
    /// arrives), which must not count them: the spool does.
    pub fn function(send: SendRequest) -> Self {
        Self(Sink::Function(send))
    }

    async fn send(&self, request: &ExportMetricsServiceRequest, items: u64) -> OTelSdkResult {
        match &self.0 {
            Sink::Otlp(sender) => sender.send(request).await,
            Sink::Wasm(inner) => {
                crate::wasm::exporters::metric::export_request(inner, request, items)
            }
            Sink::Function(send) => send(request, items),
        }
    }
}

/// One metric entry's spool and its sink.
pub struct MetricSpool {
    spooling: Spooling,
    sink: RequestSink,
    stats: Arc<ExporterStats>,
    budget: Duration,
    /// Given up (by the exporter's shutdown, or the installation's when the reader's timed out).
    released: AtomicBool,
}

impl std::fmt::Debug for MetricSpool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricSpool")
            .field("exporter", &self.stats.name())
            .field("dir", &self.spooling.dir())
            .finish_non_exhaustive()
    }
}

impl MetricSpool {
    /// `spool` (opened, with what it found) for the entry sending through `sink`, counting
    /// into `stats`, replaying for [`replay_budget`] of `interval` after each collection.
    pub fn new(
        (spool, opened): (Spool, Opened),
        sink: RequestSink,
        stats: Arc<ExporterStats>,
        interval: Duration,
    ) -> Self {
        Self {
            spooling: Spooling::new(spool, opened, &stats),
            sink,
            stats,
            budget: replay_budget(interval),
            released: AtomicBool::new(false),
        }
    }

    /// Exports one collection's `request` (after the processors), its data points counted
    /// under `export`: sent, or spooled when the exporter fails or is down. Never an error
    /// while the spool takes it: the reader has nothing to retry.
    pub async fn export(
        &self,
        request: ExportMetricsServiceRequest,
        export: DirectExport,
    ) -> OTelSdkResult {
        if self.spooling.is_down() {
            if self.spooling.retry_due() {
                // Oldest first: the backlog is tried before this collection.
                self.replay_for(self.budget).await;
            }
            if self.spooling.is_down() {
                self.spool(&request, export, None);
                return Ok(());
            }
        }
        let started = Instant::now();
        let result = self.sink.send(&request, export.items()).await;
        self.spooling.exported(&result);
        match result {
            Ok(()) => {
                self.stats
                    .end_direct_export(export, &Ok(()), started.elapsed());
                self.replay_for(self.budget).await;
            }
            Err(e) => self.spool(&request, export, Some(&e)),
        }
        Ok(())
    }

    /// Writes `request` to the spool at once, its data points counted there (a hand-off
    /// queue that is full: the collection waits on disk instead of being dropped).
    pub fn spill(&self, request: &ExportMetricsServiceRequest, export: DirectExport) {
        self.spool(request, export, None);
    }

    /// Writes `request` to the spool, its data points counted there (unless the shutdown
    /// counted them already).
    fn spool(
        &self,
        request: &ExportMetricsServiceRequest,
        export: DirectExport,
        failed: Option<&OTelSdkError>,
    ) {
        let items = export.items();
        if !self.stats.end_direct_spooled(export, failed) {
            return;
        }
        let spooled = self
            .spooling
            .append(&self.stats, items, &request.encode_to_vec());
        if let Some(e) = failed {
            Spooling::report_failed(&self.stats, items, NOUN, e, spooled);
        }
    }

    /// Replays for at most `budget` if no one else is replaying.
    async fn replay_for(&self, budget: Duration) {
        if let Some(turn) = self.spooling.try_turn() {
            self.replay(Instant::now() + budget, turn).await;
        }
    }

    /// Sends spooled records, oldest first, until none is left, one fails or `deadline`.
    async fn replay(&self, deadline: Instant, _turn: Turn<'_>) {
        while Instant::now() < deadline {
            let Some(record) = self.spooling.next_record(&self.stats) else {
                break;
            };
            match decode_metrics(&record.payload, record.items) {
                Err(e) => self.spooling.skip(&self.stats, &record, &e.to_string()),
                Ok(request) => {
                    let result = self.sink.send(&request, record.items).await;
                    if !self.spooling.replayed(&self.stats, &record, result) {
                        break;
                    }
                }
            }
        }
    }

    /// Replays what it can within `timeout` (a flush or a shutdown of the installation: the
    /// backoff of an exporter that is down is not waited for), waiting for a replay already
    /// running to end first.
    pub fn drain(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        if let Some(turn) = self.spooling.turn_until(deadline) {
            futures_executor::block_on(self.replay(deadline, turn));
        }
    }

    /// What is left after a flush or a shutdown: an error naming the spool while it holds
    /// data points (delivered later, by this process or the next).
    pub fn delivered(&self) -> OTelSdkResult {
        self.spooling.delivered(NOUN)
    }

    /// Gives the spool up (the exporter shut down, or the installation did while the reader's
    /// last export hung), saying what stays in it; once.
    pub fn release(&self) {
        if self.released.swap(true, Ordering::SeqCst) {
            return;
        }
        self.spooling.report_left(&self.stats, NOUN);
        self.spooling.release();
    }
}
