//! OTLP protobuf bytes written straight from `SpanData`.
//!
//! The generic path (`opentelemetry-proto`'s conversion, then `prost` encoding) copies every key,
//! value and id into owned proto structs and frees them again; `docs/benchmarks.md` compares the
//! two ("Encoders"). This writer emits the same bytes (same fields, same order as `prost`,
//! checked byte for byte in the tests) with no allocation per span, and encodes the resource
//! once per instance. Fields go in tag order, as `prost` writes them.
//!
//! A nested message is written with a one-byte length placeholder that is widened in place when
//! the body turns out longer than 127 bytes, so no size pre-pass is needed.

use opentelemetry::trace::Status;
use opentelemetry::{Array, InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SpanData;
use prost::encoding::{WireType, encode_key, encode_varint};

use super::{by_scope, otlp_span_flags as span_flags, otlp_span_kind, unix_nanos};

/// A protobuf writer over one growing buffer.
struct Writer<'a>(&'a mut Vec<u8>);

impl Writer<'_> {
    fn key(&mut self, tag: u32, wire: WireType) {
        encode_key(tag, wire, self.0);
    }

    /// A length-delimited field, written even when empty (oneof members).
    fn bytes_always(&mut self, tag: u32, b: &[u8]) {
        self.key(tag, WireType::LengthDelimited);
        encode_varint(b.len() as u64, self.0);
        self.0.extend_from_slice(b);
    }

    /// A `string`/`bytes` field: proto3 leaves out the empty value.
    fn bytes(&mut self, tag: u32, b: &[u8]) {
        if !b.is_empty() {
            self.bytes_always(tag, b);
        }
    }

    fn varint(&mut self, tag: u32, v: u64) {
        if v != 0 {
            self.key(tag, WireType::Varint);
            encode_varint(v, self.0);
        }
    }

    fn fixed32(&mut self, tag: u32, v: u32) {
        if v != 0 {
            self.key(tag, WireType::ThirtyTwoBit);
            self.0.extend_from_slice(&v.to_le_bytes());
        }
    }

    fn fixed64(&mut self, tag: u32, v: u64) {
        if v != 0 {
            self.key(tag, WireType::SixtyFourBit);
            self.0.extend_from_slice(&v.to_le_bytes());
        }
    }

    /// A nested message: key, length, then whatever `body` writes.
    fn message(&mut self, tag: u32, body: impl FnOnce(&mut Self)) {
        self.key(tag, WireType::LengthDelimited);
        let at = self.0.len();
        self.0.push(0);
        body(self);
        let len = self.0.len() - at - 1;
        if len < 0x80 {
            self.0[at] = len as u8;
            return;
        }
        // On the stack: this runs for most spans (their bodies pass 127 bytes).
        let mut prefix = [0u8; 10];
        let mut free = &mut prefix[..];
        encode_varint(len as u64, &mut free);
        let width = 10 - free.len();
        let end = self.0.len();
        self.0.resize(end + width - 1, 0);
        self.0.copy_within(at + 1..end, at + width);
        self.0[at..at + width].copy_from_slice(&prefix[..width]);
    }

    /// `AnyValue` (oneof: every member is written, even a default one).
    fn any_value(&mut self, v: &Value) {
        match v {
            Value::String(s) => self.bytes_always(1, s.as_str().as_bytes()),
            Value::Bool(b) => {
                self.key(2, WireType::Varint);
                encode_varint(u64::from(*b), self.0);
            }
            Value::I64(i) => {
                self.key(3, WireType::Varint);
                encode_varint(*i as u64, self.0);
            }
            Value::F64(f) => {
                self.key(4, WireType::SixtyFourBit);
                self.0.extend_from_slice(&f.to_bits().to_le_bytes());
            }
            Value::Array(a) => self.message(5, |w| match a {
                Array::Bool(xs) => xs.iter().for_each(|x| w.array_item(&Value::Bool(*x))),
                Array::I64(xs) => xs.iter().for_each(|x| w.array_item(&Value::I64(*x))),
                Array::F64(xs) => xs.iter().for_each(|x| w.array_item(&Value::F64(*x))),
                Array::String(xs) => xs
                    .iter()
                    .for_each(|x| w.message(1, |w| w.bytes_always(1, x.as_str().as_bytes()))),
                // Future array kinds reach the guest as their string form, as in `typed`.
                other => w.array_item(&Value::String(other.to_string().into())),
            }),
            // Future value kinds: their string form, as in the typed encoding.
            other => self.bytes_always(1, other.to_string().as_bytes()),
        }
    }

    fn array_item(&mut self, v: &Value) {
        self.message(1, |w| w.any_value(v));
    }

    /// Repeated `KeyValue` under `tag`.
    fn attributes<'k>(&mut self, tag: u32, attrs: impl IntoIterator<Item = &'k KeyValue>) {
        for kv in attrs {
            self.message(tag, |w| {
                w.bytes(1, kv.key.as_str().as_bytes());
                w.message(2, |w| w.any_value(&kv.value));
            });
        }
    }

    fn span(&mut self, s: &SpanData) {
        let cx = &s.span_context;
        self.bytes(1, &cx.trace_id().to_bytes());
        self.bytes(2, &cx.span_id().to_bytes());
        self.bytes(3, cx.trace_state().header().as_bytes());
        if s.parent_span_id != opentelemetry::trace::SpanId::INVALID {
            self.bytes(4, &s.parent_span_id.to_bytes());
        }
        self.bytes(5, s.name.as_bytes());
        self.varint(6, u64::from(otlp_span_kind(&s.span_kind)));
        self.fixed64(7, unix_nanos(s.start_time));
        self.fixed64(8, unix_nanos(s.end_time));
        self.attributes(9, &s.attributes);
        self.varint(10, u64::from(s.dropped_attributes_count));
        for e in s.events.iter() {
            self.message(11, |w| {
                w.fixed64(1, unix_nanos(e.timestamp));
                w.bytes(2, e.name.as_bytes());
                w.attributes(3, &e.attributes);
                w.varint(4, u64::from(e.dropped_attributes_count));
            });
        }
        self.varint(12, u64::from(s.events.dropped_count));
        for l in s.links.iter() {
            let lcx = &l.span_context;
            self.message(13, |w| {
                w.bytes(1, &lcx.trace_id().to_bytes());
                w.bytes(2, &lcx.span_id().to_bytes());
                w.bytes(3, lcx.trace_state().header().as_bytes());
                w.attributes(4, &l.attributes);
                w.varint(5, u64::from(l.dropped_attributes_count));
                w.fixed32(6, span_flags(lcx, lcx.is_remote()));
            });
        }
        self.varint(14, u64::from(s.links.dropped_count));
        self.message(15, |w| {
            let (code, message) = match &s.status {
                Status::Unset => (0, ""),
                Status::Ok => (1, ""),
                Status::Error { description } => (2, description.as_ref()),
            };
            w.bytes(2, message.as_bytes());
            w.varint(3, code);
        });
        self.fixed32(16, span_flags(cx, s.parent_span_is_remote));
    }

    fn scope(&mut self, scope: &InstrumentationScope) {
        self.bytes(1, scope.name().as_bytes());
        self.bytes(2, scope.version().unwrap_or_default().as_bytes());
        self.attributes(3, scope.attributes());
    }
}

