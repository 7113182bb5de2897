"""Write Lens exporters in Python with the OpenTelemetry Python SDK's own exporter classes.

An exporter written for the SDK (a `SpanExporter`, `MetricExporter` or `LogExporter` subclass)
runs unchanged as a Lens WebAssembly component: this package implements the WIT world
(`lens:exporter@0.4.0`) and hands the exporter what the SDK's exporters receive —
`ReadableSpan`s, `MetricsData`, `ReadableLogRecord`s — built from the host's batches by the real
`opentelemetry-sdk`, bundled into the component by componentize-py.

componentize-py looks in the app module for one class per exported interface, named after it
(`SpanExporter`, `MetricExporter`, `LogExporter`). Registering an exporter is binding that name
to the adapter this package builds around your exporter's factory::

    SpanExporter = lens_exporter_sdk.span_exporter(lambda settings: MyExporter(settings))

The factory receives the exporter's `settings` table (a `dict` of strings; its `resource`
attribute is the rank's OpenTelemetry `Resource`) and is called once per instance, when the host
calls `init`.

A span processor (world `span-processors`) is bound the same way, to `SpanProcessor` (and a
metric or log processor to `MetricProcessor`, `LogProcessor`)::

    SpanProcessor = lens_exporter_sdk.span_processor(lambda settings: MyProcessor(settings))

Results: `SUCCESS` is accepted; `FAILURE`, or an exception, drops the batch (counted, logged by
the host with the message); raise `RetryableExportError` to have the host send the batch again
after a backoff. The host owns retries: never sleep or retry in `export`.
"""

import functools
import json
import traceback

try:
    from componentize_py_types import Err
except ImportError:  # outside a component: the SDK's own tests

    class Err(Exception):
        """componentize-py's error carrier: `raise Err(value)` returns `err(value)`."""

        def __init__(self, value):
            super().__init__(value)
            self.value = value


# `_sandbox` first: the OpenTelemetry SDK imports in `_otlp` need it.
from . import _sandbox  # noqa: F401, I001
from . import _otlp, http
from ._process import Edits
from ._results import RejectedExportError, RetryableExportError

__all__ = [
    "Edits",
    "RejectedExportError",
    "RetryableExportError",
    "Settings",
    "log_exporter",
    "metric_exporter",
    "log_processor",
    "metric_processor",
    "http",
    "otlp_log_exporter",
    "otlp_metric_exporter",
    "otlp_span_exporter",
    "span_exporter",
    "span_processor",
]


class Settings(dict):
    """The exporter's `settings` table, e.g. `{"path": "/out/spans.jsonl"}`; `resource` is the
    rank's `Resource` (`service.name`, `dl.rank`, ...)."""

    def __init__(self, pairs, resource):
        super().__init__(pairs)
        self.resource = resource


def _resource(wit_resource):
    from opentelemetry.sdk.resources import Resource

    def plain(v):
        value = v.value
        return tuple(value) if isinstance(value, list) else value

    attributes = {kv.key: plain(kv.value) for kv in wit_resource.attributes}
    return Resource(attributes, wit_resource.schema_url)


@functools.cache
def _types():
    """Lens's `types` interface, looked up once (every export asks). In a world that imports
    `wasi:http` too, componentize-py names both after their packages (`lens_exporter_types`,
    `wasi_http_types`)."""
    try:
        from wit_world.imports import types
    except ImportError:
        from wit_world.imports import lens_exporter_types as types
    return types


def _why(e):
    return "".join(traceback.format_exception_only(type(e), e)).strip()


class _Adapter:
    """One interface's functions around the user's exporter. componentize-py makes a new
    object of the class for every call, so the exporter and its state live on the class (one
    class per signal, and the host runs one instance per signal)."""

    exporter = None
    state = "new"
    # What a batch of another encoding than the one `init` asked for is refused with.
    unexpected_batch = "the Python SDK reads OTLP/JSON batches"

    def _start(self, factory, settings, resource):
        try:
            type(self).exporter = factory(Settings(settings, _resource(resource)))
        except Exception as e:
            raise Err(f"the exporter's factory failed: {_why(e)}") from e
        type(self).state = "live"

    def _export(self, batch, expected, convert, call, failure_name):
        types = _types()

        if self.state != "live":
            reason = (
                "the exporter is shut down"
                if self.state == "shut"
                else "the exporter was not initialized"
            )
            raise Err(types.ExportError_Rejected(reason))
        if not isinstance(batch, expected):
            raise Err(types.ExportError_Rejected(self.unexpected_batch))
        try:
            result = call(self.exporter, convert(batch.value))
        except RetryableExportError as e:
            raise Err(types.ExportError_Retryable(types.RetryHint(str(e), e.delay_ms))) from e
        except RejectedExportError as e:
            raise Err(types.ExportError_Rejected(str(e))) from e
        except Exception as e:
            raise Err(types.ExportError_Rejected(f"export raised {_why(e)}")) from e
        if result is False or getattr(result, "name", "SUCCESS") != "SUCCESS":
            raise Err(
                types.ExportError_Rejected(
                    f"{type(self.exporter).__name__}.export returned {failure_name}"
                )
            )

    def force_flush(self):
        if self.state != "live":
            raise Err(
                "the exporter is shut down"
                if self.state == "shut"
                else "the exporter was not initialized"
            )
        try:
            ok = self.exporter.force_flush()
        except Exception as e:
            raise Err(f"force_flush raised {_why(e)}") from e
        if ok is False:
            raise Err(f"{type(self.exporter).__name__}.force_flush returned False")

    def shutdown(self):
        if self.state != "live":
            raise Err(
                "already shut down" if self.state == "shut" else "the exporter was not initialized"
            )
        type(self).state = "shut"
        try:
            self.exporter.shutdown()
        except Exception as e:
            raise Err(f"shutdown raised {_why(e)}") from e


