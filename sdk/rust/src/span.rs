//! Span views: a finished span as an exporter reads it, borrowed from the batch. The same view
//! reads a typed batch (WIT records) or an OTLP protobuf batch in place.

use crate::bindings::spans::lens::exporter::types;
use crate::context::{SpanContext, SpanId, TraceId, remote};
use crate::value::Attributes;
use crate::wire::{Fields, id64, id128};

/// The role of a span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanKind {
    /// Internal operation.
    Internal,
    /// Serves a remote request.
    Server,
    /// Calls a remote service.
    Client,
    /// Sends a message.
    Producer,
    /// Receives a message.
    Consumer,
}

impl SpanKind {
    /// The lowercase OTLP name, e.g. `internal`.
    pub fn as_str(&self) -> &'static str {
        match self {
            SpanKind::Internal => "internal",
            SpanKind::Server => "server",
            SpanKind::Client => "client",
            SpanKind::Producer => "producer",
            SpanKind::Consumer => "consumer",
        }
    }

    fn from_otlp(n: u64) -> Self {
        match n {
            2 => SpanKind::Server,
            3 => SpanKind::Client,
            4 => SpanKind::Producer,
            5 => SpanKind::Consumer,
            _ => SpanKind::Internal,
        }
    }
}

/// The outcome a span recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status<'a> {
    /// Not set.
    Unset,
    /// Explicitly successful.
    Ok,
    /// Failed, with a description.
    Error(&'a str),
}

/// The library that produced spans.
#[derive(Clone, Copy, Debug)]
pub struct Scope<'a> {
    /// Name, e.g. `trainer`.
    pub name: &'a str,
    /// Version, if any.
    pub version: Option<&'a str>,
    /// Attributes.
    pub attributes: Attributes<'a>,
}

impl<'a> Scope<'a> {
    pub(crate) fn typed(s: &'a types::InstrumentationScope) -> Self {
        Scope {
            name: &s.name,
            version: s.version.as_deref(),
            attributes: Attributes::from_wit(&s.attributes),
        }
    }

    /// An OTLP `InstrumentationScope` message.
    pub(crate) fn proto(msg: &'a [u8]) -> Self {
        let mut scope = Scope {
            name: "",
            version: None,
            attributes: Attributes::proto(msg, 3),
        };
        for (number, f) in Fields::new(msg) {
            match number {
                1 => scope.name = f.str(),
                2 => scope.version = Some(f.str()).filter(|v| !v.is_empty()),
                _ => {}
            }
        }
        scope
    }
}

/// A timestamped annotation on a span.
#[derive(Clone, Copy, Debug)]
pub struct Event<'a> {
    /// Name, e.g. `exception`.
    pub name: &'a str,
    /// Nanoseconds since the Unix epoch.
    pub time: u64,
    /// Attributes.
    pub attributes: Attributes<'a>,
    /// Attributes dropped by limits.
    pub dropped_attributes: u32,
}

/// A reference to another span.
#[derive(Clone, Copy, Debug)]
pub struct Link<'a> {
    /// The linked span.
    pub span_context: SpanContext<'a>,
    /// Attributes.
    pub attributes: Attributes<'a>,
    /// Attributes dropped by limits.
    pub dropped_attributes: u32,
}

/// One finished span: what OpenTelemetry's `SpanData` holds, borrowed from the batch.
#[derive(Clone, Copy, Debug)]
pub struct Span<'a> {
    /// The span's identity.
    pub span_context: SpanContext<'a>,
    /// The parent, `None` for a root span.
    pub parent_span_id: Option<SpanId>,
    /// Kind.
    pub kind: SpanKind,
    /// Name, e.g. `forward_backward`.
    pub name: &'a str,
    /// Start, in nanoseconds since the Unix epoch.
    pub start_time: u64,
    /// End, in nanoseconds since the Unix epoch.
    pub end_time: u64,
    /// Status.
    pub status: Status<'a>,
    /// The scope that produced it.
    pub scope: Scope<'a>,
    /// Attributes dropped by limits.
    pub dropped_attributes: u32,
    /// Events dropped by limits.
    pub dropped_events: u32,
    /// Links dropped by limits.
    pub dropped_links: u32,
    repr: Repr<'a>,
}

#[derive(Clone, Copy, Debug)]
enum Repr<'a> {
    Typed(&'a types::SpanData),
    /// The parts of an OTLP `Span` message holding its attributes, events and links: from the
    /// first such field to the last (encoders write each repeated field together, so this
    /// is usually exactly those fields, and reading them does not walk the rest again).
    Proto {
        attributes: &'a [u8],
        events: &'a [u8],
        links: &'a [u8],
    },
}

/// Tracks where the fields of one number start and end within a message.
#[derive(Clone, Copy, Default)]
struct Extent {
    start: Option<usize>,
    end: usize,
}

impl Extent {
    fn add(&mut self, start: usize, end: usize) {
        self.start.get_or_insert(start);
        self.end = end;
    }

    fn of<'a>(&self, msg: &'a [u8]) -> &'a [u8] {
        self.start.map_or(&[], |start| &msg[start..self.end])
    }
}

