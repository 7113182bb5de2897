"""The exceptions an exporter raises from `export` to say what the host does with the batch."""


class RetryableExportError(Exception):
    """Raise from `export` for a transient failure (the backend is down or throttling): the
    host retries the same batch, after `delay_ms` if given, within the export deadline."""

    def __init__(self, message, delay_ms=None):
        super().__init__(message)
        self.delay_ms = delay_ms


class RejectedExportError(Exception):
    """Raise from `export` when the backend refused the batch for good (a 4xx, a bad key): the
    host drops it, counted as failed, and logs the message as it is."""
