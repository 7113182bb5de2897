//! The one processor Lens registers on the tracer provider: it closes spans left open at
//! shutdown and fans every span out to the per-exporter processors, to which more can be added
//! after setup (the SDK cannot add processors to a built provider).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use opentelemetry::trace::SpanId;
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{Span, SpanData, SpanProcessor};

use super::stats::{DeliveryStats, ExporterStats};

/// Attribute set on spans that were still open at shutdown and ended by Lens.
pub const TRUNCATED_ATTRIBUTE: &str = "lens.truncated";

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

type OpenShard = HashMap<u64, SpanData, BuildHasherDefault<SpanIdHasher>>;

/// Snapshots of the spans started and not yet ended, sharded to keep lock contention low.
struct OpenSpans {
    shards: [Mutex<OpenShard>; SHARDS],
}

impl OpenSpans {
    fn key(id: SpanId) -> u64 {
        u64::from_be_bytes(id.to_bytes())
    }

    fn shard(&self, key: u64) -> std::sync::MutexGuard<'_, OpenShard> {
        self.shards[key as usize % SHARDS]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn insert(&self, span: SpanData) {
        let key = Self::key(span.span_context.span_id());
        self.shard(key).insert(key, span);
    }

    fn remove(&self, id: SpanId) {
        let key = Self::key(id);
        self.shard(key).remove(&key);
    }

    fn drain(&self) -> Vec<SpanData> {
        self.shards
            .iter()
            .flat_map(|s| {
                s.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .drain()
                    .map(|(_, v)| v)
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

pub(crate) struct FanOutCore {
    processors: RwLock<Vec<Box<dyn SpanProcessor>>>,
    exporter_stats: RwLock<Vec<Arc<ExporterStats>>>,
    resource: RwLock<Option<Resource>>,
    open: Option<OpenSpans>,
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
            open: close_open_spans.then(|| OpenSpans {
                shards: Default::default(),
            }),
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

    /// Ends every span still open, marked truncated, and hands it on.
    fn close_open_spans(&self) {
        let Some(open) = &self.open else { return };
        let now = SystemTime::now();
        for mut span in open.drain() {
            span.end_time = now;
            span.attributes
                .push(KeyValue::new(TRUNCATED_ATTRIBUTE, true));
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
        if let Some(open) = &self.0.open
            && let Some(data) = span.exported_data()
        {
            open.insert(data);
        }
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
        if let Some(open) = &self.0.open {
            open.remove(span.span_context.span_id());
        }
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
