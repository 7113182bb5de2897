"""``WasmSpanExporter`` and ``WasmSpanProcessor``."""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from lens._keywords import Sandboxed, expect_signal, spec_json
from lens._lens import SpanCore


class WasmSpanExporter(Sandboxed, SpanExporter):
    """A span exporter running a sandboxed WebAssembly component, for the SDK's
    ``BatchSpanProcessor`` (and so for NeMo Lens's ``span_exporter=``).

    By default ``export`` reads the batch under the GIL into Lens's own span data, hands it to
    Lens's queue and export thread (the batch machinery of a Rust rank, with its accounting)
    and returns ``SUCCESS`` at once: the guest runs without the GIL, while the SDK's processor
    collects the next batch. A full queue drops spans (``stats()["dropped_queue_full"]``).
    ``force_flush`` waits for what was handed off; ``shutdown`` drains within its timeout.
    With ``blocking=True``, ``export`` waits for the guest (the GIL released) and returns its
    answer: ``FAILURE``, never an exception, when it fails or faults.

    {keywords}

    Raises ``ExporterLoadError`` when the file cannot be loaded, is not a component of the
    right WIT version, fails its pin, imports what is not granted, or when its ``init`` fails:
    the message is the Rust host's.
    """

    def __init__(
        self, path: str | PathLike[str], *, blocking: bool = False, **keywords: Any
    ) -> None:
        self._core = SpanCore(spec_json(path, **keywords), blocking=blocking)

    @classmethod
    def from_config(
        cls,
        path: str | PathLike[str],
        name: str | None = None,
        signal: str = "traces",
        *,
        blocking: bool = False,
    ) -> WasmSpanExporter:
        """The ``kind = "wasm"`` entry of a Lens TOML file's ``[[traces.exporters]]``: the one
        named ``name`` (its ``name`` key, else its file's stem), or the only one. Rust and Python
        ranks then share one exporter definition. With ``[reload] watch = true`` in the file, the
        exporter reloads from its entry when the file changes (see ``reload``)."""
        expect_signal(signal, "traces", cls)
        exporter = cls.__new__(cls)
        exporter._core = SpanCore.from_config(str(path), name, blocking=blocking)
        return exporter

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Hands the batch off (or, blocking, exports it); ``FAILURE`` (never an exception) when
        the spans cannot be read or the guest fails or faults."""
        if self._core.export(spans) is None:
            return SpanExportResult.SUCCESS
        return SpanExportResult.FAILURE


class WasmSpanProcessor(Sandboxed, SpanProcessor):
    """A span processor feeding a sandboxed WebAssembly component through Lens's own batch
    processor: each ended span is read in ``on_end``, on the thread that ended it and already
    holds the GIL, and queued; batching, the guest's calls and their accounting need no GIL
    afterwards. Add it where a provider takes processors (NeMo Lens's, after
    ``setup_telemetry``: ``trace.get_tracer_provider().add_span_processor(...)``). Batches are
    exported when ``max_export_batch_size`` spans are queued or every ``scheduled_delay_ms``
    (the ``[batch]`` table's, default 5000).

    {keywords}
    """

    def __init__(self, path: str | PathLike[str], **keywords: Any) -> None:
        self._core = SpanCore(spec_json(path, **keywords), blocking=False)

    @classmethod
    def from_config(
        cls, path: str | PathLike[str], name: str | None = None, signal: str = "traces"
    ) -> WasmSpanProcessor:
        """As ``WasmSpanExporter.from_config``."""
        expect_signal(signal, "traces", cls)
        processor = cls.__new__(cls)
        processor._core = SpanCore.from_config(str(path), name)
        return processor

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        self._core.on_end(span)
