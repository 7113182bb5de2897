"""JSON lines exporter in Python (componentize-py): the same lines as the Rust example, for
spans, metrics and log records (world `all-signals`; the host runs one instance per signal).

It asks for `otlp-json` batches: one string per batch that CPython's C `json` module parses,
which costs a fraction of turning typed records into Python objects.

Settings: `path` (a file in a pre-opened directory; `{key}` expands to a resource attribute)
or none for stdout; for metrics, `temporality` (`cumulative`, the default, or `delta`).
"""

import base64
import json
import math
import sys

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import log_types, metric_types, types

# OTLP `Span.SpanKind` numbers.
KINDS = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
STATUS = {1: "ok", 2: "error"}
# OTLP `AggregationTemporality` numbers.
TEMPORALITY = {1: "delta", 2: "cumulative"}
ZERO_ID = "0000000000000000"
# One encoder for every line: `json.dumps` with options builds a new one per call.
ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def value(v):
    # OTLP/JSON `AnyValue`: one member; 64-bit integers arrive as decimal strings.
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        x = float(v["doubleValue"])  # also "NaN", "Infinity"
        return x if math.isfinite(x) else None  # `null`, as the other exporters write it
    if "boolValue" in v:
        return v["boolValue"]
    if "arrayValue" in v:
        return [value(x) for x in v["arrayValue"].get("values", ())]
    if "kvlistValue" in v:
        return attributes(v["kvlistValue"].get("values", ()))
    if "bytesValue" in v:
        return list(base64.b64decode(v["bytesValue"]))
    return None


def attributes(kvs):
    return {kv["key"]: value(kv["value"]) for kv in kvs}


def status(s):
    code = STATUS.get(s.get("code", 0), "unset")
    if code == "error":
        return {"code": code, "message": s.get("message", "")}
    return {"code": code}


def resource_value(v):
    # `init` still gets the typed resource: every variant case carries `.value`.
    return list(v.value) if isinstance(v, types.Value_Bytes) else v.value


class Sink:
    """The instance's output: one per instance, since each signal has its own."""

    out = None
    open = False

    @staticmethod
    def start(settings, resource):
        path = dict(settings).get("path")
        if path is not None:
            for kv in resource.attributes:
                v = resource_value(kv.value)
                path = path.replace("{" + kv.key + "}", v if isinstance(v, str) else json.dumps(v))
            try:
                Sink.out = open(path, "a", encoding="utf-8")
            except OSError as e:
                raise Err(
                    f"cannot open {path}: {e} (is its directory pre-opened read-write?)"
                ) from e
        else:
            Sink.out = sys.stdout
        Sink.open = True

    @staticmethod
    def batch(batch, expected):
        if not Sink.open:
            raise Err(types.ExportError_Rejected("export after shutdown"))
        if not isinstance(batch, expected):
            raise Err(types.ExportError_Rejected("this exporter asked for otlp-json batches"))
        return json.loads(batch.value)

    @staticmethod
    def write(lines):
        # One write per batch: every write is a host call.
        Sink.out.write("\n".join(lines) + ("\n" if lines else ""))
        Sink.out.flush()

    @staticmethod
    def flush():
        if Sink.out is not None:
            Sink.out.flush()

    @staticmethod
    def close():
        if not Sink.open:
            raise Err("already shut down")
        Sink.open = False
        if Sink.out is not sys.stdout:
            Sink.out.close()


class SpanExporter(exports.SpanExporter):
    def init(self, settings, resource):
        Sink.start(settings, resource)
        # OTLP/JSON: parsed by CPython's C `json` module, far cheaper than typed records.
        return types.Encoding.OTLP_JSON

    def export(self, batch):
        request = Sink.batch(batch, types.Batch_OtlpJson)
        lines = []
        for rs in request.get("resourceSpans", ()):
            for group in rs.get("scopeSpans", ()):
                scope = group["scope"].get("name", "")
                for s in group.get("spans", ()):
                    start = int(s.get("startTimeUnixNano", 0))
                    end = int(s.get("endTimeUnixNano", 0))
                    line = {
                        "name": s.get("name", ""),
                        "trace_id": s["traceId"],
                        "span_id": s["spanId"],
                        "parent_span_id": s.get("parentSpanId", ZERO_ID),
                        "kind": KINDS.get(s.get("kind"), "internal"),
                        "start_unix_nano": start,
                        "end_unix_nano": end,
                        "duration_ns": max(0, end - start),
                        "status": status(s.get("status", {})),
                        "attributes": attributes(s.get("attributes", ())),
                        "events": [
                            {
                                "name": e.get("name", ""),
                                "time_unix_nano": int(e.get("timeUnixNano", 0)),
                                "attributes": attributes(e.get("attributes", ())),
                            }
                            for e in s.get("events", ())
                        ],
                        "links": [
                            {
                                "trace_id": link["traceId"],
                                "span_id": link["spanId"],
                                "attributes": attributes(link.get("attributes", ())),
                            }
                            for link in s.get("links", ())
                        ],
                        "scope": scope,
                    }
                    lines.append(ENCODE(line))
        Sink.write(lines)

    def force_flush(self):
        Sink.flush()

    def shutdown(self):
        Sink.close()


