"""Building exporters: keywords with the TOML keys' meanings, `from_config` on Lens's TOML
(shared with Rust ranks), and load errors raised at construction with the Rust host's message."""

from __future__ import annotations

import hashlib
import pathlib

import lens
import pytest
from conftest import recorded
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor


def toml_entry(guests, out: pathlib.Path, name: str) -> str:
    return f"""
[[traces.exporters]]
kind = "wasm"
name = "{name}"
path = "{guests["recorder"]}"
settings = {{ out = "/out/batches.jsonl", encoding = "otlp-json" }}
memory_limit_mib = 64
call_timeout_ms = 5000
[[traces.exporters.preopens]]
host = "{out}"
guest = "/out"
read_only = false
"""


def test_from_config_builds_the_entry_a_rust_rank_would(guests, tmp_path):
    config = tmp_path / "lens.toml"
    config.write_text('enabled = true\n[[traces.exporters]]\nkind = "console"\n')
    with config.open("a") as f:
        f.write(toml_entry(guests, tmp_path, "vendor"))
    exporter = lens.WasmSpanExporter.from_config(config)
    assert exporter.name == "vendor"
    assert exporter.encoding == "otlp-json"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("t").start_as_current_span("from-config"):
        pass
    provider.shutdown()
    lines = recorded(tmp_path)
    assert lines[0]["init"]["settings"] == [
        ["encoding", "otlp-json"],
        ["out", "/out/batches.jsonl"],
    ]
    assert any("from-config" in line.get("otlp_json", "") for line in lines)
    assert lens.WasmSpanExporter.from_config(str(config), name="vendor").name == "vendor"


def test_from_config_names_what_is_wrong(guests, tmp_path):
    two = tmp_path / "two.toml"
    two.write_text(toml_entry(guests, tmp_path, "a") + toml_entry(guests, tmp_path, "b"))
    with pytest.raises(
        lens.ExporterLoadError,
        match=r"several wasm exporters in \[\[traces.exporters\]\] \(`a`, `b`\): pass name=",
    ):
        lens.WasmSpanExporter.from_config(two)
    with pytest.raises(
        lens.ExporterLoadError, match=r"no wasm exporter named `c`.*\(there: `a`, `b`\)"
    ):
        lens.WasmSpanExporter.from_config(two, name="c")
    none = tmp_path / "none.toml"
    none.write_text('[[traces.exporters]]\nkind = "console"\n')
    with pytest.raises(lens.ExporterLoadError, match=r'no `kind = "wasm"` entry'):
        lens.WasmSpanExporter.from_config(none)
    bad = tmp_path / "bad.toml"
    bad.write_text("exporterz = 1\n")
    with pytest.raises(lens.ExporterLoadError, match=r"(?s)bad.toml.*unknown field `exporterz`"):
        lens.WasmSpanExporter.from_config(bad)


def test_load_errors_raise_at_construction_with_the_hosts_message(guests, tmp_path):
    missing = tmp_path / "missing.wasm"
    with pytest.raises(lens.ExporterLoadError) as e:
        lens.WasmSpanExporter(missing)
    assert str(e.value) == f"wasm exporter `missing` ({missing}): file not found"
    not_a_component = tmp_path / "notes.wasm"
    not_a_component.write_bytes(b"\0asm\x01\0\0\0")
    with pytest.raises(lens.ExporterLoadError, match="notes.wasm.*not a component"):
        lens.WasmSpanExporter(not_a_component)
    recorder = pathlib.Path(guests["recorder"])
    actual = hashlib.sha256(recorder.read_bytes()).hexdigest()
    with pytest.raises(lens.ExporterLoadError, match=f"sha256 is {actual}, but the config pins"):
        lens.WasmSpanExporter(recorder, sha256="0" * 64)
    # The recorder needs a writable /out: its init fails, and that raises too.
    with pytest.raises(
        lens.ExporterLoadError, match="init failed: init: setting `out` is required"
    ):
        lens.WasmSpanExporter(recorder)
    with pytest.raises(lens.ExporterLoadError, match="memory_limit_mib"):
        lens.WasmSpanExporter(recorder, memory_limit_mib=0)
    with pytest.raises(TypeError, match="settings: keys and values are strings"):
        lens.WasmSpanExporter(recorder, settings={"n": 1})


def test_a_pinned_exporter_with_the_right_digest_loads(guests, tmp_path):
    recorder = pathlib.Path(guests["recorder"])
    digest = hashlib.sha256(recorder.read_bytes()).hexdigest()
    exporter = lens.WasmSpanExporter(
        recorder,
        sha256=digest,
        settings={"out": "/out/b.jsonl"},
        preopens=[{"host": str(tmp_path), "guest": "/out", "read_only": False}],
        env={"TOKEN": "s3cret", "HOME_DIR": {"from_host": "HOME"}},
        max_concurrent_exports=2,
    )
    assert exporter.name == "recorder"
    assert exporter.stats()["received"] == 0
