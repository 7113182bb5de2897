"""The oracle of Lens's differential suite (`tests/all/parity`): the real NeMo Lens, run.

Reads one JSON request on stdin and writes one JSON answer on stdout. Every answer comes from
calling NeMo Lens itself (`nemo-lens[sdk]==0.1.0`, Python 3.13); nothing here re-implements its
rules. Modes:

- ``config``: ``NemoLensConfig.from_env(prefix, fallback_prefix)`` under each case's environment.
- ``decisions``: which ranks export (``setup_telemetry``'s own strategy dispatch) for every world
  size, and which ranks the ``RankAwareSampler`` keeps.
- ``setup``: one ``setup_telemetry`` call (a fresh process per case: the OpenTelemetry globals can
  be set once) with in-memory exporters: whether the rank exports, the resource, how many of
  three spans were recorded, the sampler and the propagator.
- ``sequence``: several ``setup_telemetry`` calls in one process (the one-setup rule).
- ``protocols``: the OTLP transport NeMo Lens picks per signal (``_resolve_otlp_protocol``, then
  its ``prefer_http`` test).
- ``surface``: the helpers training code calls: span-group specs resolved (``SpanGroup.resolve``),
  ``safe_set_span_attributes`` on a real span, the ``semconv`` constants, and what
  ``record_inference_metrics``/``record_rl_metrics``/``record_gym_metrics`` record (name, unit,
  description, kind, value type, points) as an in-memory reader collects it.
- ``propagation``: what the global propagator injects for a root span, a child of an extracted
  context and an extracted context passed through (flags, ``tracestate``).
- ``console``: what ``exporter = "console"`` prints for a span tree, a few metrics and a bridged
  log record (one ``setup_telemetry`` with logs on, stdout captured at the file descriptor),
  as the lines printed. NeMo Lens 0.1.0 passes no formatter, so the SDK indents each document;
  NeMo Lens 0.2.0 passes ``lambda record: record.to_json(indent=None) + "\n"`` to each console
  exporter (``_compact_jsonl_formatter``): the oracle gives the exporters that formatter, so the
  lines are 0.2.0's, byte for byte.

The process ends with ``os._exit`` once the answer is written: the SDK's exit handlers would
otherwise export what the setups left behind (to a collector that is not there).
"""

import json
import os
import sys

from nemo.lens import NemoLensConfig, setup_telemetry
from nemo.lens import handle as nemo_handle
from nemo.lens.sampling import RankAwareSampler

CONFIG_FIELDS = [
    "enabled",
    "service_name",
    "export_strategy",
    "export_rank",
    "export_sample_rate",
    "sampler_enabled",
    "traces_enabled",
    "metrics_enabled",
    "logs_enabled",
    "span_groups",
    "exporter",
    "run_id",
    "user",
    "wandb_entity",
    "wandb_project",
]


def set_environment(env: dict) -> None:
    """Exactly `env` (plus what Python itself needs), nothing inherited from the test runner."""
    keep = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    os.environ.clear()
    os.environ.update(keep)
    os.environ.update(env)


def number(value):
    """JSON has no NaN or infinities: those travel as strings."""
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return repr(value)
    return value


def config_case(case: dict) -> dict:
    set_environment(case["env"])
    try:
        config = NemoLensConfig.from_env(case["prefix"], case.get("fallback"))
    except Exception as exc:  # every rejection, whatever its type, is compared as an error
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"config": {f: number(getattr(config, f)) for f in CONFIG_FIELDS}}


def make_config(fields: dict) -> NemoLensConfig:
    return NemoLensConfig(**fields)


def decisions(request: dict) -> dict:
    out = []
    for case in request["cases"]:
        set_environment(case.get("env", {}))
        config = make_config(case["config"])
        worlds = {}
        for world in request["worlds"]:
            bits = []
            for rank in range(world):
                try:
                    bits.append("1" if nemo_handle._should_export(config, rank, world) else "0")
                except Exception as exc:
                    bits = [f"error: {type(exc).__name__}: {exc}"]
                    break
            worlds[str(world)] = "".join(bits)
        out.append(worlds)
    sampler = {}
    for rate in request["sampler_rates"]:
        keeps = [
            RankAwareSampler(rank, request["sampler_ranks"], rate)._should_sample
            for rank in range(request["sampler_ranks"])
        ]
        sampler[repr(rate)] = "".join("1" if k else "0" for k in keeps)
    return {"strategies": out, "sampler": sampler}


def attribute(value):
    kind = type(value).__name__
    if isinstance(value, (list, tuple)):
        return [kind, [attribute(v) for v in value]]
    return [kind, number(value)]


