//! Python SDK spans (`ReadableSpan`) read once, under the GIL, into the host's `SpanData`.
//!
//! Every field the OTLP encoding carries is read: ids, parent and its remote flag, kind, times,
//! attributes of every type (sequences included), events, links with attributes, status, the
//! instrumentation scope (version, schema URL, attributes), trace flags and state, and the three
//! dropped counts. Values outside OpenTelemetry's types are kept as text: an integer beyond
//! `i64` as its decimal digits, any other object as its `str()`; `None` in a sequence is left
//! out (the Python SDK accepts it, OTLP has no null).

use std::borrow::Cow;
use std::collections::HashMap;
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use lens::opentelemetry::trace::{
    Event, Link, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use lens::opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString, PyTuple};

pub mod logs;
pub mod metrics;
pub mod to_py;

/// The spans of one batch, and the resource of the first (the SDK's batch processor hands over
/// spans of one provider).
pub struct Batch {
    pub spans: Vec<SpanData>,
    pub resource: Option<Py<PyAny>>,
}

/// What one batch reads once and reuses: the scope, kind and status-code objects its spans
/// share, keyed by identity.
#[derive(Default)]
struct Seen {
    scopes: HashMap<usize, InstrumentationScope>,
    kinds: HashMap<usize, SpanKind>,
    codes: HashMap<usize, u8>,
}

/// Reads every span of `spans` (any iterable of `ReadableSpan`).
pub fn batch(spans: &Bound<'_, PyAny>) -> PyResult<Batch> {
    let mut out = Vec::with_capacity(spans.len().unwrap_or(0));
    let mut resource = None;
    let mut seen = Seen::default();
    for span in spans.try_iter()? {
        let span = span?;
        let fields = Fields::of(&span)?;
        if resource.is_none() {
            resource = Some(fields.resource.clone().unbind());
        }
        out.push(fields.span_data(&mut seen)?);
    }
    Ok(Batch {
        spans: out,
        resource,
    })
}

/// Reads one span (`SpanProcessor.on_end`'s), and the Python object of its resource.
pub fn span<'py>(span: &Bound<'py, PyAny>) -> PyResult<(SpanData, Bound<'py, PyAny>)> {
    let fields = Fields::of(span)?;
    let resource = fields.resource.clone();
    Ok((fields.span_data(&mut Seen::default())?, resource))
}

/// The Python objects of one span's fields. The SDK's own `ReadableSpan` keeps them in its
/// instance dictionary (`_name`, `_context`, …), read there directly: its public properties run
/// Python code and copy (`attributes` wraps a proxy, `events` builds a tuple), and reading
/// them all costs more than the rest of the conversion together (`docs/benchmarks.md`). Any
/// other object (a subclass that hides them, another SDK version, a stand-in) is read through
/// the public API; the two readings give the same span (`python/tests/test_fields.py`).
struct Fields<'py> {
    name: Bound<'py, PyAny>,
    context: Bound<'py, PyAny>,
    parent: Bound<'py, PyAny>,
    kind: Bound<'py, PyAny>,
    start_time: Bound<'py, PyAny>,
    end_time: Bound<'py, PyAny>,
    /// `BoundedAttributes`, a plain mapping, or `None`.
    attributes: Bound<'py, PyAny>,
    /// `BoundedList`s or plain sequences.
    events: Bound<'py, PyAny>,
    links: Bound<'py, PyAny>,
    status: Bound<'py, PyAny>,
    scope: Bound<'py, PyAny>,
    resource: Bound<'py, PyAny>,
    /// The public path's dropped counts (the private path reads them off the containers).
    dropped: Option<[u32; 3]>,
}

