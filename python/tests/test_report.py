"""``python -m lens report``: a run written by Python ranks drawn as a page and a Perfetto file.

Two ways a Python job writes its run folder: the plain OpenTelemetry SDK's console exporters on
one line per item (what NeMo Lens's console exporters write since 0.2.0), and NeMo Lens ranks
sending through the sandbox's JSON-lines guest (``lens.WasmSpanExporter``, marker ``nemo``)."""

from __future__ import annotations

import json
import logging
import pathlib
import re
import subprocess
import sys

import lens
import pytest
from conftest import ROOT
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import ConsoleLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor


def page_data(page: pathlib.Path) -> dict:
    """The data block the page's script draws."""
    text = page.read_text()
    found = re.search(r'<script type="application/json" id="lens-data">(.*?)</script>', text, re.S)
    assert found, "no data block"
    return json.loads(found.group(1))


def console_rank(out: pathlib.Path, rank: int, steps: int, slow: bool) -> None:
    """One rank on the plain SDK, its console exporter writing one JSON object per line."""
    with open(out / f"rank-{rank}.jsonl", "w") as f:
        exporter = ConsoleSpanExporter(out=f, formatter=lambda s: s.to_json(indent=None) + "\n")
        provider = TracerProvider(resource=Resource.create({"dl.rank": rank}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("trainer")
        for i in range(steps):
            with tracer.start_as_current_span("train_step") as span:
                span.set_attribute("dl.iteration", i)
                with tracer.start_as_current_span("forward"):
                    # A busy wait: the slow rank's steps take visibly longer.
                    n = 60_000 if slow else 20_000
                    sum(range(n))
        provider.shutdown()


def console_metrics_and_logs(out: pathlib.Path, rank: int) -> None:
    """The rank's metrics and log records through the SDK's console exporters, one line each."""
    resource = Resource.create({"dl.rank": rank})
    with open(out / f"rank-{rank}.metrics.jsonl", "w") as f:
        exporter = ConsoleMetricExporter(out=f, formatter=lambda m: m.to_json(indent=None) + "\n")
        reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
        meters = MeterProvider(resource=resource, metric_readers=[reader])
        loss = meters.get_meter("trainer").create_histogram("train.loss")
        for i in range(3):
            loss.record(1.0 / (i + 1))
            reader.collect()
        meters.shutdown()
    with open(out / f"rank-{rank}.logs.jsonl", "w") as f:
        exporter = ConsoleLogRecordExporter(
            out=f, formatter=lambda r: r.to_json(indent=None) + "\n"
        )
        logs = LoggerProvider(resource=resource)
        logs.add_log_record_processor(SimpleLogRecordProcessor(exporter))
        handler = logging.getLogger(f"trainer-{rank}")
        # The SDK's own handler (deprecated in favour of the instrumentation package's, which
        # this venv does not have): the record is the same.
        handler.addHandler(LoggingHandler(logger_provider=logs))
        handler.warning("loss spiked on rank %d", rank)
        logs.shutdown()


def test_a_plain_sdk_run_is_drawn_and_its_straggler_flagged(tmp_path):
    for rank in range(4):
        console_rank(tmp_path, rank, steps=25, slow=rank == 2)
    console_metrics_and_logs(tmp_path, 1)
    done = subprocess.run(
        [sys.executable, "-m", "lens", "report", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "4 ranks, 200 spans; stragglers: 2; crashed: none" in done.stdout, done.stdout
    data = page_data(tmp_path / "report.html")
    assert [lane["rank"] for lane in data["lanes"]] == [0, 1, 2, 3]
    assert [lane["steps"] for lane in data["lanes"]] == [25] * 4
    assert data["distribution"]["stragglers"] == [2]
    assert data["skipped"] == []
    assert [m["name"] for m in data["metrics"]] == ["train.loss"]
    # The histogram's mean, cumulative: 1, then (1 + 1/2) / 2, then (1 + 1/2 + 1/3) / 3.
    assert data["metrics"][0]["median"][-1] == pytest.approx(11 / 18)
    assert data["logs"]["counts"] == {"WARN": 1}
    assert data["logs"]["rows"][0][1:4] == [1, "WARN", "loss spiked on rank 1"]
    # Each forward pass is drawn under its step.
    assert all({s[2] for s in lane["spans"]} == {0, 1} for lane in data["lanes"])


def test_the_perfetto_file_and_the_errors_from_python(tmp_path):
    console_rank(tmp_path, 0, steps=5, slow=False)
    written = lens.report(tmp_path, perfetto=True)
    assert (written["ranks"], written["spans"]) == (1, 10)
    trace = json.loads(pathlib.Path(written["path"]).read_text())
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(events) == 10 and {e["name"] for e in events} == {"train_step", "forward"}
    with pytest.raises(ValueError, match="cannot read the run folder"):
        lens.report(tmp_path / "absent")
    done = subprocess.run(
        [sys.executable, "-m", "lens", "report", str(tmp_path / "absent")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stderr.startswith("error: cannot read the run folder")


NEMO_RANK = """
import sys
from nemo.lens import NemoLensConfig, setup_telemetry
import lens

wasm, out, rank, world = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
exporter = lens.WasmSpanExporter(
    wasm,
    settings={"path": "/out/rank-{dl.rank}.jsonl"},
    preopens=[{"host": out, "guest": "/out", "read_only": False}],
)
config = NemoLensConfig(enabled=True, metrics_enabled=False, export_strategy="all_ranks")
handle = setup_telemetry(config, rank=rank, world_size=world, span_exporter=exporter)
for i in range(40):
    with handle.tracer.start_as_current_span("step") as span:
        span.set_attribute("i", i)
        with handle.tracer.start_as_current_span("forward_backward"):
            pass
handle.shutdown()
"""


@pytest.mark.nemo
def test_nemo_lens_ranks_through_the_sandbox_are_drawn(tmp_path):
    wasm = ROOT / "guest-examples" / "dist" / "rust-jsonl.wasm"
    assert wasm.is_file(), "run guest-examples/build.sh"
    for rank in range(2):
        done = subprocess.run(
            [sys.executable, "-c", NEMO_RANK, str(wasm), str(tmp_path), str(rank), "2"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
    written = lens.report(tmp_path)
    assert (written["ranks"], written["spans"]) == (2, 160), written
    data = page_data(tmp_path / "report.html")
    assert [(lane["rank"], lane["steps"]) for lane in data["lanes"]] == [(0, 40), (1, 40)]
