//! [`LensTracer`]: the SDK's tracer with these added.
//!
//! - **Open spans are tracked.** Each recording span it starts is registered (by a weak
//!   reference) with the installation's fan-out; at shutdown, the spans still open are ended
//!   there with everything recorded on them until then, innermost first, marked
//!   `nemo.span.truncated` (attribute and event), as NeMo Lens's closer does. The SDK's own span
//!   stays with the application: once the provider is shut down, ending it exports nothing more.
//! - **Root spans join the launcher's trace.** When the environment carries a W3C
//!   `TRACEPARENT` (and `TRACESTATE`), a span started without a parent gets that remote context as
//!   its parent, so every rank of a job lands in one trace.
//!
//! - **Trace flags are Python's.** A root span carries W3C level 2's random-trace-id bit, and
//!   children inherit it ([`flags`](super::flags)), as in NeMo Lens.
//!
//! - **Span groups.** [`LensTracer::in_group_span`] and [`LensTracer::group_span`] create a span
//!   only when its group is enabled on this rank ([`SpanGroups`]).
//!
//! [`LensTracerProvider`] hands out these tracers (and is what Lens installs globally).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::SystemTime;

use opentelemetry::trace::{
    SpanBuilder, SpanContext, Status, TraceContextExt, Tracer, TracerProvider,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider, Span as SdkSpan};

use super::flags;
use super::groups::SpanGroups;
use super::open_spans::{OpenSpans, TrackedSpan};

/// The tracer of a Lens installation (see the module's documentation).
#[derive(Clone, Debug)]
pub struct LensTracer {
    inner: SdkTracer,
    open: Option<Arc<OpenSpans>>,
    launcher: Option<Context>,
    groups: SpanGroups,
}

impl LensTracer {
    /// The SDK's tracer underneath.
    pub fn sdk_tracer(&self) -> &SdkTracer {
        &self.inner
    }

    /// Whether spans of `group` are recorded by this tracer's installation.
    pub fn is_span_group_enabled(&self, group: &str) -> bool {
        self.groups.contains(group)
    }

    /// Runs `f` inside a new active span `name` when `group` is enabled (`f` gets its
    /// context), else runs `f` with `None` and creates nothing: NeMo Lens's `managed_span`.
    ///
    /// ```
    /// # use lens::opentelemetry::trace::{Span as _, TraceContextExt as _};
    /// # let config = lens::LensConfig { enabled: true, exporter: "none".into(), ..Default::default() };
    /// # let handle = lens::Telemetry::builder(config).rank(0).world_size(1).install_global(false).install().unwrap();
    /// let tracer = handle.tracer("trainer");
    /// // `default` enables job, checkpoint and evaluate, not step.
    /// let created = tracer.in_group_span("step", "step", |cx| cx.is_some());
    /// assert!(!created);
    /// tracer.in_group_span("checkpoint", "save", |cx| {
    ///     cx.expect("enabled").span().set_attribute(lens::opentelemetry::KeyValue::new("step", 100));
    /// });
    /// ```
    pub fn in_group_span<T>(
        &self,
        group: &str,
        name: impl Into<Cow<'static, str>>,
        f: impl FnOnce(Option<&Context>) -> T,
    ) -> T {
        if !self.groups.contains(group) {
            return f(None);
        }
        self.in_span(name, |cx| f(Some(&cx)))
    }

    /// Starts span `name` when `group` is enabled, else `None` (nothing is created).
    pub fn group_span(&self, group: &str, name: impl Into<Cow<'static, str>>) -> Option<LensSpan> {
        self.groups.contains(group).then(|| self.start(name))
    }
}

impl Tracer for LensTracer {
    type Span = LensSpan;

    fn build_with_context(&self, builder: SpanBuilder, parent_cx: &Context) -> LensSpan {
        let parent = match &self.launcher {
            Some(launcher) if !parent_cx.has_active_span() => launcher,
            _ => parent_cx,
        };
        let span = self.inner.build_with_context(builder, parent);
        let parent_span = parent.span();
        let parent_cx = Some(parent_span.span_context()).filter(|cx| cx.is_valid());
        let w3c = flags::w3c_context(opentelemetry::trace::Span::span_context(&span), parent_cx);
        let inner = match &self.open {
            Some(open) if opentelemetry::trace::Span::is_recording(&span) => {
                Inner::Tracked(open.track(span))
            }
            _ => Inner::Plain(span),
        };
        LensSpan { inner, w3c }
    }
}

