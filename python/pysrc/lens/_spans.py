"""``WasmSpanExporter``, ``WasmSpanProcessor`` and ``ProcessingSpanExporter``."""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Status, StatusCode

from lens._keywords import Processing, Sandboxed, expect_signal, kept, mode_of, spec_json
from lens._lens import SpanCore


class WasmSpanExporter(Sandboxed, SpanExporter):
    """A span exporter running a sandboxed WebAssembly component, for the SDK's
    ``BatchSpanProcessor`` (and so for NeMo Lens's ``span_exporter=``).

    {modes}
    A full queue drops spans (``stats()["dropped_queue_full"]``); ``shutdown`` drains within
    its timeout.

    {keywords}

    Raises ``ExporterLoadError`` when the file cannot be loaded, is not a component of the
    right WIT version, fails its pin, imports what is not granted, or when its ``init`` fails:
    the message is the Rust host's.
    """

    def __init__(
        self,
        path: str | PathLike[str],
        *,
        mode: str | None = None,
        blocking: bool = False,
        **keywords: Any,
    ) -> None:
        self._core = SpanCore(spec_json(path, **keywords), mode_of(mode, blocking, "delivered"))

    @classmethod
    def from_config(
        cls,
        path: str | PathLike[str],
        name: str | None = None,
        signal: str = "traces",
        *,
        mode: str | None = None,
        blocking: bool = False,
    ) -> WasmSpanExporter:
        """The ``kind = "wasm"`` entry of a Lens TOML file's ``[[traces.exporters]]``: the one
        named ``name`` (its ``name`` key, else its file's stem), or the only one. Rust and Python
        ranks then share one exporter definition. With ``[reload] watch = true`` in the file, the
        exporter reloads from its entry when the file changes (see ``reload``)."""
        expect_signal(signal, "traces", cls)
        exporter = cls.__new__(cls)
        exporter._core = SpanCore.from_config(str(path), name, mode_of(mode, blocking, "delivered"))
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
        self._core = SpanCore(spec_json(path, **keywords), "hand-off")

    @classmethod
    def from_config(
        cls, path: str | PathLike[str], name: str | None = None, signal: str = "traces"
    ) -> WasmSpanProcessor:
        """As ``WasmSpanExporter.from_config``."""
        expect_signal(signal, "traces", cls)
        processor = cls.__new__(cls)
        processor._core = SpanCore.from_config(str(path), name, "hand-off")
        return processor

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        self._core.on_end(span)


class ProcessingSpanExporter(Processing, SpanExporter):
    """Sandboxed span processors before any span exporter, Python ones included (NeMo Lens's
    OTLP exporter, a vendor's): ``export`` runs the ``processors`` (each a
    ``[[traces.processors]]`` entry as a dict, ``docs/processors.md``) on the batch, in order,
    the GIL released while they run, then hands ``exporter`` what is left, the edited spans
    as new ``ReadableSpan``s (the others unchanged). A processor that faults passes the batch
    on unprocessed or drops it, as its ``on_fault`` says; nothing raises into the SDK's thread
    from a guest. Use it where a ``SpanExporter`` goes (NeMo Lens's ``span_exporter=``)::

        exporter = lens.ProcessingSpanExporter(
            OTLPSpanExporter(),
            processors=[{"path": "rust-redact.wasm", "on_fault": "drop"}],
        )

    ``stats()``: spans ``received``, passed on (``exported``), ``dropped_processor`` and
    ``processor_faults``, both by processor in ``processors``.
    """

    _signal = "traces"

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Runs the processors, then exports what is left (``SUCCESS`` when nothing is)."""
        spans = list(spans)
        out = kept(spans, self._core.process(spans), lambda s, fate: _edited(s, *fate))
        if not out:
            return SpanExportResult.SUCCESS
        return self._exporter.export(out)


def _edited(span: ReadableSpan, name: str, attributes: dict, status: tuple[str, str]):
    """``span`` with the name, attributes and status a processor gave it."""
    code, description = status
    return ReadableSpan(
        name=name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attributes,
        events=span.events,
        links=span.links,
        kind=span.kind,
        status=Status(StatusCode[code.upper()], description or None),
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )
