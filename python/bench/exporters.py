"""The Python package against the Python SDK's own exporters, in one run.

Every signal, behind the same Python SDK, to the same places: the Python OTLP/HTTP exporters
(`opentelemetry-exporter-otlp-proto-http`) and `rust-vendor-http.wasm` (the same protobuf over
HTTP, from the sandbox) to a rotel collector on 127.0.0.1; the seed's Python JSON-lines
`SpanExporter` (`benches/python_sdk_baseline.py`) and Lens's Rust and Python JSON-lines guests
to files; a no-op Python exporter (the application's own limit). The wasm span and log
exporters run in their default mode, `delivered` (through Lens's queue, `export()` returning
once the batch is exported), unless marked `hand-off` (returning at once) or `blocking`
(exported on the caller's thread); metric exporters hand off by default; `processor` is
`lens.WasmSpanProcessor`, which needs no SDK batch processor. Subjects alternate within each
run; tables give the median and (min–max) of the runs, ratios are against subjects of the same
run.

- `export()` throughput: batches of 512 spans (or log records) handed to `export()`, until
  `force_flush` returns (a handing-off exporter is timed until the guest has them); metrics:
  `export()` of a collection of 1,000 data points;
- end to end: N spans (4 attributes each) from the application thread through the SDK's
  `BatchSpanProcessor` (or the processor) until `force_flush` returns, spans/s, and the
  application thread's ns per span meanwhile;
- conversion: reading spans into the host's span data (`lens._lens.read_spans`), µs/span.

usage (a release build of the wheel, and `benches/requirements.txt`, in the venv; rotel from
PyPI's `rotel`, or `LENS_ROTEL_BIN`):
    python python/bench/exporters.py [--quick]
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import lens
from lens import _lens
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIST = ROOT / "guest-examples" / "dist"
sys.path.insert(0, str(ROOT / "benches"))
from python_sdk_baseline import JsonLinesExporter  # noqa: E402

QUICK = "--quick" in sys.argv
RUNS = 3 if QUICK else 5


class NoopExporter(SpanExporter):
    """The baseline of the application's own limit: an exporter doing nothing."""

    def export(self, spans):
        return SpanExportResult.SUCCESS


# --- the collector ---------------------------------------------------------------------------


