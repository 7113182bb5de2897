//! The recording spans an installation's tracers started and the application still holds:
//! what shutdown ends, innermost first (NeMo Lens's closer). [`LensTracer`](super::LensTracer)
//! registers each recording span here ([`TrackedSpan`]); the fan-out processor closes what is
//! left at shutdown.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, Weak};

use opentelemetry::trace::{SpanContext, SpanId};
use opentelemetry_sdk::trace::{Span, SpanData};

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
    pub(super) fn new() -> Arc<Self> {
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
    pub(super) fn close(&self) -> Vec<SpanData> {
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

/// A recording span shared between the application and the registry of open spans.
#[derive(Debug)]
pub(crate) struct TrackedSpan {
    /// Its place in the order spans were started (shutdown ends the latest first).
    pub(crate) seq: u64,
    pub(crate) context: SpanContext,
    pub(crate) span: Mutex<Span>,
    pub(crate) registry: Weak<OpenSpans>,
}

impl Drop for TrackedSpan {
    fn drop(&mut self) {
        if let Some(open) = self.registry.upgrade() {
            open.forget(&self.context);
        }
    }
}

impl TrackedSpan {
    pub(crate) fn new(seq: u64, span: Span, registry: Weak<OpenSpans>) -> Self {
        Self {
            seq,
            context: opentelemetry::trace::Span::span_context(&span).clone(),
            span: Mutex::new(span),
            registry,
        }
    }

    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Span) -> R) -> R {
        f(&mut self.span.lock().unwrap_or_else(|p| p.into_inner()))
    }
}
