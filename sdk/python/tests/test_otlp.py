"""OTLP/JSON requests, as the host writes them, become the OpenTelemetry Python SDK's own
objects with every field in place."""

import ctypes
import struct

from lens_exporter_sdk import _otlp, _sandbox
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    ExponentialHistogram,
    Gauge,
    Histogram,
    MetricsData,
    Sum,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

TRACE = "5b8efff798038103d269b633813fc60c"
SPAN = "eee19b7ec3c1b174"
PARENT = "00f067aa0ba902b7"

RESOURCE = {
    "attributes": [
        {"key": "dl.rank", "value": {"intValue": "3"}},
        {"key": "service.name", "value": {"stringValue": "train"}},
    ]
}


def span_request():
    span = {
        "traceId": TRACE,
        "spanId": SPAN,
        "traceState": "vendor=a1,lens=b2",
        "parentSpanId": PARENT,
        "flags": 0x301,
        "name": "step ✓",
        "kind": 3,
        "startTimeUnixNano": "1700000000000000001",
        "endTimeUnixNano": "1700000000000000901",
        "attributes": [
            {"key": "s", "value": {"stringValue": "a"}},
            {"key": "i", "value": {"intValue": "-9223372036854775808"}},
            {"key": "f", "value": {"doubleValue": 0.25}},
            {"key": "nan", "value": {"doubleValue": "NaN"}},
            {"key": "b", "value": {"boolValue": True}},
            {
                "key": "ia",
                "value": {"arrayValue": {"values": [{"intValue": "8"}, {"intValue": "-4096"}]}},
            },
            {"key": "raw", "value": {"bytesValue": "AQI="}},
        ],
        "events": [
            {
                "timeUnixNano": "1700000000000000500",
                "name": "spike",
                "attributes": [{"key": "loss", "value": {"doubleValue": 9.5}}],
            }
        ],
        "links": [
            {
                "traceId": TRACE,
                "spanId": PARENT,
                "flags": 0x301,
                "attributes": [{"key": "k", "value": {"stringValue": "v"}}],
            }
        ],
        "status": {"code": 2, "message": "nan loss"},
    }
    scope = {
        "name": "trainer",
        "version": "2.1",
        "attributes": [{"key": "x", "value": {"boolValue": False}}],
    }
    return {
        "resourceSpans": [
            {
                "resource": RESOURCE,
                "scopeSpans": [
                    {
                        "scope": scope,
                        "spans": [
                            span,
                            {"traceId": TRACE, "spanId": PARENT, "name": "root", "kind": 1},
                        ],
                    }
                ],
            }
        ]
    }


def test_spans_are_readable_spans_with_every_field():
    child, root = _otlp.spans(span_request())
    assert isinstance(child, ReadableSpan)
    assert child.name == "step ✓"
    assert (child.context.trace_id, child.context.span_id) == (int(TRACE, 16), int(SPAN, 16))
    assert (int(child.context.trace_flags), child.context.is_remote) == (1, False)
    assert child.context.trace_state.to_header() == "vendor=a1,lens=b2"
    assert (child.parent.span_id, child.parent.is_remote) == (int(PARENT, 16), True)
    assert child.kind is SpanKind.CLIENT
    assert (child.start_time, child.end_time) == (1700000000000000001, 1700000000000000901)
    attrs = dict(child.attributes)
    assert (
        attrs["i"] == -(2**63) and attrs["f"] == 0.25 and attrs["b"] is True and attrs["s"] == "a"
    )
    assert attrs["nan"] != attrs["nan"]
    assert attrs["ia"] == (8, -4096) and attrs["raw"] == b"\x01\x02"
    (event,) = child.events
    assert (event.name, event.timestamp, dict(event.attributes)) == (
        "spike",
        1700000000000000500,
        {"loss": 9.5},
    )
    (link,) = child.links
    assert (link.context.span_id, link.context.is_remote, dict(link.attributes)) == (
        int(PARENT, 16),
        True,
        {"k": "v"},
    )
    assert (child.status.status_code, child.status.description) == (StatusCode.ERROR, "nan loss")
    assert dict(child.resource.attributes) == {"dl.rank": 3, "service.name": "train"}
    scope = child.instrumentation_scope
    assert (scope.name, scope.version, dict(scope.attributes)) == ("trainer", "2.1", {"x": False})
    assert (
        root.parent is None
        and root.kind is SpanKind.INTERNAL
        and root.status.status_code is StatusCode.UNSET
    )
    # What an SDK exporter would do with it (bytes are not an attribute type OpenTelemetry
    # Python serializes, so the span without them).
    assert '"name": "root"' in root.to_json()