impl<'a> Span<'a> {
    /// Attributes, in the span's order.
    pub fn attributes(&self) -> Attributes<'a> {
        match self.repr {
            Repr::Typed(s) => Attributes::from_wit(&s.attributes),
            Repr::Proto { attributes, .. } => Attributes::proto(attributes, 9),
        }
    }

    /// Events, in order.
    pub fn events(&self) -> impl Iterator<Item = Event<'a>> + use<'a> {
        let (typed, proto) = match self.repr {
            Repr::Typed(s) => (s.events.iter(), None),
            Repr::Proto { events, .. } => ([].iter(), Some(Fields::new(events).repeated(11))),
        };
        typed
            .map(|e| Event {
                name: &e.name,
                time: e.time,
                attributes: Attributes::from_wit(&e.attributes),
                dropped_attributes: e.dropped_attributes,
            })
            .chain(proto.into_iter().flatten().map(proto_event))
    }

    /// Links.
    pub fn links(&self) -> impl Iterator<Item = Link<'a>> + use<'a> {
        let (typed, proto) = match self.repr {
            Repr::Typed(s) => (s.links.iter(), None),
            Repr::Proto { links, .. } => ([].iter(), Some(Fields::new(links).repeated(13))),
        };
        typed
            .map(|l| Link {
                span_context: SpanContext::typed(&l.span_context),
                attributes: Attributes::from_wit(&l.attributes),
                dropped_attributes: l.dropped_attributes,
            })
            .chain(proto.into_iter().flatten().map(proto_link))
    }

    /// Duration in nanoseconds (0 if the clock went backwards).
    pub fn duration_nanos(&self) -> u64 {
        self.end_time.saturating_sub(self.start_time)
    }

    pub(crate) fn typed(s: &'a types::SpanData, scope: Scope<'a>) -> Self {
        Span {
            span_context: SpanContext::typed(&s.span_context),
            parent_span_id: s.parent_span_id.map(SpanId),
            kind: match s.span_kind {
                types::SpanKind::Client => SpanKind::Client,
                types::SpanKind::Server => SpanKind::Server,
                types::SpanKind::Producer => SpanKind::Producer,
                types::SpanKind::Consumer => SpanKind::Consumer,
                types::SpanKind::Internal => SpanKind::Internal,
            },
            name: &s.name,
            start_time: s.start_time,
            end_time: s.end_time,
            status: match &s.status {
                types::Status::Unset => Status::Unset,
                types::Status::Ok => Status::Ok,
                types::Status::Error(m) => Status::Error(m),
            },
            scope,
            dropped_attributes: s.dropped_attributes,
            dropped_events: s.dropped_events,
            dropped_links: s.dropped_links,
            repr: Repr::Typed(s),
        }
    }

    /// An OTLP `Span` message: its scalar fields read once, repeated ones on demand.
    pub(crate) fn proto(msg: &'a [u8], scope: Scope<'a>) -> Self {
        let mut span = Span {
            span_context: SpanContext::EMPTY,
            parent_span_id: None,
            kind: SpanKind::Internal,
            name: "",
            start_time: 0,
            end_time: 0,
            status: Status::Unset,
            scope,
            dropped_attributes: 0,
            dropped_events: 0,
            dropped_links: 0,
            repr: Repr::Proto {
                attributes: &[],
                events: &[],
                links: &[],
            },
        };
        let (mut attributes, mut events, mut links) = <[Extent; 3]>::default().into();
        let mut fields = Fields::new(msg);
        loop {
            let start = msg.len() - fields.rest().len();
            let Some((number, f)) = fields.next() else {
                break;
            };
            let end = msg.len() - fields.rest().len();
            match number {
                9 => attributes.add(start, end),
                11 => events.add(start, end),
                13 => links.add(start, end),
                1 => span.span_context.trace_id = TraceId(id128(f.bytes())),
                2 => span.span_context.span_id = SpanId(id64(f.bytes()).unwrap_or(0)),
                3 => span.span_context.trace_state = f.str(),
                4 => span.parent_span_id = id64(f.bytes()).map(SpanId),
                5 => span.name = f.str(),
                6 => span.kind = SpanKind::from_otlp(f.varint()),
                7 => span.start_time = f.fixed64(),
                8 => span.end_time = f.fixed64(),
                10 => span.dropped_attributes = f.varint() as u32,
                12 => span.dropped_events = f.varint() as u32,
                14 => span.dropped_links = f.varint() as u32,
                15 => span.status = proto_status(f.bytes()),
                16 => span.span_context.trace_flags = f.fixed32() as u8,
                _ => {}
            }
        }
        span.repr = Repr::Proto {
            attributes: attributes.of(msg),
            events: events.of(msg),
            links: links.of(msg),
        };
        span
    }
}

fn proto_status(msg: &[u8]) -> Status<'_> {
    let (mut code, mut message) = (0, "");
    for (number, f) in Fields::new(msg) {
        match number {
            2 => message = f.str(),
            3 => code = f.varint(),
            _ => {}
        }
    }
    match code {
        1 => Status::Ok,
        2 => Status::Error(message),
        _ => Status::Unset,
    }
}

fn proto_event(msg: &[u8]) -> Event<'_> {
    let mut event = Event {
        name: "",
        time: 0,
        attributes: Attributes::proto(msg, 3),
        dropped_attributes: 0,
    };
    for (number, f) in Fields::new(msg) {
        match number {
            1 => event.time = f.fixed64(),
            2 => event.name = f.str(),
            4 => event.dropped_attributes = f.varint() as u32,
            _ => {}
        }
    }
    event
}

fn proto_link(msg: &[u8]) -> Link<'_> {
    let mut link = Link {
        span_context: SpanContext::EMPTY,
        attributes: Attributes::proto(msg, 4),
        dropped_attributes: 0,
    };
    for (number, f) in Fields::new(msg) {
        match number {
            1 => link.span_context.trace_id = TraceId(id128(f.bytes())),
            2 => link.span_context.span_id = SpanId(id64(f.bytes()).unwrap_or(0)),
            3 => link.span_context.trace_state = f.str(),
            5 => link.dropped_attributes = f.varint() as u32,
            6 => {
                let flags = f.fixed32();
                link.span_context.trace_flags = flags as u8;
                link.span_context.is_remote = remote(flags);
            }
            _ => {}
        }
    }
    link
}