impl<'py> Fields<'py> {
    fn of(span: &Bound<'py, PyAny>) -> PyResult<Self> {
        let py = span.py();
        if let Ok(dict) = span.getattr(intern!(py, "__dict__"))
            && let Ok(dict) = dict.cast_into::<PyDict>()
        {
            let get = |key: &Bound<'py, PyString>| dict.get_item(key).ok().flatten();
            if let (
                Some(name),
                Some(context),
                Some(parent),
                Some(kind),
                Some(start_time),
                Some(end_time),
                Some(attributes),
                Some(events),
                Some(links),
                Some(status),
                Some(scope),
                Some(resource),
            ) = (
                get(intern!(py, "_name")),
                get(intern!(py, "_context")),
                get(intern!(py, "_parent")),
                get(intern!(py, "_kind")),
                get(intern!(py, "_start_time")),
                get(intern!(py, "_end_time")),
                get(intern!(py, "_attributes")),
                get(intern!(py, "_events")),
                get(intern!(py, "_links")),
                get(intern!(py, "_status")),
                get(intern!(py, "_instrumentation_scope")),
                get(intern!(py, "_resource")),
            ) {
                return Ok(Self {
                    name,
                    context,
                    parent,
                    kind,
                    start_time,
                    end_time,
                    attributes,
                    events,
                    links,
                    status,
                    scope,
                    resource,
                    dropped: None,
                });
            }
        }
        let attr = |name: &Bound<'py, PyString>| span.getattr(name);
        Ok(Self {
            name: attr(intern!(py, "name"))?,
            context: attr(intern!(py, "context"))?,
            parent: attr(intern!(py, "parent"))?,
            kind: attr(intern!(py, "kind"))?,
            start_time: attr(intern!(py, "start_time"))?,
            end_time: attr(intern!(py, "end_time"))?,
            attributes: attr(intern!(py, "attributes"))?,
            events: attr(intern!(py, "events"))?,
            links: attr(intern!(py, "links"))?,
            status: attr(intern!(py, "status"))?,
            scope: attr(intern!(py, "instrumentation_scope"))?,
            resource: attr(intern!(py, "resource"))?,
            dropped: Some([
                dropped(span, intern!(py, "dropped_attributes"))?,
                dropped(span, intern!(py, "dropped_events"))?,
                dropped(span, intern!(py, "dropped_links"))?,
            ]),
        })
    }

    fn span_data(self, seen: &mut Seen) -> PyResult<SpanData> {
        let py = self.name.py();
        let (parent_span_id, parent_span_is_remote) = if self.parent.is_none() {
            (SpanId::INVALID, false)
        } else {
            let parent = span_context(&self.parent)?;
            (parent.span_id(), parent.is_remote())
        };
        let (attributes, attributes_dropped) = attribute_map(&self.attributes)?;
        let mut events = SpanEvents::default();
        for event in sequence(&self.events)?.try_iter()? {
            let event = event?;
            let (attrs, dropped) = attributes_of(&event)?;
            events.events.push(Event::new(
                text(&event.getattr(intern!(py, "name"))?)?,
                time(&event.getattr(intern!(py, "timestamp"))?)?,
                attrs,
                dropped,
            ));
        }
        let mut links = SpanLinks::default();
        for link in sequence(&self.links)?.try_iter()? {
            let link = link?;
            let (attrs, dropped) = attributes_of(&link)?;
            links.links.push(Link::new(
                span_context(&link.getattr(intern!(py, "context"))?)?,
                attrs,
                dropped,
            ));
        }
        [events.dropped_count, links.dropped_count] = match self.dropped {
            Some([_, e, l]) => [e, l],
            None => [
                dropped(&self.events, intern!(py, "dropped"))?,
                dropped(&self.links, intern!(py, "dropped"))?,
            ],
        };
        let dropped_attributes_count = match self.dropped {
            Some([a, _, _]) => a.max(attributes_dropped),
            None => attributes_dropped,
        };
        let key = self.scope.as_ptr() as usize;
        let instrumentation_scope = match seen.scopes.get(&key) {
            Some(s) => s.clone(),
            None => {
                let s = instrumentation_scope(&self.scope)?;
                seen.scopes.insert(key, s.clone());
                s
            }
        };
        Ok(SpanData {
            span_context: span_context(&self.context)?,
            parent_span_id,
            parent_span_is_remote,
            span_kind: kind(&self.kind, seen)?,
            name: Cow::Owned(text(&self.name)?),
            start_time: time(&self.start_time)?,
            end_time: time(&self.end_time)?,
            attributes,
            dropped_attributes_count,
            events,
            links,
            status: status(&self.status, seen)?,
            instrumentation_scope,
        })
    }
}

/// A `SpanKind` member (one of five objects: read once per batch).
fn kind(kind: &Bound<'_, PyAny>, seen: &mut Seen) -> PyResult<SpanKind> {
    let key = kind.as_ptr() as usize;
    if let Some(k) = seen.kinds.get(&key) {
        return Ok(k.clone());
    }
    let value: u8 = kind.getattr(intern!(kind.py(), "value"))?.extract()?;
    let k = match value {
        1 => SpanKind::Server,
        2 => SpanKind::Client,
        3 => SpanKind::Producer,
        4 => SpanKind::Consumer,
        _ => SpanKind::Internal,
    };
    seen.kinds.insert(key, k.clone());
    Ok(k)
}

/// The items of a `BoundedList` (its deque, iterated without running Python code) or of any
/// other sequence.
fn sequence<'py>(items: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if items.is_none() {
        return Ok(PyTuple::empty(items.py()).into_any());
    }
    match items.getattr(intern!(items.py(), "_dq")) {
        Ok(dq) => Ok(dq),
        Err(_) => Ok(items.clone()),
    }
}

