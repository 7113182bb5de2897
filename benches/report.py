"""`lens report`'s figures (docs/benchmarks.md): generation time and file size per million spans,
and the time until headless Chromium has drawn the page, for the 8-rank demo and a synthetic
1,000-rank x 1,000-step run.

    python3 benches/report.py target/release/lens [--repeat 3] [--ranks 1000] [--steps 1000]

Each figure is reported for every repetition (the machine is noisy); the synthetic run has a
step span and one child per step (2 spans/step), written once.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import shutil
import subprocess
import tempfile
import time

T0 = 1_765_000_000_000_000_000


def synthetic(dir_: pathlib.Path, ranks: int, steps: int) -> int:
    """The run folder: a step of 10 ms (rank 7: 15 ms) and a child per step, rank by rank."""
    for rank in range(ranks):
        lines = []
        step = 15_000_000 if rank == 7 else 10_000_000
        for i in range(steps):
            start = T0 + i * 20_000_000 + rank * 1000
            sid = (rank << 32) | (i * 2 + 1)
            for name, id_, parent, s, e in (
                ("compute", sid + 1, sid, start + 1000, start + 6_000_000),
                ("step", sid, 0, start, start + step),
            ):
                lines.append(
                    f'{{"name":"{name}","trace_id":"0af7651916cd43dd8448eb211c80319c",'
                    f'"span_id":"{id_:016x}","parent_span_id":"{parent:016x}","kind":"internal",'
                    f'"start_unix_nano":{s},"end_unix_nano":{e},"duration_ns":{e - s},'
                    f'"status":{{"code":"unset"}},"attributes":{{"i":{i}}},"events":[],'
                    f'"links":[],"scope":"bench"}}'
                )
        (dir_ / f"rank-{rank}.jsonl").write_text("\n".join(lines) + "\n")
    return ranks * steps * 2


def drawn_ms(page: pathlib.Path, profile: pathlib.Path) -> tuple[float, float]:
    """(the page script's drawing time, Chromium's wall time to load and dump the page), ms."""
    started = time.perf_counter()
    out = subprocess.run(
        [
            shutil.which("chromium") or "/usr/bin/chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--window-size=1400,1800",
            "--dump-dom",
            f"file://{page}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    ).stdout
    wall = (time.perf_counter() - started) * 1000
    body = re.search(r"<body[^>]*>", out).group(0)
    assert 'data-state="drawn"' in body, body
    return float(re.search(r'data-page-ms="(\d+)"', body).group(1)), wall


def measure(lens: str, run: pathlib.Path, spans: int, repeat: int, label: str) -> None:
    for n in range(repeat):
        started = time.perf_counter()
        subprocess.run([lens, "report", str(run)], check=True, capture_output=True)
        gen = time.perf_counter() - started
        started = time.perf_counter()
        subprocess.run([lens, "report", "--perfetto", str(run)], check=True, capture_output=True)
        perfetto = time.perf_counter() - started
        page = run / "report.html"
        with tempfile.TemporaryDirectory() as profile:
            script_ms, wall_ms = drawn_ms(page, pathlib.Path(profile))
        print(
            json.dumps(
                {
                    "run": label,
                    "repetition": n + 1,
                    "spans": spans,
                    "report_s": round(gen, 2),
                    "report_s_per_million_spans": round(gen / spans * 1e6, 2),
                    "page_mib": round(page.stat().st_size / 2**20, 2),
                    "perfetto_s": round(perfetto, 2),
                    "perfetto_mib_per_million_spans": round(
                        (run / "trace.json").stat().st_size / 2**20 / spans * 1e6, 1
                    ),
                    "page_drawn_ms": script_ms,
                    "chromium_wall_ms": round(wall_ms),
                }
            )
        )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("lens")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--ranks", type=int, default=1000)
    p.add_argument("--steps", type=int, default=1000)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)
        subprocess.run(
            [args.lens, "demo", "--out", str(work / "demo"), "--no-report"],
            check=True,
            capture_output=True,
        )
        demo = next((work / "demo").iterdir())
        spans = sum(
            len(f.read_text().splitlines())
            for f in demo.glob("rank-*.jsonl")
            if not f.name.endswith((".metrics.jsonl", ".logs.jsonl"))
        )
        measure(args.lens, demo, spans, args.repeat, "demo (8 ranks x 200 steps)")
        big = work / "big"
        big.mkdir()
        spans = synthetic(big, args.ranks, args.steps)
        measure(args.lens, big, spans, args.repeat, f"synthetic ({args.ranks} x {args.steps})")


if __name__ == "__main__":
    main()
