"""``WasmMetricExporter``, ``ProcessingMetricExporter``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
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

from lens._keywords import Processing, Sandboxed, expect_signal, kept, mode_of, spec_json
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
    it full is dropped and counted. The default ``mode`` is ``"hand-off"`` because the SDK's
    reader does call the exporter's ``force_flush`` when the meter provider flushes (so
    ``force_flush()`` means delivered here too); ``mode="delivered"`` makes ``export`` itself
    wait, ``"blocking"`` (or ``blocking=True``) waits for the guest without Lens's queue and
    returns its answer. Data points are counted as spans are.

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
        self._start(MetricCore(spec_json(path, **keywords), mode_of(mode, blocking, "hand-off")))

    @classmethod
    def from_config(
        cls,
        path: str | PathLike[str],
        name: str | None = None,
        signal: str = "metrics",
        *,
        mode: str | None = None,
        blocking: bool = False,
    ) -> WasmMetricExporter:
        """The ``kind = "wasm"`` entry of a Lens TOML file's ``[[metrics.exporters]]`` named
        ``name``, or the only one; ``[reload] watch = true`` there reloads it when the file
        changes (see ``reload``)."""
        expect_signal(signal, "metrics", cls)
        exporter = cls.__new__(cls)
        core = MetricCore.from_config(str(path), name, mode_of(mode, blocking, "hand-off"))
        exporter._start(core)
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


class ProcessingMetricExporter(Processing, MetricExporter):
    """Sandboxed metric processors before any metric exporter, Python ones included (NeMo
    Lens's OTLP exporter, a vendor's): ``export`` runs the ``processors`` (each a
    ``[[metrics.processors]]`` entry as a dict, ``docs/processors.md``) on the collection, in
    order, the GIL released while they run, then hands ``exporter`` what is left: the metrics
    dropped gone (with their data points), the edited ones as new ``Metric``s with their new
    name and each data point's new attributes (values, times and exemplars as they were), the
    others unchanged. A processor that faults passes the collection on unprocessed or drops it,
    as its ``on_fault`` says; nothing raises into the reader's thread from a guest. The reader
    aggregates as ``exporter`` prefers::

        exporter = lens.ProcessingMetricExporter(
            OTLPMetricExporter(),
            processors=[{"path": "rust-filter.wasm", "settings": {"names": "train.grad_norm"}}],
        )
        reader = PeriodicExportingMetricReader(exporter)

    ``stats()``: data points ``received``, passed on (``exported``), ``dropped_processor`` and
    ``processor_faults``, both by processor in ``processors``.
    """

    _signal = "metrics"

    def __init__(
        self,
        exporter: MetricExporter,
        processors: Sequence[Mapping[str, Any]],
        *,
        name: str | None = None,
    ) -> None:
        Processing.__init__(self, exporter, processors, name=name)
        MetricExporter.__init__(
            self,
            preferred_temporality=getattr(exporter, "_preferred_temporality", None),
            preferred_aggregation=getattr(exporter, "_preferred_aggregation", None),
        )

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        """Runs the processors, then exports what is left (``SUCCESS`` when nothing is)."""
        fates = iter(self._core.process_metrics(metrics_data))
        resource_metrics = []
        for rm in metrics_data.resource_metrics:
            scopes = []
            for sm in rm.scope_metrics:
                metrics = list(sm.metrics)
                left = kept(metrics, [next(fates) for _ in metrics], _edited)
                if left:
                    scopes.append(replace(sm, metrics=left))
            if scopes:
                resource_metrics.append(replace(rm, scope_metrics=scopes))
        if not resource_metrics:
            return MetricExportResult.SUCCESS
        left = MetricsData(resource_metrics=resource_metrics)
        return self._exporter.export(left, timeout_millis=timeout_millis, **kwargs)

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return self._exporter.force_flush(timeout_millis=timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Shuts the processors, then the exporter, down."""
        self._core.shutdown()
        self._exporter.shutdown(timeout_millis=timeout_millis, **kwargs)


def _edited(metric: Any, fate: tuple[str, list[dict[str, Any]]]) -> Any:
    """``metric`` with the name and each data point's attributes a processor gave it."""
    name, attributes = fate
    data = metric.data
    points = list(data.data_points)
    if len(attributes) == len(points):
        points = [replace(p, attributes=a) for p, a in zip(points, attributes, strict=True)]
    return replace(metric, name=name, data=replace(data, data_points=points))