/// A `SpanContext`: ids, flags, trace state (through its W3C header) and the remote flag. The
/// SDK's is a tuple `(trace_id, span_id, is_remote, trace_flags, trace_state, …)`, read by
/// index; anything else through its properties.
fn span_context(cx: &Bound<'_, PyAny>) -> PyResult<SpanContext> {
    let py = cx.py();
    let (trace_id, span_id, remote, flags, state) = match cx.cast::<PyTuple>() {
        Ok(t) if t.len() >= 5 => (
            t.get_item(0)?,
            t.get_item(1)?,
            t.get_item(2)?,
            t.get_item(3)?,
            t.get_item(4)?,
        ),
        _ => (
            cx.getattr(intern!(py, "trace_id"))?,
            cx.getattr(intern!(py, "span_id"))?,
            cx.getattr(intern!(py, "is_remote"))?,
            cx.getattr(intern!(py, "trace_flags"))?,
            cx.getattr(intern!(py, "trace_state"))?,
        ),
    };
    let state = if state.is_none() || state.len().unwrap_or(0) == 0 {
        TraceState::NONE
    } else {
        let header: String = state.call_method0(intern!(py, "to_header"))?.extract()?;
        TraceState::from_str(&header).unwrap_or(TraceState::NONE)
    };
    Ok(SpanContext::new(
        TraceId::from(trace_id.extract::<u128>()?),
        SpanId::from(span_id.extract::<u64>()?),
        TraceFlags::new(flags.extract()?),
        remote.extract()?,
        state,
    ))
}

/// A `Status`: its code (a `StatusCode` member, read once per batch) and description.
fn status(status: &Bound<'_, PyAny>, seen: &mut Seen) -> PyResult<Status> {
    let py = status.py();
    let code = status.getattr(intern!(py, "status_code"))?;
    let key = code.as_ptr() as usize;
    let code = match seen.codes.get(&key) {
        Some(c) => *c,
        None => {
            let c: u8 = code.getattr(intern!(py, "value"))?.extract()?;
            seen.codes.insert(key, c);
            c
        }
    };
    Ok(match code {
        1 => Status::Ok,
        2 => {
            let description = status.getattr(intern!(py, "description"))?;
            Status::error(if description.is_none() {
                String::new()
            } else {
                text(&description)?
            })
        }
        _ => Status::Unset,
    })
}

pub(crate) fn instrumentation_scope(scope: &Bound<'_, PyAny>) -> PyResult<InstrumentationScope> {
    if scope.is_none() {
        return Ok(InstrumentationScope::builder("").build());
    }
    let py = scope.py();
    let mut builder = InstrumentationScope::builder(text(&scope.getattr(intern!(py, "name"))?)?);
    let version = scope.getattr(intern!(py, "version"))?;
    if !version.is_none() {
        builder = builder.with_version(text(&version)?);
    }
    let schema_url = scope.getattr(intern!(py, "schema_url"))?;
    if !schema_url.is_none() && !text(&schema_url)?.is_empty() {
        builder = builder.with_schema_url(text(&schema_url)?);
    }
    // `attributes` arrived in opentelemetry-sdk 1.24; older scopes have none.
    if scope.hasattr(intern!(py, "attributes"))? {
        builder = builder.with_attributes(attributes_of(scope)?.0);
    }
    Ok(builder.build())
}

/// The resource of a span: its attributes and schema URL.
pub fn resource(resource: &Bound<'_, PyAny>) -> PyResult<Resource> {
    let py = resource.py();
    let (attrs, _) = attributes_of(resource)?;
    let schema_url = resource.getattr(intern!(py, "schema_url"))?;
    let schema_url = if schema_url.is_none() {
        String::new()
    } else {
        text(&schema_url)?
    };
    Ok(if schema_url.is_empty() {
        Resource::builder_empty().with_attributes(attrs).build()
    } else {
        Resource::builder_empty()
            .with_schema_url(attrs, schema_url)
            .build()
    })
}

/// An object's `attributes` and how many its bound dropped.
pub(crate) fn attributes_of(owner: &Bound<'_, PyAny>) -> PyResult<(Vec<KeyValue>, u32)> {
    attribute_map(&owner.getattr(intern!(owner.py(), "attributes"))?)
}

