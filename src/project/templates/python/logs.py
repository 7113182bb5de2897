

class LogLines(OtelLogExporter):
    """One line per log record on stdout (setting `prefix`, default `log`)."""

    def __init__(self, settings):
        self.prefix = settings.get("prefix", "log")

    def export(self, batch):
        sys.stdout.write(
            "".join(
                f"{self.prefix} {r.log_record.severity_text or '-'} {r.log_record.body!r} "
                f"{dict(r.log_record.attributes or {})}\n"
                for r in batch
            )
        )
        return LogRecordExportResult.SUCCESS

    def force_flush(self, timeout_millis=30_000):
        sys.stdout.flush()
        return True

    def shutdown(self):
        sys.stdout.flush()
