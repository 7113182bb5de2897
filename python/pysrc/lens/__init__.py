"""Lens's sandboxed WebAssembly span exporters for Python ranks.

``WasmSpanExporter`` is an ``opentelemetry.sdk`` ``SpanExporter`` running a ``.wasm`` component
(any language, the WIT package in Lens's ``wit/``) in Lens's sandbox: no files, network or
environment unless granted, bounded memory and time; a fault in it never raises into the SDK's
thread, and the Python process keeps running. It plugs into NeMo Lens as it is::

    from nemo.lens import setup_telemetry
    import lens

    vendor = lens.WasmSpanExporter("vendor.wasm", allowed_hosts=["ingest.example.com:443"])
    handle = setup_telemetry(config, rank=rank, world_size=world, span_exporter=vendor)

Spans are read once, under the GIL; the GIL is released while the batch is encoded and the
guest runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from os import PathLike
from typing import Any

from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from lens._lens import ExporterLoadError, WasmExporterCore, __version__, compile

__all__ = ["ExporterLoadError", "WasmSpanExporter", "__version__", "compile"]


class WasmSpanExporter(SpanExporter):
    """A span exporter running a sandboxed WebAssembly component.

    Every keyword has the meaning and default of the same key in a ``[[traces.exporters]]``
    ``kind = "wasm"`` entry of Lens's TOML (``docs/configuration.md``):

    - ``settings``: ``{name: value}`` handed to the guest's ``init`` (strings);
    - ``preopens``: ``[{"host": "/data/out", "guest": "/out", "read_only": False}]``;
    - ``env``: ``{"API_KEY": "value"}`` or ``{"API_KEY": {"from_host": "API_KEY"}}``;
    - ``allowed_hosts``: ``["ingest.example.com:443"]`` for outgoing HTTP;
    - ``sha256``: the file's expected digest (hex);
    - ``memory_limit_mib``, ``call_timeout_ms``, ``fuel_per_call``: the sandbox's bounds;
    - ``init_timeout_ms``: the deadline of the guest's ``init`` (default 5000);
    - ``compile_memory_mib``, ``compile_timeout_ms``: the bounds of compiling the component
      (default 2048 MiB, 300000 ms), which happens in a child of this interpreter;
    - ``export_timeout_ms``: one export's budget, the guest's retries included (default 30000,
      the batch's ``export_timeout_ms``); a guest's retry hint never shortens the host's
      backoff;
    - ``max_concurrent_exports``: instances run side by side (the SDK's processor calls one
      batch at a time; more help when several processors share the exporter);
    - ``forward_stdio``: the guest's stdout/stderr to this process's;
    - ``name``: the name in messages and statistics (default: the file's stem).

    Raises ``ExporterLoadError`` when the file cannot be loaded, is not a component of the
    right WIT version, fails its pin, imports what is not granted, or when its ``init`` fails:
    the message is the Rust host's.
    """

    def __init__(
        self,
        path: str | PathLike[str],
        *,
        settings: Mapping[str, str] | None = None,
        preopens: Sequence[Mapping[str, Any]] | None = None,
        env: Mapping[str, Any] | None = None,
        allowed_hosts: Sequence[str] | None = None,
        sha256: str | None = None,
        memory_limit_mib: int | None = None,
        call_timeout_ms: int | None = None,
        fuel_per_call: int | None = None,
        init_timeout_ms: int | None = None,
        compile_memory_mib: int | None = None,
        compile_timeout_ms: int | None = None,
        export_timeout_ms: int | None = None,
        max_concurrent_exports: int = 1,
        forward_stdio: bool = False,
        name: str | None = None,
    ) -> None:
        spec: dict[str, Any] = {"path": str(path), "forward_stdio": bool(forward_stdio)}
        for key, value in (
            ("settings", _strings(settings, "settings")),
            ("preopens", list(preopens) if preopens is not None else None),
            ("env", dict(env) if env is not None else None),
            ("allowed_hosts", list(allowed_hosts) if allowed_hosts is not None else None),
            ("sha256", sha256),
            ("memory_limit_mib", memory_limit_mib),
            ("call_timeout_ms", call_timeout_ms),
            ("fuel_per_call", fuel_per_call),
            ("init_timeout_ms", init_timeout_ms),
            ("compile_memory_mib", compile_memory_mib),
            ("compile_timeout_ms", compile_timeout_ms),
            ("name", name),
        ):
            if value is not None:
                spec[key] = value
        spec["batch"] = {"max_concurrent_exports": max_concurrent_exports}
        if export_timeout_ms is not None:
            spec["batch"]["export_timeout_ms"] = export_timeout_ms
        self._core = WasmExporterCore(json.dumps(spec))

    @classmethod
    def from_config(cls, path: str | PathLike[str], name: str | None = None) -> WasmSpanExporter:
        """The ``kind = "wasm"`` entry of a Lens TOML file's ``[[traces.exporters]]``: the one
        named ``name`` (its ``name`` key, else its file's stem), or the only one. Rust and Python
        ranks then share one exporter definition."""
        exporter = cls.__new__(cls)
        exporter._core = WasmExporterCore.from_config(str(path), name)
        return exporter

    @property
    def name(self) -> str:
        """The exporter's name in messages and statistics."""
        return self._core.name

    @property
    def encoding(self) -> str | None:
        """The batch encoding the guest asked for: ``typed``, ``otlp-protobuf`` or
        ``otlp-json``."""
        return self._core.encoding

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        """Exports a batch; ``FAILURE`` (never an exception) when the guest fails or faults."""
        error = self._core.export(spans)
        if error is None:
            return SpanExportResult.SUCCESS
        return SpanExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Asks the guest to flush what it buffers; ``False`` when that did not happen within
        ``timeout_millis`` (an export in progress, retries included, holds its instance)."""
        return self._core.force_flush(int(timeout_millis)) is None

    def shutdown(self, timeout_millis: int = 30000) -> None:
        """Shuts the guest down within ``timeout_millis`` (an export waiting to retry gives
        up); later exports fail and count as dropped. Idempotent."""
        self._core.shutdown(int(timeout_millis))

    def stats(self) -> dict[str, Any]:
        """Counters: spans received, exported and dropped (failed exports, after shutdown,
        rejected by the guest), batches, retries and batches given up after them, guest errors,
        traps by kind, restarts, export latency p50/p99 in ms and the peak memory of an
        instance."""
        return json.loads(self._core.stats_json())

    def __repr__(self) -> str:
        return f"WasmSpanExporter(name={self.name!r})"


def _strings(values: Mapping[str, Any] | None, what: str) -> dict[str, str] | None:
    if values is None:
        return None
    out = {}
    for k, v in values.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise TypeError(f"{what}: keys and values are strings (got {k!r}: {v!r})")
        out[k] = v
    return out
