"""The wheel `pip install ./python` builds (`LENS_WHEEL`: `python/test.sh` builds it with
`pip wheel ./python`, maturin as the PEP 517 backend) installs into a fresh venv of this
interpreter, with its dependencies from the index, and exports spans, metrics and log records
there."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import venv

from conftest import recorded

SCRIPT = """
import sys
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
import lens

exporter = lens.WasmSpanExporter(
    sys.argv[1],
    settings={"out": "/out/batches.jsonl", "encoding": "otlp"},
    preopens=[{"host": sys.argv[2], "guest": "/out", "read_only": False}],
)
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
with provider.get_tracer("fresh").start_as_current_span("from-a-fresh-venv"):
    pass
provider.shutdown()

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

def wasm(cls, name):
    return cls(
        sys.argv[1],
        settings={"out": f"/out/{name}.jsonl", "encoding": "otlp"},
        preopens=[{"host": sys.argv[2], "guest": "/out", "read_only": False}],
    )
metrics = wasm(lens.WasmMetricExporter, "metrics")
meters = MeterProvider(metric_readers=[PeriodicExportingMetricReader(metrics)])
meters.get_meter("fresh").create_counter("c").add(1)
meters.shutdown()
logs = wasm(lens.WasmLogExporter, "logs")
loggers = LoggerProvider()
loggers.add_log_record_processor(BatchLogRecordProcessor(logs))
loggers.get_logger("fresh").emit(body="from a fresh venv")
loggers.shutdown()
print(exporter.stats()["exported"], metrics.stats()["exported"], logs.stats()["exported"],
      lens.__version__)
"""


def test_the_wheel_installs_into_a_fresh_venv_and_exports(guests, tmp_path):
    wheel = os.environ.get("LENS_WHEEL")
    assert wheel and pathlib.Path(wheel).is_file(), (
        "LENS_WHEEL must name the built wheel: run python/test.sh"
    )
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [python, "-m", "pip", "install", "-q", wheel],
        check=True,
        capture_output=True,
        timeout=600,
    )
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run(
        [python, "-c", SCRIPT, guests["recorder"], str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "1", "1", "0.1.0"]
    assert any("otlp" in line for line in recorded(out))
    assert sys.version_info >= (3, 9)
