//! OTLP/JSON written straight from `SpanData`: the `otlp-json` batch encoding.
//!
//! Guests in languages whose JSON parser is native code (CPython's `_json`, SpiderMonkey's
//! `JSON.parse`) turn one string into objects far faster than their component bindings turn
//! typed records into objects (`docs/benchmarks.md`). This writer renders the same
//! `ExportTraceServiceRequest` as
//! [`otlp_bytes`](super::otlp_bytes), in the JSON encoding of the OTLP specification:
//!
//! - trace and span ids are lowercase hex, not base64;
//! - enum values (`kind`, `status.code`) are numbers;
//! - 64-bit integers (timestamps, `intValue`) are decimal strings, as the protobuf JSON
//!   mapping requires; 32-bit ones (`flags`, dropped counts) are numbers;
//! - keys are lowerCamelCase; fields holding their default value are left out, except the
//!   `status` and `scope` messages, which are present (possibly `{}`) as in the bytes;
//! - non-finite doubles are the strings `"NaN"`, `"Infinity"` and `"-Infinity"`.
//!
//! The tests parse the output with `opentelemetry-proto`'s serde model and compare it with
//! the message `opentelemetry-proto` builds from the same spans.

use std::fmt::Write as _;

use opentelemetry::trace::{SpanContext, SpanId, Status};
use opentelemetry::{Array, InstrumentationScope, Key, KeyValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SpanData;

use super::{by_scope, otlp_span_flags as flags, otlp_span_kind as span_kind, unix_nanos};

/// A JSON writer over one growing string. Callers write the punctuation between fields;
/// `field` writes a separator unless it opens an object.
struct Writer<'a>(&'a mut String);

impl Writer<'_> {
    /// A JSON string literal.
    fn str(&mut self, s: &str) {
        self.0.push('"');
        let mut start = 0;
        for (i, b) in s.bytes().enumerate() {
            let escaped = match b {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0..=0x1f => "",
                _ => continue,
            };
            // `b` is ASCII, so `i` is a character boundary.
            self.0.push_str(&s[start..i]);
            if escaped.is_empty() {
                let _ = write!(self.0, "\\u{b:04x}");
            } else {
                self.0.push_str(escaped);
            }
            start = i + 1;
        }
        self.0.push_str(&s[start..]);
        self.0.push('"');
    }

    /// `,"name":` (or `"name":` right after `{`/`[`).
    fn field(&mut self, name: &str) {
        if !matches!(self.0.as_bytes().last(), Some(b'{' | b'[')) {
            self.0.push(',');
        }
        self.0.push('"');
        self.0.push_str(name);
        self.0.push_str("\":");
    }

    /// A string field, left out when empty.
    fn str_field(&mut self, name: &str, s: &str) {
        if !s.is_empty() {
            self.field(name);
            self.str(s);
        }
    }

    /// A 32-bit count, a JSON number, left out when zero.
    fn u32_field(&mut self, name: &str, v: u32) {
        if v != 0 {
            self.field(name);
            self.0.push_str(itoa::Buffer::new().format(v));
        }
    }

    /// A 64-bit timestamp, a decimal string, left out when zero.
    fn nanos_field(&mut self, name: &str, v: u64) {
        if v != 0 {
            self.field(name);
            self.0.push('"');
            self.0.push_str(itoa::Buffer::new().format(v));
            self.0.push('"');
        }
    }

    /// An id as lowercase hex, left out when all zero (an absent parent).
    fn id_field(&mut self, name: &str, id: &[u8]) {
        if id.iter().any(|&b| b != 0) {
            let mut hex = [0u8; 32];
            let hex = &mut hex[..id.len() * 2];
            if hex::encode_to_slice(id, hex).is_ok() {
                self.field(name);
                self.0.push('"');
                self.0
                    .push_str(std::str::from_utf8(hex).unwrap_or_default());
                self.0.push('"');
            }
        }
    }

    /// `AnyValue`: exactly one member, even a default one.
    fn any_value(&mut self, v: &Value) {
        match v {
            Value::String(s) => self.scalar("stringValue", |w| w.str(s.as_str())),
            Value::Bool(b) => self.bool_value(*b),
            Value::I64(i) => self.int_value(*i),
            Value::F64(f) => self.scalar("doubleValue", |w| w.double(*f)),
            Value::Array(a) => {
                self.0.push_str("{\"arrayValue\":{\"values\":[");
                match a {
                    Array::Bool(xs) => self.items(xs, |w, x| w.bool_value(*x)),
                    Array::I64(xs) => self.items(xs, |w, x| w.int_value(*x)),
                    Array::F64(xs) => {
                        self.items(xs, |w, x| w.scalar("doubleValue", |w| w.double(*x)))
                    }
                    Array::String(xs) => {
                        self.items(xs, |w, x| w.scalar("stringValue", |w| w.str(x.as_str())))
                    }
                    // Future array kinds reach the guest as their string form, as in `typed`.
                    other => self.scalar("stringValue", |w| w.str(&other.to_string())),
                }
                self.0.push_str("]}}");
            }
            // Future value kinds: their string form, as in the typed encoding.
            other => self.scalar("stringValue", |w| w.str(&other.to_string())),
        }
    }

    /// `{"member":…}`, the value written by `value`.
    fn scalar(&mut self, member: &str, value: impl FnOnce(&mut Self)) {
        self.0.push('{');
        self.field(member);
        value(self);
        self.0.push('}');
    }

    fn bool_value(&mut self, b: bool) {
        self.scalar("boolValue", |w| {
            w.0.push_str(if b { "true" } else { "false" })
        });
    }

    /// `intValue`: a 64-bit integer, so a decimal string.
    fn int_value(&mut self, i: i64) {
        self.scalar("intValue", |w| {
            w.0.push('"');
            w.0.push_str(itoa::Buffer::new().format(i));
            w.0.push('"');
        });
    }

    /// Elements of a JSON array, comma-separated, each written by `item`.
    fn items<T>(&mut self, xs: impl IntoIterator<Item = T>, mut item: impl FnMut(&mut Self, T)) {
        for (i, x) in xs.into_iter().enumerate() {
            if i > 0 {
                self.0.push(',');
            }
            item(self, x);
        }
    }

    fn double(&mut self, f: f64) {
        if f.is_nan() {
            self.0.push_str("\"NaN\"");
        } else if f.is_infinite() {
            self.0.push_str(if f > 0.0 {
                "\"Infinity\""
            } else {
                "\"-Infinity\""
            });
        } else {
            // `Debug` is the shortest form that reads back exactly, and keeps `2.0` a float.
            let _ = write!(self.0, "{f:?}");
        }
    }

    /// Repeated `KeyValue`, left out when empty.
    fn attributes<'k>(&mut self, name: &str, attrs: impl IntoIterator<Item = &'k KeyValue>) {
        self.list(name, attrs, |w, kv| w.key_value(&kv.key, &kv.value));
    }

    /// The fields of one `KeyValue`.
    fn key_value(&mut self, key: &Key, value: &Value) {
        self.str_field("key", key.as_str());
        self.field("value");
        self.any_value(value);
    }

    /// `traceId`, `spanId` and `traceState` of a span or link.
    fn context(&mut self, cx: &SpanContext) {
        self.id_field("traceId", &cx.trace_id().to_bytes());
        self.id_field("spanId", &cx.span_id().to_bytes());
        self.str_field("traceState", &cx.trace_state().header());
    }

    fn span(&mut self, s: &SpanData) {
        self.0.push('{');
        self.context(&s.span_context);
        if s.parent_span_id != SpanId::INVALID {
            self.id_field("parentSpanId", &s.parent_span_id.to_bytes());
        }
        self.u32_field("flags", flags(&s.span_context, s.parent_span_is_remote));
        self.str_field("name", &s.name);
        self.u32_field("kind", span_kind(&s.span_kind));
        self.nanos_field("startTimeUnixNano", unix_nanos(s.start_time));
        self.nanos_field("endTimeUnixNano", unix_nanos(s.end_time));
        self.attributes("attributes", &s.attributes);
        self.u32_field("droppedAttributesCount", s.dropped_attributes_count);
        self.list("events", s.events.iter(), |w, e| {
            w.nanos_field("timeUnixNano", unix_nanos(e.timestamp));
            w.str_field("name", &e.name);
            w.attributes("attributes", &e.attributes);
            w.u32_field("droppedAttributesCount", e.dropped_attributes_count);
        });
        self.u32_field("droppedEventsCount", s.events.dropped_count);
        self.list("links", s.links.iter(), |w, l| {
            w.context(&l.span_context);
            w.attributes("attributes", &l.attributes);
            w.u32_field("droppedAttributesCount", l.dropped_attributes_count);
            w.u32_field("flags", flags(&l.span_context, l.span_context.is_remote()));
        });
        self.u32_field("droppedLinksCount", s.links.dropped_count);
        self.field("status");
        self.0.push('{');
        match &s.status {
            Status::Unset => {}
            Status::Ok => self.u32_field("code", 1),
            Status::Error { description } => {
                self.str_field("message", description);
                self.u32_field("code", 2);
            }
        }
        self.0.push_str("}}");
    }

    /// A repeated message field, left out when empty; `body` writes one element's fields.
    fn list<T>(
        &mut self,
        name: &str,
        items: impl IntoIterator<Item = T>,
        mut body: impl FnMut(&mut Self, T),
    ) {
        let mut items = items.into_iter().peekable();
        if items.peek().is_none() {
            return;
        }
        self.field(name);
        self.0.push('[');
        self.items(items, |w, item| {
            w.0.push('{');
            body(w, item);
            w.0.push('}');
        });
        self.0.push(']');
    }

    fn scope(&mut self, scope: &InstrumentationScope) {
        self.field("scope");
        self.0.push('{');
        self.str_field("name", scope.name());
        self.str_field("version", scope.version().unwrap_or_default());
        self.attributes("attributes", scope.attributes());
        self.0.push('}');
    }
}

