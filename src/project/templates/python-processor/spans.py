

class SpanRules(Rules):
    """Spans (`ReadableSpan`s), by name."""

    def process(self, spans, edits):
        for i, span in enumerate(spans):
            self.apply(edits, i, span.name, span.attributes or ())