def one_setup(case: dict) -> dict:
    """A setup_telemetry call; its spans go to an in-memory exporter."""
    from opentelemetry import propagate, trace
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans = InMemorySpanExporter()
    reader = InMemoryMetricReader()
    config = make_config(case["config"])
    try:
        handle = setup_telemetry(
            config,
            rank=case["rank"],
            world_size=case["world_size"],
            resource_attributes=case.get("resource_attributes"),
            span_exporter=spans if case.get("inject", True) else None,
            metric_reader=reader if case.get("inject", True) else None,
            _allow_reinit=case.get("allow_reinit", False),
        )
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    for name in ("a", "b", "c"):
        with handle.tracer.start_as_current_span(name):
            pass
    provider = trace.get_tracer_provider()
    result = {
        "is_exporting": handle.is_exporting,
        "run_id": config.run_id,
        "tracer": type(handle.tracer).__name__,
        "propagator": sorted(propagate.get_global_textmap().fields),
    }
    if hasattr(provider, "force_flush"):
        provider.force_flush()
        result["spans"] = len(spans.get_finished_spans())
        result["sampler"] = provider.sampler.get_description()
        result["resource"] = {k: attribute(v) for k, v in provider.resource.attributes.items()}
    return result


def setup(case: dict) -> dict:
    set_environment(case["env"])
    return one_setup(case)


def sequence(request: dict) -> list:
    set_environment(request["env"])
    out = []
    for case in request["calls"]:
        try:
            setup_telemetry(
                make_config(case["config"]),
                rank=0,
                world_size=1,
                span_exporter=_null_exporter(),
                _allow_reinit=case.get("allow_reinit", False),
            )
            out.append("ok")
        except Exception as exc:
            out.append(f"error: {type(exc).__name__}: {exc}")
    return out


def _null_exporter():
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    return InMemorySpanExporter()


def protocols(request: dict) -> list:
    from nemo.lens import providers

    out = []
    for env in request["cases"]:
        set_environment(env)
        picked = {}
        for signal in ("traces", "metrics", "logs"):
            protocol = providers._resolve_otlp_protocol(signal)
            picked[signal] = "http" if protocol in ("http/protobuf", "http/json") else "grpc"
        out.append(picked)
    return out


def tagged(value):
    """An attribute value with its type, as the Rust side writes it."""
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, float):
        return {"double": value}
    if isinstance(value, str):
        return {"string": value}
    return {"array": [tagged(v) for v in value]}


def span_groups(specs: list) -> list:
    from nemo.lens.groups import SpanGroup

    out = []
    for spec in specs:
        try:
            out.append({"groups": sorted(SpanGroup.resolve(spec))})
        except ValueError as e:
            out.append({"error": str(e)})
    return out


def safe_attributes(cases: list) -> list:
    from nemo.lens.helpers import safe_set_span_attributes
    from opentelemetry.sdk.trace import TracerProvider

    tracer = TracerProvider().get_tracer("parity")
    out = []
    for case in cases:
        span = tracer.start_span("s")
        if "redact_keys" in case:
            safe_set_span_attributes(span, case["attributes"], frozenset(case["redact_keys"]))
        else:
            safe_set_span_attributes(span, case["attributes"])
        out.append([[k, tagged(v)] for k, v in span.attributes.items()])
        span.end()
    return out


def instruments(calls: list) -> list:
    from nemo.lens.instruments.gym import record_gym_metrics
    from nemo.lens.instruments.inference import record_inference_metrics
    from nemo.lens.instruments.rl import record_rl_metrics
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    meter = MeterProvider(metric_readers=[reader]).get_meter("parity")
    record = {
        "inference": record_inference_metrics,
        "rl": record_rl_metrics,
        "gym": record_gym_metrics,
    }
    non_finite = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}
    for call in calls:
        # JSON has no NaN or infinities: those travel as strings.
        args = {
            k: non_finite.get(v, v) if isinstance(v, str) else v for k, v in call["args"].items()
        }
        record[call["family"]](meter, **args)
    out = []
    for rm in reader.get_metrics_data().resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                kind = type(m.data).__name__.lower()
                points = []
                for p in m.data.data_points:
                    attrs = sorted([k, tagged(v)] for k, v in (p.attributes or {}).items())
                    if kind == "histogram":
                        value = {"count": p.count, "sum": float(p.sum)}
                    else:
                        value = tagged(p.value)
                    points.append({"attributes": attrs, "value": value})
                points.sort(key=json.dumps)
                out.append(
                    {
                        "name": m.name,
                        "unit": m.unit or "",
                        "description": m.description or "",
                        "kind": kind,
                        "points": points,
                    }
                )
    out.sort(key=lambda m: m["name"])
    return out


def surface(request: dict) -> dict:
    from nemo.lens import semconv

    return {
        "span_groups": span_groups(request["span_groups"]),
        "safe_attributes": safe_attributes(request["safe_attributes"]),
        "semconv": {k: v for k, v in vars(semconv).items() if k.isupper()},
        "instruments": instruments(request["instruments"]),
    }


