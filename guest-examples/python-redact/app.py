"""A processor in Python for spans, metrics and log records: strips prompts and completions
before any exporter sees them, as `rust-redact` does. Every attribute named in the `keys`
setting (comma-separated; default: the OpenTelemetry GenAI attributes carrying user content) is
removed, and the item gets `lens.redacted = true` (a metric: on each of its data points, when
any of them holds such a key). Items without one are not named in the answer.

    [[traces.processors]]
    kind = "wasm"
    path = "guest-examples/dist/python-redact.wasm"
    on_fault = "drop"
"""

import lens_exporter_sdk

DEFAULT_KEYS = (
    "gen_ai.prompt,gen_ai.completion,gen_ai.input.messages,"
    "gen_ai.output.messages,gen_ai.system_instructions"
)


class Redact:
    def __init__(self, settings):
        self.keys = {k.strip() for k in settings.get("keys", DEFAULT_KEYS).split(",") if k.strip()}
        if not self.keys:
            raise ValueError("`keys` names no attribute")

    def redact(self, edits, i, attribute_keys):
        found = self.keys.intersection(attribute_keys)
        for key in sorted(found):
            edits.remove_attribute(i, key)
        if found:
            edits.set_attribute(i, "lens.redacted", True)

    def process(self, spans, edits):
        for i, span in enumerate(spans):
            self.redact(edits, i, span.attributes or ())


class RedactMetrics(Redact):
    def process(self, metrics, edits):
        for i, metric in enumerate(metrics):
            keys = {k for point in metric.data.data_points for k in (point.attributes or ())}
            self.redact(edits, i, keys)


class RedactLogs(Redact):
    def process(self, records, edits):
        for i, record in enumerate(records):
            self.redact(edits, i, record.log_record.attributes or ())


SpanProcessor = lens_exporter_sdk.span_processor(Redact)
MetricProcessor = lens_exporter_sdk.metric_processor(RedactMetrics)
LogProcessor = lens_exporter_sdk.log_processor(RedactLogs)
