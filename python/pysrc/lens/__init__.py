"""Lens's sandboxed WebAssembly exporters for Python ranks: spans, metrics and log records.

Each runs a ``.wasm`` component (any language, the WIT package in Lens's ``wit/``) in Lens's
sandbox: no files, network or environment unless granted, bounded memory and time; a fault in
it never raises into the SDK's thread, and the Python process keeps running. They plug into
NeMo Lens as it is::

    from nemo.lens import setup_telemetry
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    import lens

    vendor = lens.WasmSpanExporter("vendor.wasm", allowed_hosts=["ingest.example.com:443"])
    reader = PeriodicExportingMetricReader(lens.WasmMetricExporter("vendor.wasm"))
    handle = setup_telemetry(config, rank=rank, world_size=world,
                             span_exporter=vendor, metric_reader=reader)

- ``WasmSpanExporter``: a ``SpanExporter``; ``export`` hands the batch to Lens's own queue and
  export thread (``blocking=True``: waits for the guest);
- ``WasmSpanProcessor``: a ``SpanProcessor`` doing the same span by span, without the SDK's
  batch processor;
- ``ProcessingSpanExporter``: sandboxed span processors (``[[traces.processors]]``) before any
  ``SpanExporter``, a Python one included (the ``processors`` keyword puts them before the
  sandboxed exporters);
- ``WasmMetricExporter``: a ``MetricExporter`` for ``PeriodicExportingMetricReader``, with the
  guest's preferred temporality;
- ``ProcessingMetricExporter``: sandboxed metric processors (``[[metrics.processors]]``) before
  any ``MetricExporter``;
- ``WasmLogExporter``: a log record exporter for ``BatchLogRecordProcessor``;
- ``ProcessingLogExporter``: sandboxed log processors (``[[logs.processors]]``) before any log
  record exporter;
- ``from_config(path, name, signal)``: the exporter of a Lens TOML file's wasm entry;
- ``compile(path)``: components compiled into the cache before ranks start;
- ``report(run_dir)``: a run folder drawn as one HTML page (``perfetto=True``: a Perfetto trace).

Items are read once, under the GIL; the GIL is released while they are encoded and the guest
runs. The host's messages go to Python's ``logging``, logger ``lens``: a guest's trap is one
line at ``WARNING`` (its message and innermost frame), its whole backtrace at ``DEBUG``. The
loggers' levels are cached: after changing them, call ``lens.refresh_logging()``.
"""

from __future__ import annotations

from os import PathLike
from typing import Any

from lens._lens import ExporterLoadError, __version__, compile, refresh_logging, report
from lens._logs import ProcessingLogExporter, WasmLogExporter
from lens._metrics import ProcessingMetricExporter, WasmMetricExporter
from lens._spans import ProcessingSpanExporter, WasmSpanExporter, WasmSpanProcessor

__all__ = [
    "ExporterLoadError",
    "ProcessingLogExporter",
    "ProcessingMetricExporter",
    "ProcessingSpanExporter",
    "WasmLogExporter",
    "WasmMetricExporter",
    "WasmSpanExporter",
    "WasmSpanProcessor",
    "__version__",
    "compile",
    "from_config",
    "refresh_logging",
    "report",
]

_BY_SIGNAL = {"traces": WasmSpanExporter, "metrics": WasmMetricExporter, "logs": WasmLogExporter}


def from_config(path: str | PathLike[str], name: str | None = None, signal: str = "traces") -> Any:
    """The exporter of the ``kind = "wasm"`` entry named ``name`` (or the only one) among a
    Lens TOML file's ``[[<signal>.exporters]]``: a ``WasmSpanExporter`` for ``traces``, a
    ``WasmMetricExporter`` for ``metrics``, a ``WasmLogExporter`` for ``logs``."""
    try:
        cls = _BY_SIGNAL[signal]
    except KeyError:
        raise ValueError(f"signal: {signal!r} is not one of traces, metrics, logs") from None
    return cls.from_config(path, name)
