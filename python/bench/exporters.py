"""The Python package against the seed's stack, in one run.

Exporters behind the same Python SDK: the seed's Python JSON-lines `SpanExporter`
(`benches/python_sdk_baseline.py`), a no-op Python exporter (the application's own limit),
`lens.WasmSpanExporter` with Lens's built-in Rust JSON-lines guest (handing off, and with
`blocking=True`), and with the Python JSON-lines guest (componentize-py). Each measurement is
repeated, the subjects alternated; the table gives the median and the spread, and every ratio
is against the Python exporter measured in the same run.

- exporter throughput: `export()` of a batch of 512 `ReadableSpan`s, until `force_flush`
  returns (a handing-off exporter is timed until the guest has the spans), spans/s;
- end to end: N spans from the application thread through `BatchSpanProcessor` into the file,
  until `force_flush` returns, spans/s;
- application thread: ns per span (start, 4 attributes, end) while the processor exports;
- conversion: reading the spans into the host's span data (`lens._lens.read_spans`), µs/span.

usage: python python/bench/exporters.py [--quick]   (with a release build of the wheel)
"""

from __future__ import annotations

import os
import pathlib
import statistics
import sys
import tempfile
import threading
import time

import lens
from lens import _lens
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benches"))
from python_sdk_baseline import JsonLinesExporter  # noqa: E402

QUICK = "--quick" in sys.argv
RUNS = 3 if QUICK else 5


def guest(name: str, out: pathlib.Path, file: str, **kw) -> lens.WasmSpanExporter:
    return lens.WasmSpanExporter(
        ROOT / "guest-examples" / "dist" / name,
        settings={"path": f"/out/{file}"},
        preopens=[{"host": str(out), "guest": "/out", "read_only": False}],
        call_timeout_ms=60_000,
        **kw,
    )


class NoopExporter(SpanExporter):
    """The baseline of the application's own limit: an exporter doing nothing."""

    def export(self, spans):
        return SpanExportResult.SUCCESS


def subjects(out: pathlib.Path) -> dict:
    """Fresh exporters writing into `out`."""
    return {
        "python": JsonLinesExporter(out / "python.jsonl"),
        "python-noop": NoopExporter(),
        "wasm-rust": guest("rust-jsonl.wasm", out, "rust.jsonl"),
        "wasm-rust-blocking": guest("rust-jsonl.wasm", out, "rustb.jsonl", blocking=True),
        "wasm-python": guest("python-jsonl.wasm", out, "pyguest.jsonl"),
    }


def one_span(tracer, i: int) -> None:
    with tracer.start_as_current_span("step") as s:
        s.set_attribute("step", i)
        s.set_attribute("loss", 1.0 / (1 + i))
        s.set_attribute("phase", "train")
        s.set_attribute("ok", True)


def ended_spans(n: int) -> list:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("bench")
    for i in range(n):
        one_span(tracer, i)
    return list(memory.get_finished_spans())


def exporter_throughput(exporter, batch, calls: int) -> float:
    """Spans/s through `export()` until `force_flush` returns: a handing-off exporter is
    timed until the guest has the spans, not until they are queued."""
    exporter.export(batch)  # warm: the guest's first batch initialises it with the resource
    exporter.force_flush()
    started = time.perf_counter()
    for _ in range(calls):
        exporter.export(batch)
    exporter.force_flush()
    return calls * len(batch) / (time.perf_counter() - started)


def end_to_end(exporter, n: int) -> tuple[float, float]:
    """(spans/s until flushed, application-thread ns per span)."""
    provider = TracerProvider()
    provider.add_span_processor(
        BatchSpanProcessor(exporter, max_queue_size=n, max_export_batch_size=512)
    )
    tracer = provider.get_tracer("bench")
    started = time.perf_counter()
    for i in range(n):
        one_span(tracer, i)
    app = time.perf_counter() - started
    provider.force_flush()
    total = time.perf_counter() - started
    provider.shutdown()
    return n / total, app / n * 1e9


def conversion(batch, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        _lens.read_spans(batch)
    return (time.perf_counter() - started) / (calls * len(batch)) * 1e6


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}–{max(values):,.0f})"


def main() -> None:
    batch = ended_spans(512)
    calls = 10 if QUICK else 40
    n = 20_000 if QUICK else 100_000
    throughput: dict[str, list[float]] = {}
    e2e: dict[str, list[float]] = {}
    app: dict[str, list[float]] = {}
    convert: list[float] = []
    for _ in range(RUNS):
        with tempfile.TemporaryDirectory() as tmp:
            out = pathlib.Path(tmp)
            for name, exporter in subjects(out).items():
                throughput.setdefault(name, []).append(exporter_throughput(exporter, batch, calls))
                exporter.shutdown()
            for name, exporter in subjects(out).items():
                rate, ns = end_to_end(exporter, n)
                e2e.setdefault(name, []).append(rate)
                app.setdefault(name, []).append(ns)
        convert.append(conversion(batch, calls))
    base = {
        k: statistics.median(v)
        for k, v in (("tp", throughput["python"]), ("e2e", e2e["python"]), ("app", app["python"]))
    }
    print(
        f"Python {sys.version.split()[0]}, {RUNS} runs, {os.cpu_count()} cores, "
        f"threads alive {threading.active_count()}\n"
    )
    print(
        "| exporter | export() of 512 spans, spans/s | × Python | end to end, spans/s | × Python "
        "| application thread, ns/span | × Python |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in throughput:
        tp, ee, ap = (
            statistics.median(throughput[name]),
            statistics.median(e2e[name]),
            statistics.median(app[name]),
        )
        print(
            f"| {name} | {spread(throughput[name])} | {tp / base['tp']:.2f} "
            f"| {spread(e2e[name])} | {ee / base['e2e']:.2f} "
            f"| {spread(app[name])} | {ap / base['app']:.2f} |"
        )
    print(
        f"\nconversion (ReadableSpan → span data): {statistics.median(convert):.2f} µs/span "
        f"({min(convert):.2f}–{max(convert):.2f})"
    )


if __name__ == "__main__":
    main()