def compact_jsonl_formatter(record) -> str:
    """NeMo Lens 0.2.0's ``_compact_jsonl_formatter``."""
    return record.to_json(indent=None) + "\n"


def use_compact_console_format() -> None:
    """Every console exporter NeMo Lens builds gets 0.2.0's formatter, as 0.2.0 passes it."""
    from opentelemetry.sdk._logs.export import ConsoleLogExporter
    from opentelemetry.sdk.metrics.export import ConsoleMetricExporter
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    for cls in (ConsoleSpanExporter, ConsoleMetricExporter, ConsoleLogExporter):
        original = cls.__init__

        def init(self, *args, __original=original, **kwargs):
            kwargs.setdefault("formatter", compact_jsonl_formatter)
            __original(self, *args, **kwargs)

        cls.__init__ = init


def console(case: dict) -> list:
    """Runs the scenario with stdout going to a file; the lines printed."""
    import logging
    import tempfile

    from nemo.lens.logging_bridge import setup_logging_bridge
    from opentelemetry import metrics, trace
    from opentelemetry.trace import Link, SpanKind, StatusCode

    use_compact_console_format()
    set_environment(case["env"])
    sys.stdout.flush()
    saved = os.dup(1)
    captured = tempfile.TemporaryFile()
    os.dup2(captured.fileno(), 1)
    try:
        handle = setup_telemetry(
            make_config(case["config"]),
            rank=0,
            world_size=1,
            resource_attributes=case.get("resource_attributes"),
        )
        setup_logging_bridge("parity", logging.INFO)
        log = logging.getLogger("parity")
        log.setLevel(logging.INFO)
        tracer = trace.get_tracer("parity.tracer", "1.2.3")
        with tracer.start_as_current_span("train_step", kind=SpanKind.SERVER) as root:
            root.set_attribute("step", 7)
            root.set_attribute("loss", 0.5)
            root.set_attribute("phase", "train")
            root.set_attribute("ok", True)
            root.set_attribute("dims", [1, 2, 3])
            root.add_event("checkpoint", {"path": "/ckpt/7"})
            log.info("checkpoint saved at step %d", 7)
            with tracer.start_as_current_span(
                "optimizer", links=[Link(root.get_span_context(), {"why": "lr"})]
            ) as child:
                child.set_status(StatusCode.ERROR, "nan in gradients")
        meter = metrics.get_meter("parity.meter")
        meter.create_counter("tokens", unit="{token}", description="Tokens seen.").add(
            4096, {"split": "train"}
        )
        meter.create_histogram("step_time", unit="ms", description="Step time.").record(12.5)
        meter.create_gauge("lr", description="Learning rate.").set(0.0003)
        handle.shutdown()
        # NeMo Lens's `shutdown` leaves the logger provider alone: flush it here, while stdout
        # is still captured.
        from opentelemetry._logs import get_logger_provider

        get_logger_provider().shutdown()
        sys.stdout.flush()
    finally:
        os.dup2(saved, 1)
    captured.seek(0)
    return captured.read().decode().splitlines()


def propagation(request: dict) -> list:
    """What the global propagator writes: for each case, the carrier injected inside a new span
    (a root one, or a child of the context extracted from the case's carrier), or, for a
    ``passthrough`` case, the extracted context itself."""
    from opentelemetry import propagate

    set_environment({})
    handle = setup_telemetry(
        make_config({"enabled": True, "export_strategy": "all_ranks", "run_id": "r"}),
        rank=0,
        world_size=1,
        span_exporter=_null_exporter(),
        metric_reader=_null_reader(),
    )
    out = []
    for case in request["cases"]:
        parent = propagate.extract(case["carrier"]) if case.get("carrier") is not None else None
        carrier: dict = {}
        if case.get("passthrough"):
            propagate.inject(carrier, context=parent)
        else:
            with handle.tracer.start_as_current_span("s", context=parent):
                propagate.inject(carrier)
        out.append(carrier)
    return out


def _null_reader():
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    return InMemoryMetricReader()


def main() -> None:
    request = json.load(sys.stdin)
    mode = request["mode"]
    if mode == "config":
        answer = [config_case(c) for c in request["cases"]]
    elif mode == "decisions":
        answer = decisions(request)
    elif mode == "setup":
        answer = setup(request["case"])
    elif mode == "sequence":
        answer = sequence(request)
    elif mode == "protocols":
        answer = protocols(request)
    elif mode == "surface":
        answer = surface(request)
    elif mode == "console":
        answer = console(request["case"])
    elif mode == "propagation":
        answer = propagation(request)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    json.dump(answer, sys.stdout)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
