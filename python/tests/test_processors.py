"""Sandboxed processors in Python ranks: the `processors` keyword (and a config file's
`[[traces.processors]]`) runs components on each batch (spans, log records) or collection
(metrics) before the exporter, in Lens's hand-off queue, with the accounting of a Rust rank:
with the real NeMo Lens, and standalone."""

from __future__ import annotations

import json
import subprocess
import sys

import lens
import pytest
from conftest import recorded, recorder
from opentelemetry.sdk.trace import TracerProvider


def processors(guests, names="noise", keys="gen_ai.prompt", redact_fault="drop"):
    """A filter dropping the items named `names` (spans by name, log records by severity), then
    a redaction of the attribute `keys`."""
    return [
        {
            "path": guests["processor"],
            "name": "quiet",
            "settings": {"mode": "filter", "names": names},
        },
        {
            "path": guests["processor"],
            "name": "redact",
            "settings": {"mode": "redact", "keys": keys},
            "on_fault": redact_fault,
        },
    ]


def run_rank(script, *args):
    """Runs `script` (a rank) in a child interpreter with `args`: the JSON it printed on the
    line marked `RESULT` (a console exporter may share its stdout)."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    marked = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    return json.loads(marked[-1].removeprefix("RESULT "))


def recorded_spans(out):
    return [s for line in recorded(out) if "typed" in line for s in line["typed"]]


def check(spans, stats, n):
    """`n` spans ended, every third `noise` (dropped), every third a chat with a prompt."""
    chats = n // 3
    assert len(spans) == n - n // 3
    assert not any(s["name"] == "noise" for s in spans)
    assert not any("gen_ai.prompt" in s["attributes"] for s in spans)
    redacted = [s for s in spans if s["attributes"].get("lens.redacted") == {"bool": True}]
    assert len(redacted) == chats and all(s["name"] == "gen_ai.chat" for s in redacted)
    assert stats["received"] == n
    assert stats["exported"] == n - n // 3
    assert stats["dropped_processor"] == n // 3 == stats["dropped"]
    assert stats["processors"] == {
        "quiet": {"dropped": n // 3, "faults": 0},
        "redact": {"dropped": 0, "faults": 0},
    }


def end_spans(tracer, n):
    for i in range(n):
        name = ["gen_ai.chat", "step", "noise"][i % 3]
        with tracer.start_as_current_span(name) as span:
            if name == "gen_ai.chat":
                span.set_attribute("gen_ai.prompt", f"secret {i}")


RANK = """
import json, sys
from nemo.lens import NemoLensConfig, setup_telemetry
import lens

recorder, out, processors = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
exporter = lens.WasmSpanExporter(
    recorder,
    settings={"out": "/out/batches.jsonl", "encoding": "typed"},
    preopens=[{"host": out, "guest": "/out", "read_only": False}],
    processors=processors,
)
config = NemoLensConfig(enabled=True, metrics_enabled=False, run_id="job-9")
handle = setup_telemetry(config, rank=0, world_size=1, span_exporter=exporter)
for i in range(300):
    name = ["gen_ai.chat", "step", "noise"][i % 3]
    with handle.tracer.start_as_current_span(name) as span:
        if name == "gen_ai.chat":
            span.set_attribute("gen_ai.prompt", f"secret {i}")
handle.shutdown()
print("RESULT", json.dumps(exporter.stats()))
"""


@pytest.mark.nemo
def test_a_nemo_lens_rank_filters_and_redacts_before_its_sandboxed_exporter(guests, tmp_path):
    stats = run_rank(RANK, guests["recorder"], str(tmp_path), json.dumps(processors(guests)))
    check(recorded_spans(tmp_path), stats, 300)


def config_file(guests, out, tmp_path, applies_to):
    path = tmp_path / "lens.toml"
    path.write_text(
        f"""
[[traces.exporters]]
kind = "wasm"
name = "vendor"
path = "{guests["recorder"]}"
settings = {{ out = "/out/batches.jsonl", encoding = "typed" }}
preopens = [{{ host = "{out}", guest = "/out", read_only = false }}]

[[traces.exporters]]
kind = "console"
name = "local"

[[traces.processors]]
kind = "wasm"
name = "quiet"
path = "{guests["processor"]}"
settings = {{ mode = "filter", names = "noise" }}
exporters = ["{applies_to}"]

