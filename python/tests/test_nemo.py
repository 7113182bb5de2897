"""With the real NeMo Lens (`nemo-lens` 0.1.0, Python 3.13): `setup_telemetry(...,
span_exporter=lens.WasmSpanExporter(...))` delivers every span of an exporting rank to the guest,
and nothing from a non-exporting one. Each rank is its own process, as in a job."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import recorded

pytestmark = pytest.mark.nemo

RANK = """
import json, sys
from nemo.lens import NemoLensConfig, setup_telemetry
import lens

recorder, out, rank, world = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
exporter = lens.WasmSpanExporter(
    recorder,
    settings={"out": "/out/batches.jsonl", "encoding": "typed"},
    preopens=[{"host": out, "guest": "/out", "read_only": False}],
)
# NeMo Lens's defaults otherwise: single_rank, the last rank exports.
config = NemoLensConfig(enabled=True, metrics_enabled=False, run_id="job-7")
handle = setup_telemetry(config, rank=rank, world_size=world, span_exporter=exporter)
for i in range(300):
    with handle.tracer.start_as_current_span("step") as span:
        span.set_attribute("i", i)
handle.shutdown()
print(json.dumps({"is_exporting": handle.is_exporting, "stats": exporter.stats()}))
"""


def run_rank(guests, out, rank: int, world: int) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", RANK, guests["recorder"], str(out), str(rank), str(world)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_an_exporting_rank_delivers_every_span_to_the_guest(guests, tmp_path):
    result = run_rank(guests, tmp_path, rank=3, world=4)
    assert result["is_exporting"] is True
    assert result["stats"]["exported"] == result["stats"]["received"] == 300
    lines = recorded(tmp_path)
    spans = [s for line in lines if "typed" in line for s in line["typed"]]
    assert sorted(s["attributes"]["i"]["s64"] for s in spans) == list(range(300))
    assert all(s["scope"] == "nemo.lens" for s in spans), {s["scope"] for s in spans}
    # The guest was initialised again with the spans' resource: NeMo Lens's.
    resource = [line["init"]["resource"] for line in lines if "init" in line][-1]
    assert resource["nemo.run.id"] == {"string": "job-7"}
    assert resource["dl.rank"] == {"s64": 3}
    assert resource["service.instance.id"] == {"string": "job-7-rank3"}


def test_a_non_exporting_rank_sends_the_guest_nothing(guests, tmp_path):
    result = run_rank(guests, tmp_path, rank=0, world=4)
    assert result["is_exporting"] is False
    assert result["stats"]["received"] == 0
    assert [line for line in recorded(tmp_path) if "init" not in line] == []


SIGNALS_RANK = """
import json, logging, sys
from nemo.lens import NemoLensConfig, setup_telemetry
from nemo.lens.logging_bridge import setup_logging_bridge
from opentelemetry._logs import get_logger_provider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
import lens

recorder, out = sys.argv[1], sys.argv[2]
def wasm(cls, name):
    return cls(
        recorder,
        settings={"out": f"/out/{name}.jsonl", "encoding": "typed"},
        preopens=[{"host": out, "guest": "/out", "read_only": False}],
        name=name,
    )
metrics = wasm(lens.WasmMetricExporter, "metrics")
logs = wasm(lens.WasmLogExporter, "logs")
config = NemoLensConfig(enabled=True, logs_enabled=True, exporter="console", run_id="job-9")
handle = setup_telemetry(
    config, rank=0, world_size=1,
    metric_reader=PeriodicExportingMetricReader(metrics, export_interval_millis=3_600_000),
)
get_logger_provider().add_log_record_processor(BatchLogRecordProcessor(logs))
setup_logging_bridge("train", logging.INFO)
log = logging.getLogger("train")
log.setLevel(logging.INFO)
steps = handle.meter.create_counter("train.steps")
for i in range(25):
    with handle.tracer.start_as_current_span("step"):
        steps.add(1, {"phase": "train"})
        log.info("step %d", i)
handle.shutdown()
get_logger_provider().shutdown()
print(json.dumps({"metrics": metrics.stats(), "logs": logs.stats()}))
"""


def test_nemo_lens_metrics_and_logs_reach_the_sandbox(guests, tmp_path):
    """`metric_reader=PeriodicExportingMetricReader(lens.WasmMetricExporter(...))` and NeMo Lens's
    logs signal (its logger provider, its logging bridge) into `lens.WasmLogExporter`."""
    done = subprocess.run(
        [sys.executable, "-c", SIGNALS_RANK, guests["recorder"], str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout.splitlines()[-1])
    for signal in ("metrics", "logs"):
        s = stats[signal]
        assert s["received"] == s["exported"] > 0 and s["dropped"] == 0, (signal, s)
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    points = [
        p
        for line in lines
        if "metrics" in line
        for m in line["metrics"]
        if m["name"] == "train.steps"
        for p in m["points"]
    ]
    assert points and points[-1]["value"] == {"s64": 25}, points
    resource = [line["init"]["resource"] for line in lines if "init" in line][-1]
    assert resource["nemo.run.id"] == {"string": "job-9"}
    records = [
        r
        for x in (tmp_path / "logs.jsonl").read_text().splitlines()
        for r in json.loads(x).get("logs", [])
    ]
    bodies = sorted(r["body"]["string"] for r in records if r["scope"] == "train")
    assert bodies == sorted(f"step {i}" for i in range(25)), bodies
    assert all(r["trace_id"] for r in records if r["scope"] == "train")
