"""One exporter class, unsandboxed and sandboxed, in one run.

The class is `SpanLines` of `guest-examples/python-jsonl/app.py` (a JSON line per span into a
file). Unsandboxed: imported into this Python rank as it is (its registration line, which only
means something inside a component, stubbed) and run by the Python SDK's `BatchSpanProcessor`.
Sandboxed: the same file built into `python-jsonl.wasm` on the Python guest SDK and run by
`lens.WasmSpanProcessor` (or `lens.WasmSpanExporter`) in the same rank; beside it the
JavaScript SDK's JSON-lines exporter (`js-jsonl.wasm`, the same lines on stdout, which the
benchmark does not forward). Subjects alternate within each run; the tables give the median and
(min–max) of the runs, ratios against the unsandboxed class of the same run. No subject may
drop a span (a measurement that dropped some would flatter it).

- end to end: N spans (4 attributes each) from the application thread until `force_flush`
  returns, spans/s;
- `export()`: batches of 512 ended spans handed to the exporter until `force_flush` returns,
  spans/s (the sandboxed exporter hands each batch off: it is timed until the guest has
  exported them).

usage (a release build of the wheel and `benches/requirements.txt` in the venv):
    python python/bench/same_class.py [--quick]
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import statistics
import sys
import tempfile
import types

import lens
from exporters import DIST, QUEUE, QUICK, ROOT, RUNS, end_to_end, ended_spans, throughput
from opentelemetry.sdk.resources import Resource


def the_class():
    """`SpanLines` from the Python guest's own source, its registration stubbed."""
    stub = types.ModuleType("lens_exporter_sdk")
    stub.span_exporter = stub.metric_exporter = stub.log_exporter = lambda factory: factory
    sys.modules["lens_exporter_sdk"] = stub
    path = ROOT / "guest-examples" / "python-jsonl" / "app.py"
    spec = importlib.util.spec_from_file_location("python_jsonl_app", path)
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    del sys.modules["lens_exporter_sdk"]
    return app.SpanLines


SPAN_LINES = the_class()


class Settings(dict):
    """What the guest SDK hands the factory: the settings, with the rank's resource."""

    def __init__(self, pairs, resource):
        super().__init__(pairs)
        self.resource = resource


def native(out: pathlib.Path, name: str):
    return SPAN_LINES(Settings({"path": str(out / name)}, Resource({"dl.rank": 0})))


def sandboxed(cls, out: pathlib.Path, file: str, name: str | None, lanes: int):
    settings = {"path": f"/out/{name}"} if name else {}
    return cls(
        DIST / file,
        settings=settings,
        preopens=[{"host": str(out), "guest": "/out", "read_only": False}],
        call_timeout_ms=60_000,
        max_queue_size=QUEUE,
        max_concurrent_exports=lanes,
        forward_stdio=False,
    )


def subjects(out: pathlib.Path, processor: bool) -> dict:
    cls = lens.WasmSpanProcessor if processor else lens.WasmSpanExporter
    return {
        "unsandboxed (SDK BatchSpanProcessor)": native(out, "native.jsonl"),
        "sandboxed, Python SDK, 1 instance": sandboxed(
            cls, out, "python-jsonl.wasm", "p1.jsonl", 1
        ),
        "sandboxed, Python SDK, 2 instances": sandboxed(
            cls, out, "python-jsonl.wasm", "p2.jsonl", 2
        ),
        "sandboxed, JavaScript SDK, 2 instances": sandboxed(cls, out, "js-jsonl.wasm", None, 2),
    }


def checked(subject) -> None:
    if hasattr(subject, "stats"):
        subject.shutdown()
        stats = subject.stats()
        if stats["dropped"] or stats["exported"] != stats["received"]:
            raise SystemExit(f"{subject!r} dropped spans: {stats}")
    else:
        subject.shutdown()


def table(title: str, results: dict) -> None:
    base = results["unsandboxed (SDK BatchSpanProcessor)"]
    print(f"\n{title}\n\n| subject | spans/s | × unsandboxed |\n|---|---:|---:|")
    for name, values in results.items():
        r = [v / b for v, b in zip(values, base, strict=True)]
        print(
            f"| {name} | {statistics.median(values):,.0f} ({min(values):,.0f}–"
            f"{max(values):,.0f}) | {statistics.median(r):.2f} ({min(r):.2f}–{max(r):.2f}) |"
        )


def main() -> None:
    n = 20_000 if QUICK else 60_000
    calls = 10 if QUICK else 30
    batch = ended_spans(512)
    e2e: dict[str, list[float]] = {}
    exported: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp)
        for _ in range(RUNS):
            for name, subject in subjects(out, processor=True).items():
                e2e.setdefault(name, []).append(end_to_end(subject, n)[0])
                checked(subject)
            for name, subject in subjects(out, processor=False).items():
                exported.setdefault(name, []).append(throughput(subject, batch, 512, calls))
                checked(subject)
    print(
        f"Python {sys.version.split()[0]}, {RUNS} runs, {os.cpu_count()} cores, "
        f"class {SPAN_LINES.__module__}.{SPAN_LINES.__name__}"
    )
    table(f"End to end: {n:,} spans until flushed", e2e)
    table(f"`export()`: {calls} batches of 512 until flushed", exported)


if __name__ == "__main__":
    main()