def test_metrics_are_metrics_data_of_every_kind():
    point = {
        "attributes": [{"key": "gpu", "value": {"intValue": "0"}}],
        "startTimeUnixNano": "10",
        "timeUnixNano": "20",
    }
    metrics = [
        {"name": "loss", "unit": "1", "gauge": {"dataPoints": [dict(point, asDouble=2.5)]}},
        {
            "name": "tokens",
            "sum": {
                "dataPoints": [dict(point, asInt="7")],
                "aggregationTemporality": 1,
                "isMonotonic": True,
            },
        },
        {
            "name": "lat",
            "histogram": {
                "dataPoints": [
                    dict(
                        point,
                        count="3",
                        sum=6.0,
                        bucketCounts=["1", "2"],
                        explicitBounds=[1.0],
                        min=1.0,
                        max=3.0,
                    )
                ],
                "aggregationTemporality": 2,
            },
        },
        {
            "name": "exp",
            "exponentialHistogram": {
                "dataPoints": [
                    dict(
                        point,
                        count="2",
                        sum=3.0,
                        scale=2,
                        zeroCount="1",
                        positive={"offset": -1, "bucketCounts": ["1"]},
                    )
                ],
                "aggregationTemporality": 2,
            },
        },
    ]
    request = {
        "resourceMetrics": [
            {
                "resource": RESOURCE,
                "scopeMetrics": [{"scope": {"name": "trainer"}, "metrics": metrics}],
            }
        ]
    }
    data = _otlp.metrics(request)
    assert isinstance(data, MetricsData)
    gauge, total, hist, exp = data.resource_metrics[0].scope_metrics[0].metrics
    assert (
        isinstance(gauge.data, Gauge)
        and gauge.data.data_points[0].value == 2.5
        and gauge.unit == "1"
    )
    assert isinstance(total.data, Sum) and total.data.is_monotonic
    assert total.data.aggregation_temporality is AggregationTemporality.DELTA
    assert (total.data.data_points[0].value, dict(total.data.data_points[0].attributes)) == (
        7,
        {"gpu": 0},
    )
    assert isinstance(hist.data, Histogram)
    p = hist.data.data_points[0]
    assert (p.count, p.sum, list(p.bucket_counts), list(p.explicit_bounds), p.min, p.max) == (
        3,
        6.0,
        [1, 2],
        [1.0],
        1.0,
        3.0,
    )
    assert isinstance(exp.data, ExponentialHistogram)
    e = exp.data.data_points[0]
    assert (
        e.scale,
        e.zero_count,
        e.positive.offset,
        list(e.positive.bucket_counts),
        e.negative.offset,
    ) == (2, 1, -1, [1], 0)
    assert '"name": "exp"' in data.to_json()


def test_logs_are_readable_log_records():
    records = [
        {
            "timeUnixNano": "5",
            "observedTimeUnixNano": "6",
            "severityNumber": 13,
            "severityText": "WARN",
            "body": {
                "kvlistValue": {
                    "values": [
                        {"key": "k", "value": {"arrayValue": {"values": [{"intValue": "1"}]}}}
                    ]
                }
            },
            "attributes": [{"key": "code.lineno", "value": {"intValue": "42"}}],
            "traceId": TRACE,
            "spanId": SPAN,
            "flags": 1,
            "eventName": "checkpoint",
        },
        {"observedTimeUnixNano": "7"},
    ]
    request = {
        "resourceLogs": [
            {
                "resource": RESOURCE,
                "scopeLogs": [{"scope": {"name": "lens.log"}, "logRecords": records}],
            }
        ]
    }
    full, bare = _otlp.logs(request)
    r = full.log_record
    assert (r.timestamp, r.observed_timestamp, r.severity_text, r.severity_number.value) == (
        5,
        6,
        "WARN",
        13,
    )
    assert r.body == {"k": (1,)} and dict(r.attributes) == {"code.lineno": 42}
    assert (r.trace_id, r.span_id, int(r.trace_flags), r.event_name) == (
        int(TRACE, 16),
        int(SPAN, 16),
        1,
        "checkpoint",
    )
    assert (
        full.instrumentation_scope.name == "lens.log"
        and dict(full.resource.attributes)["dl.rank"] == 3
    )
    assert (bare.log_record.timestamp, bare.log_record.body, bare.log_record.severity_number) == (
        None,
        None,
        None,
    )


def test_the_float_bits_stand_in_agrees_with_ctypes():
    for x in (0.0, -1.5, 1e300, 5e-324, float("inf")):
        expected = ctypes.c_uint64.from_buffer(ctypes.c_double(x)).value
        assert (
            _sandbox.CUInt64.from_buffer(_sandbox.CDouble(x)).value
            == expected
            == struct.unpack("<Q", struct.pack("<d", x))[0]
        )
