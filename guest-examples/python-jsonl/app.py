"""JSON lines exporter in Python (componentize-py): the same lines as the Rust example.

It asks for `otlp-json` batches: one string per batch that CPython's C `json` module parses,
which costs a fraction of turning typed records into Python objects.

Settings: `path` (a file in a pre-opened directory; `{key}` expands to a resource attribute)
or none for stdout.
"""

import base64
import json
import math
import sys

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import types

# OTLP `Span.SpanKind` numbers.
KINDS = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
STATUS = {1: "ok", 2: "error"}
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


class SpanExporter(exports.SpanExporter):
    out = None
    open = False

    def init(self, settings, resource):
        options = dict(settings)
        path = options.get("path")
        if path is not None:
            for kv in resource.attributes:
                v = resource_value(kv.value)
                path = path.replace("{" + kv.key + "}", v if isinstance(v, str) else json.dumps(v))
            try:
                SpanExporter.out = open(path, "a", encoding="utf-8")
            except OSError as e:
                raise Err(
                    f"cannot open {path}: {e} (is its directory pre-opened read-write?)"
                ) from e
        else:
            SpanExporter.out = sys.stdout
        SpanExporter.open = True
        # OTLP/JSON: parsed by CPython's C `json` module, far cheaper than typed records.
        return types.Encoding.OTLP_JSON

    def export(self, batch):
        if not SpanExporter.open:
            raise Err("export after shutdown")
        if not isinstance(batch, types.Batch_OtlpJson):
            raise Err("this exporter asked for otlp-json batches")
        lines = []
        for rs in json.loads(batch.value)["resourceSpans"]:
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
        # One write per batch: every write is a host call.
        SpanExporter.out.write("\n".join(lines) + ("\n" if lines else ""))
        SpanExporter.out.flush()

    def force_flush(self):
        if SpanExporter.out is not None:
            SpanExporter.out.flush()

    def shutdown(self):
        if not SpanExporter.open:
            raise Err("already shut down")
        SpanExporter.open = False
        if SpanExporter.out is not sys.stdout:
            SpanExporter.out.close()
