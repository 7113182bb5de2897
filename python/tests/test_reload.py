"""`exporter.reload(...)`: a component replaced while spans flow, from a `.wasm` file or a Lens
TOML file; refused ones leave the running component in place. Under load with the real NeMo
Lens (a rank process of its own), and standalone."""

from __future__ import annotations

import hashlib
import json
import pathlib
import subprocess
import sys
import time

import lens
import pytest
from opentelemetry.sdk.trace import TracerProvider


def variant(recorder: str, out: pathlib.Path, tag: str) -> pathlib.Path:
    """The recorder plus a custom section: another file, another SHA-256, the same guest."""
    name = b"lens-test-variant"
    payload = bytes([len(name)]) + name + tag.encode()
    assert len(payload) < 128  # one LEB128 byte
    path = out / f"recorder-{tag}.wasm"
    path.write_bytes(pathlib.Path(recorder).read_bytes() + bytes([0, len(payload)]) + payload)
    return path


def sha256(path) -> str:
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def entry_toml(path, out: pathlib.Path, file: str, lifecycle: bool = True) -> str:
    """A Lens config whose span entry `vendor` runs the recorder at `path` writing `file` (with
    a line at each force-flush and shutdown)."""
    return f"""
[[traces.exporters]]
kind = "wasm"
name = "vendor"
path = "{path}"
settings = {{ out = "/out/{file}", encoding = "typed", lifecycle = "{str(lifecycle).lower()}" }}
preopens = [{{ host = "{out}", guest = "/out", read_only = false }}]
"""


def span_numbers(path: pathlib.Path) -> list[int]:
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    return [int(s["name"][1:]) for line in lines if "typed" in line for s in line["typed"]]


RANK = """
import json, sys, threading, time
from nemo.lens import NemoLensConfig, setup_telemetry
from opentelemetry import trace
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
import lens

recorder, hostile, out = sys.argv[1], sys.argv[2], sys.argv[3]

class Null(SpanExporter):
    def export(self, spans):
        return SpanExportResult.SUCCESS

processor = lens.WasmSpanProcessor(
    recorder,
    settings={"out": "/out/a.jsonl", "encoding": "typed", "lifecycle": "true"},
    preopens=[{"host": out, "guest": "/out", "read_only": False}],
    name="vendor",
)
config = NemoLensConfig(enabled=True, metrics_enabled=False, run_id="reload")
handle = setup_telemetry(config, rank=0, world_size=1, span_exporter=Null())
trace.get_tracer_provider().add_span_processor(processor)
stop = threading.Event()
produced = []

def produce():
    n = 0
    while not stop.is_set():
        with handle.tracer.start_as_current_span(f"s{n}"):
            pass
        n += 1
    produced.append(n)

thread = threading.Thread(target=produce)
thread.start()
time.sleep(0.3)
shas = [processor.reload(out + "/b.toml")]
time.sleep(0.3)
errors = []
broken = [
    (out + "/garbage.wasm", {}),  # a bad file
    (out + "/empty.wasm", {}),  # a component exporting nothing: the wrong interface
    (hostile, {}),  # init refuses (no `mode` among the recorder's settings)
    (hostile, {"settings": {"mode": "trap-init"}}),  # init traps
]
for bad, keywords in broken:
    try:
        processor.reload(bad, **keywords)
    except lens.ExporterLoadError as e:
        errors.append(str(e))
time.sleep(0.2)
shas.append(processor.reload(out + "/c.toml"))
time.sleep(0.3)
stop.set()
thread.join()
handle.shutdown()
result = {"produced": produced[0], "shas": shas, "errors": errors}
print(json.dumps({**result, "stats": processor.stats()}))
"""


