"""The ``spool`` keyword from a Python rank: a vendor (the ``rust-vendor-http`` example, a
real OTLP/HTTP POST) down for longer than the export timeout costs nothing; its spans wait on
disk, counted as ``spooled``, and arrive once it is back; a rank shut down during the outage
leaves them for the next process; metric collections the same way; a blocking exporter refuses
a spool."""

from __future__ import annotations

import http.server
import pathlib
import threading
import time

import lens
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENDOR = ROOT / "guest-examples" / "dist" / "rust-vendor-http.wasm"


class _Vendor(http.server.BaseHTTPRequestHandler):
    """503 while the server is ``down``, else 200; counts the requests it accepted."""

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        down = self.server.down.is_set()
        if not down:
            self.server.accepted.append(body)
        self.send_response(503 if down else 200)
        self.send_header("content-length", "0")
        self.send_header("connection", "close")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def vendor():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Vendor)
    server.down = threading.Event()
    server.accepted = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _exporter(vendor, spool: pathlib.Path, **keywords) -> lens.WasmSpanExporter:
    authority = f"127.0.0.1:{vendor.server_port}"
    return lens.WasmSpanExporter(
        VENDOR,
        name="vendor",
        settings={"endpoint": f"http://{authority}/v1/traces", "timeout_ms": "500"},
        allowed_hosts=[authority],
        export_timeout_ms=1000,
        spool={"dir": spool, "max_mib": 16},
        **keywords,
    )


def _spans(exporter, n: int, first: int = 0) -> None:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=50))
    tracer = provider.get_tracer("trainer")
    for i in range(first, first + n):
        with tracer.start_as_current_span("step") as span:
            span.set_attribute("i", i)
    provider.force_flush()
    provider.shutdown()


def test_spans_of_an_outage_wait_on_disk_and_arrive_once_the_vendor_is_back(vendor, tmp_path):
    spool = tmp_path / "spool"
    vendor.down.set()
    exporter = _exporter(vendor, spool)
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=50))
    tracer = provider.get_tracer("trainer")
    for i in range(200):
        with tracer.start_as_current_span("step") as span:
            span.set_attribute("i", i)
    provider.force_flush()
    stats = exporter.stats()
    assert stats["spooled"] == 200 and stats["in_spool"] == 200, stats
    assert stats["dropped"] == 0, stats
    vendor.down.clear()
    # The SDK's flush does not reach a spool; the exporter's own does, delivered.
    assert exporter.force_flush(10_000)
    provider.shutdown()
    stats = exporter.stats()
    assert (stats["exported"], stats["replayed"], stats["in_spool"]) == (200, 200, 0), stats
    assert stats["dropped"] == 0 and stats["pending"] == 0, stats
    assert vendor.accepted, "the vendor received the replayed spans"


def test_a_delivered_export_returns_success_once_its_batch_is_spooled(vendor, tmp_path):
    vendor.down.set()
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("trainer")
    for _ in range(30):
        tracer.start_span("step").end()
    exporter = _exporter(vendor, tmp_path / "spool")
    assert exporter.mode == "delivered"
    # Handed over to the spool: the SDK's thread is not held on the outage.
    assert exporter.export(memory.get_finished_spans()) == SpanExportResult.SUCCESS
    stats = exporter.stats()
    assert (stats["spooled"], stats["in_spool"], stats["dropped"]) == (30, 30, 0), stats
    assert not exporter.force_flush(3_000), "still spooled: not delivered"
    vendor.down.clear()
    assert exporter.force_flush(10_000)
    assert exporter.stats()["replayed"] == 30
    exporter.shutdown()


def test_a_rank_shut_down_in_the_outage_leaves_its_spans_to_the_next_process(vendor, tmp_path):
    spool = tmp_path / "spool"
    vendor.down.set()
    first = _exporter(vendor, spool)
    _spans(first, 50)
    stats = first.stats()
    assert (stats["in_spool"], stats["dropped"]) == (50, 0), stats
    vendor.down.clear()
    following = _exporter(vendor, spool)
    # Its shutdown (the provider's) sends what it found and what it got.
    _spans(following, 10, first=50)
    stats = following.stats()
    assert (stats["spool_found"], stats["replayed"], stats["exported"]) == (50, 50, 60), stats
    assert stats["in_spool"] == 0, stats


def test_a_spool_needs_a_queue(vendor, tmp_path):
    with pytest.raises(lens.ExporterLoadError, match='mode="blocking" has no queue'):
        _exporter(vendor, tmp_path / "s", mode="blocking")
    with pytest.raises(lens.ExporterLoadError, match="max_mib"):
        lens.WasmSpanExporter(VENDOR, spool={"dir": tmp_path / "z", "max_mib": 0})


def _points(body: bytes) -> int:
    """Data points in one ``ExportMetricsServiceRequest``."""
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
    )

    request = ExportMetricsServiceRequest.FromString(body)
    n = 0
    for rm in request.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                kind = m.WhichOneof("data")
                n += len(getattr(m, kind).data_points)
    return n


def test_metric_collections_of_an_outage_wait_on_disk_and_arrive_once_the_vendor_is_back(
    vendor, tmp_path
):
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    authority = f"127.0.0.1:{vendor.server_port}"
    exporter = lens.WasmMetricExporter(
        VENDOR,
        name="vendor",
        settings={"endpoint": f"http://{authority}/v1/metrics", "timeout_ms": "500"},
        allowed_hosts=[authority],
        export_timeout_ms=1000,
        spool={"dir": tmp_path / "spool", "max_mib": 16},
    )
    provider = MeterProvider(
        metric_readers=[PeriodicExportingMetricReader(exporter, export_interval_millis=100)]
    )
    steps = provider.get_meter("trainer").create_counter("train.steps")
    vendor.down.set()
    for _ in range(60):
        steps.add(1, {"phase": "train"})
        time.sleep(0.01)
    # Not delivered while some waits on disk: the exporter's flush says so (the SDK's
    # provider returns True whatever its exporters answer).
    assert exporter.force_flush(timeout_millis=2000) is False
    stats = exporter.stats()
    assert stats["spooled"] > 0 and stats["exported"] == 0, stats
    assert stats["dropped"] == 0, stats
    vendor.down.clear()
    for _ in range(30):
        steps.add(1, {"phase": "train"})
        time.sleep(0.01)
    provider.shutdown()
    stats = exporter.stats()
    assert (stats["in_spool"], stats["dropped"]) == (0, 0), stats
    assert stats["replayed"] == stats["spooled"], stats
    assert stats["exported"] == stats["received"] + stats["spool_found"], stats
    assert sum(_points(b) for b in vendor.accepted) == stats["exported"], stats