[[traces.processors]]
kind = "wasm"
name = "redact"
path = "{guests["processor"]}"
settings = {{ mode = "redact", keys = "gen_ai.prompt" }}
on_fault = "drop"
"""
    )
    return path


def from_config_run(guests, tmp_path, applies_to, n):
    """The `vendor` entry of `config_file` (its filter applying to `applies_to`) fed `n` spans
    through the SDK's batch processor; the exporter, and its output folder."""
    out = tmp_path / applies_to
    out.mkdir()
    config = config_file(guests, out, tmp_path, applies_to)
    exporter = lens.WasmSpanExporter.from_config(config, "vendor")
    provider = TracerProvider()
    provider.add_span_processor(lens_batch(exporter))
    end_spans(provider.get_tracer("t"), n)
    provider.shutdown()
    return exporter, out


def test_from_config_runs_the_file_s_processors_that_apply_to_the_entry(guests, tmp_path):
    exporter, out = from_config_run(guests, tmp_path, "vendor", 60)
    check(recorded_spans(out), exporter.stats(), 60)
    # A filter for another exporter is not this one's.
    exporter, _ = from_config_run(guests, tmp_path, "local", 30)
    assert exporter.stats()["processors"] == {"redact": {"dropped": 0, "faults": 0}}
    assert exporter.stats()["exported"] == 30


def lens_batch(exporter):
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    return BatchSpanProcessor(exporter)


def test_a_faulting_processor_passes_the_batch_on_or_drops_it(guests, tmp_path):
    for on_fault, exported in (("pass", 12), ("drop", 0)):
        exporter = recorder(
            guests,
            tmp_path,
            "typed",
            cls=lens.WasmSpanProcessor,
            processors=[
                {
                    "path": guests["processor"],
                    "name": "broken",
                    "settings": {"mode": "trap"},
                    "on_fault": on_fault,
                }
            ],
        )
        provider = TracerProvider()
        provider.add_span_processor(exporter)
        end_spans(provider.get_tracer("t"), 12)
        provider.shutdown()
        stats = exporter.stats()
        assert stats["received"] == 12
        assert stats["exported"] == exported
        assert stats["dropped_processor"] == 12 - exported
        assert stats["processor_faults"] == 12
        assert stats["processors"]["broken"]["faults"] == 12


def test_a_log_exporter_runs_its_processors_before_the_guest(guests, tmp_path):
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

    exporter = recorder(
        guests,
        tmp_path,
        "typed",
        cls=lens.WasmLogExporter,
        processors=processors(guests, names="DEBUG", keys="user.email", redact_fault="pass"),
    )
    provider = LoggerProvider()
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
    logger = provider.get_logger("train")
    for i in range(30):
        severity = "DEBUG" if i % 3 == 0 else "INFO"
        logger.emit(
            body=f"record {i}", severity_text=severity, attributes={"user.email": f"u{i}@x"}
        )
    provider.shutdown()
    stats = exporter.stats()
    assert (stats["received"], stats["exported"], stats["dropped_processor"]) == (30, 20, 10)
    assert stats["processors"]["quiet"] == {"dropped": 10, "faults": 0}
    records = [r for line in recorded(tmp_path) if "logs" in line for r in line["logs"]]
    assert len(records) == 20, recorded(tmp_path)[:3]
    assert not any("user.email" in r["attributes"] for r in records)
    assert all(r["attributes"]["lens.redacted"] == {"bool": True} for r in records)


def test_processors_are_refused_where_they_cannot_run(guests, tmp_path):
    keywords = {
        "settings": {"out": "/out/x.jsonl"},
        "preopens": [{"host": str(tmp_path), "guest": "/out", "read_only": False}],
    }
    redact = [{"path": guests["processor"], "settings": {"mode": "noop"}}]
    with pytest.raises(lens.ExporterLoadError, match="cannot be used with blocking=True"):
        lens.WasmSpanExporter(guests["recorder"], blocking=True, processors=redact, **keywords)
    with pytest.raises(lens.ExporterLoadError, match="cannot be used with blocking=True"):
        lens.WasmMetricExporter(guests["recorder"], blocking=True, processors=redact, **keywords)
    with pytest.raises(lens.ExporterLoadError, match="on_fault"):
        lens.WasmSpanExporter(
            guests["recorder"], processors=[{**redact[0], "on_fault": "retry"}], **keywords
        )
    with pytest.raises(TypeError, match="each is a dict with a `path`"):
        lens.WasmSpanExporter(guests["recorder"], processors=["redact.wasm"], **keywords)