def _call_export(exporter, items):
    return exporter.export(items)


def _json(convert):
    """`convert` applied to an OTLP/JSON batch's parsed text."""
    return lambda text: convert(json.loads(text))


def _as_sent(data):
    """A forwarded batch: `bytes` (protobuf, which componentize-py hands over as `bytes`) or
    `str` (JSON), unchanged."""
    return data


def span_exporter(factory):
    """The `SpanExporter` component class for exporters `factory(settings)` builds: bind it to
    the name `SpanExporter` in the app module. The exporter receives `ReadableSpan`s::

        from opentelemetry.sdk.trace.export import SpanExporter as OtelSpanExporter
        from opentelemetry.sdk.trace.export import SpanExportResult


        class Lines(OtelSpanExporter):
            def export(self, spans):
                for s in spans:
                    print(s.name, f"{s.context.trace_id:032x}", dict(s.attributes))
                return SpanExportResult.SUCCESS


        SpanExporter = lens_exporter_sdk.span_exporter(lambda settings: Lines())
    """
    from wit_world import exports

    types = _types()

    class SpanExporter(_Adapter, exports.SpanExporter):
        def init(self, settings, resource):
            self._start(factory, settings, resource)
            return types.Encoding.OTLP_JSON

        def export(self, batch):
            self._export(batch, types.Batch_OtlpJson, _json(_otlp.spans), _call_export, "FAILURE")

    return SpanExporter


def metric_exporter(factory):
    """The `MetricExporter` component class for exporters `factory(settings)` builds: bind it
    to the name `MetricExporter`. The exporter receives `MetricsData`; its preferred temporality
    for counters (`preferred_temporality`) decides whether the host aggregates cumulatively or
    in deltas::

        from opentelemetry.sdk.metrics import Counter
        from opentelemetry.sdk.metrics.export import AggregationTemporality, MetricExportResult
        from opentelemetry.sdk.metrics.export import MetricExporter as OtelMetricExporter


        class Points(OtelMetricExporter):
            def __init__(self):
                super().__init__(preferred_temporality={Counter: AggregationTemporality.DELTA})

            def export(self, metrics_data, timeout_millis=10_000, **kwargs):
                for rm in metrics_data.resource_metrics:
                    for sm in rm.scope_metrics:
                        for m in sm.metrics:
                            print(m.name, len(m.data.data_points))
                return MetricExportResult.SUCCESS

            def force_flush(self, timeout_millis=10_000):
                return True

            def shutdown(self, timeout_millis=30_000, **kwargs):
                pass


        MetricExporter = lens_exporter_sdk.metric_exporter(lambda settings: Points())
    """
    from opentelemetry.sdk.metrics import Counter
    from opentelemetry.sdk.metrics.export import AggregationTemporality
    from wit_world import exports
    from wit_world.imports import metric_types

    types = _types()

    class MetricExporter(_Adapter, exports.MetricExporter):
        def init(self, settings, resource):
            self._start(factory, settings, resource)
            preferred = getattr(self.exporter, "_preferred_temporality", {}) or {}
            delta = preferred.get(Counter) == AggregationTemporality.DELTA
            temporality = (
                metric_types.Temporality.DELTA if delta else metric_types.Temporality.CUMULATIVE
            )
            return metric_types.MetricPreferences(types.Encoding.OTLP_JSON, temporality)

        def export(self, batch):
            self._export(
                batch,
                metric_types.MetricBatch_OtlpJson,
                _json(_otlp.metrics),
                lambda exporter, data: exporter.export(data, timeout_millis=10_000),
                "FAILURE",
            )

    return MetricExporter


