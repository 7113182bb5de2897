"""What loading a component may cost a Python rank: a file beyond the host's structure limits is
refused before it compiles, a compile runs in a child of this interpreter under its bounds, and a
hung ``init`` holds the rank for ``init_timeout_ms`` only."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time

import lens
import pytest

HEADER = b"\0asm\x0d\x00\x01\x00"


def leb(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def nested_component(levels: int) -> bytes:
    """A component holding a component … ``levels`` deep (the audit's 100 KB file)."""
    sizes = [len(HEADER)]
    for _ in range(1, levels):
        sizes.append(len(HEADER) + 1 + len(leb(sizes[-1])) + sizes[-1])
    parts = []
    for k in reversed(range(levels)):
        parts.append(HEADER)
        if k:
            parts.append(b"\x04" + leb(sizes[k - 1]))
    return b"".join(parts)


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch) -> pathlib.Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("LENS_WASM_CACHE_DIR", str(cache))
    return cache


def test_a_deeply_nested_component_is_refused_before_it_compiles(tmp_path, fresh_cache):
    path = tmp_path / "nested.wasm"
    path.write_bytes(nested_component(10_000))
    started = time.monotonic()
    with pytest.raises(
        lens.ExporterLoadError,
        match=r"nested\.wasm.*nesting depth of components and modules 17, the limit is 16",
    ):
        lens.WasmSpanExporter(path)
    assert time.monotonic() - started < 1.0


def test_a_compile_runs_in_a_child_under_its_deadline(tmp_path, guests, fresh_cache):
    out = tmp_path / "out"
    out.mkdir()
    kwargs = {
        "settings": {"out": "/out/b.jsonl"},
        "preopens": [{"host": str(out), "guest": "/out", "read_only": False}],
    }
    started = time.monotonic()
    with pytest.raises(lens.ExporterLoadError, match=r"compiling it took longer than 1ms"):
        lens.WasmSpanExporter(guests["recorder"], compile_timeout_ms=1, **kwargs)
    assert time.monotonic() - started < 5.0
    assert not list(fresh_cache.glob("*.cwasm"))
    exporter = lens.WasmSpanExporter(guests["recorder"], compile_memory_mib=1024, **kwargs)
    assert exporter.encoding is not None
    assert len(list(fresh_cache.glob("*.cwasm"))) == 1
    exporter.shutdown()


def test_a_hung_init_holds_the_rank_for_init_timeout_ms_only(guests):
    started = time.monotonic()
    with pytest.raises(lens.ExporterLoadError, match=r"`init` did not return within 200ms"):
        lens.WasmSpanExporter(
            guests["hostile"],
            settings={"mode": "noop", "init_sleep_ms": "3600000"},
            call_timeout_ms=60_000,
            init_timeout_ms=200,
        )
    assert time.monotonic() - started < 5.0


def test_lens_compile_fills_the_cache_and_names_a_bad_file(tmp_path, guests, fresh_cache):
    [(path, exporters, cached, _)] = lens.compile(guests["recorder"])
    assert (path, exporters, cached) == (guests["recorder"], ["recorder"], False)
    assert len(list(fresh_cache.glob("*.cwasm"))) == 1
    assert lens.compile(guests["recorder"])[0][2] is True
    nested = tmp_path / "nested.wasm"
    nested.write_bytes(nested_component(10_000))
    run = subprocess.run(
        [sys.executable, "-m", "lens", "compile", str(nested)], capture_output=True, text=True
    )
    assert run.returncode == 2, run
    assert "nested.wasm" in run.stderr and "the limit is 16" in run.stderr, run.stderr
    run = subprocess.run(
        [sys.executable, "-m", "lens", "compile", guests["recorder"]],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run
    assert run.stdout.endswith("(recorder): already in the cache\n"), run.stdout
