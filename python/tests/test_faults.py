"""Hostile guests under the Python SDK's processor: a trap, an endless loop, a memory bomb and a
call blocked in a host call each fail their batches (never an exception into the SDK's thread),
the Python process keeps running, and every span is counted once."""

from __future__ import annotations

import logging
import threading
import time

import lens
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def hostile(guests, mode: str, blocking: bool = False, **settings) -> lens.WasmSpanExporter:
    return lens.WasmSpanExporter(
        guests["hostile"],
        settings={"mode": mode, **settings},
        call_timeout_ms=300,
        memory_limit_mib=32,
        name=f"hostile-{mode}",
        blocking=blocking,
    )


@pytest.mark.parametrize(
    ("mode", "settings", "fault"),
    [
        ("loop", {}, "deadline"),
        ("memory-bomb", {}, "memory limit"),
        ("panic-on-boom", {}, "unreachable"),
        ("slow", {"sleep_ms": "60000"}, "deadline"),
    ],
)
def test_a_hostile_guest_fails_its_batches_and_training_goes_on(
    guests, mode, settings, fault, caplog
):
    exporter = hostile(guests, mode, **settings)
    oracle = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(oracle))
    provider.add_span_processor(
        BatchSpanProcessor(exporter, max_export_batch_size=10, schedule_delay_millis=10)
    )
    tracer = provider.get_tracer("train")
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        for i in range(30):
            with tracer.start_as_current_span("boom" if i % 10 == 0 else "step"):
                pass
        provider.force_flush()
        provider.shutdown()
    # The application thread never waited on the guest: 30 spans are quick even when every
    # export runs into a 300 ms deadline.
    assert len(oracle.get_finished_spans()) == 30
    stats = exporter.stats()
    assert stats["received"] == 30, stats
    assert stats["exported"] + stats["dropped"] == 30, stats
    assert stats["dropped"] > 0, stats
    assert stats["traps"].get(fault, 0) >= 1, stats
    assert any(fault in r.getMessage() for r in caplog.records), [
        r.getMessage() for r in caplog.records
    ]
    assert time.monotonic() - started < 60


def test_export_returns_failure_and_the_next_instance_works(guests):
    exporter = hostile(guests, "panic-on-boom", blocking=True)
    provider = TracerProvider()
    tracer = provider.get_tracer("t")
    ended = []
    for name in ("boom", "fine"):
        span = tracer.start_span(name)
        span.end()
        ended.append(span)
    assert exporter.export([ended[0]]) is SpanExportResult.FAILURE
    # The trapped instance is gone; the next batch waits out the backoff, then a fresh one.
    deadline = time.monotonic() + 5
    while exporter.export([ended[1]]) is not SpanExportResult.SUCCESS:
        assert time.monotonic() < deadline, exporter.stats()
        time.sleep(0.1)
    stats = exporter.stats()
    assert stats["restarts"] == 1 and stats["traps"] == {"unreachable": 1}, stats
    exporter.shutdown()
    assert exporter.export([ended[1]]) is SpanExportResult.FAILURE
    assert exporter.stats()["dropped_shutdown"] == 1


def test_spans_that_cannot_be_read_fail_the_batch_without_raising(guests):
    exporter = hostile(guests, "noop", blocking=True)
    assert exporter.export([object()]) is SpanExportResult.FAILURE
    stats = exporter.stats()
    assert stats["received"] == 1 and stats["dropped_export_failed"] == 1, stats


def test_a_retry_storm_is_bounded_by_the_export_budget_and_flush_by_its_timeout(guests, tmp_path):
    """A guest answering `retryable` with a delay of 0 for ever: `export()` ends within
    `export_timeout_ms` (the host's backoff, not the guest's hint, paces the attempts), a
    `force_flush` during it returns at its own timeout, and the counts add up."""
    exporter = lens.WasmSpanExporter(
        guests["recorder"],
        settings={
            "out": "/out/batches.jsonl",
            "encoding": "typed",
            "retryable": "1000000",
            "retry_delay_ms": "0",
        },
        preopens=[{"host": str(tmp_path), "guest": "/out", "read_only": False}],
        export_timeout_ms=1000,
        name="storm",
        blocking=True,
    )
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with provider.get_tracer("t").start_as_current_span("s"):
        pass
    spans = memory.get_finished_spans()
    started = time.monotonic()
    assert exporter.export(spans) == SpanExportResult.FAILURE
    assert time.monotonic() - started < 5
    stats = exporter.stats()
    assert 1 <= stats["retries"] <= 4, stats
    assert (stats["received"], stats["exported"], stats["dropped"]) == (1, 0, 1), stats
    # A flush while another export retries: it gives up at its timeout.
    busy = threading.Thread(target=exporter.export, args=(spans,))
    busy.start()
    # Until that export is under way (counted on entry; it then retries for its 1 s budget):
    # a fixed sleep let a loaded machine flush before it started.
    deadline = time.monotonic() + 5
    while exporter.stats()["received"] < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert exporter.stats()["received"] == 2
    time.sleep(0.05)
    started = time.monotonic()
    assert exporter.force_flush(timeout_millis=200) is False
    assert time.monotonic() - started < 2
    exporter.shutdown(timeout_millis=5000)
    busy.join(timeout=5)
    assert not busy.is_alive()
    stats = exporter.stats()
    assert stats["received"] == stats["exported"] + stats["dropped"] == 2, stats


def test_an_answer_over_max_answer_mib_is_a_fault_of_the_guest(guests):
    """A 10 MiB error string handed to the host past a 4 MiB ``max_answer_mib``: the call is
    refused before the host copies it (fault ``answer limit``), the span counted once."""
    exporter = lens.WasmSpanExporter(
        guests["hostile"],
        settings={"mode": "huge-error"},
        memory_limit_mib=64,
        max_answer_mib=4,
        name="huge-answer",
        blocking=True,
    )
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("t").start_as_current_span("step"):
        pass
    provider.shutdown()
    stats = exporter.stats()
    assert stats["traps"] == {"answer limit": 1}, stats
    assert stats["received"] == 1 and stats["dropped_export_failed"] == 1, stats
