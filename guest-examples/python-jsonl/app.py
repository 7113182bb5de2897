"""JSON lines exporter in Python: the same lines as the Rust example, for spans, metrics and log
records, written as OpenTelemetry Python SDK exporters (`SpanExporter`, `MetricExporter`,
`LogExporter`) and run in the sandbox by the Lens Python SDK (`lens_exporter_sdk`), which hands
them `ReadableSpan`s, `MetricsData` and `ReadableLogRecord`s.

Settings: `path` (a file in a pre-opened directory; `{key}` expands to a resource attribute)
or none for stdout; for metrics, `temporality` (`cumulative`, the default, or `delta`).
"""

import json
import math
import sys

import lens_exporter_sdk
from opentelemetry.sdk._logs.export import LogExporter as OtelLogExporter
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.metrics import Counter, Histogram, UpDownCounter
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    ExponentialHistogram,
    Gauge,
    MetricExportResult,
    Sum,
)
from opentelemetry.sdk.metrics.export import MetricExporter as OtelMetricExporter
from opentelemetry.sdk.trace.export import SpanExporter as OtelSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

# One encoder for every line: `json.dumps` with options builds a new one per call.
ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def plain(v):
    """An attribute value as the other exporters write it: non-finite floats are `null`, bytes
    a list of numbers, maps objects."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, (tuple, list)):
        return [plain(x) for x in v]
    if isinstance(v, bytes):
        return list(v)
    if isinstance(v, dict):
        return attributes(v)
    return v


def attributes(attrs):
    return {k: plain(v) for k, v in (attrs or {}).items()}


class Lines:
    """One output file (or stdout) with one write per batch: every write is a host call."""

    def __init__(self, settings):
        path = settings.get("path")
        if path is None:
            self.out = sys.stdout
            return
        for key, v in settings.resource.attributes.items():
            path = path.replace("{" + key + "}", v if isinstance(v, str) else json.dumps(v))
        try:
            self.out = open(path, "a", encoding="utf-8")
        except OSError as e:
            raise OSError(
                f"cannot open {path}: {e} (is its directory pre-opened read-write?)"
            ) from e

    def write(self, lines):
        self.out.write("".join(ENCODE(line) + "\n" for line in lines))
        self.out.flush()

    def close(self):
        if self.out is not sys.stdout:
            self.out.close()


class WritesLines:
    """What the three exporters share: their output, flushed and closed with them."""

    lines: Lines

    def force_flush(self, timeout_millis=30_000):
        self.lines.out.flush()
        return True

    def shutdown(self, timeout_millis=30_000, **kwargs):
        self.lines.close()


def hex_id(i, width):
    return format(i, f"0{width}x")


class SpanLines(WritesLines, OtelSpanExporter):
    def __init__(self, settings):
        self.lines = Lines(settings)

    def export(self, spans):
        self.lines.write(
            {
                "name": s.name,
                "trace_id": hex_id(s.context.trace_id, 32),
                "span_id": hex_id(s.context.span_id, 16),
                "parent_span_id": hex_id(s.parent.span_id if s.parent else 0, 16),
                "kind": s.kind.name.lower(),
                "start_unix_nano": s.start_time,
                "end_unix_nano": s.end_time,
                "duration_ns": max(0, s.end_time - s.start_time),
                "status": (
                    {"code": "error", "message": s.status.description or ""}
                    if not s.status.is_ok
                    else {"code": s.status.status_code.name.lower()}
                ),
                "attributes": attributes(s.attributes),
                "events": [
                    {
                        "name": e.name,
                        "time_unix_nano": e.timestamp,
                        "attributes": attributes(e.attributes),
                    }
                    for e in s.events
                ],
                "links": [
                    {
                        "trace_id": hex_id(link.context.trace_id, 32),
                        "span_id": hex_id(link.context.span_id, 16),
                        "attributes": attributes(link.attributes),
                    }
                    for link in s.links
                ],
                "scope": s.instrumentation_scope.name,
            }
            for s in spans
        )
        return SpanExportResult.SUCCESS


def temporality_name(t):
    return {
        AggregationTemporality.DELTA: "delta",
        AggregationTemporality.CUMULATIVE: "cumulative",
    }.get(t, "unspecified")


def point_lines(metric, scope):
    data = metric.data
    kind = {Gauge: "gauge", Sum: "sum", ExponentialHistogram: "exponential_histogram"}.get(
        type(data), "histogram"
    )
    for p in data.data_points:
        line = {
            "name": metric.name,
            "description": metric.description or "",
            "unit": metric.unit or "",
            "kind": kind,
            "attributes": attributes(p.attributes),
            "start_unix_nano": p.start_time_unix_nano or None,
            "time_unix_nano": p.time_unix_nano,
            "scope": scope,
        }
        if kind in ("gauge", "sum"):
            line["value"] = p.value
        else:
            line.update(count=p.count, sum=p.sum, min=p.min, max=p.max)
        if kind == "sum":
            line["monotonic"] = data.is_monotonic
        if kind == "histogram":
            line.update(bounds=list(p.explicit_bounds), bucket_counts=list(p.bucket_counts))
        if kind == "exponential_histogram":
            line.update(scale=p.scale, zero_count=p.zero_count)
            for side, b in (("positive", p.positive), ("negative", p.negative)):
                line[side] = {"offset": b.offset, "counts": list(b.bucket_counts)}
        if kind != "gauge":
            line["temporality"] = temporality_name(data.aggregation_temporality)
        yield line


class MetricLines(WritesLines, OtelMetricExporter):
    def __init__(self, settings):
        wanted = settings.get("temporality", "cumulative")
        if wanted not in ("cumulative", "delta"):
            raise ValueError(f"`temporality` must be cumulative or delta, not `{wanted}`")
        temporality = (
            AggregationTemporality.DELTA if wanted == "delta" else AggregationTemporality.CUMULATIVE
        )
        super().__init__(
            preferred_temporality={
                Counter: temporality,
                UpDownCounter: temporality,
                Histogram: temporality,
            }
        )
        self.lines = Lines(settings)

    def export(self, metrics_data, timeout_millis=10_000, **kwargs):
        self.lines.write(
            line
            for rm in metrics_data.resource_metrics
            for sm in rm.scope_metrics
            for m in sm.metrics
            for line in point_lines(m, sm.scope.name)
        )
        return MetricExportResult.SUCCESS


class LogLines(WritesLines, OtelLogExporter):
    def __init__(self, settings):
        self.lines = Lines(settings)

    def export(self, batch):
        self.lines.write(
            {
                "time_unix_nano": r.log_record.timestamp,
                "observed_unix_nano": r.log_record.observed_timestamp,
                "severity_text": r.log_record.severity_text,
                "severity_number": r.log_record.severity_number.value
                if r.log_record.severity_number
                else None,
                "body": plain(r.log_record.body),
                "attributes": attributes(r.log_record.attributes),
                "event_name": r.log_record.event_name,
                "trace_id": hex_id(r.log_record.trace_id, 32) if r.log_record.trace_id else None,
                "span_id": hex_id(r.log_record.span_id, 16) if r.log_record.span_id else None,
                "scope": r.instrumentation_scope.name,
            }
            for r in batch
        )
        return LogRecordExportResult.SUCCESS


# The registration: componentize-py looks for these three names in the app module.
SpanExporter = lens_exporter_sdk.span_exporter(SpanLines)
MetricExporter = lens_exporter_sdk.metric_exporter(MetricLines)
LogExporter = lens_exporter_sdk.log_exporter(LogLines)
