"""A vendor outage with and without a spool (docs/benchmarks.md, "The disk spool").

Two `lens demo` ranks send spans through the `rust-vendor-http` example exporter (OTLP/HTTP
over `wasi:http`) to a real collector (rotel, PyPI) on 127.0.0.1, which is killed OUTAGE seconds
into the run and started again; the run goes on for AFTER seconds more. Printed per run: spans
produced, exported, dropped, spooled; what the collector counted; the spool's peak size on
disk; and the time after the collector came back until the backlog was delivered (estimated
from the collector's count: the first moment it had received, since the restart, the spans
produced during the outage on top of the live rate, within 1 %).

    python3 benches/spool_outage.py target/debug/lens [--outage-s 60] [--step-ms 1]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
VENDOR = ROOT / "guest-examples" / "dist" / "rust-vendor-http.wasm"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rotel_binary() -> str:
    import rotel  # noqa: PLC0415 (the bench's one dependency, located when run)

    return os.path.join(os.path.dirname(rotel.__file__), "rotel-agent")


class Collector:
    """rotel on two free ports, its span counts read from its JSON log lines."""

    def __init__(self, workdir: pathlib.Path) -> None:
        self.grpc, self.http = free_port(), free_port()
        self.workdir = workdir
        self.counted = 0
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[str] | None = None
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                rotel_binary(),
                "start",
                "--otlp-grpc-endpoint",
                f"127.0.0.1:{self.grpc}",
                "--otlp-http-endpoint",
                f"127.0.0.1:{self.http}",
                "--exporter",
                "blackhole",
                "--debug-log",
                "traces",
                "--debug-log-verbosity",
                "basic",
                "--log-format",
                "json",
                "--pid-file",
                str(self.workdir / "rotel.pid"),
                "--log-file",
                str(self.workdir / "rotel.log"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.http), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    sys.exit("rotel did not start")
                time.sleep(0.05)

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if doc.get("msg") == "Received traces.":
                with self.lock:
                    self.counted += int(doc.get("spans", 0))

    def count(self) -> int:
        with self.lock:
            return self.counted

    def kill(self) -> None:
        if self.proc:
            self.proc.kill()
            self.proc.wait()


def config(path: pathlib.Path, collector: Collector, spool: pathlib.Path | None) -> None:
    authority = f"127.0.0.1:{collector.http}"
    lines = [
        "enabled = true",
        'export_strategy = "all_ranks"',
        "metrics_enabled = false",
        "logs_enabled = false",
        "[[traces.exporters]]",
        'kind = "wasm"',
        'name = "vendor"',
        f'path = "{VENDOR}"',
        f'allowed_hosts = ["{authority}"]',
        f'settings = {{ endpoint = "http://{authority}/v1/traces", timeout_ms = "2000" }}',
        "batch = { export_timeout_ms = 5000 }",
    ]
    if spool is not None:
        lines.append(f'spool = {{ dir = "{spool}/rank-{{rank}}", max_mib = 4096 }}')
    path.write_text("\n".join(lines) + "\n")


def spool_bytes(spool: pathlib.Path) -> int:
    return sum(p.stat().st_size for p in spool.rglob("*.spool") if p.exists())


def run(lens: str, outage: float, after: float, step_ms: int, with_spool: bool) -> dict:
    work = pathlib.Path(tempfile.mkdtemp(prefix="lens-spool-bench-"))
    collector = Collector(work)
    spool = work / "spool" if with_spool else None
    cfg = work / "lens.toml"
    config(cfg, collector, spool)
    before = 5.0
    duration = before + outage + after
    demo = subprocess.Popen(
        [lens, "demo", "--ranks", "2", "--nodes", "1", "--step-ms", str(step_ms)]
        + ["--duration-s", str(int(duration)), "--config", str(cfg), "--out", str(work / "o")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    started = time.monotonic()
    samples: list[tuple[float, int]] = []
    peak = 0
    killed = restarted = False
    restart_at = 0.0
    while demo.poll() is None:
        t = time.monotonic() - started
        if not killed and t >= before:
            collector.kill()
            killed = True
        if killed and not restarted and t >= before + outage:
            collector.start()
            restarted, restart_at = True, t
        if spool is not None:
            peak = max(peak, spool_bytes(spool))
        samples.append((t, collector.count()))
        time.sleep(0.25)
    out = demo.stdout.read() if demo.stdout else ""
    time.sleep(2)
    run_dir = next((work / "o").iterdir())
    ranks = json.loads((run_dir / "summary.json").read_text())["ranks"]
    total = {k: sum(r[k] for r in ranks) for k in ("produced", "exported", "dropped")}
    total["spooled"] = sum(r.get("spooled", 0) for r in ranks)
    total["in_spool"] = sum(r.get("in_spool", 0) for r in ranks)
    total["counted"] = collector.count()
    total["peak_spool_mib"] = round(peak / 2**20, 1)
    live_rate = total["produced"] / duration
    # The backlog: what was produced while the collector was down (and the collector did not
    # receive); delivered once the collector's count since the restart covers it and the live
    # rate since (within 1 %).
    base = next(c for t, c in samples if t >= restart_at)
    backlog = live_rate * outage
    drained = None
    for t, c in samples:
        if t > restart_at and c - base >= 0.99 * (backlog + live_rate * (t - restart_at)):
            drained = round(t - restart_at, 1)
            break
    total["drained_after_s"] = drained
    total["rate_spans_per_s_per_rank"] = round(live_rate / 2)
    collector.kill()
    if demo.returncode not in (0, 1):
        print(out, file=sys.stderr)
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lens")
    ap.add_argument("--outage-s", type=float, default=60)
    ap.add_argument("--after-s", type=float, default=40)
    ap.add_argument("--step-ms", type=int, default=1)
    a = ap.parse_args()
    for with_spool in (False, True):
        r = run(a.lens, a.outage_s, a.after_s, a.step_ms, with_spool)
        print(json.dumps({"spool": with_spool, **r}), flush=True)


if __name__ == "__main__":
    main()