/// The `resource` object of one instance, rendered once and copied into every batch.
#[derive(Debug, Clone)]
pub(crate) struct JsonResource {
    /// `{"attributes":[…]}`.
    body: String,
    schema_url: String,
}

impl JsonResource {
    /// Renders `resource` (attributes; no entity refs, nothing dropped).
    pub(crate) fn new(resource: &Resource) -> Self {
        let mut body = String::from("{");
        Writer(&mut body).list("attributes", resource.iter(), |w, (k, v)| w.key_value(k, v));
        body.push('}');
        Self {
            body,
            schema_url: resource.schema_url().unwrap_or_default().to_string(),
        }
    }
}

/// The batch as an OTLP/JSON `ExportTraceServiceRequest`: one `resourceSpans` entry, one
/// `scopeSpans` entry per instrumentation scope in order of first appearance, span order
/// kept within each scope (the grouping of the other encodings).
pub(crate) fn encode(batch: &[SpanData], resource: &JsonResource) -> String {
    let groups = by_scope(batch);
    let mut out = String::with_capacity(resource.body.len() + 64 + batch.len() * 400);
    let mut w = Writer(&mut out);
    w.0.push_str("{\"resourceSpans\":[{\"resource\":");
    w.0.push_str(&resource.body);
    w.field("scopeSpans");
    w.0.push('[');
    w.items(&groups, |w, (scope, spans)| {
        w.0.push('{');
        w.scope(scope);
        w.field("spans");
        w.0.push('[');
        w.items(spans, |w, s| w.span(s));
        w.0.push(']');
        w.str_field("schemaUrl", scope.schema_url().unwrap_or_default());
        w.0.push('}');
    });
    w.0.push(']');
    w.str_field("schemaUrl", &resource.schema_url);
    w.0.push_str("}]}");
    out
}
