//! The one processor Lens registers on the tracer provider: it closes spans left open at
//! shutdown and fans every span out to the per-exporter processors, to which more can be added
//! after setup (the SDK cannot add processors to a built provider).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant, SystemTime};

use opentelemetry::trace::{SpanContext, SpanId};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{Span, SpanData, SpanProcessor};

use super::tracer::TrackedSpan;
use crate::batch::{DeliveryStats, ExporterStats};

/// Attribute (`true`) and event name on spans that were still open at shutdown and ended
/// there, as NeMo Lens marks them.
pub const TRUNCATED_ATTRIBUTE: &str = "nemo.span.truncated";
/// The attribute of that event saying why.
pub const TRUNCATED_REASON_KEY: &str = "nemo.span.truncated.reason";
/// Its value.
pub const TRUNCATED_REASON: &str = "still open at telemetry shutdown";

const SHARDS: usize = 16;

/// Span ids are random already: the map uses them as their own hash (SipHash cost a third of
/// the tracking overhead per span in `cargo bench --bench pipeline -- --only app`).
#[derive(Default)]
struct SpanIdHasher(u64);

impl Hasher for SpanIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = id;
    }
}

type OpenShard = HashMap<u64, Weak<TrackedSpan>, BuildHasherDefault<SpanIdHasher>>;

/// The recording spans started by the installation's tracers and not dropped yet, sharded to
/// keep lock contention low.
pub(crate) struct OpenSpans {
    shards: [Mutex<OpenShard>; SHARDS],
    /// Orders the spans by start: shutdown ends the latest first.
    next_seq: AtomicU64,
    /// Set at shutdown: spans started later are no longer tracked.
    closed: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for OpenSpans {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenSpans")
            .field("started", &self.next_seq.load(Relaxed))
            .finish()
    }
}

impl OpenSpans {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            shards: Default::default(),
            next_seq: AtomicU64::new(0),
            closed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn key(id: SpanId) -> u64 {
        u64::from_be_bytes(id.to_bytes())
    }

    fn shard(&self, key: u64) -> std::sync::MutexGuard<'_, OpenShard> {
        self.shards[key as usize % SHARDS]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a recording span the application now holds.
    pub(crate) fn track(self: &Arc<Self>, span: Span) -> Arc<TrackedSpan> {
        let seq = self.next_seq.fetch_add(1, Relaxed);
        let tracked = Arc::new(TrackedSpan::new(seq, span, Arc::downgrade(self)));
        if !self.closed.load(Relaxed) {
            let key = Self::key(tracked.context.span_id());
            self.shard(key).insert(key, Arc::downgrade(&tracked));
        }
        tracked
    }

    /// Forgets a span the application dropped.
    pub(crate) fn forget(&self, cx: &SpanContext) {
        let key = Self::key(cx.span_id());
        self.shard(key).remove(&key);
    }

    /// What the spans still open hold now, innermost (latest started) first; from now on no
    /// span is tracked.
    fn close(&self) -> Vec<SpanData> {
        self.closed.store(true, Relaxed);
        let mut open: Vec<Arc<TrackedSpan>> = self
            .shards
            .iter()
            .flat_map(|s| {
                let mut shard = s.lock().unwrap_or_else(|p| p.into_inner());
                shard
                    .drain()
                    .filter_map(|(_, w)| w.upgrade())
                    .collect::<Vec<_>>()
            })
            .collect();
        open.sort_by_key(|t| std::cmp::Reverse(t.seq));
        open.iter()
            .filter_map(|t| {
                t.span
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .exported_data()
            })
            .collect()
    }
}

pub(crate) struct FanOutCore {
    processors: RwLock<Vec<Box<dyn SpanProcessor>>>,
    exporter_stats: RwLock<Vec<Arc<ExporterStats>>>,
    resource: RwLock<Option<Resource>>,
    open: Option<Arc<OpenSpans>>,
    produced: AtomicU64,
    truncated: AtomicU64,
}

impl std::fmt::Debug for FanOutCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FanOutSpanProcessor")
            .field(
                "processors",
                &self.processors.read().map(|p| p.len()).unwrap_or(0),
            )
            .finish()
    }
}