PYTHON_RANK = """
import json, sys
from nemo.lens import NemoLensConfig, setup_telemetry
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
import lens

processors = json.loads(sys.argv[1])
memory = InMemorySpanExporter()
exporter = lens.ProcessingSpanExporter(memory, processors=processors)
config = NemoLensConfig(enabled=True, metrics_enabled=False, run_id="job-10")
handle = setup_telemetry(config, rank=0, world_size=1, span_exporter=exporter)
for i in range(300):
    name = ["gen_ai.chat", "step", "noise"][i % 3]
    with handle.tracer.start_as_current_span(name) as span:
        span.set_attribute("i", i)
        if name == "gen_ai.chat":
            span.set_attribute("gen_ai.prompt", f"secret {i}")
handle.shutdown()
spans = [
    {"name": s.name, "attributes": dict(s.attributes), "trace": s.context.trace_id}
    for s in memory.get_finished_spans()
]
print("RESULT", json.dumps({"spans": spans, "stats": exporter.stats()}))
"""


@pytest.mark.nemo
def test_a_nemo_lens_rank_processes_spans_before_a_python_exporter(guests):
    result = run_rank(PYTHON_RANK, json.dumps(processors(guests)))
    spans, stats = result["spans"], result["stats"]
    assert len(spans) == 200
    assert sorted(s["attributes"]["i"] for s in spans) == [i for i in range(300) if i % 3 != 2]
    assert not any(s["name"] == "noise" or "gen_ai.prompt" in s["attributes"] for s in spans)
    chats = [s for s in spans if s["name"] == "gen_ai.chat"]
    assert len(chats) == 100 and all(s["attributes"]["lens.redacted"] is True for s in chats)
    assert stats["received"] == 300 and stats["exported"] == 200
    assert stats["dropped_processor"] == 100 == stats["processors"]["quiet"]["dropped"]


def test_edited_spans_keep_their_identity_and_the_rest_is_passed_as_it_was(guests):
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    rewrite = [{"path": guests["processor"], "settings": {"mode": "rewrite"}}]
    exporter = lens.ProcessingSpanExporter(memory, processors=rewrite)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("parent") as parent:
        parent.set_attribute("k", "v")
        with tracer.start_as_current_span("child"):
            pass
    provider.shutdown()
    child, root = memory.get_finished_spans()
    # One span per batch (SimpleSpanProcessor): index 0 each time.
    assert (child.name, root.name) == ("child.x", "parent.x")
    assert dict(root.attributes) == {"k": "v", "index": 0}
    assert child.parent.span_id == root.context.span_id
    assert child.status.status_code.name == "UNSET"
    assert exporter.stats()["exported"] == 2
    # A trapping processor (fail open) passes the very objects on.
    memory = InMemorySpanExporter()
    trap = [{"path": guests["processor"], "settings": {"mode": "trap"}}]
    exporter = lens.ProcessingSpanExporter(memory, processors=trap)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("t").start_as_current_span("s"):
        pass
    provider.shutdown()
    assert [s.name for s in memory.get_finished_spans()] == ["s"]
    assert exporter.stats()["processor_faults"] == 1


METRICS_RANK = """
import json, sys
from nemo.lens import NemoLensConfig, setup_telemetry
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
import lens

recorder, out, processors = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
exporter = lens.WasmMetricExporter(
    recorder,
    settings={"out": "/out/batches.jsonl", "encoding": "typed"},
    preopens=[{"host": out, "guest": "/out", "read_only": False}],
    processors=processors,
)
config = NemoLensConfig(enabled=True, run_id="job-11")
handle = setup_telemetry(
    config, rank=0, world_size=1,
    metric_reader=PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000),
)
tokens = handle.meter.create_counter("train.tokens")
noise = handle.meter.create_counter("noise")
for i in range(10):
    tokens.add(100, {"user": f"u{i % 2}"})
    noise.add(1, {"i": i})
handle.shutdown()
print("RESULT", json.dumps(exporter.stats()))
"""


