"""Hand-off (`mode="hand-off"`; the processor's only mode): `export` queues the batch in
Lens's own queue and returns; the guest runs on Lens's export thread. Under a hostile guest
(hanging, trapping, asking for retries forever) the Python process stays responsive,
`force_flush` and `shutdown` keep their timeouts and every span ends in exactly one counter.
Also: `WasmSpanProcessor`, and a trap's message in Python's logging."""

from __future__ import annotations

import logging
import re
import time

import lens
from conftest import recorded, recorder
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def finished_spans(n: int, name: str = "step"):
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("t")
    for i in range(n):
        with tracer.start_as_current_span(name) as s:
            s.set_attribute("i", i)
    return memory.get_finished_spans()


def assert_every_span_counted_once(stats, n: int) -> None:
    assert stats["received"] == n, stats
    assert stats["exported"] + stats["dropped"] == n, stats
    assert stats["pending"] == 0, stats
    dropped = ("queue_full", "export_failed", "shutdown", "rejected")
    assert sum(stats[f"dropped_{k}"] for k in dropped) == stats["dropped"], stats


def hung(guests, cls, **keywords):
    """The hostile guest sleeping 60 s in a host call at every export, past its 300 ms
    deadline; a `shutdown()` without a timeout gets 500 ms."""
    return cls(
        guests["hostile"],
        settings={"mode": "slow", "sleep_ms": "60000"},
        call_timeout_ms=300,
        shutdown_timeout_ms=500,
        **({} if cls is lens.WasmSpanProcessor else {"mode": "hand-off"}),
        **keywords,
    )


def test_a_hung_guest_never_holds_the_python_thread(guests):
    exporter = hung(
        guests, lens.WasmSpanExporter, max_queue_size=40, max_export_batch_size=10, name="hung"
    )
    assert not exporter.blocking
    spans = finished_spans(10)
    slowest = 0.0
    for _ in range(8):
        started = time.monotonic()
        assert exporter.export(spans) == SpanExportResult.SUCCESS
        slowest = max(slowest, time.monotonic() - started)
    # Queued and returned: never the guest's 300 ms deadline, let alone its 60 s sleep.
    assert slowest < 0.1, slowest
    started = time.monotonic()
    assert exporter.force_flush(timeout_millis=300) is False
    assert time.monotonic() - started < 1.5
    # The SDK's processors call `shutdown()` without a timeout: the entry's
    # `shutdown_timeout_ms` bounds it.
    started = time.monotonic()
    exporter.shutdown()
    assert time.monotonic() - started < 2.5
    stats = exporter.stats()
    assert_every_span_counted_once(stats, 80)
    assert stats["exported"] == 0 and stats["dropped_queue_full"] > 0, stats
    # After the shutdown: dropped at once, counted.
    assert exporter.export(spans) == SpanExportResult.FAILURE
    assert_every_span_counted_once(exporter.stats(), 90)


def test_a_retry_storm_in_the_queue_is_bounded_and_counted(guests, tmp_path):
    exporter = recorder(
        guests,
        tmp_path,
        "typed",
        settings={"retryable": "1000000", "retry_delay_ms": "0"},
        export_timeout_ms=1000,
        name="storm",
        mode="hand-off",
    )
    spans = finished_spans(5)
    started = time.monotonic()
    exporter.export(spans)
    exporter.export(spans)
    assert time.monotonic() - started < 0.1
    started = time.monotonic()
    assert exporter.force_flush(timeout_millis=200) is False
    assert time.monotonic() - started < 1.5
    exporter.shutdown(timeout_millis=5000)
    stats = exporter.stats()
    assert_every_span_counted_once(stats, 10)
    assert stats["exported"] == 0 and stats["retries"] >= 1, stats
    assert stats["retries_exhausted"] >= 1 and stats["dropped_export_failed"] == 10, stats
    # The last failure in one line: the guest's answer, and how long it was retried.
    assert re.fullmatch(
        r"retryable, given up after \d+ attempts: unavailable \(\d+ more\)",
        stats["last_error"],
    ), stats


def test_items_the_guest_rejects_are_counted_as_rejected(guests, tmp_path):
    """The recorder's `partial = 2`: it accepts each batch but refuses 2 of its items."""
    for cls, batch, n in (
        (lens.WasmSpanExporter, finished_spans(5), 5),
        (lens.WasmLogExporter, None, 5),
    ):
        if batch is None:
            from test_signals import log_records_of

            batch = log_records_of(5)
        exporter = recorder(
            guests, tmp_path, "typed", cls=cls, settings={"partial": "2"}, name=f"p-{n}"
        )
        exporter.export(batch)
        exporter.shutdown()
        stats = exporter.stats()
        assert_every_span_counted_once(stats, n)
        assert (stats["exported"], stats["dropped_rejected"]) == (3, 2), stats


