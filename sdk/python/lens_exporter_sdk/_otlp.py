"""OTLP/JSON (the batches the host sends) to the OpenTelemetry Python SDK's own objects: what
that SDK's exporters receive, so an exporter written for it runs unchanged."""

import base64

from opentelemetry._logs import LogRecord, SeverityNumber
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Buckets,
    Gauge,
    Histogram,
    HistogramDataPoint,
    Metric,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
    Sum,
)
from opentelemetry.sdk.metrics.export import (
    ExponentialHistogram as ExpHistogram,
)
from opentelemetry.sdk.metrics.export import (
    ExponentialHistogramDataPoint as ExpPoint,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
    set_span_in_context,
)

# OTLP `SpanFlags`: whether the context is remote is known (0x100) and true (0x200).
_REMOTE = 0x300
_KINDS = {
    1: SpanKind.INTERNAL,
    2: SpanKind.SERVER,
    3: SpanKind.CLIENT,
    4: SpanKind.PRODUCER,
    5: SpanKind.CONSUMER,
}
_TEMPORALITY = {1: AggregationTemporality.DELTA, 2: AggregationTemporality.CUMULATIVE}


def value(v):
    """An `AnyValue`: arrays become tuples (as the SDK stores them), maps dicts, bytes bytes."""
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])  # also "NaN", "Infinity"
    if "boolValue" in v:
        return v["boolValue"]
    if "arrayValue" in v:
        return tuple(value(x) for x in v["arrayValue"].get("values", ()))
    if "kvlistValue" in v:
        return attributes(v["kvlistValue"].get("values", ()))
    if "bytesValue" in v:
        return base64.b64decode(v["bytesValue"])
    return None


def attributes(kvs):
    return {kv["key"]: value(kv.get("value", {})) for kv in kvs}


def resource(r, schema_url=None):
    return Resource(attributes(r.get("attributes", ())), schema_url or None)


def scope(s, schema_url=None):
    return InstrumentationScope(
        s.get("name", ""),
        s.get("version") or None,
        schema_url or None,
        attributes(s.get("attributes", ())),
    )


def _id(hex_id):
    return int(hex_id, 16) if hex_id else 0


# Immutable values shared by every span (building them per span is a measurable share of the
# conversion in a component's interpreter).
_FLAGS = [TraceFlags(f) for f in range(256)]
_NO_STATE = TraceState()
_UNSET = Status(StatusCode.UNSET)
_OK = Status(StatusCode.OK)


def _context(trace_id, span_id, flags, trace_state):
    return SpanContext(
        trace_id=_id(trace_id),
        span_id=_id(span_id),
        is_remote=flags & _REMOTE == _REMOTE,
        trace_flags=_FLAGS[flags & 0xFF],
        trace_state=TraceState.from_header([trace_state]) if trace_state else _NO_STATE,
    )


def _status(st):
    code = st.get("code", 0)
    if code == 2:
        return Status(StatusCode.ERROR, st.get("message"))
    return _OK if code == 1 else _UNSET


def span(s, res, sc):
    flags = int(s.get("flags", 0))
    trace_state = s.get("traceState", "")
    # The span's own context is local (it was exported by this process); its flags' remote
    # bits describe the parent.
    cx = _context(s["traceId"], s["spanId"], flags & 0xFF, trace_state)
    parent = None
    if s.get("parentSpanId"):
        parent = _context(s["traceId"], s["parentSpanId"], flags, trace_state)
    return ReadableSpan(
        name=s.get("name", ""),
        context=cx,
        parent=parent,
        resource=res,
        attributes=attributes(s.get("attributes", ())),
        events=[
            Event(
                e.get("name", ""),
                attributes(e.get("attributes", ())),
                int(e.get("timeUnixNano", 0)),
            )
            for e in s.get("events", ())
        ],
        links=[
            Link(
                _context(
                    lk["traceId"], lk["spanId"], int(lk.get("flags", 0)), lk.get("traceState", "")
                ),
                attributes(lk.get("attributes", ())),
            )
            for lk in s.get("links", ())
        ],
        kind=_KINDS.get(s.get("kind", 1), SpanKind.INTERNAL),
        status=_status(s.get("status", {})),
        start_time=int(s.get("startTimeUnixNano", 0)),
        end_time=int(s.get("endTimeUnixNano", 0)),
        instrumentation_scope=sc,
    )


def _grouped(request, resources, scopes, items, make):
    """`make(item, resource, scope)` for each item of an OTLP request, in order."""
    out = []
    for group in request.get(resources, ()):
        res = resource(group.get("resource", {}), group.get("schemaUrl"))
        for inner in group.get(scopes, ()):
            sc = scope(inner.get("scope", {}), inner.get("schemaUrl"))
            out.extend(make(item, res, sc) for item in inner.get(items, ()))
    return out


