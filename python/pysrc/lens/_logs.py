"""``WasmLogExporter``, ``ProcessingLogExporter``."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace
from os import PathLike
from typing import Any

try:  # opentelemetry-sdk 1.39+
    from opentelemetry.sdk._logs.export import LogRecordExporter as _LogExporterBase
    from opentelemetry.sdk._logs.export import LogRecordExportResult as LogExportResult
except ImportError:  # pragma: no cover - older SDKs
    from opentelemetry.sdk._logs.export import LogExporter as _LogExporterBase
    from opentelemetry.sdk._logs.export import LogExportResult

from lens._keywords import Processing, Sandboxed, expect_signal, kept, mode_of, spec_json
from lens._lens import LogCore


class WasmLogExporter(Sandboxed, _LogExporterBase):
    """A log record exporter running a sandboxed WebAssembly component (``log-exporter``),
    for the SDK's ``BatchLogRecordProcessor`` (NeMo Lens's logger provider:
    ``opentelemetry._logs.get_logger_provider().add_log_record_processor(...)`` after
    ``setup_telemetry``).

    {modes}

    {keywords}
    """

    def __init__(
        self,
        path: str | PathLike[str],
        *,
        mode: str | None = None,
        blocking: bool = False,
        **keywords: Any,
    ) -> None:
        self._core = LogCore(spec_json(path, **keywords), mode_of(mode, blocking, "delivered"))

    @classmethod
    def from_config(
        cls,
        path: str | PathLike[str],
        name: str | None = None,
        signal: str = "logs",
        *,
        mode: str | None = None,
        blocking: bool = False,
    ) -> WasmLogExporter:
        """The ``kind = "wasm"`` entry of a Lens TOML file's ``[[logs.exporters]]`` named
        ``name``, or the only one; ``[reload] watch = true`` there reloads it when the file
        changes (see ``reload``)."""
        expect_signal(signal, "logs", cls)
        exporter = cls.__new__(cls)
        exporter._core = LogCore.from_config(str(path), name, mode_of(mode, blocking, "delivered"))
        return exporter

    def export(self, batch: Sequence[Any]) -> LogExportResult:
        """Hands the records off (or, blocking, exports them); ``FAILURE`` (never an exception)
        when they cannot be read or the guest fails or faults."""
        if self._core.export(batch) is None:
            return LogExportResult.SUCCESS
        return LogExportResult.FAILURE


class ProcessingLogExporter(Processing, _LogExporterBase):
    """Sandboxed log processors before any log record exporter, Python ones included (NeMo
    Lens's OTLP exporter, a vendor's): ``export`` runs the ``processors`` (each a
    ``[[logs.processors]]`` entry as a dict, ``docs/processors.md``) on the batch, in order,
    the GIL released while they run, then hands ``exporter`` what is left: the records dropped
    gone, the edited ones as new records with their new event name, body and attributes
    (times, severity and trace context as they were), the others unchanged. A processor that
    faults passes the batch on unprocessed or drops it, as its ``on_fault`` says; nothing
    raises into the SDK's thread from a guest::

        exporter = lens.ProcessingLogExporter(
            OTLPLogExporter(),
            processors=[{"path": "rust-redact.wasm", "settings": {"keys": "user.email"}}],
        )
        get_logger_provider().add_log_record_processor(BatchLogRecordProcessor(exporter))

    ``stats()``: records ``received``, passed on (``exported``), ``dropped_processor`` and
    ``processor_faults``, both by processor in ``processors``.
    """

    _signal = "logs"

    def export(self, batch: Sequence[Any]) -> LogExportResult:
        """Runs the processors, then exports what is left (``SUCCESS`` when nothing is)."""
        batch = list(batch)
        out = kept(batch, self._core.process_logs(batch), _edited)
        if not out:
            return LogExportResult.SUCCESS
        return self._exporter.export(out)


def _edited(record: Any, changes: dict[str, Any]) -> Any:
    """``record`` (a ``ReadableLogRecord``) with what a processor changed: a copy of its
    ``LogRecord``, the original left as it was."""
    log_record = copy.copy(record.log_record)
    for field in ("event_name", "body", "attributes"):
        if field in changes:
            setattr(log_record, field, changes[field])
    return replace(record, log_record=log_record)