def number(point):
    if "asDouble" in point:
        return point["asDouble"]
    return int(point.get("asInt", 0))


def point_line(metric, kind, p, scope):
    start = p.get("startTimeUnixNano")
    return {
        "name": metric.get("name", ""),
        "description": metric.get("description", ""),
        "unit": metric.get("unit", ""),
        "kind": kind,
        "attributes": attributes(p.get("attributes", ())),
        "start_unix_nano": int(start) if start not in (None, "0", 0) else None,
        "time_unix_nano": int(p.get("timeUnixNano", 0)),
        "scope": scope,
    }


def metric_lines(m, scope):
    if "gauge" in m:
        for p in m["gauge"].get("dataPoints", ()):
            yield dict(point_line(m, "gauge", p, scope), value=number(p))
    elif "sum" in m:
        s = m["sum"]
        for p in s.get("dataPoints", ()):
            yield dict(
                point_line(m, "sum", p, scope),
                value=number(p),
                monotonic=bool(s.get("isMonotonic", False)),
                temporality=TEMPORALITY.get(s.get("aggregationTemporality"), "unspecified"),
            )
    elif "histogram" in m:
        h = m["histogram"]
        for p in h.get("dataPoints", ()):
            yield dict(
                point_line(m, "histogram", p, scope),
                count=int(p.get("count", 0)),
                sum=p.get("sum"),
                min=p.get("min"),
                max=p.get("max"),
                bounds=p.get("explicitBounds", []),
                bucket_counts=[int(c) for c in p.get("bucketCounts", ())],
                temporality=TEMPORALITY.get(h.get("aggregationTemporality"), "unspecified"),
            )
    elif "exponentialHistogram" in m:
        h = m["exponentialHistogram"]
        for p in h.get("dataPoints", ()):
            buckets = {
                side: {
                    "offset": p.get(side, {}).get("offset", 0),
                    "counts": [int(c) for c in p.get(side, {}).get("bucketCounts", ())],
                }
                for side in ("positive", "negative")
            }
            yield dict(
                point_line(m, "exponential_histogram", p, scope),
                count=int(p.get("count", 0)),
                sum=p.get("sum"),
                min=p.get("min"),
                max=p.get("max"),
                scale=p.get("scale", 0),
                zero_count=int(p.get("zeroCount", 0)),
                temporality=TEMPORALITY.get(h.get("aggregationTemporality"), "unspecified"),
                **buckets,
            )


class MetricExporter(exports.MetricExporter):
    def init(self, settings, resource):
        wanted = dict(settings).get("temporality", "cumulative")
        temporality = {
            "cumulative": metric_types.Temporality.CUMULATIVE,
            "delta": metric_types.Temporality.DELTA,
        }.get(wanted)
        if temporality is None:
            raise Err(f"`temporality` must be cumulative or delta, not `{wanted}`")
        Sink.start(settings, resource)
        return metric_types.MetricPreferences(types.Encoding.OTLP_JSON, temporality)

    def export(self, batch):
        request = Sink.batch(batch, metric_types.MetricBatch_OtlpJson)
        lines = []
        for rm in request.get("resourceMetrics", ()):
            for group in rm.get("scopeMetrics", ()):
                scope = group.get("scope", {}).get("name", "")
                for m in group.get("metrics", ()):
                    lines.extend(ENCODE(line) for line in metric_lines(m, scope))
        Sink.write(lines)

    def force_flush(self):
        Sink.flush()

    def shutdown(self):
        Sink.close()


class LogExporter(exports.LogExporter):
    def init(self, settings, resource):
        Sink.start(settings, resource)
        return types.Encoding.OTLP_JSON

    def export(self, batch):
        request = Sink.batch(batch, log_types.LogBatch_OtlpJson)
        lines = []
        for rl in request.get("resourceLogs", ()):
            for group in rl.get("scopeLogs", ()):
                scope = group.get("scope", {}).get("name", "")
                for r in group.get("logRecords", ()):
                    time = r.get("timeUnixNano")
                    lines.append(
                        ENCODE(
                            {
                                "time_unix_nano": int(time) if time not in (None, "0", 0) else None,
                                "observed_unix_nano": int(r.get("observedTimeUnixNano", 0)) or None,
                                "severity_text": r.get("severityText") or None,
                                "severity_number": r.get("severityNumber") or None,
                                "body": value(r["body"]) if r.get("body") else None,
                                "attributes": attributes(r.get("attributes", ())),
                                "event_name": r.get("eventName") or None,
                                "trace_id": r.get("traceId") or None,
                                "span_id": r.get("spanId") or None,
                                "scope": scope,
                            }
                        )
                    )
        Sink.write(lines)

    def force_flush(self):
        Sink.flush()

    def shutdown(self):
        Sink.close()