def spans(request):
    """An `ExportTraceServiceRequest` as `ReadableSpan`s, in order."""
    return _grouped(request, "resourceSpans", "scopeSpans", "spans", span)


def _number(p):
    if "asDouble" in p:
        return float(p["asDouble"])
    return int(p.get("asInt", 0))


def _times(p):
    return int(p.get("startTimeUnixNano", 0)), int(p.get("timeUnixNano", 0))


def _number_points(points):
    return [
        NumberDataPoint(attributes(p.get("attributes", ())), *_times(p), _number(p)) for p in points
    ]


def _optional_float(p, key):
    return float(p[key]) if key in p else None


def _histogram_point(p):
    return HistogramDataPoint(
        attributes(p.get("attributes", ())),
        *_times(p),
        int(p.get("count", 0)),
        float(p.get("sum", 0.0)),
        [int(c) for c in p.get("bucketCounts", ())],
        [float(b) for b in p.get("explicitBounds", ())],
        _optional_float(p, "min"),
        _optional_float(p, "max"),
    )


def _buckets(b):
    return Buckets(int(b.get("offset", 0)), [int(c) for c in b.get("bucketCounts", ())])


def _exponential_point(p):
    return ExpPoint(
        attributes(p.get("attributes", ())),
        *_times(p),
        int(p.get("count", 0)),
        float(p.get("sum", 0.0)),
        int(p.get("scale", 0)),
        int(p.get("zeroCount", 0)),
        _buckets(p.get("positive", {})),
        _buckets(p.get("negative", {})),
        int(p.get("flags", 0)),
        _optional_float(p, "min"),
        _optional_float(p, "max"),
    )


def _metric_data(m):
    if "gauge" in m:
        return Gauge(_number_points(m["gauge"].get("dataPoints", ())))
    if "sum" in m:
        s = m["sum"]
        return Sum(
            _number_points(s.get("dataPoints", ())),
            _TEMPORALITY.get(s.get("aggregationTemporality"), AggregationTemporality.CUMULATIVE),
            bool(s.get("isMonotonic", False)),
        )
    if "histogram" in m:
        h = m["histogram"]
        return Histogram(
            [_histogram_point(p) for p in h.get("dataPoints", ())],
            _TEMPORALITY.get(h.get("aggregationTemporality"), AggregationTemporality.CUMULATIVE),
        )
    if "exponentialHistogram" in m:
        h = m["exponentialHistogram"]
        return ExpHistogram(
            [_exponential_point(p) for p in h.get("dataPoints", ())],
            _TEMPORALITY.get(h.get("aggregationTemporality"), AggregationTemporality.CUMULATIVE),
        )
    return None


def metrics(request):
    """An `ExportMetricsServiceRequest` as the SDK's `MetricsData`."""
    return MetricsData(
        [
            ResourceMetrics(
                resource(rm.get("resource", {}), rm.get("schemaUrl")),
                [
                    ScopeMetrics(
                        scope(sm.get("scope", {}), sm.get("schemaUrl")),
                        [
                            Metric(
                                m.get("name", ""),
                                m.get("description", ""),
                                m.get("unit", ""),
                                _metric_data(m),
                            )
                            for m in sm.get("metrics", ())
                        ],
                        sm.get("schemaUrl", ""),
                    )
                    for sm in rm.get("scopeMetrics", ())
                ],
                rm.get("schemaUrl", ""),
            )
            for rm in request.get("resourceMetrics", ())
        ]
    )


def _log_context(r):
    if not r.get("traceId") or not r.get("spanId"):
        return None
    cx = SpanContext(
        _id(r["traceId"]), _id(r["spanId"]), False, TraceFlags(int(r.get("flags", 0)) & 0xFF)
    )
    return set_span_in_context(NonRecordingSpan(cx))


def _log(r, res, sc):
    body = r.get("body")
    number = r.get("severityNumber")
    return ReadableLogRecord(
        LogRecord(
            timestamp=int(r.get("timeUnixNano", 0)) or None,
            observed_timestamp=int(r.get("observedTimeUnixNano", 0)) or None,
            context=_log_context(r),
            severity_text=r.get("severityText") or None,
            severity_number=SeverityNumber(number) if number else None,
            body=value(body) if body else None,
            attributes=attributes(r.get("attributes", ())),
            event_name=r.get("eventName") or None,
        ),
        res,
        sc,
    )


def logs(request):
    """An `ExportLogsServiceRequest` as `ReadableLogRecord`s, in order."""
    return _grouped(request, "resourceLogs", "scopeLogs", "logRecords", _log)