impl FanOutCore {
    pub(crate) fn new(close_open_spans: bool) -> Arc<Self> {
        Arc::new(Self {
            processors: RwLock::default(),
            exporter_stats: RwLock::default(),
            resource: RwLock::default(),
            open: close_open_spans.then(OpenSpans::new),
            produced: AtomicU64::new(0),
            truncated: AtomicU64::new(0),
        })
    }

    /// Adds a processor; it gets the provider's resource first when that is already known.
    pub(crate) fn add(
        &self,
        mut processor: Box<dyn SpanProcessor>,
        stats: Option<Arc<ExporterStats>>,
    ) {
        if let Some(resource) = self
            .resource
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            processor.set_resource(resource);
        }
        self.processors
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(processor);
        if let Some(stats) = stats {
            self.exporter_stats
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .push(stats);
        }
    }

    pub(crate) fn stats(&self) -> DeliveryStats {
        DeliveryStats {
            spans_produced: self.produced.load(Relaxed),
            spans_truncated: self.truncated.load(Relaxed),
            exporters: self
                .exporter_stats
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .map(|s| s.snapshot())
                .collect(),
            log_exporters: Vec::new(),
            metric_exporters: Vec::new(),
        }
    }

    fn dispatch(&self, span: SpanData) {
        self.produced.fetch_add(1, Relaxed);
        let processors = self.processors.read().unwrap_or_else(|p| p.into_inner());
        if let Some((last, rest)) = processors.split_last() {
            for p in rest {
                p.on_end(span.clone());
            }
            last.on_end(span);
        }
    }

    /// The registry of open spans, when the installation closes them at shutdown.
    pub(crate) fn open_spans(&self) -> Option<Arc<OpenSpans>> {
        self.open.clone()
    }

    /// Ends every span still open, innermost first, with what was recorded on it until now,
    /// marked truncated (attribute and event, status untouched), and hands it on.
    fn close_open_spans(&self) {
        let Some(open) = &self.open else { return };
        let now = SystemTime::now();
        for mut span in open.close() {
            span.end_time = now;
            span.attributes
                .push(KeyValue::new(TRUNCATED_ATTRIBUTE, true));
            span.events.events.push(opentelemetry::trace::Event::new(
                TRUNCATED_ATTRIBUTE,
                now,
                vec![KeyValue::new(TRUNCATED_REASON_KEY, TRUNCATED_REASON)],
                0,
            ));
            self.truncated.fetch_add(1, Relaxed);
            self.dispatch(span);
        }
    }

    fn for_each_with_deadline(
        &self,
        timeout: Duration,
        f: impl Fn(&dyn SpanProcessor, Duration) -> OTelSdkResult,
    ) -> OTelSdkResult {
        let deadline = Instant::now()
            .checked_add(timeout)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365));
        let processors = self.processors.read().unwrap_or_else(|p| p.into_inner());
        let mut errors = Vec::new();
        for p in processors.iter() {
            let left = deadline.saturating_duration_since(Instant::now());
            if let Err(e) = f(p.as_ref(), left) {
                errors.push(format!("{p:?}: {e}"));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(OTelSdkError::InternalFailure(errors.join("; ")))
        }
    }
}

/// The provider-side handle of [`FanOutCore`].
#[derive(Debug, Clone)]
pub(crate) struct FanOutSpanProcessor(pub(crate) Arc<FanOutCore>);

impl SpanProcessor for FanOutSpanProcessor {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        for p in self
            .0
            .processors
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            p.on_start(span, cx);
        }
    }

    fn on_end(&self, span: SpanData) {
        self.0.dispatch(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0
            .for_each_with_deadline(Duration::MAX, |p, _| p.force_flush())
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.close_open_spans();
        self.0
            .for_each_with_deadline(timeout, |p, left| p.shutdown_with_timeout(left))
    }

    fn set_resource(&mut self, resource: &Resource) {
        *self.0.resource.write().unwrap_or_else(|p| p.into_inner()) = Some(resource.clone());
        for p in self
            .0
            .processors
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .iter_mut()
        {
            p.set_resource(resource);
        }
    }
}