/// A span one of the installation's tracers started.
#[derive(Debug)]
pub struct LensSpan {
    inner: Inner,
    /// Its context with Python's trace flags, where the SDK's differ ([`flags`]).
    w3c: Option<SpanContext>,
}

#[derive(Debug)]
// A non-recording span stays inline: starting one must cost no allocation (sampled-out ranks).
#[allow(clippy::large_enum_variant)]
enum Inner {
    /// Not recording, or the installation does not close open spans.
    Plain(SdkSpan),
    /// Registered: shutdown may end it.
    Tracked(Arc<TrackedSpan>),
}

impl LensSpan {
    fn with<R>(&mut self, f: impl FnOnce(&mut SdkSpan) -> R) -> R {
        match &mut self.inner {
            Inner::Plain(span) => f(span),
            Inner::Tracked(t) => t.with(f),
        }
    }
}

impl opentelemetry::trace::Span for LensSpan {
    fn add_event_with_timestamp<T>(
        &mut self,
        name: T,
        timestamp: SystemTime,
        attributes: Vec<KeyValue>,
    ) where
        T: Into<Cow<'static, str>>,
    {
        self.with(|s| s.add_event_with_timestamp(name, timestamp, attributes));
    }

    fn span_context(&self) -> &SpanContext {
        if let Some(cx) = &self.w3c {
            return cx;
        }
        match &self.inner {
            Inner::Plain(span) => span.span_context(),
            Inner::Tracked(t) => &t.context,
        }
    }

    fn is_recording(&self) -> bool {
        match &self.inner {
            Inner::Plain(span) => span.is_recording(),
            Inner::Tracked(t) => t.with(|s| s.is_recording()),
        }
    }

    fn set_attribute(&mut self, attribute: KeyValue) {
        self.with(|s| s.set_attribute(attribute));
    }

    fn set_attributes(&mut self, attributes: impl IntoIterator<Item = KeyValue>) {
        self.with(|s| s.set_attributes(attributes));
    }

    fn set_status(&mut self, status: Status) {
        self.with(|s| s.set_status(status));
    }

    fn update_name<T>(&mut self, new_name: T)
    where
        T: Into<Cow<'static, str>>,
    {
        self.with(|s| s.update_name(new_name));
    }

    fn add_link(&mut self, span_context: SpanContext, attributes: Vec<KeyValue>) {
        self.with(|s| s.add_link(span_context, attributes));
    }

    fn end_with_timestamp(&mut self, timestamp: SystemTime) {
        self.with(|s| s.end_with_timestamp(timestamp));
    }
}

/// Hands out [`LensTracer`]s over the SDK's provider: what `TelemetryHandle::tracer_provider`
/// returns and what Lens installs as the global provider.
#[derive(Clone, Debug)]
pub struct LensTracerProvider {
    inner: SdkTracerProvider,
    open: Option<Arc<OpenSpans>>,
    launcher: Option<Context>,
    groups: SpanGroups,
}

impl LensTracerProvider {
    pub(crate) fn new(
        inner: SdkTracerProvider,
        open: Option<Arc<OpenSpans>>,
        launcher: Option<Context>,
        groups: SpanGroups,
    ) -> Self {
        Self {
            inner,
            open,
            launcher,
            groups,
        }
    }

    /// The span groups this installation records.
    pub fn span_groups(&self) -> &SpanGroups {
        &self.groups
    }

    /// The SDK's provider underneath (its tracers neither close open spans nor join the
    /// launcher's trace).
    pub fn sdk_provider(&self) -> &SdkTracerProvider {
        &self.inner
    }
}

impl TracerProvider for LensTracerProvider {
    type Tracer = LensTracer;

    fn tracer_with_scope(&self, scope: InstrumentationScope) -> LensTracer {
        LensTracer {
            inner: self.inner.tracer_with_scope(scope),
            open: self.open.clone(),
            launcher: self.launcher.clone(),
            groups: self.groups.clone(),
        }
    }
}