def rotel_command() -> tuple[str, dict[str, str]]:
    """rotel-agent and the environment it runs in. PyPI's binary links against the libpython of
    the interpreter it was installed for; a pyenv-built Python (the 3.13 the NeMo Lens oracle
    needs) keeps that library in its own `LIBDIR`, off the loader's path, so the binary would
    fail with `libpython3.13.so.1.0: cannot open shared object file`: that directory is added
    to `LD_LIBRARY_PATH`. Each candidate is run once (`--version`) before it is used."""
    if os.environ.get("LENS_ROTEL_BIN"):
        return os.environ["LENS_ROTEL_BIN"], dict(os.environ)
    code = (
        "import os, sysconfig, rotel\n"
        "print(os.path.join(os.path.dirname(rotel.__file__), 'rotel-agent'))\n"
        "print(sysconfig.get_config_var('LIBDIR') or '')"
    )
    failed = []
    for python in (sys.executable, "python3"):
        done = subprocess.run([python, "-c", code], capture_output=True, text=True)
        if done.returncode != 0:
            continue
        binary, libdir = (done.stdout.splitlines() + ["", ""])[:2]
        env = dict(os.environ)
        if libdir:
            env["LD_LIBRARY_PATH"] = os.pathsep.join(
                p for p in (libdir, env.get("LD_LIBRARY_PATH", "")) if p
            )
        ran = subprocess.run([binary, "--version"], capture_output=True, text=True, env=env)
        if ran.returncode == 0:
            return binary, env
        failed.append(f"{binary} (for {python}): {(ran.stderr or ran.stdout).strip()}")
    if failed:
        raise SystemExit(
            "rotel is installed but does not run: "
            + "; ".join(failed)
            + ". Install it for another interpreter (`python3 -m pip install rotel`) or set "
            "LENS_ROTEL_BIN to a rotel-agent that runs"
        )
    raise SystemExit("rotel is not installed: pip install rotel (or set LENS_ROTEL_BIN)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def rotel(tmp: pathlib.Path):
    """A rotel collector on 127.0.0.1 that acknowledges and discards; its OTLP/HTTP base URL."""
    grpc, http = free_port(), free_port()
    binary, env = rotel_command()
    stderr = open(tmp / "rotel.stderr", "w")  # noqa: SIM115 (closed in `finally`)
    child = subprocess.Popen(
        [binary, "start", "--otlp-grpc-endpoint", f"127.0.0.1:{grpc}",
         "--otlp-http-endpoint", f"127.0.0.1:{http}", "--exporter", "blackhole",
         "--pid-file", str(tmp / "rotel.pid"), "--log-file", str(tmp / "rotel.log")],
        stdout=subprocess.DEVNULL, stderr=stderr, env=env,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", http)) == 0:
                    break
            if child.poll() is not None:
                said = (tmp / "rotel.stderr").read_text().strip()
                raise SystemExit(f"rotel exited ({child.returncode}): {said}")
            if time.monotonic() > deadline:
                raise SystemExit(f"rotel did not listen on 127.0.0.1:{http} within 20 s")
            time.sleep(0.05)
        yield f"127.0.0.1:{http}"
    finally:
        child.kill()
        child.wait()
        stderr.close()


# --- the subjects ----------------------------------------------------------------------------


#: Deep enough for everything a run hands off (40 × 512 in `export()`, 100,000 spans end to end,
#: as the SDK's processor gets `max_queue_size=n`): a measurement that dropped some would flatter
#: the exporter; `checked` refuses one.
QUEUE = 131_072


def wasm(cls, file: str, settings: dict, out: pathlib.Path, **kw):
    if cls is not lens.WasmMetricExporter:
        kw.setdefault("max_queue_size", QUEUE)
    return cls(
        DIST / file,
        settings=settings,
        preopens=[{"host": str(out), "guest": "/out", "read_only": False}],
        call_timeout_ms=60_000,
        **kw,
    )


def checked(exporter, shut_down: bool = False) -> None:
    """Shuts `exporter` down (unless its provider did); a Lens exporter must have exported
    everything it received."""
    if not hasattr(exporter, "stats"):
        if not shut_down:
            exporter.shutdown()
        return
    exporter.shutdown()  # idempotent
    stats = exporter.stats()
    if stats["dropped"] or stats["exported"] != stats["received"]:
        raise SystemExit(f"{exporter!r} dropped items: {stats}")


def vendor(cls, collector: str, out: pathlib.Path, **kw):
    return wasm(
        cls,
        "rust-vendor-http.wasm",
        {"endpoint": f"http://{collector}"},
        out,
        allowed_hosts=[collector],
        **kw,
    )


def span_subjects(out: pathlib.Path, collector: str) -> dict:
    """Fresh span exporters (`processor`: a `WasmSpanProcessor`, end to end only)."""
    jsonl = {"path": "/out/rust.jsonl"}
    return {
        "Python OTLP/HTTP": OTLPSpanExporter(endpoint=f"http://{collector}/v1/traces"),
        "Python JSON-lines (the seed)": JsonLinesExporter(out / "python.jsonl"),
        "Python no-op": NoopExporter(),
        "wasm vendor-http": vendor(lens.WasmSpanExporter, collector, out),
        "wasm vendor-http, hand-off": vendor(
            lens.WasmSpanExporter, collector, out, mode="hand-off"
        ),
        "wasm vendor-http, blocking": vendor(lens.WasmSpanExporter, collector, out, blocking=True),
        "wasm Rust JSON-lines": wasm(lens.WasmSpanExporter, "rust-jsonl.wasm", jsonl, out),
        "wasm Rust JSON-lines, processor": wasm(
            lens.WasmSpanProcessor, "rust-jsonl.wasm", {"path": "/out/rustp.jsonl"}, out
        ),
        "wasm Python JSON-lines": wasm(
            lens.WasmSpanExporter, "python-jsonl.wasm", {"path": "/out/py.jsonl"}, out
        ),
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


def points(n: int):
    """A collection of `n` data points: a counter with `n` attribute sets."""
    reader = InMemoryMetricReader()
    counter = MeterProvider(metric_readers=[reader]).get_meter("bench").create_counter("tokens")
    for i in range(n):
        counter.add(i + 1, {"rank": i, "phase": "train"})
    return reader.get_metrics_data()


def log_records(n: int) -> list:
    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    logger = provider.get_logger("bench")
    for i in range(n):
        logger.emit(body=f"step {i} done", attributes={"step": i, "phase": "train"})
    return list(memory.get_finished_logs())


# --- the measurements ------------------------------------------------------------------------


def throughput(exporter, batch, items: int, calls: int) -> float:
    """Items/s through `export()` until `force_flush` returns."""
    exporter.export(batch)  # warm: the guest's first batch initialises it with the resource
    exporter.force_flush()
    started = time.perf_counter()
    for _ in range(calls):
        exporter.export(batch)
    exporter.force_flush()
    return calls * items / (time.perf_counter() - started)


def end_to_end(subject, n: int) -> tuple[float, float]:
    """(spans/s until flushed, application-thread ns per span)."""
    provider = TracerProvider()
    if isinstance(subject, lens.WasmSpanProcessor):
        provider.add_span_processor(subject)
    else:
        provider.add_span_processor(
            BatchSpanProcessor(subject, max_queue_size=n, max_export_batch_size=512)
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


def ratio(values: list[float], base: list[float]) -> str:
    """The median of the per-run ratios, and their range."""
    r = [v / b for v, b in zip(values, base, strict=True)]
    return f"{statistics.median(r):.2f} ({min(r):.2f}–{max(r):.2f})"


def table(title: str, unit: str, results: dict, bases: list[str]) -> None:
    print(f"\n{title}\n")
    print(f"| subject | {unit} | " + " | ".join(f"× {b}" for b in bases) + " |")
    print("|---|---:|" + "---:|" * len(bases))
    for name, values in results.items():
        cells = [ratio(values, results[b]) for b in bases]
        print(f"| {name} | {spread(values)} | " + " | ".join(cells) + " |")


def main() -> None:
    spans = ended_spans(512)
    collection = points(1000)
    records = log_records(512)
    calls = 10 if QUICK else 40
    n = 20_000 if QUICK else 100_000
    span_tp: dict[str, list[float]] = {}
    e2e: dict[str, list[float]] = {}
    app: dict[str, list[float]] = {}
    metric_tp: dict[str, list[float]] = {}
    log_tp: dict[str, list[float]] = {}
    convert: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, rotel(pathlib.Path(tmp)) as collector:
        out = pathlib.Path(tmp)
        for _ in range(RUNS):
            for name, subject in span_subjects(out, collector).items():
                # `export()` of the no-op costs nothing; the processor has none.
                if not isinstance(subject, (lens.WasmSpanProcessor, NoopExporter)):
                    span_tp.setdefault(name, []).append(throughput(subject, spans, 512, calls))
                checked(subject)
            for name, subject in span_subjects(out, collector).items():
                rate, ns = end_to_end(subject, n)
                e2e.setdefault(name, []).append(rate)
                app.setdefault(name, []).append(ns)
                checked(subject, shut_down=True)
            # Blocking: a reader hands over one collection per interval and the hand-off
            # queue holds 4; back to back, the guest's own rate is what is measured.
            for name, exporter in {
                "Python OTLP/HTTP": OTLPMetricExporter(endpoint=f"http://{collector}/v1/metrics"),
                "wasm vendor-http, blocking": vendor(
                    lens.WasmMetricExporter, collector, out, blocking=True
                ),
                "wasm Rust JSON-lines, blocking": wasm(
                    lens.WasmMetricExporter,
                    "rust-jsonl.wasm",
                    {"path": "/out/m.jsonl"},
                    out,
                    blocking=True,
                ),
            }.items():
                metric_tp.setdefault(name, []).append(throughput(exporter, collection, 1000, calls))
                checked(exporter)
            for name, exporter in {
                "Python OTLP/HTTP": OTLPLogExporter(endpoint=f"http://{collector}/v1/logs"),
                "wasm vendor-http": vendor(lens.WasmLogExporter, collector, out),
                "wasm vendor-http, hand-off": vendor(
                    lens.WasmLogExporter, collector, out, mode="hand-off"
                ),
                "wasm vendor-http, blocking": vendor(
                    lens.WasmLogExporter, collector, out, blocking=True
                ),
                "wasm Rust JSON-lines": wasm(
                    lens.WasmLogExporter, "rust-jsonl.wasm", {"path": "/out/l.jsonl"}, out
                ),
            }.items():
                log_tp.setdefault(name, []).append(throughput(exporter, records, 512, calls))
                checked(exporter)
            convert.append(conversion(spans, calls))
    print(
        f"Python {sys.version.split()[0]}, opentelemetry-sdk and exporters as installed, "
        f"{RUNS} runs, {os.cpu_count()} cores"
    )
    otlp, seed, noop = "Python OTLP/HTTP", "Python JSON-lines (the seed)", "Python no-op"
    table("Spans: `export()` of 512, until flushed", "spans/s", span_tp, [otlp, seed])
    table("Spans end to end", "spans/s", e2e, [otlp, seed, noop])
    table("Application thread", "ns/span", app, [noop])
    table("Metrics: `export()` of 1,000 points", "points/s", metric_tp, [otlp])
    table("Logs: `export()` of 512 records, until flushed", "records/s", log_tp, [otlp])
    print(
        f"\nconversion (ReadableSpan → span data): {statistics.median(convert):.2f} µs/span "
        f"({min(convert):.2f}–{max(convert):.2f})"
    )


if __name__ == "__main__":
    main()
