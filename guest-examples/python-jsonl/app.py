"""JSON lines exporter in Python (componentize-py): the same lines as the Rust example.

Settings: `path` (a file in a pre-opened directory; `{key}` expands to a resource attribute)
or none for stdout.
"""

import json
import sys

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import types

KINDS = {
    types.SpanKind.CLIENT: "client",
    types.SpanKind.SERVER: "server",
    types.SpanKind.PRODUCER: "producer",
    types.SpanKind.CONSUMER: "consumer",
    types.SpanKind.INTERNAL: "internal",
}


def value(v):
    # Every variant case carries its payload in `.value`; bytes become a list of numbers.
    return list(v.value) if isinstance(v, types.Value_Bytes) else v.value


def attributes(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


def status(s):
    if isinstance(s, types.Status_Error):
        return {"code": "error", "message": s.value}
    return {"code": "ok" if isinstance(s, types.Status_Ok) else "unset"}


def trace_id(pair):
    return f"{pair[0]:016x}{pair[1]:016x}"


class SpanExporter(exports.SpanExporter):
    out = None
    open = False

    def init(self, settings, resource):
        options = dict(settings)
        path = options.get("path")
        if path is not None:
            for kv in resource.attributes:
                v = kv.value.value
                path = path.replace("{" + kv.key + "}", v if isinstance(v, str) else json.dumps(v))
            try:
                SpanExporter.out = open(path, "a", encoding="utf-8")
            except OSError as e:
                raise Err(f"cannot open {path}: {e} (is its directory pre-opened read-write?)")
        else:
            SpanExporter.out = sys.stdout
        SpanExporter.open = True
        return types.Encoding.TYPED

    def export(self, batch):
        if not SpanExporter.open:
            raise Err("export after shutdown")
        if not isinstance(batch, types.Batch_Typed):
            raise Err("this exporter asked for typed batches")
        lines = []
        for group in batch.value:
            for s in group.spans:
                cx = s.span_context
                line = {
                    "name": s.name,
                    "trace_id": trace_id(cx.trace_id),
                    "span_id": f"{cx.span_id:016x}",
                    "parent_span_id": f"{s.parent_span_id or 0:016x}",
                    "kind": KINDS[s.span_kind],
                    "start_unix_nano": s.start_time,
                    "end_unix_nano": s.end_time,
                    "duration_ns": max(0, s.end_time - s.start_time),
                    "status": status(s.status),
                    "attributes": attributes(s.attributes),
                    "events": [
                        {"name": e.name, "time_unix_nano": e.time, "attributes": attributes(e.attributes)}
                        for e in s.events
                    ],
                    "links": [
                        {
                            "trace_id": trace_id(l.span_context.trace_id),
                            "span_id": f"{l.span_context.span_id:016x}",
                            "attributes": attributes(l.attributes),
                        }
                        for l in s.links
                    ],
                    "scope": group.scope.name,
                }
                lines.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
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
