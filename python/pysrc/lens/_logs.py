"""``WasmLogExporter``."""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import Any

try:  # opentelemetry-sdk 1.39+
    from opentelemetry.sdk._logs.export import LogRecordExporter as _LogExporterBase
    from opentelemetry.sdk._logs.export import LogRecordExportResult as LogExportResult
except ImportError:  # pragma: no cover - older SDKs
    from opentelemetry.sdk._logs.export import LogExporter as _LogExporterBase
    from opentelemetry.sdk._logs.export import LogExportResult

from lens._keywords import Sandboxed, expect_signal, spec_json
from lens._lens import LogCore


class WasmLogExporter(Sandboxed, _LogExporterBase):
    """A log record exporter running a sandboxed WebAssembly component (``log-exporter``),
    for the SDK's ``BatchLogRecordProcessor`` (NeMo Lens's logger provider:
    ``opentelemetry._logs.get_logger_provider().add_log_record_processor(...)`` after
    ``setup_telemetry``). As ``WasmSpanExporter``: by default the records, read under the GIL,
    are handed to Lens's own queue and export thread; ``blocking=True`` waits for the guest.

    {keywords}
    """

    def __init__(
        self, path: str | PathLike[str], *, blocking: bool = False, **keywords: Any
    ) -> None:
        self._core = LogCore(spec_json(path, **keywords), blocking=blocking)

    @classmethod
    def from_config(
        cls,
        path: str | PathLike[str],
        name: str | None = None,
        signal: str = "logs",
        *,
        blocking: bool = False,
    ) -> WasmLogExporter:
        """The ``kind = "wasm"`` entry of a Lens TOML file's ``[[logs.exporters]]`` named
        ``name``, or the only one; ``[reload] watch = true`` there reloads it when the file
        changes (see ``reload``)."""
        expect_signal(signal, "logs", cls)
        exporter = cls.__new__(cls)
        exporter._core = LogCore.from_config(str(path), name, blocking=blocking)
        return exporter

    def export(self, batch: Sequence[Any]) -> LogExportResult:
        """Hands the records off (or, blocking, exports them); ``FAILURE`` (never an exception)
        when they cannot be read or the guest fails or faults."""
        if self._core.export(batch) is None:
            return LogExportResult.SUCCESS
        return LogExportResult.FAILURE
