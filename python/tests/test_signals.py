"""Metrics and log records from the Python SDK into the recorder guest arrive, field by field,
as the Python SDK's own OTLP encoder writes them (protobuf, OTLP/JSON) and in the typed
encoding; the guest's temporality reaches the reader; every item is counted once."""

from __future__ import annotations

import json
import logging

import lens
import pytest
from conftest import from_otlp_json, recorded, recorder
from google.protobuf import json_format
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    InMemoryLogRecordExporter,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.metrics import AlwaysOnExemplarFilter, MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.metrics.view import ExponentialBucketHistogramAggregation, View
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

RESOURCE = Resource.create({"service.name": "rank", "dl.rank": 3, "tags": ("a", "b")})


def every_metric_kind(provider: MeterProvider) -> None:
    """A counter (int), an up-down counter, a histogram (float) and an exponential one, a
    gauge, with attributes of every type, exemplars under a sampled span, two scopes."""
    meter = provider.get_meter(
        "trainer",
        "1.2",
        schema_url="https://opentelemetry.io/schemas/1.21.0",
        attributes={"scope.n": 1},
    )
    other = provider.get_meter("checkpointer")
    tokens = meter.create_counter("tokens", unit="1", description="tokens seen")
    queue = meter.create_up_down_counter("queue")
    loss = meter.create_histogram("loss", unit="1")
    step = other.create_histogram("step.time", unit="s")
    temp = other.create_gauge("gpu.temp")
    attrs = {"s": "x ✓", "b": True, "i": -4, "f": 1.5, "sa": ("a", "b"), "ia": (1, 2)}
    tracer = TracerProvider().get_tracer("t")
    with tracer.start_as_current_span("step"):
        tokens.add(7, attrs)
        loss.record(0.25, {"phase": "train"})
    tokens.add(3, {"phase": "eval"})
    queue.add(-2)
    for v in (0.5, 2.0, 9.0):
        loss.record(v, {"phase": "train"})
        step.record(v)
    temp.set(71.5, {"gpu": 0})


def provider_with(reader) -> MeterProvider:
    return MeterProvider(
        metric_readers=[reader],
        resource=RESOURCE,
        exemplar_filter=AlwaysOnExemplarFilter(),
        views=[
            View(instrument_name="step.time", aggregation=ExponentialBucketHistogramAggregation())
        ],
    )


def collect():
    reader = InMemoryMetricReader()
    every_metric_kind(provider_with(reader))
    return reader.get_metrics_data()


def received(out, message_type):
    got = message_type()
    for line in recorded(out):
        if "otlp" in line:
            got.MergeFrom(message_type.FromString(bytes(line["otlp"])))
        elif "otlp_json" in line:
            got.MergeFrom(from_otlp_json(line["otlp_json"], message_type()))
    return got


@pytest.mark.parametrize("encoding", ["otlp", "otlp-json"])
def test_metrics_equal_the_python_sdks_own_encoding(guests, tmp_path, encoding):
    exporter = recorder(guests, tmp_path, encoding, cls=lens.WasmMetricExporter)
    data = collect()
    assert exporter.export(data).name == "SUCCESS"
    exporter.shutdown()
    expected = encode_metrics(data)
    got = received(tmp_path, ExportMetricsServiceRequest)
    assert json_format.MessageToDict(got) == json_format.MessageToDict(expected)
    points = sum(
        len(m.data.data_points)
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    )
    stats = exporter.stats()
    assert (stats["received"], stats["exported"], stats["dropped"]) == (points, points, 0)
    # After the shutdown: refused, and counted as dropped at shutdown.
    assert exporter.export(data).name == "FAILURE"
    stats = exporter.stats()
    assert (stats["received"], stats["dropped_shutdown"]) == (2 * points, points), stats


