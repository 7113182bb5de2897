"""`python/examples/train.py` runs: through NeMo Lens where it is installed (the 3.13 venv), through
the plain OpenTelemetry SDK otherwise, its spans written by the built-in JSON-lines guest."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

from conftest import ROOT


def test_the_example_training_script_exports_every_span(tmp_path):
    wasm = ROOT / "guest-examples" / "dist" / "rust-jsonl.wasm"
    assert wasm.is_file(), "run guest-examples/build.sh"
    done = subprocess.run(
        [
            sys.executable,
            ROOT / "python" / "examples" / "train.py",
            "--wasm",
            wasm,
            "--out",
            tmp_path,
            "--steps",
            "5",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={"RANK": "1", "WORLD_SIZE": "2", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    with_nemo = importlib.util.find_spec("nemo") is not None
    expected = "NeMo Lens, exporting: True" if with_nemo else "plain OpenTelemetry SDK"
    assert expected in done.stdout, done.stdout
    spans = [json.loads(line) for line in (tmp_path / "rank-1.jsonl").read_text().splitlines()]
    # job + 5 × (step, forward_backward, optimizer)
    assert len(spans) == 16
    assert spans[-1]["name"] == "job"