@pytest.mark.nemo
def test_a_nemo_lens_rank_reloads_under_load_without_losing_a_span(guests, tmp_path):
    recorder = guests["recorder"]
    second = variant(recorder, tmp_path, "b")
    (tmp_path / "b.toml").write_text(entry_toml(second, tmp_path, "b.jsonl"))
    (tmp_path / "c.toml").write_text(entry_toml(recorder, tmp_path, "c.jsonl"))
    (tmp_path / "garbage.wasm").write_bytes(b"not a component")
    # The empty component: the header of a component binary (layer 1), nothing exported.
    (tmp_path / "empty.wasm").write_bytes(b"\x00asm\x0d\x00\x01\x00")
    done = subprocess.run(
        [sys.executable, "-c", RANK, recorder, guests["hostile"], str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["shas"] == [sha256(second), sha256(recorder)]
    garbage, empty, refusing, trapping = result["errors"]
    assert garbage == (
        f"reload of wasm exporter `vendor` refused at load (read, check, compile) "
        f"({tmp_path / 'garbage.wasm'}): not a WebAssembly file (no `\\0asm` header); the "
        "running component stays"
    )
    assert empty.startswith(
        f"reload of wasm exporter `vendor` refused at interface check ({tmp_path / 'empty.wasm'})"
        ": does not export `lens:exporter/span-exporter@0.4.0`"
    ), empty
    assert refusing == (
        f"reload of wasm exporter `vendor` refused at init ({guests['hostile']}): init failed: "
        "init: setting `mode` is required; the running component stays"
    )
    assert trapping.startswith(
        f"reload of wasm exporter `vendor` refused at start (instantiate, init) "
        f"({guests['hostile']}): "
    ) and trapping.endswith("; the running component stays"), trapping
    stats, produced = result["stats"], result["produced"]
    assert stats["received"] == produced
    assert stats["received"] == stats["exported"] + stats["dropped"], stats
    assert stats["dropped_export_failed"] == stats["dropped_shutdown"] == 0, stats
    assert (stats["reloads"], stats["component_sha256"]) == (2, sha256(recorder))
    a, b, c = (span_numbers(tmp_path / f"{n}.jsonl") for n in "abc")
    assert a and b and c
    # Split exactly at each switch: no span twice, none lost but those counted as dropped.
    assert a == sorted(a) and b == sorted(b) and c == sorted(c)
    assert a[-1] < b[0] and b[-1] < c[0]
    assert len(a) + len(b) + len(c) == stats["exported"]


def test_a_standalone_exporter_reloads_from_a_wasm_file_and_a_config_file(guests, tmp_path):
    recorder = guests["recorder"]
    exporter = lens.WasmSpanExporter(
        recorder,
        settings={"out": "/out/a.jsonl", "encoding": "typed"},
        preopens=[{"host": str(tmp_path), "guest": "/out", "read_only": False}],
        name="vendor",
        blocking=True,
    )
    provider = TracerProvider()
    tracer = provider.get_tracer("t")

    def export(*names):
        spans = []
        for n in names:
            with tracer.start_as_current_span(n) as span:
                pass
            spans.append(span)
        return exporter.export(spans)

    export("s0")
    # Without lifecycle lines: the instance replaced next writes nothing once replaced (the
    # new one, with the same settings, starts `b.jsonl` again).
    (tmp_path / "b.toml").write_text(entry_toml(recorder, tmp_path, "b.jsonl", lifecycle=False))
    assert exporter.reload(tmp_path / "b.toml") == sha256(recorder)
    export("s1", "s2")
    second = variant(recorder, tmp_path, "v")
    # A `.wasm` path keeps the running entry's settings: `b.jsonl` starts again.
    assert exporter.reload(second) == sha256(second)
    export("s3")
    # With keywords, a whole new entry: other settings, other file.
    sha = exporter.reload(
        recorder,
        settings={"out": "/out/c.jsonl", "encoding": "typed"},
        preopens=[{"host": str(tmp_path), "guest": "/out", "read_only": False}],
    )
    assert sha == sha256(recorder)
    export("s4")
    with pytest.raises(lens.ExporterLoadError, match=r"keeps the exporter's name"):
        exporter.reload(recorder, settings={"out": "/out/d.jsonl"}, name="other")
    with pytest.raises(lens.ExporterLoadError, match=r"no wasm exporter named `vendor`"):
        (tmp_path / "other.toml").write_text(
            entry_toml(recorder, tmp_path, "x.jsonl").replace('"vendor"', '"other"')
        )
        exporter.reload(tmp_path / "other.toml")
    exporter.shutdown()
    assert span_numbers(tmp_path / "a.jsonl") == [0]
    assert span_numbers(tmp_path / "b.jsonl") == [3]
    assert span_numbers(tmp_path / "c.jsonl") == [4]
    stats = exporter.stats()
    assert (stats["reloads"], stats["component_sha256"]) == (3, sha256(recorder))
    assert stats["received"] == stats["exported"] == 5


def test_an_exporter_from_a_watched_config_file_reloads_when_the_file_changes(guests, tmp_path):
    recorder = guests["recorder"]
    config = tmp_path / "lens.toml"
    watch = "[reload]\nwatch = true\npoll_interval_ms = 50\n"
    config.write_text(watch + entry_toml(recorder, tmp_path, "a.jsonl", lifecycle=False))
    exporter = lens.WasmSpanExporter.from_config(config, blocking=True)
    tracer = TracerProvider().get_tracer("t")

    def export(name):
        with tracer.start_as_current_span(name) as span:
            pass
        assert exporter.export([span]).name == "SUCCESS"

    def wait_for_reloads(n):
        deadline = time.monotonic() + 10
        while exporter.stats()["reloads"] != n:
            assert time.monotonic() < deadline, exporter.stats()
            time.sleep(0.02)

    export("s0")
    # A bad edit is refused (logged); the running component stays.
    config.write_text("enabled = maybe")
    time.sleep(0.3)
    export("s1")
    second = variant(recorder, tmp_path, "w")
    config.write_text(watch + entry_toml(second, tmp_path, "b.jsonl", lifecycle=False))
    wait_for_reloads(1)
    export("s2")
    assert exporter.stats()["component_sha256"] == sha256(second)
    # Only the formatting changes: the entry is kept.
    config.write_text("\n" + watch + entry_toml(second, tmp_path, "b.jsonl", lifecycle=False))
    time.sleep(0.3)
    assert exporter.stats()["reloads"] == 1
    exporter.shutdown()
    assert span_numbers(tmp_path / "a.jsonl") == [0, 1]
    assert span_numbers(tmp_path / "b.jsonl") == [2]


def test_a_watched_config_file_changes_the_exporter_s_processors_while_spans_flow(guests, tmp_path):
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    config = tmp_path / "lens.toml"
    watch = "[reload]\nwatch = true\npoll_interval_ms = 50\n"
    base = watch + entry_toml(guests["recorder"], tmp_path, "a.jsonl", lifecycle=False)
    config.write_text(base)
    exporter = lens.WasmSpanExporter.from_config(config)
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=20))
    tracer = provider.get_tracer("t")

    def spans(n):
        for i in range(n):
            with tracer.start_as_current_span("step" if i % 2 else "keep"):
                pass
        provider.force_flush()

    spans(10)
    # A processor added in the file: the exporter's queue runs it from the next batch on.
    config.write_text(
        base
        + f"""
[[traces.processors]]
kind = "wasm"
name = "no-steps"
path = "{guests["processor"]}"
settings = {{ mode = "filter", names = "step" }}
"""
    )
    deadline = time.monotonic() + 10
    while exporter.stats()["dropped_processor"] == 0:
        assert time.monotonic() < deadline, exporter.stats()
        spans(2)
        time.sleep(0.05)
    spans(10)
    provider.shutdown()
    stats = exporter.stats()
    assert stats["received"] == stats["exported"] + stats["dropped_processor"], stats
    assert stats["processors"]["no-steps"]["dropped"] == stats["dropped_processor"], stats
    lines = [json.loads(x) for x in (tmp_path / "a.jsonl").read_text().splitlines()]
    names = [s["name"] for line in lines if "typed" in line for s in line["typed"]]
    assert len(names) == stats["exported"]
    assert names[:10].count("step") == 5, names
    # The last ten spans went through the new chain: their steps dropped.
    assert names[-5:] == ["keep"] * 5 and "step" not in names[-5:], names
