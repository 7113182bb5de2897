"""The README's Python rank runs as written: copied out of README.md, run in a folder holding
the component it names (Lens's JSON-lines exporter, `guest-examples/dist/rust-jsonl.wasm`),
with the real NeMo Lens (Python 3.13)."""

from __future__ import annotations

import ast
import json
import pathlib
import subprocess
import sys

import pytest
from conftest import ROOT

pytestmark = pytest.mark.nemo


def python_blocks(markdown: str) -> list[str]:
    """The text of each ```python block."""
    blocks, current = [], None
    for line in markdown.splitlines():
        if current is None and line.strip() == "```python":
            current = []
        elif current is not None and line.strip() == "```":
            blocks.append("\n".join(current) + "\n")
            current = None
        elif current is not None:
            current.append(line)
    return blocks


def test_the_readme_python_rank_runs_as_written(tmp_path: pathlib.Path) -> None:
    rank = python_blocks((ROOT / "README.md").read_text())[0]
    assert "setup_telemetry" in rank and "lens.WasmSpanExporter" in rank
    component = ROOT / "guest-examples" / "dist" / "rust-jsonl.wasm"
    assert component.exists(), "guest-examples/build.sh builds it"
    (tmp_path / "guest-examples" / "dist").mkdir(parents=True)
    (tmp_path / "guest-examples" / "dist" / "rust-jsonl.wasm").symlink_to(component)
    done = subprocess.run(
        [sys.executable, "-c", rank], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    # What it prints is the exporters' statistics: every item exported, none dropped.
    stats = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    assert all(s["exported"] >= 1 and s["dropped"] == 0 for s in stats.values()), stats
    spans = (tmp_path / "out" / "spans.jsonl").read_text().splitlines()
    assert [json.loads(s)["name"] for s in spans] == ["step"]
    points = (tmp_path / "out" / "metrics.jsonl").read_text().splitlines()
    assert "train.steps" in [json.loads(p)["name"] for p in points]
    records = (tmp_path / "out" / "logs.jsonl").read_text().splitlines()
    assert [json.loads(r)["body"] for r in records] == ["step done"]
