"""The NeMo Lens custom-exporter page's `MyBackendExporter`, unchanged, as a sandboxed Lens
exporter: only the registration line (the last one) and the client differ from the page.

The stand-in client appends one JSON line per `send` to the file named by the `path` setting
(in a pre-opened directory), or to stdout.
"""

import json
import sys

import lens_exporter_sdk
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult


class Client:
    """Stands in for a vendor's client library."""

    def __init__(self, settings):
        path = settings.get("path")
        self._out = open(path, "a", encoding="utf-8") if path else sys.stdout

    def send(self, name, trace_id, attributes):
        line = {"name": name, "trace_id": f"{trace_id:032x}", "attributes": attributes}
        self._out.write(json.dumps(line, default=list) + "\n")
        self._out.flush()

    def close(self):
        if self._out is not sys.stdout:
            self._out.close()


# From the page, as it is.
class MyBackendExporter(SpanExporter):
    def __init__(self, client):
        self._client = client

    def export(self, spans) -> SpanExportResult:
        try:
            for span in spans:
                self._client.send(
                    name=span.name,
                    trace_id=span.context.trace_id,
                    attributes=dict(span.attributes),
                )
            return SpanExportResult.SUCCESS
        except Exception:
            return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self._client.close()

    def force_flush(self, timeout_millis=30000) -> bool:
        return True


SpanExporter = lens_exporter_sdk.span_exporter(lambda settings: MyBackendExporter(Client(settings)))
