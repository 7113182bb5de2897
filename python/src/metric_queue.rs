//! [`MetricQueue`]: the metric exporter's hand-off. `export` takes a collection (an OTLP
//! request, read under the GIL) and queues it for Lens's export thread; the reader's thread (or
//! the application's, when it flushes or shuts the meter provider down) does not wait for the
//! guest. Counted from the moment it is queued: a collection that finds the queue full is
//! dropped (`dropped_queue_full`), one still queued or in flight when the shutdown gives up is
//! dropped at shutdown. With a spool (`spool=`), the export thread sends each collection through
//! it ([`MetricSpool`]): what the guest cannot take waits on disk, replayed after later
//! collections, by flushes and the shutdown, or by the next process.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError, bounded};
use lens::metric_spool::MetricSpool;
use lens::opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use lens::opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use lens::opentelemetry_sdk::metrics::exporter::PushMetricExporter as _;
use lens::trace::{Chain, DirectExport, DropReason, ExporterStats};
use lens::wasm::processors::run_metric_processors;
use lens::wasm::{WasmMetricExporter, WasmProcessor};

use crate::following::Following;
use crate::handoff::Queue;

/// Collections the queue holds: the periodic reader makes one per interval, so more than a few
/// waiting means the guest cannot keep up and the oldest are stale.
pub const QUEUED_COLLECTIONS: usize = 4;

enum Job {
    Export(DirectExport, ExportMetricsServiceRequest),
    Flush(Sender<OTelSdkResult>, Duration),
}

pub struct MetricQueue {
    /// `None` once shut down.
    jobs: Mutex<Option<Sender<Job>>>,
    /// Says when the worker has finished every job (it then ends).
    done: Receiver<()>,
    worker: Mutex<Option<JoinHandle<()>>>,
    exporter: Arc<Following<WasmMetricExporter>>,
    stats: Arc<ExporterStats>,
    /// Run on each collection before the export, in order (a watched file replaces them).
    processors: Arc<Chain<WasmProcessor>>,
    spool: Option<Arc<MetricSpool>>,
}

impl MetricQueue {
    /// Starts the export thread (`lens-metrics-{name}`) of `exporter`, which runs
    /// `processors` on each collection first.
    pub fn new(
        name: &str,
        exporter: Arc<Following<WasmMetricExporter>>,
        stats: Arc<ExporterStats>,
        processors: Vec<Arc<WasmProcessor>>,
        spool: Option<Arc<MetricSpool>>,
    ) -> Self {
        let (jobs, queued) = bounded::<Job>(QUEUED_COLLECTIONS);
        let spooled = spool.clone();
        let processors = Arc::new(Chain::new(processors));
        let (done_tx, done) = bounded(1);
        let guest = exporter.clone();
        let (before, counts) = (processors.clone(), stats.clone());
        let worker = std::thread::Builder::new()
            .name(format!("lens-metrics-{name}"))
            .spawn(move || {
                for job in queued {
                    match job {
                        Job::Export(ticket, mut request) => {
                            let chain = before.current();
                            let processed = run_metric_processors(chain.list(), &mut request);
                            // Nothing left (or the shutdown already counted it): no export.
                            let Some(ticket) = counts.processed_direct(ticket, &processed.by)
                            else {
                                continue;
                            };
                            let result = match &spooled {
                                Some(spool) => {
                                    futures_executor::block_on(spool.export(request, ticket))
                                }
                                None => guest.with(|e| e.export_otlp_counted(&request, ticket)),
                            };
                            if let Err(e) = result {
                                log::warn!("{e}");
                            }
                        }
                        Job::Flush(reply, timeout) => {
                            let started = Instant::now();
                            let delivered = spooled.as_ref().map_or(Ok(()), |spool| {
                                spool.drain(timeout);
                                spool.delivered()
                            });
                            let left = timeout.saturating_sub(started.elapsed());
                            let flushed = guest.with(|e| e.force_flush_within(left));
                            let _ = reply.send(delivered.and(flushed));
                        }
                    }
                }
                let _ = done_tx.send(());
            })
            .expect("spawning the metric export thread");
        Self {
            jobs: Mutex::new(Some(jobs)),
            done,
            worker: Mutex::new(Some(worker)),
            exporter,
            stats,
            processors,
            spool,
        }
    }

