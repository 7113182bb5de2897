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
use pyo3::types::{PyBool, PyFloat, PyInt, PyString};

/// The spans of one batch, and the resource of the first (the SDK's batch processor hands over
/// spans of one provider).
pub struct Batch {
    pub spans: Vec<SpanData>,
    pub resource: Option<Py<PyAny>>,
}

/// Reads every span of `spans` (any iterable of `ReadableSpan`).
pub fn batch(spans: &Bound<'_, PyAny>) -> PyResult<Batch> {
    let mut out = Vec::with_capacity(spans.len().unwrap_or(0));
    let mut resource = None;
    // Spans of one tracer share their scope object: read it once per batch.
    let mut scopes: HashMap<usize, InstrumentationScope> = HashMap::new();
    for span in spans.try_iter()? {
        let span = span?;
        if resource.is_none() {
            resource = Some(span.getattr(intern!(span.py(), "resource"))?.unbind());
        }
        out.push(span_data(&span, &mut scopes)?);
    }
    Ok(Batch {
        spans: out,
        resource,
    })
}

fn span_data(
    span: &Bound<'_, PyAny>,
    scopes: &mut HashMap<usize, InstrumentationScope>,
) -> PyResult<SpanData> {
    let py = span.py();
    let context = span.getattr(intern!(py, "context"))?;
    let parent = span.getattr(intern!(py, "parent"))?;
    let (parent_span_id, parent_span_is_remote) = if parent.is_none() {
        (SpanId::INVALID, false)
    } else {
        let id: u64 = parent.getattr(intern!(py, "span_id"))?.extract()?;
        let remote: bool = parent.getattr(intern!(py, "is_remote"))?.extract()?;
        (SpanId::from(id), remote)
    };
    let kind: u8 = span
        .getattr(intern!(py, "kind"))?
        .getattr(intern!(py, "value"))?
        .extract()?;
    let (attributes, dropped_attributes_count) = attributes_of(span)?;
    let dropped_attributes_count = dropped(span, intern!(py, "dropped_attributes"))
        .map(|d| d.max(dropped_attributes_count))?;
    let mut events = SpanEvents::default();
    for event in span.getattr(intern!(py, "events"))?.try_iter()? {
        let event = event?;
        let (attrs, dropped) = attributes_of(&event)?;
        events.events.push(Event::new(
            text(&event.getattr(intern!(py, "name"))?)?,
            time(&event.getattr(intern!(py, "timestamp"))?)?,
            attrs,
            dropped,
        ));
    }
    events.dropped_count = dropped(span, intern!(py, "dropped_events"))?;
    let mut links = SpanLinks::default();
    for link in span.getattr(intern!(py, "links"))?.try_iter()? {
        let link = link?;
        let (attrs, dropped) = attributes_of(&link)?;
        links.links.push(Link::new(
            span_context(&link.getattr(intern!(py, "context"))?)?,
            attrs,
            dropped,
        ));
    }
    links.dropped_count = dropped(span, intern!(py, "dropped_links"))?;
    let scope = span.getattr(intern!(py, "instrumentation_scope"))?;
    let scope = match scopes.get(&(scope.as_ptr() as usize)) {
        Some(s) => s.clone(),
        None => {
            let s = instrumentation_scope(&scope)?;
            scopes.insert(scope.as_ptr() as usize, s.clone());
            s
        }
    };
    Ok(SpanData {
        span_context: span_context(&context)?,
        parent_span_id,
        parent_span_is_remote,
        span_kind: match kind {
            1 => SpanKind::Server,
            2 => SpanKind::Client,
            3 => SpanKind::Producer,
            4 => SpanKind::Consumer,
            _ => SpanKind::Internal,
        },
        name: Cow::Owned(text(&span.getattr(intern!(py, "name"))?)?),
        start_time: time(&span.getattr(intern!(py, "start_time"))?)?,
        end_time: time(&span.getattr(intern!(py, "end_time"))?)?,
        attributes,
        dropped_attributes_count,
        events,
        links,
        status: status(&span.getattr(intern!(py, "status"))?)?,
        instrumentation_scope: scope,
    })
}

/// A `SpanContext`: ids, flags, trace state (through its W3C header) and the remote flag.
fn span_context(cx: &Bound<'_, PyAny>) -> PyResult<SpanContext> {
    let py = cx.py();
    let trace_id: u128 = cx.getattr(intern!(py, "trace_id"))?.extract()?;
    let span_id: u64 = cx.getattr(intern!(py, "span_id"))?.extract()?;
    let flags: u8 = cx.getattr(intern!(py, "trace_flags"))?.extract()?;
    let remote: bool = cx.getattr(intern!(py, "is_remote"))?.extract()?;
    let state = cx.getattr(intern!(py, "trace_state"))?;
    let state = if state.is_none() || state.len().unwrap_or(0) == 0 {
        TraceState::NONE
    } else {
        let header: String = state.call_method0(intern!(py, "to_header"))?.extract()?;
        TraceState::from_str(&header).unwrap_or(TraceState::NONE)
    };
    Ok(SpanContext::new(
        TraceId::from(trace_id),
        SpanId::from(span_id),
        TraceFlags::new(flags),
        remote,
        state,
    ))
}

fn status(status: &Bound<'_, PyAny>) -> PyResult<Status> {
    let py = status.py();
    let code: u8 = status
        .getattr(intern!(py, "status_code"))?
        .getattr(intern!(py, "value"))?
        .extract()?;
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

fn instrumentation_scope(scope: &Bound<'_, PyAny>) -> PyResult<InstrumentationScope> {
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

/// An object's `attributes` (a mapping, possibly `None`) and how many its bound dropped.
fn attributes_of(owner: &Bound<'_, PyAny>) -> PyResult<(Vec<KeyValue>, u32)> {
    let py = owner.py();
    let attrs = owner.getattr(intern!(py, "attributes"))?;
    if attrs.is_none() {
        return Ok((Vec::new(), 0));
    }
    let mut out = Vec::with_capacity(attrs.len().unwrap_or(0));
    for item in attrs.call_method0(intern!(py, "items"))?.try_iter()? {
        let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
        if let Some(value) = value_of(&value)? {
            out.push(KeyValue::new(text(&key)?, value));
        }
    }
    // `BoundedAttributes.dropped`: attributes over the limit.
    let dropped = match attrs.getattr(intern!(py, "dropped")) {
        Ok(d) => d.extract().unwrap_or(0),
        Err(_) => 0,
    };
    Ok((out, dropped))
}

/// An attribute value; `None` for a `None` value.
fn value_of(v: &Bound<'_, PyAny>) -> PyResult<Option<Value>> {
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
fn text(v: &Bound<'_, PyAny>) -> PyResult<String> {
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