def log_exporter(factory):
    """The `LogExporter` component class for exporters `factory(settings)` builds: bind it to
    the name `LogExporter`. The exporter receives `ReadableLogRecord`s::

        from opentelemetry.sdk._logs.export import LogExporter as OtelLogExporter
        from opentelemetry.sdk._logs.export import LogRecordExportResult


        class Records(OtelLogExporter):
            def export(self, batch):
                for r in batch:
                    print(r.log_record.severity_text, r.log_record.body)
                return LogRecordExportResult.SUCCESS

            def shutdown(self):
                pass


        LogExporter = lens_exporter_sdk.log_exporter(lambda settings: Records())
    """
    from wit_world import exports
    from wit_world.imports import log_types

    types = _types()

    class LogExporter(_Adapter, exports.LogExporter):
        def init(self, settings, resource):
            self._start(factory, settings, resource)
            return types.Encoding.OTLP_JSON

        def export(self, batch):
            self._export(
                batch, log_types.LogBatch_OtlpJson, _json(_otlp.logs), _call_export, "FAILURE"
            )

    return LogExporter


def _processor_class(base, factory, expected, convert, what):
    """The component class of a processor interface (`base`) around processors `factory`
    builds: `process(items, edits)` gets the batch (`expected`, OTLP/JSON) as `convert` reads
    it."""
    types = _types()

    class Processor(_Adapter, base):
        def init(self, settings, resource):
            self._start(factory, settings, resource)
            return types.Encoding.OTLP_JSON

        def process(self, batch):
            if self.state != "live":
                raise Err(
                    "the processor is shut down"
                    if self.state == "shut"
                    else "the processor was not initialized"
                )
            if not isinstance(batch, expected):
                raise Err("the Python SDK reads OTLP/JSON batches")
            edits = Edits()
            try:
                self.exporter.process(convert(json.loads(batch.value)), edits)
                return edits.to_wit()
            except Exception as e:
                raise Err(f"process raised {_why(e)}") from e

        def shutdown(self):
            if self.state != "live":
                raise Err(
                    "already shut down"
                    if self.state == "shut"
                    else "the processor was not initialized"
                )
            type(self).state = "shut"
            close = getattr(self.exporter, "shutdown", None)
            try:
                if close is not None:
                    close()
            except Exception as e:
                raise Err(f"shutdown raised {_why(e)}") from e

    Processor.__name__ = Processor.__qualname__ = what
    return Processor


def span_processor(factory):
    """The `SpanProcessor` component class for processors `factory(settings)` builds: bind it
    to the name `SpanProcessor` in the app module (world `span-processors`). The processor's
    `process(spans, edits)` receives the batch's `ReadableSpan`s, in order, and records in
    `edits` (an `Edits`) what happens to the spans that change, by index; an exception sends
    the batch on unprocessed or drops it, as the entry's `on_fault` says::

        class Redact:
            def process(self, spans, edits):
                for i, span in enumerate(spans):
                    if "gen_ai.prompt" in span.attributes:
                        edits.remove_attribute(i, "gen_ai.prompt")
                        edits.set_attribute(i, "lens.redacted", True)


        SpanProcessor = lens_exporter_sdk.span_processor(lambda settings: Redact())
    """
    from wit_world import exports

    types = _types()

    return _processor_class(
        exports.SpanProcessor, factory, types.Batch_OtlpJson, _otlp.spans, "SpanProcessor"
    )


def log_processor(factory):
    """The `LogProcessor` component class (world `log-processors`): as `span_processor`, the
    processor's `process(records, edits)` receiving the batch's `ReadableLogRecord`s;
    `edits.rename(i, name)` sets a record's event name, `edits.set_body(i, text)` its body::

        class QuietLogs:
            def process(self, records, edits):
                for i, r in enumerate(records):
                    if r.log_record.severity_text == "DEBUG":
                        edits.drop(i)


        LogProcessor = lens_exporter_sdk.log_processor(lambda settings: QuietLogs())
    """
    from wit_world import exports
    from wit_world.imports import log_types

    return _processor_class(
        exports.LogProcessor, factory, log_types.LogBatch_OtlpJson, _otlp.logs, "LogProcessor"
    )


def _metrics_in_order(request):
    """The `Metric`s of an OTLP/JSON collection, in batch order (resource, scope, metric)."""
    data = _otlp.metrics(request)
    return [m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics]


def metric_processor(factory):
    """The `MetricProcessor` component class (world `metric-processors`): as `span_processor`,
    the processor's `process(metrics, edits)` receiving the collection's SDK `Metric`s (each
    with its data points), in order across scopes; a dropped metric takes its data points with
    it, and `edits.set_attribute(i, key, value)` / `remove_attribute` apply to each of its data
    points::

        class Downsample:
            def __init__(self):
                self.collections = 0

            def process(self, metrics, edits):
                self.collections += 1
                if self.collections % 10 != 1:
                    for i, m in enumerate(metrics):
                        if m.name == "train.grad_norm":
                            edits.drop(i)


        MetricProcessor = lens_exporter_sdk.metric_processor(lambda settings: Downsample())
    """
    from wit_world import exports
    from wit_world.imports import metric_types

    return _processor_class(
        exports.MetricProcessor,
        factory,
        metric_types.MetricBatch_OtlpJson,
        _metrics_in_order,
        "MetricProcessor",
    )


