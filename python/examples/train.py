"""A training rank whose spans go to a sandboxed WebAssembly exporter.

With NeMo Lens installed (`pip install "nemo-lens[sdk]"`, Python >= 3.13) the rank sets up
telemetry through NeMo Lens's `setup_telemetry`, which decides whether this rank exports;
without it, through the plain OpenTelemetry SDK. Either way the spans go to
`lens.WasmSpanExporter`: here Lens's built-in JSON-lines exporter (`lens-jsonl-exporter.wasm`,
written by `lens demo` into its output directory; any exporter component works), sandboxed with
one writable directory.

    python python/examples/train.py --wasm lens-out/<run>/lens-jsonl-exporter.wasm --out /tmp/spans
    RANK=3 WORLD_SIZE=4 python python/examples/train.py --wasm ... --out ...
"""

from __future__ import annotations

import argparse
import os
import pathlib
import time

import lens


def exporter(wasm: str, out: pathlib.Path, rank: int) -> lens.WasmSpanExporter:
    out.mkdir(parents=True, exist_ok=True)
    return lens.WasmSpanExporter(
        wasm,
        settings={"path": f"/out/rank-{rank}.jsonl"},
        preopens=[{"host": str(out), "guest": "/out", "read_only": False}],
        memory_limit_mib=64,
        call_timeout_ms=5000,
    )


def tracer_for(span_exporter: lens.WasmSpanExporter, rank: int, world: int):
    """The tracer and a shutdown function, through NeMo Lens if it is installed."""
    try:
        from nemo.lens import NemoLensConfig, setup_telemetry
    except ImportError:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        resource = Resource.create({"service.name": "train", "dl.rank": rank})
        provider = TracerProvider(resource=resource)
        provider.add_span_processor(BatchSpanProcessor(span_exporter))
        print(f"rank {rank}: plain OpenTelemetry SDK")
        return provider.get_tracer("train"), provider.shutdown

    config = NemoLensConfig.from_env()
    config.enabled = True
    config.export_strategy = os.environ.get("NEMO_LENS_EXPORT_STRATEGY", "all_ranks")
    config.metrics_enabled = False
    handle = setup_telemetry(config, rank=rank, world_size=world, span_exporter=span_exporter)
    print(f"rank {rank}: NeMo Lens, exporting: {handle.is_exporting}")
    return handle.tracer, handle.shutdown


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--wasm", required=True, help="the exporter component")
    args.add_argument("--out", default="lens-out/python", help="the directory it writes into")
    args.add_argument("--steps", type=int, default=50)
    opts = args.parse_args()
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    span_exporter = exporter(opts.wasm, pathlib.Path(opts.out), rank)
    tracer, shutdown = tracer_for(span_exporter, rank, world)
    with tracer.start_as_current_span("job") as job:
        job.set_attribute("job.steps", opts.steps)
        for step in range(1, opts.steps + 1):
            with tracer.start_as_current_span("step") as span:
                with tracer.start_as_current_span("forward_backward"):
                    time.sleep(0.001)
                with tracer.start_as_current_span("optimizer") as opt:
                    opt.set_attribute("lr", 3e-4 * (1 - step / opts.steps))
                span.set_attribute("step", step)
                span.set_attribute("loss", 4.0 / (1.0 + step / 20.0))
    shutdown()
    print(f"rank {rank}: {span_exporter.stats()}")


if __name__ == "__main__":
    main()