def test_a_trapping_guest_fails_its_batches_and_the_next_instance_works(guests):
    exporter = lens.WasmSpanExporter(guests["hostile"], settings={"mode": "panic-on-boom"})
    exporter.export(finished_spans(3, "boom"))
    assert exporter.force_flush() is True  # the batch failed; flushing the next instance works
    exporter.export(finished_spans(4))
    exporter.shutdown()
    stats = exporter.stats()
    assert_every_span_counted_once(stats, 7)
    assert (stats["exported"], stats["dropped_export_failed"]) == (4, 3), stats
    assert stats["traps"] == {"unreachable": 1}, stats


def test_a_trap_is_one_line_in_logging_with_the_backtrace_at_debug(guests, caplog):
    exporter = lens.WasmSpanExporter(
        guests["hostile"], settings={"mode": "panic-on-boom"}, blocking=True, name="trapper"
    )
    with caplog.at_level(logging.DEBUG, logger="lens"):
        lens.refresh_logging()
        assert exporter.export(finished_spans(1, "boom")) == SpanExportResult.FAILURE
    faults = [
        r for r in caplog.records if "trapper" in r.getMessage() and "unreachable" in r.getMessage()
    ]
    warning = [r for r in faults if r.levelno == logging.WARNING]
    debug = [r for r in faults if r.levelno == logging.DEBUG]
    assert len(warning) == 1 and len(debug) == 1, [(r.levelname, r.getMessage()) for r in faults]
    line = warning[0].getMessage()
    assert "\n" not in line and "\\n" not in line, line
    assert "wasm trap: wasm `unreachable` instruction executed (in 0x" in line, line
    assert "more frames at debug level" in line and "a span named boom" in line, line
    assert "wasm backtrace" in debug[0].getMessage() and "1: " in debug[0].getMessage()
    lens.refresh_logging()
    exporter.shutdown()


def test_the_span_processor_queues_every_span_from_on_end(guests, tmp_path):
    processor = recorder(guests, tmp_path, "typed", cls=lens.WasmSpanProcessor)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("t")
    for i in range(1200):
        with tracer.start_as_current_span("step") as s:
            s.set_attribute("i", i)
    assert processor.force_flush(timeout_millis=10_000) is True
    provider.shutdown()
    stats = processor.stats()
    assert_every_span_counted_once(stats, 1200)
    assert stats["exported"] == 1200 and stats["mode"] == "hand-off"
    spans = [s for line in recorded(tmp_path) if "typed" in line for s in line["typed"]]
    assert sorted(s["attributes"]["i"]["s64"] for s in spans) == list(range(1200))


def test_metric_and_log_hand_offs_under_a_hung_guest_keep_their_timeouts_and_counts(
    guests, tmp_path
):
    """The recorder with `hang = true`: every export sleeps in a host call for good."""
    from test_signals import collect, log_records_of

    data = collect()
    points = sum(
        len(m.data.data_points)
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    )
    records = log_records_of(3)
    for cls, batch, items in (
        (lens.WasmMetricExporter, data, points),
        (lens.WasmLogExporter, records, 3),
    ):
        exporter = recorder(
            guests, tmp_path, "otlp", cls=cls, settings={"hang": "true"},
            call_timeout_ms=300, max_queue_size=6, max_export_batch_size=3,
            name=f"hung-{cls.__name__}", mode="hand-off",
        )  # fmt: skip
        started = time.monotonic()
        for _ in range(8):
            assert exporter.export(batch).name == "SUCCESS"
        assert time.monotonic() - started < 0.2
        started = time.monotonic()
        assert exporter.force_flush(timeout_millis=300) is False
        assert time.monotonic() - started < 1.5
        started = time.monotonic()
        exporter.shutdown(timeout_millis=500)
        assert time.monotonic() - started < 2.5
        stats = exporter.stats()
        assert_every_span_counted_once(stats, 8 * items)
        assert stats["exported"] == 0 and stats["dropped_queue_full"] > 0, stats
        assert exporter.export(batch).name == "FAILURE"
        assert_every_span_counted_once(exporter.stats(), 9 * items)


def test_the_span_processor_under_a_hung_guest_never_holds_the_application(guests):
    processor = hung(
        guests,
        lens.WasmSpanProcessor,
        max_queue_size=100,
        max_export_batch_size=50,
        name="hung-processor",
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("t")
    started = time.monotonic()
    for i in range(300):
        with tracer.start_as_current_span("step") as s:
            s.set_attribute("i", i)
    assert time.monotonic() - started < 1.0
    started = time.monotonic()
    provider.shutdown()  # the processor's shutdown(), bounded by shutdown_timeout_ms
    assert time.monotonic() - started < 2.5
    stats = processor.stats()
    assert_every_span_counted_once(stats, 300)
    assert stats["exported"] == 0 and stats["dropped_queue_full"] > 0, stats