class _Forwarder(_Adapter):
    """An OTLP forwarding exporter's functions: the batch's OTLP bytes go to the exporter's
    `export` as the host made them, decoded by nothing on the way (the cheapest export a
    Python component can make)."""

    unexpected_batch = "a forwarding exporter takes OTLP protobuf or OTLP/JSON batches"

    def _encoding(self, types):
        wanted = getattr(self.exporter, "encoding", "protobuf")
        if wanted not in ("protobuf", "json"):
            type(self).state = "new"
            raise Err(
                f"{type(self.exporter).__name__}.encoding is {wanted!r}: say 'protobuf' or 'json'"
            )
        return types.Encoding.OTLP_PROTOBUF if wanted == "protobuf" else types.Encoding.OTLP_JSON

    def _forward(self, batch, otlp):
        self._export(batch, otlp, _as_sent, _call_export, "False")

    def force_flush(self):
        # Optional for a forwarder: one that keeps nothing back has nothing to flush.
        if self.state == "live" and not hasattr(self.exporter, "force_flush"):
            return
        super().force_flush()

    def shutdown(self):
        if self.state == "live" and not hasattr(self.exporter, "shutdown"):
            type(self).state = "shut"
            return
        super().shutdown()


def otlp_span_exporter(factory):
    """The `SpanExporter` component class of a forwarding exporter: `factory(settings)` builds an
    object whose `export(data)` receives each batch as an OTLP `ExportTraceServiceRequest`, as
    protobuf `bytes` (or as OTLP/JSON `str`, if the object's `encoding` is `"json"`), and sends
    it on. `export` returns on success and raises to fail (`RetryableExportError`,
    `RejectedExportError`, or any exception: rejected); `force_flush()` and `shutdown()` are
    optional. With `lens_exporter_sdk.http`::

        class Forward:
            def __init__(self, settings):
                self.url = settings["endpoint"] + "/v1/traces"

            def export(self, data):
                http.send(self.url, data, [("content-type", "application/x-protobuf")])


        SpanExporter = lens_exporter_sdk.otlp_span_exporter(Forward)
    """
    from wit_world import exports

    types = _types()

    class SpanExporter(_Forwarder, exports.SpanExporter):
        def init(self, settings, resource):
            self._start(factory, settings, resource)
            return self._encoding(types)

        def export(self, batch):
            self._forward(batch, (types.Batch_OtlpProtobuf, types.Batch_OtlpJson))

    return SpanExporter


def otlp_metric_exporter(factory):
    """The `MetricExporter` of a forwarding exporter (see `otlp_span_exporter`): `export(data)`
    receives an OTLP `ExportMetricsServiceRequest`. The object's `temporality`, `"cumulative"`
    (the default) or `"delta"`, is what the host aggregates counters in."""
    from wit_world import exports
    from wit_world.imports import metric_types

    types = _types()

    class MetricExporter(_Forwarder, exports.MetricExporter):
        def init(self, settings, resource):
            self._start(factory, settings, resource)
            encoding = self._encoding(types)
            wanted = getattr(self.exporter, "temporality", "cumulative")
            if wanted not in ("cumulative", "delta"):
                type(self).state = "new"
                raise Err(
                    f"{type(self.exporter).__name__}.temporality is {wanted!r}: "
                    "say 'cumulative' or 'delta'"
                )
            temporality = (
                metric_types.Temporality.DELTA
                if wanted == "delta"
                else metric_types.Temporality.CUMULATIVE
            )
            return metric_types.MetricPreferences(encoding, temporality)

        def export(self, batch):
            self._forward(
                batch, (metric_types.MetricBatch_OtlpProtobuf, metric_types.MetricBatch_OtlpJson)
            )

    return MetricExporter


def otlp_log_exporter(factory):
    """The `LogExporter` of a forwarding exporter (see `otlp_span_exporter`): `export(data)`
    receives an OTLP `ExportLogsServiceRequest`."""
    from wit_world import exports
    from wit_world.imports import log_types

    types = _types()

    class LogExporter(_Forwarder, exports.LogExporter):
        def init(self, settings, resource):
            self._start(factory, settings, resource)
            return self._encoding(types)

        def export(self, batch):
            self._forward(batch, (log_types.LogBatch_OtlpProtobuf, log_types.LogBatch_OtlpJson))

    return LogExporter