/// The `Resource` message of one instance, encoded once and copied into every batch.
#[derive(Debug, Clone)]
pub(crate) struct EncodedResource {
    body: Vec<u8>,
    schema_url: String,
}

impl EncodedResource {
    /// Encodes `resource` (attributes; no entity refs, nothing dropped).
    pub(crate) fn new(resource: &Resource) -> Self {
        let mut body = Vec::new();
        let mut w = Writer(&mut body);
        for (k, v) in resource.iter() {
            w.message(1, |w| {
                w.bytes(1, k.as_str().as_bytes());
                w.message(2, |w| w.any_value(v));
            });
        }
        Self {
            body,
            schema_url: resource.schema_url().unwrap_or_default().to_string(),
        }
    }
}

/// The batch as an OTLP `ExportTraceServiceRequest`: one `ResourceSpans`, one `ScopeSpans` per
/// instrumentation scope in order of first appearance, span order kept within each scope.
pub(crate) fn encode(batch: &[SpanData], resource: &EncodedResource) -> Vec<u8> {
    let groups = by_scope(batch);
    let mut out = Vec::with_capacity(resource.body.len() + 64 + batch.len() * 160);
    let mut w = Writer(&mut out);
    w.message(1, |w| {
        w.message(1, |w| w.0.extend_from_slice(&resource.body));
        for (scope, spans) in &groups {
            w.message(2, |w| {
                w.message(1, |w| w.scope(scope));
                for s in spans {
                    w.message(2, |w| w.span(s));
                }
                w.bytes(3, scope.schema_url().unwrap_or_default().as_bytes());
            });
        }
        w.bytes(3, resource.schema_url.as_bytes());
    });
    out
}
