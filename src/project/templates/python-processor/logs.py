

class LogRules(Rules):
    """Log records (`ReadableLogRecord`s), by event name."""

    def process(self, records, edits):
        for i, record in enumerate(records):
            r = record.log_record
            self.apply(edits, i, r.event_name, r.attributes or ())
