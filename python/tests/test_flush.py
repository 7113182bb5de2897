"""`force_flush()` means delivered under the plain SDK, for every signal: after the provider's
`force_flush()` returns `True`, everything handed to Lens before it has been exported (or
counted as dropped), with the exporters' default mode. The SDK's batch processors flush by
exporting their queue and never call the exporter's `force_flush`; its metric reader does.
Each scenario runs 100 times, the counts checked right after the call."""

from __future__ import annotations

import lens
import pytest
from conftest import recorder
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

ROUNDS = 100


def discarding(guests, tmp_path, cls, **keywords):
    """The recorder guest answering every export `ok` without writing it."""
    return recorder(guests, tmp_path, "otlp", cls=cls, settings={"discard": "true"}, **keywords)


def assert_delivered(stats, total: int) -> None:
    assert stats["received"] == total, stats
    assert stats["exported"] == total, stats
    assert stats["pending"] == 0 and stats["dropped"] == 0, stats


def test_a_tracer_providers_force_flush_means_every_span_is_exported(guests, tmp_path):
    exporter = discarding(guests, tmp_path, lens.WasmSpanExporter)
    assert exporter.mode == "delivered"
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    for round_ in range(1, ROUNDS + 1):
        for i in range(2000):
            with tracer.start_as_current_span("step") as s:
                s.set_attribute("i", i)
        assert provider.force_flush() is True
        assert_delivered(exporter.stats(), 2000 * round_)
    provider.shutdown()
    assert exporter.stats()["mode"] == "delivered"


def test_a_logger_providers_force_flush_means_every_record_is_exported(guests, tmp_path):
    exporter = discarding(guests, tmp_path, lens.WasmLogExporter)
    provider = LoggerProvider()
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
    logger = provider.get_logger("l")
    for round_ in range(1, ROUNDS + 1):
        # One record (the case: 0 of 1 exported right after the flush), then a batch.
        logger.emit(body="checkpoint saved")
        assert provider.force_flush() is True
        for i in range(99):
            logger.emit(body=f"record {i}")
        assert provider.force_flush() is True
        assert_delivered(exporter.stats(), 100 * round_)
    provider.shutdown()


@pytest.mark.parametrize("mode", ["hand-off", "delivered"])
def test_a_meter_providers_force_flush_means_every_point_is_exported(guests, tmp_path, mode):
    # Hand-off is the metric exporter's default: the reader's `force_flush` calls the
    # exporter's, which waits for what was handed off.
    exporter = discarding(guests, tmp_path, lens.WasmMetricExporter, mode=mode)
    assert exporter.mode == mode
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
    provider = MeterProvider(metric_readers=[reader])
    counter = provider.get_meter("m").create_counter("tokens")
    exported = 0
    for round_ in range(1, ROUNDS + 1):
        counter.add(round_, {"rank": "0"})
        assert provider.force_flush() is True
        stats = exporter.stats()
        # One data point per collection (cumulative, one attribute set).
        assert stats["pending"] == 0 and stats["dropped"] == 0, stats
        assert stats["exported"] == stats["received"] == round_, stats
        exported = stats["exported"]
    provider.shutdown()
    assert exporter.stats()["exported"] >= exported


def test_hand_off_is_a_mode_to_ask_for_and_modes_are_checked(guests, tmp_path):
    exporter = discarding(guests, tmp_path, lens.WasmSpanExporter, mode="hand-off")
    assert exporter.mode == "hand-off" and not exporter.blocking
    exporter.shutdown()
    blocking = discarding(guests, tmp_path, lens.WasmLogExporter, blocking=True)
    assert blocking.mode == "blocking" and blocking.blocking
    blocking.shutdown()
    with pytest.raises(ValueError, match='one of "delivered", "hand-off", "blocking"'):
        discarding(guests, tmp_path, lens.WasmSpanExporter, mode="eventually")
    with pytest.raises(ValueError, match="give one of them"):
        discarding(guests, tmp_path, lens.WasmSpanExporter, mode="hand-off", blocking=True)