def test_typed_metrics_carry_every_kind_and_value(guests, tmp_path):
    exporter = recorder(guests, tmp_path, "typed", cls=lens.WasmMetricExporter)
    data = collect()
    exporter.export(data)
    exporter.shutdown()
    metrics = {
        m["name"]: m for line in recorded(tmp_path) if "metrics" in line for m in line["metrics"]
    }
    assert {n: m["kind"] for n, m in metrics.items()} == {
        "tokens": "sum",
        "queue": "sum",
        "loss": "histogram",
        "step.time": "exponential_histogram",
        "gpu.temp": "gauge",
    }
    tokens = {
        p["attributes"].get("phase", {}).get("string"): p for p in metrics["tokens"]["points"]
    }
    assert tokens["eval"]["value"] == {"s64": 3}
    assert tokens[None]["value"] == {"s64": 7}
    assert tokens[None]["attributes"]["sa"] == {"string-array": ["a", "b"]}
    assert tokens[None]["monotonic"] is True
    assert metrics["tokens"]["description"] == "tokens seen"
    assert metrics["queue"]["points"][0]["value"] == {"s64": -2}
    assert metrics["queue"]["points"][0]["monotonic"] is False
    (loss,) = metrics["loss"]["points"]
    assert (loss["count"], loss["sum"], loss["min"], loss["max"]) == (4, 11.75, 0.25, 9.0)
    (gauge,) = metrics["gpu.temp"]["points"]
    assert gauge["value"] == {"f64": 71.5} and gauge["start"] is None
    (exp,) = metrics["step.time"]["points"]
    assert exp["count"] == 3 and sum(exp["positive"][1]) == 3
    scopes = {
        m["scope"] for line in recorded(tmp_path) if "metrics" in line for m in line["metrics"]
    }
    assert scopes == {"trainer", "checkpointer"}
    # The guest was initialised with the metrics' resource.
    resource = [line["init"]["resource"] for line in recorded(tmp_path) if "init" in line][-1]
    assert resource["dl.rank"] == {"s64": 3}


@pytest.mark.parametrize("temporality", ["delta", "cumulative"])
def test_the_guests_temporality_reaches_the_periodic_reader(guests, tmp_path, temporality):
    exporter = recorder(
        guests,
        tmp_path,
        "otlp",
        cls=lens.WasmMetricExporter,
        settings={"temporality": temporality},
    )
    assert exporter.temporality == temporality
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
    provider = provider_with(reader)
    counter = provider.get_meter("m").create_counter("c")
    counter.add(1)
    reader.collect()
    counter.add(1)
    provider.shutdown()
    sums = [
        m.sum
        for rm in received(tmp_path, ExportMetricsServiceRequest).resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    ]
    want = 1 if temporality == "delta" else 2  # AGGREGATION_TEMPORALITY_DELTA / _CUMULATIVE
    assert [s.aggregation_temporality for s in sums] == [want, want]
    assert [s.data_points[0].as_int for s in sums] == ([1, 1] if temporality == "delta" else [1, 2])


def emit_every_log_kind(provider: LoggerProvider) -> None:
    """Records through Python's logging (with trace context) and the logs API, with bodies of
    every shape, severities, attributes, an event name, two scopes."""
    logger = logging.getLogger("lens.test.signals")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    handler = LoggingHandler(logger_provider=provider)
    logger.addHandler(handler)
    tracer = TracerProvider().get_tracer("t")
    try:
        with tracer.start_as_current_span("step"):
            logger.warning("loss spiked to %s", 9.5, extra={"rank": 3, "tags": ["a", "b"]})
        logger.info("plain ✓")
    finally:
        logger.removeHandler(handler)
    api = provider.get_logger("checkpointer", "2.0", attributes={"scope.n": 1})
    for body in (42, 1.5, True, b"\x00\x01", ["x", 1], "text", None):
        api.emit(
            body=body,
            severity_number=SeverityNumber.DEBUG,
            severity_text="DEBUG",
            attributes={"kind": type(body).__name__},
            timestamp=1_700_000_000_000_000_000,
        )
    api.emit(body={"k": "v", "n": 2}, event_name="ckpt.saved", severity_number=SeverityNumber.INFO2)


def log_records_of(n: int) -> list:
    """`n` finished log records."""
    oracle = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=RESOURCE)
    provider.add_log_record_processor(SimpleLogRecordProcessor(oracle))
    for i in range(n):
        provider.get_logger("l").emit(body=f"record {i}")
    return oracle.get_finished_logs()


def run_logs(exporter):
    oracle = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=RESOURCE)
    provider.add_log_record_processor(SimpleLogRecordProcessor(oracle))
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
    emit_every_log_kind(provider)
    provider.shutdown()
    return oracle.get_finished_logs()