/// Calls `each` with every key and value of `attrs` (a `BoundedAttributes`, any mapping, or
/// `None`). A `BoundedAttributes`'s own dict is iterated directly, without running Python code.
pub(crate) fn each_attribute<'py>(
    attrs: &Bound<'py, PyAny>,
    mut each: impl FnMut(&Bound<'py, PyAny>, &Bound<'py, PyAny>) -> PyResult<()>,
) -> PyResult<()> {
    if attrs.is_none() {
        return Ok(());
    }
    let py = attrs.py();
    let inner = attrs
        .getattr(intern!(py, "_dict"))
        .ok()
        .and_then(|d| d.cast_into::<PyDict>().ok())
        .or_else(|| attrs.cast::<PyDict>().ok().cloned());
    match inner {
        Some(dict) => {
            for (key, value) in dict.iter() {
                each(&key, &value)?;
            }
        }
        None => {
            for item in attrs.call_method0(intern!(py, "items"))?.try_iter()? {
                let (key, value): (Bound<'py, PyAny>, Bound<'py, PyAny>) = item?.extract()?;
                each(&key, &value)?;
            }
        }
    }
    Ok(())
}

/// Attributes (a `BoundedAttributes`, any mapping, or `None`) and how many the bound dropped.
pub(crate) fn attribute_map(attrs: &Bound<'_, PyAny>) -> PyResult<(Vec<KeyValue>, u32)> {
    if attrs.is_none() {
        return Ok((Vec::new(), 0));
    }
    let py = attrs.py();
    let mut out = Vec::with_capacity(attrs.len().unwrap_or(0));
    each_attribute(attrs, |key, value| {
        if let Some(value) = value_of(value)? {
            out.push(KeyValue::new(text(key)?, value));
        }
        Ok(())
    })?;
    // `BoundedAttributes.dropped`: attributes over the limit.
    let dropped = match attrs.getattr(intern!(py, "dropped")) {
        Ok(d) => d.extract().unwrap_or(0),
        Err(_) => 0,
    };
    Ok((out, dropped))
}

/// An attribute value; `None` for a `None` value.
pub(crate) fn value_of(v: &Bound<'_, PyAny>) -> PyResult<Option<Value>> {
    if v.is_none() {
        return Ok(None);
    }
    // `bool` first: it is a subclass of `int`.
    if v.is_instance_of::<PyBool>() {
        return Ok(Some(Value::Bool(v.extract()?)));
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(Some(match v.extract::<i64>() {
            Ok(i) => Value::I64(i),
            Err(_) => Value::String(text(v)?.into()),
        }));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(Some(Value::F64(v.extract()?)));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(Some(Value::String(text(v)?.into())));
    }
    if let Ok(items) = v.try_iter() {
        return Ok(Some(Value::Array(array(items)?)));
    }
    Ok(Some(Value::String(text(v)?.into())))
}

/// A homogeneous sequence, typed after its first element that is not `None`.
fn array(items: Bound<'_, pyo3::types::PyIterator>) -> PyResult<Array> {
    let values: Vec<Value> = items
        .map(|item| value_of(&item?))
        .filter_map(|v| v.transpose())
        .collect::<PyResult<_>>()?;
    Ok(match values.first() {
        Some(Value::Bool(_)) => Array::Bool(
            values
                .iter()
                .map(|v| matches!(v, Value::Bool(true)))
                .collect(),
        ),
        Some(Value::I64(_)) => Array::I64(
            values
                .iter()
                .map(|v| match v {
                    Value::I64(i) => *i,
                    _ => 0,
                })
                .collect(),
        ),
        Some(Value::F64(_)) => Array::F64(
            values
                .iter()
                .map(|v| match v {
                    Value::F64(f) => *f,
                    Value::I64(i) => *i as f64,
                    _ => 0.0,
                })
                .collect(),
        ),
        _ => Array::String(
            values
                .iter()
                .map(|v| StringValue::from(v.as_str().into_owned()))
                .collect(),
        ),
    })
}

fn dropped(owner: &Bound<'_, PyAny>, name: &Bound<'_, PyString>) -> PyResult<u32> {
    match owner.getattr(name) {
        Ok(d) if !d.is_none() => Ok(d.extract().unwrap_or(u32::MAX)),
        _ => Ok(0),
    }
}

/// `str(v)`.
pub(crate) fn text(v: &Bound<'_, PyAny>) -> PyResult<String> {
    match v.cast::<PyString>() {
        Ok(s) => Ok(s.to_cow()?.into_owned()),
        Err(_) => Ok(v.str()?.to_cow()?.into_owned()),
    }
}

/// Nanoseconds since the epoch (`None`: the epoch).
fn time(v: &Bound<'_, PyAny>) -> PyResult<SystemTime> {
    let nanos: u64 = if v.is_none() { 0 } else { v.extract()? };
    Ok(SystemTime::UNIX_EPOCH + Duration::from_nanos(nanos))
}