    fn sender(&self) -> Option<Sender<Job>> {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Queues a collection of `points` data points, counted from now.
    pub fn hand_off(&self, request: ExportMetricsServiceRequest, points: u64) {
        let ticket = self.stats.begin_direct_export(points);
        let Some(jobs) = self.sender() else {
            self.stats
                .refuse_direct_export(ticket, DropReason::Shutdown);
            return;
        };
        match jobs.try_send(Job::Export(ticket, request)) {
            Ok(()) => {}
            Err(TrySendError::Full(Job::Export(ticket, request))) => match &self.spool {
                // The guest is behind (an outage's retries): the collection waits on disk.
                Some(spool) => spool.spill(&request, ticket),
                None => {
                    log::warn!(
                        "wasm exporter `{}`: {QUEUED_COLLECTIONS} collections already queued; \
                         this one is dropped",
                        self.stats.name()
                    );
                    self.stats
                        .refuse_direct_export(ticket, DropReason::QueueFull)
                }
            },
            Err(TrySendError::Disconnected(Job::Export(ticket, _))) => self
                .stats
                .refuse_direct_export(ticket, DropReason::Shutdown),
            Err(_) => unreachable!("an export job was sent"),
        }
    }
}

impl Queue for MetricQueue {
    fn rechain(&self, processors: Vec<Arc<WasmProcessor>>) {
        self.processors.replace(processors);
    }

    /// Settling is flushing: a collection is settled once exported or spooled, and a flush
    /// replays the spool as well.
    fn settle_within(&self, timeout: Duration) -> OTelSdkResult {
        self.flush_within(timeout)
    }

    /// Exports what is queued, then has the guest flush, within `timeout`.
    fn flush_within(&self, timeout: Duration) -> OTelSdkResult {
        let started = Instant::now();
        let Some(jobs) = self.sender() else {
            return Err(OTelSdkError::AlreadyShutdown);
        };
        let (reply, answer) = bounded(1);
        jobs.send_timeout(Job::Flush(reply, timeout), timeout)
            .map_err(|_| OTelSdkError::Timeout(timeout))?;
        answer
            .recv_timeout(timeout.saturating_sub(started.elapsed()))
            .unwrap_or(Err(OTelSdkError::Timeout(timeout)))
    }

    /// Exports what is queued within `timeout`, then shuts the guest down in what is left of
    /// it; what is still queued or in flight then is counted by the core's shutdown.
    fn shut_down(&self, timeout: Duration) -> OTelSdkResult {
        let started = Instant::now();
        drop(self.jobs.lock().unwrap_or_else(|p| p.into_inner()).take());
        let drained = self.done.recv_timeout(timeout).is_ok();
        if drained
            && let Some(worker) = self.worker.lock().unwrap_or_else(|p| p.into_inner()).take()
        {
            let _ = worker.join();
        }
        // The spool within half of what is left; what stays is the next process's.
        let mut spooled = Ok(());
        if let Some(spool) = &self.spool {
            if drained {
                spool.drain(timeout.saturating_sub(started.elapsed()) / 2);
            }
            spooled = spool.delivered();
            spool.release();
        }
        // A guest hung in an export gets the rest of the time to give up (the lanes' shutdown
        // does not wait past it).
        let left = timeout.saturating_sub(started.elapsed());
        for p in self.processors.current().list() {
            p.shutdown(left);
        }
        let left = timeout.saturating_sub(started.elapsed());
        let shut = self.exporter.with(|e| e.shutdown_with_timeout(left));
        if drained {
            spooled.and(shut)
        } else {
            Err(OTelSdkError::Timeout(timeout))
        }
    }
}
