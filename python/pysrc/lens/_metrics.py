"""``WasmMetricExporter``."""

from __future__ import annotations

from os import PathLike
from typing import Any

from opentelemetry.sdk.metrics import (
    Counter,
    Histogram,
    ObservableCounter,
    ObservableGauge,
    ObservableUpDownCounter,
    UpDownCounter,
)
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    MetricExporter,
    MetricExportResult,
    MetricsData,
)

from lens._keywords import Sandboxed, expect_signal, spec_json
from lens._lens import MetricCore

_CUMULATIVE = AggregationTemporality.CUMULATIVE
_DELTA = AggregationTemporality.DELTA

#: The temporality of each instrument for the guest's preference, as the Rust SDK and the
#: OTLP exporters' ``OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE`` choose it.
_TEMPORALITIES = {
    "cumulative": dict.fromkeys(
        (
            Counter,
            UpDownCounter,
            Histogram,
            ObservableCounter,
            ObservableUpDownCounter,
            ObservableGauge,
        ),
        _CUMULATIVE,
    ),
    "delta": {
        Counter: _DELTA,
        UpDownCounter: _CUMULATIVE,
        Histogram: _DELTA,
        ObservableCounter: _DELTA,
        ObservableUpDownCounter: _CUMULATIVE,
        ObservableGauge: _CUMULATIVE,
    },
    "low_memory": {
        Counter: _DELTA,
        UpDownCounter: _CUMULATIVE,
        Histogram: _DELTA,
        ObservableCounter: _CUMULATIVE,
        ObservableUpDownCounter: _CUMULATIVE,
        ObservableGauge: _CUMULATIVE,
    },
}


class WasmMetricExporter(Sandboxed, MetricExporter):
    """A metric exporter running a sandboxed WebAssembly component (``metric-exporter``), for
    ``PeriodicExportingMetricReader`` (and so for NeMo Lens's ``metric_reader=``). The reader
    aggregates with the temporality the guest asked for in ``init`` (``temporality``). Each
    collection is read under the GIL into an OTLP request and, by default, handed to Lens's
    export thread: neither the reader's thread nor the application's (when it flushes or shuts
    the meter provider down) waits for the guest. The queue holds 4 collections; one that finds
    it full is dropped and counted. ``blocking=True`` waits for the guest (the GIL released) and
    returns its answer. Data points are counted as spans are.

    {keywords}
    """

    def __init__(
        self, path: str | PathLike[str], *, blocking: bool = False, **keywords: Any
    ) -> None:
        self._start(MetricCore(spec_json(path, **keywords), blocking=blocking))

    @classmethod
    def from_config(
        cls,
        path: str | PathLike[str],
        name: str | None = None,
        signal: str = "metrics",
        *,
        blocking: bool = False,
    ) -> WasmMetricExporter:
        """The ``kind = "wasm"`` entry of a Lens TOML file's ``[[metrics.exporters]]`` named
        ``name``, or the only one; ``[reload] watch = true`` there reloads it when the file
        changes (see ``reload``)."""
        expect_signal(signal, "metrics", cls)
        exporter = cls.__new__(cls)
        exporter._start(MetricCore.from_config(str(path), name, blocking=blocking))
        return exporter

    def _start(self, core: Any) -> None:
        self._core = core
        MetricExporter.__init__(self, preferred_temporality=_TEMPORALITIES[core.temporality])

    @property
    def temporality(self) -> str:
        """What the guest asked for: ``cumulative``, ``delta`` or ``low_memory``."""
        return self._core.temporality

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **_: Any
    ) -> MetricExportResult:
        """Hands the collection off (or, blocking, exports it); ``FAILURE`` (never an exception)
        when it cannot be read or the guest fails or faults."""
        if self._core.export(metrics_data) is None:
            return MetricExportResult.SUCCESS
        return MetricExportResult.FAILURE