@pytest.mark.nemo
def test_a_nemo_lens_rank_filters_and_redacts_metrics_before_its_sandboxed_exporter(
    guests, tmp_path
):
    entries = json.dumps(processors(guests, keys="user"))
    stats = run_rank(METRICS_RANK, guests["recorder"], str(tmp_path), entries)
    collections = [line["metrics"] for line in recorded(tmp_path) if "metrics" in line]
    assert collections
    for metrics in collections:
        names = {m["name"] for m in metrics}
        assert "train.tokens" in names and "noise" not in names, names
        tokens = [p for m in metrics if m["name"] == "train.tokens" for p in m["points"]]
        # Both data points (u0, u1) kept: a removed attribute does not merge points.
        assert len(tokens) == 2
        assert all("user" not in p["attributes"] for p in tokens)
        assert all(p["attributes"]["lens.redacted"] == {"bool": True} for p in tokens)
    # The noise counter's ten data points dropped by the filter in each collection.
    dropped = 10 * len(collections)
    assert stats["processors"]["quiet"] == {"dropped": dropped, "faults": 0}
    assert stats["dropped_processor"] == dropped == stats["dropped"]
    assert stats["received"] == stats["exported"] + dropped


METRICS_PYTHON_RANK = """
import json, sys
from nemo.lens import NemoLensConfig, setup_telemetry
from opentelemetry.sdk.metrics.export import (
    MetricExporter, MetricExportResult, PeriodicExportingMetricReader,
)
import lens

class Capture(MetricExporter):
    def __init__(self):
        super().__init__()
        self.collections = []
    def export(self, metrics_data, timeout_millis=10_000, **kwargs):
        self.collections.append([
            {
                "name": m.name,
                "points": [
                    {"attributes": dict(p.attributes), "value": p.value}
                    for p in m.data.data_points
                ],
            }
            for rm in metrics_data.resource_metrics
            for sm in rm.scope_metrics
            for m in sm.metrics
        ])
        return MetricExportResult.SUCCESS
    def force_flush(self, timeout_millis=10_000):
        return True
    def shutdown(self, timeout_millis=30_000, **kwargs):
        pass

capture = Capture()
exporter = lens.ProcessingMetricExporter(capture, processors=json.loads(sys.argv[1]))
config = NemoLensConfig(enabled=True, run_id="job-12")
handle = setup_telemetry(
    config, rank=0, world_size=1,
    metric_reader=PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000),
)
tokens = handle.meter.create_counter("train.tokens")
noise = handle.meter.create_counter("noise")
for i in range(10):
    tokens.add(100, {"user": f"u{i % 2}", "phase": "train"})
    noise.add(1, {"i": i})
handle.shutdown()
print("RESULT", json.dumps({"collections": capture.collections, "stats": exporter.stats()}))
"""


@pytest.mark.nemo
def test_a_nemo_lens_rank_processes_metrics_before_a_python_exporter(guests):
    result = run_rank(METRICS_PYTHON_RANK, json.dumps(processors(guests, keys="user")))
    collections, stats = result["collections"], result["stats"]
    assert collections
    for metrics in collections:
        assert [m["name"] for m in metrics if m["name"] == "noise"] == []
        tokens = [p for m in metrics if m["name"] == "train.tokens" for p in m["points"]]
        # Values kept; `user` gone from each point; the other attributes kept.
        assert sorted(p["value"] for p in tokens) == [500, 500]
        for p in tokens:
            assert p["attributes"] == {"phase": "train", "lens.redacted": True}
    dropped = 10 * len(collections)
    assert stats["processors"]["quiet"] == {"dropped": dropped, "faults": 0}
    assert stats["dropped_processor"] == dropped
    assert stats["received"] == stats["exported"] + dropped


def test_unchanged_metrics_are_passed_as_they_were(guests):
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    provider.get_meter("t").create_counter("kept").add(3, {"k": "v"})
    data = reader.get_metrics_data()
    seen = []

    class Capture:
        _preferred_temporality = None
        _preferred_aggregation = None

        def export(self, metrics_data, timeout_millis=10_000, **kwargs):
            seen.append(metrics_data)
            from opentelemetry.sdk.metrics.export import MetricExportResult

            return MetricExportResult.SUCCESS

    noop = [{"path": guests["processor"], "settings": {"mode": "noop"}}]
    exporter = lens.ProcessingMetricExporter(Capture(), processors=noop)
    exporter.export(data)
    original = data.resource_metrics[0].scope_metrics[0].metrics[0]
    assert seen[0].resource_metrics[0].scope_metrics[0].metrics[0] is original
    rename = [{"path": guests["processor"], "settings": {"mode": "rewrite"}}]
    exporter = lens.ProcessingMetricExporter(Capture(), processors=rename)
    exporter.export(data)
    edited = seen[1].resource_metrics[0].scope_metrics[0].metrics[0]
    assert edited.name == "kept.x"
    assert dict(edited.data.data_points[0].attributes) == {"k": "v", "index": 0}
    assert edited.data.data_points[0].value == 3
    assert edited.data is not original.data and original.name == "kept"