def canonical(request) -> dict:
    """A request as a dict with each scope's records sorted and map bodies' and the resource's
    keys in order (the Rust SDK keeps both in hash maps)."""
    doc = json_format.MessageToDict(request)
    for rl in doc.get("resourceLogs", []):
        rl.get("resource", {}).get("attributes", []).sort(key=lambda v: v["key"])
        for sl in rl.get("scopeLogs", []):
            for r in sl.get("logRecords", []):
                # OTLP has no null: for a `None` body the Python encoder writes an empty value,
                # the Rust SDK none.
                if r.get("body") == {}:
                    del r["body"]
                kv = r.get("body", {}).get("kvlistValue")
                if kv:
                    kv["values"].sort(key=lambda v: v["key"])
            sl["logRecords"].sort(key=json.dumps)
        rl["scopeLogs"].sort(key=lambda s: s.get("scope", {}).get("name", ""))
    return doc


@pytest.mark.parametrize("encoding", ["otlp", "otlp-json"])
@pytest.mark.parametrize("blocking", [False, True])
def test_logs_equal_the_python_sdks_own_encoding(guests, tmp_path, encoding, blocking):
    exporter = recorder(guests, tmp_path, encoding, cls=lens.WasmLogExporter, blocking=blocking)
    records = run_logs(exporter)
    expected = canonical(encode_logs(records))
    assert canonical(received(tmp_path, ExportLogsServiceRequest)) == expected
    stats = exporter.stats()
    n = len(records)
    assert (stats["received"], stats["exported"], stats["dropped"]) == (n, n, 0), stats
    assert stats["mode"] == ("blocking" if blocking else "delivered")


def test_typed_logs_carry_every_field(guests, tmp_path):
    exporter = recorder(guests, tmp_path, "typed", cls=lens.WasmLogExporter)
    records = run_logs(exporter)
    got = [r for line in recorded(tmp_path) if "logs" in line for r in line["logs"]]
    assert len(got) == len(records)
    spiked = next(r for r in got if r["body"] == {"string": "loss spiked to 9.5"})
    oracle = next(r for r in records if r.log_record.body == "loss spiked to 9.5")
    assert spiked["trace_id"] == f"{oracle.log_record.trace_id:032x}"
    assert spiked["span_id"] == f"{oracle.log_record.span_id:016x}"
    assert spiked["trace_flags"] == int(oracle.log_record.trace_flags) & 0xFF
    assert spiked["severity_text"] == "WARN" and spiked["severity_number"] == 13
    assert spiked["attributes"]["rank"] == {"s64": 3}
    assert spiked["time"] == oracle.log_record.timestamp
    saved = next(r for r in got if r["event_name"] == "ckpt.saved")
    assert saved["scope"] == "checkpointer"
    bodies = {json.dumps(r["body"], sort_keys=True) for r in got}
    assert json.dumps({"s64": 42}) in bodies and json.dumps({"f64": 1.5}) in bodies
    assert json.dumps({"bool": True}) in bodies and json.dumps({"bytes": [0, 1]}) in bodies


def test_from_config_builds_each_signals_entry(guests, tmp_path):
    config = tmp_path / "lens.toml"
    config.write_text(
        "".join(
            f'[[{signal}.exporters]]\nkind = "wasm"\nname = "{name}"\n'
            f'path = "{guests["recorder"]}"\nsettings = {{ out = "/out/{name}.jsonl" }}\n'
            f'preopens = [{{ host = "{tmp_path}", guest = "/out", read_only = false }}]\n'
            for signal, name in (("traces", "spans"), ("metrics", "points"), ("logs", "records"))
        )
    )
    assert isinstance(lens.from_config(config, signal="metrics"), lens.WasmMetricExporter)
    assert lens.from_config(config, "records", "logs").name == "records"
    assert lens.WasmSpanExporter.from_config(config).name == "spans"
    with pytest.raises(lens.ExporterLoadError, match=r"no wasm exporter named `spans` in \[\[logs"):
        lens.WasmLogExporter.from_config(config, "spans")
    with pytest.raises(ValueError, match="signal"):
        lens.WasmMetricExporter.from_config(config, signal="logs")
