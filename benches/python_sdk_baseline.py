"""The seed's own stack: the Python OpenTelemetry SDK with a BatchSpanProcessor and a Python
exporter writing JSON lines. Prints one JSON object: spans, seconds, spans_per_second.

usage: python3 python_sdk_baseline.py N OUT_FILE
"""

import json
import sys
import time

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

# One encoder for every line, as in the Python guest (`json.dumps` with options builds one per
# call).
ENCODE = json.JSONEncoder(separators=(",", ":")).encode


class JsonLinesExporter(SpanExporter):
    def __init__(self, path):
        self.out = open(path, "w", encoding="utf-8")

    def export(self, spans):
        lines = []
        for s in spans:
            cx = s.context
            lines.append(
                ENCODE(
                    {
                        "name": s.name,
                        "trace_id": f"{cx.trace_id:032x}",
                        "span_id": f"{cx.span_id:016x}",
                        "parent_span_id": f"{s.parent.span_id if s.parent else 0:016x}",
                        "kind": s.kind.name.lower(),
                        "start_unix_nano": s.start_time,
                        "end_unix_nano": s.end_time,
                        "duration_ns": s.end_time - s.start_time,
                        "status": {"code": s.status.status_code.name.lower()},
                        "attributes": dict(s.attributes),
                        "events": [],
                        "links": [],
                        "scope": s.instrumentation_scope.name,
                    }
                )
            )
        self.out.write("\n".join(lines) + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self):
        self.out.close()

    def force_flush(self, timeout_millis=30000):
        self.out.flush()
        return True


def main():
    n, path = int(sys.argv[1]), sys.argv[2]
    provider = TracerProvider()
    provider.add_span_processor(
        BatchSpanProcessor(JsonLinesExporter(path), max_queue_size=n, max_export_batch_size=512)
    )
    tracer = provider.get_tracer("bench")
    started = time.perf_counter()
    for i in range(n):
        with tracer.start_as_current_span("step") as s:
            s.set_attribute("step", i)
            s.set_attribute("loss", 1.0 / (1 + i))
            s.set_attribute("phase", "train")
            s.set_attribute("ok", True)
    provider.force_flush()
    seconds = time.perf_counter() - started
    provider.shutdown()
    print(json.dumps({"spans": n, "seconds": seconds, "spans_per_second": n / seconds}))


if __name__ == "__main__":
    main()