LOGS_PYTHON_RANK = """
import json, logging, sys
from nemo.lens import NemoLensConfig, setup_telemetry
from nemo.lens.logging_bridge import setup_logging_bridge
from opentelemetry._logs import get_logger_provider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
import lens

memory = InMemoryLogRecordExporter()
exporter = lens.ProcessingLogExporter(memory, processors=json.loads(sys.argv[1]))
config = NemoLensConfig(enabled=True, logs_enabled=True, exporter="console", run_id="job-13")
handle = setup_telemetry(config, rank=0, world_size=1)
get_logger_provider().add_log_record_processor(SimpleLogRecordProcessor(exporter))
setup_logging_bridge("train", logging.DEBUG)
log = logging.getLogger("train")
log.setLevel(logging.DEBUG)
for i in range(30):
    level = logging.DEBUG if i % 3 == 0 else logging.INFO
    log.log(level, "step %d", i, extra={"user.email": f"u{i}@example.com"})
handle.shutdown()
get_logger_provider().shutdown()
records = [
    {
        "body": r.log_record.body,
        "severity": r.log_record.severity_text,
        "attributes": dict(r.log_record.attributes or {}),
        "time": r.log_record.timestamp,
        "trace": r.log_record.trace_id,
    }
    for r in memory.get_finished_logs()
]
print("RESULT", json.dumps({"records": records, "stats": exporter.stats()}))
"""


@pytest.mark.nemo
def test_a_nemo_lens_rank_processes_log_records_before_a_python_exporter(guests):
    entries = processors(guests, names="DEBUG", keys="user.email", redact_fault="pass")
    result = run_rank(LOGS_PYTHON_RANK, json.dumps(entries))
    records = [r for r in result["records"] if str(r["body"]).startswith("step ")]
    stats = result["stats"]
    assert sorted(int(r["body"].split()[1]) for r in records) == [
        i for i in range(30) if i % 3 != 0
    ]
    for r in records:
        assert r["severity"] == "INFO" and r["time"]
        assert "user.email" not in r["attributes"]
        assert r["attributes"]["lens.redacted"] is True
    assert stats["processors"]["quiet"]["dropped"] >= 10
    assert stats["received"] == stats["exported"] + stats["dropped_processor"]


def test_edited_log_records_keep_the_rest_and_unchanged_ones_pass_as_they_were(guests):
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

    made = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(made))
    logger = provider.get_logger("train")
    logger.emit(body="first", severity_text="INFO", attributes={"k": "v"})
    logger.emit(body={"nested": [1, "two"]}, severity_text="WARN", attributes={"k": "w"})
    original = list(made.get_finished_logs())

    memory = InMemoryLogRecordExporter()
    rewrite = [{"path": guests["processor"], "settings": {"mode": "rewrite"}}]
    lens.ProcessingLogExporter(memory, processors=rewrite).export(original)
    first, second = memory.get_finished_logs()
    # `rewrite`: every record's event name, an `index`, the body of odd ones `[redacted]`.
    assert first.log_record.event_name == second.log_record.event_name == "lens.event"
    assert first.log_record.body == "first"
    assert dict(first.log_record.attributes) == {"k": "v", "index": 0}
    assert second.log_record.body == "[redacted]"
    assert second.log_record.severity_text == "WARN"
    assert second.log_record.timestamp == original[1].log_record.timestamp
    assert dict(second.log_record.attributes) == {"k": "w", "index": 1}
    # The originals are left as they were.
    assert original[1].log_record.body == {"nested": [1, "two"]}
    assert original[0].log_record.event_name is None

    passed = InMemoryLogRecordExporter()
    noop = [{"path": guests["processor"], "settings": {"mode": "noop"}}]
    lens.ProcessingLogExporter(passed, processors=noop).export(original)
    assert all(a is b for a, b in zip(passed.get_finished_logs(), original, strict=True))
    provider.shutdown()
