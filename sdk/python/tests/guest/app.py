"""The Python SDK's test guest: an OpenTelemetry SDK `SpanExporter` recording every field of
every `ReadableSpan` it receives, one JSON line each, for `tests/all/guests/python_sdk.rs` to
compare with the host's in-memory exporter. Settings: `path`; `fail` = `failure`, `raise` or
`retry` makes every export answer that way."""

import json

import lens_exporter_sdk
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult


def plain(attrs):
    return {k: list(v) if isinstance(v, tuple) else v for k, v in (attrs or {}).items()}


def context(cx):
    return {
        "trace_id": f"{cx.trace_id:032x}",
        "span_id": f"{cx.span_id:016x}",
        "trace_flags": int(cx.trace_flags),
        "trace_state": cx.trace_state.to_header(),
        "is_remote": cx.is_remote,
    }


def record(s):
    scope = s.instrumentation_scope
    return {
        "name": s.name,
        "context": context(s.context),
        "parent": context(s.parent) if s.parent else None,
        "kind": s.kind.name,
        "start_time": s.start_time,
        "end_time": s.end_time,
        "attributes": plain(s.attributes),
        "events": [
            {"name": e.name, "timestamp": e.timestamp, "attributes": plain(e.attributes)}
            for e in s.events
        ],
        "links": [
            {"context": context(lk.context), "attributes": plain(lk.attributes)} for lk in s.links
        ],
        "status": {"code": s.status.status_code.name, "description": s.status.description},
        "resource": plain(s.resource.attributes),
        "scope": {
            "name": scope.name,
            "version": scope.version,
            "attributes": plain(scope.attributes),
        },
    }


class Recorder(SpanExporter):
    def __init__(self, settings):
        self.out = open(settings["path"], "a", encoding="utf-8")
        self.fail = settings.get("fail")
        self.rank = settings.resource.attributes.get("dl.rank")

    def export(self, spans):
        if self.fail == "failure":
            return SpanExportResult.FAILURE
        if self.fail == "raise":
            raise ConnectionError("backend unreachable")
        if self.fail == "retry":
            raise lens_exporter_sdk.RetryableExportError("backend busy", delay_ms=10)
        for s in spans:
            self.out.write(json.dumps(dict(record(s), settings_rank=self.rank)) + "\n")
        self.out.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self):
        self.out.close()


SpanExporter = lens_exporter_sdk.span_exporter(Recorder)
