"""A span processor in Python: strips prompts and completions from `gen_ai` spans before any
exporter sees them, as `rust-redact` does. Every attribute named in the `keys` setting
(comma-separated; default: the OpenTelemetry GenAI attributes carrying user content) is
removed, and the span gets `lens.redacted = true`. Spans without one are not named in the
answer.

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

    def process(self, spans, edits):
        for i, span in enumerate(spans):
            found = self.keys.intersection(span.attributes or ())
            for key in sorted(found):
                edits.remove_attribute(i, key)
            if found:
                edits.set_attribute(i, "lens.redacted", True)


SpanProcessor = lens_exporter_sdk.span_processor(Redact)
