//! The one processor Lens registers on the tracer provider: it closes spans left open at
//! shutdown and fans every span out to the per-exporter processors, to which more can be added
//! after setup (the SDK cannot add processors to a built provider).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime};

use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{Span, SpanData, SpanProcessor};

use super::open_spans::OpenSpans;
use crate::batch::{DeliveryStats, ExporterStats};
use crate::slots::{Change, Slots, StatsList};

/// Attribute (`true`) and event name on spans that were still open at shutdown and ended
/// there, as NeMo Lens marks them.
pub const TRUNCATED_ATTRIBUTE: &str = "nemo.span.truncated";
/// The attribute of that event saying why.
pub const TRUNCATED_REASON_KEY: &str = "nemo.span.truncated.reason";
/// Its value.
pub const TRUNCATED_REASON: &str = "still open at telemetry shutdown";

pub(crate) struct FanOutCore {
    processors: Slots<Box<dyn SpanProcessor>>,
    exporter_stats: StatsList,
    /// The sandboxed processors' own statistics (`[[traces.processors]]`).
    processor_stats: StatsList,
    resource: RwLock<Option<Resource>>,
    open: Option<Arc<OpenSpans>>,
    produced: AtomicU64,
    truncated: AtomicU64,
}

impl std::fmt::Debug for FanOutCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FanOutSpanProcessor")
            .field("processors", &self.processors.read().len())
            .finish()
    }
}

impl FanOutCore {
    pub(crate) fn new(close_open_spans: bool) -> Arc<Self> {
        Arc::new(Self {
            processors: Slots::default(),
            exporter_stats: StatsList::default(),
            processor_stats: StatsList::default(),
            resource: RwLock::default(),
            open: close_open_spans.then(OpenSpans::new),
            produced: AtomicU64::new(0),
            truncated: AtomicU64::new(0),
        })
    }

    /// Adds a processor (`name`: the config entry it was built from, which a reload can
    /// replace or remove); it gets the provider's resource first when that is already known.
    pub(crate) fn add(
        &self,
        name: Option<String>,
        mut processor: Box<dyn SpanProcessor>,
        stats: Option<Arc<ExporterStats>>,
    ) {
        self.give_resource(&mut processor);
        self.processors.push(name, processor);
        if let Some(stats) = stats {
            self.exporter_stats.add(stats);
        }
    }

    /// The statistics of the exporters.
    pub(crate) fn exporter_stats(&self) -> &StatsList {
        &self.exporter_stats
    }

    /// The statistics of the sandboxed span processors.
    pub(crate) fn processor_stats(&self) -> &StatsList {
        &self.processor_stats
    }

    fn give_resource(&self, processor: &mut Box<dyn SpanProcessor>) {
        if let Some(resource) = self
            .resource
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            processor.set_resource(resource);
        }
    }

    /// Applies a reload's changes to the named processors at one instant: every span ended
    /// before goes to the processors taken out, which are returned (to be shut down), every
    /// span after to the new ones.
    pub(crate) fn apply(
        &self,
        changes: Vec<Change<Box<dyn SpanProcessor>>>,
    ) -> Vec<(String, Box<dyn SpanProcessor>)> {
        self.processors
            .apply(changes, |processor| self.give_resource(processor))
    }

    pub(crate) fn stats(&self) -> DeliveryStats {
        DeliveryStats {
            spans_produced: self.produced.load(Relaxed),
            spans_truncated: self.truncated.load(Relaxed),
            exporters: self.exporter_stats.snapshots(),
            log_exporters: Vec::new(),
            metric_exporters: Vec::new(),
            span_processors: self.processor_stats.snapshots(),
            log_processors: Vec::new(),
            metric_processors: Vec::new(),
        }
    }

    fn dispatch(&self, mut span: SpanData) {
        self.produced.fetch_add(1, Relaxed);
        super::flags::mark_root(&mut span);
        let processors = self.processors.read();
        if let Some((last, rest)) = processors.split_last() {
            for p in rest {
                p.processor.on_end(span.clone());
            }
            last.processor.on_end(span);
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
        let processors = self.processors.read();
        let mut errors = Vec::new();
        for p in processors.iter().map(|s| &s.processor) {
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
        for p in self.0.processors.read().iter() {
            p.processor.on_start(span, cx);
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
        for p in self.0.processors.write().iter_mut() {
            p.processor.set_resource(resource);
        }
    }
}
