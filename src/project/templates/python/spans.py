

class SpanLines(OtelSpanExporter):
    """One line per span on stdout (setting `prefix`, default `span`)."""

    def __init__(self, settings):
        self.prefix = settings.get("prefix", "span")
        self.rank = settings.resource.attributes.get("dl.rank", 0)

    def export(self, spans):
        # One write per batch: every write is a call out of the sandbox.
        sys.stdout.write(
            "".join(
                f"{self.prefix} rank={self.rank} {s.name} "
                f"{(s.end_time - s.start_time) / 1e6:.3f}ms "
                f"trace={s.context.trace_id:032x} {dict(s.attributes or {})}\n"
                for s in spans
            )
        )
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis=30_000):
        sys.stdout.flush()
        return True

    def shutdown(self):
        sys.stdout.flush()
