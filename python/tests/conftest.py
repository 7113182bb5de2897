"""Shared fixtures of the `lens` package's tests: the test guests, the recorder, and a trace
covering every field an exporter reads."""

from __future__ import annotations

import base64
import json
import os
import pathlib
import subprocess

import lens
import pytest
from google.protobuf import json_format
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
    set_span_in_context,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]

#: The rich trace's root span name (unicode on purpose).
RICH_ROOT = "step ✓ 步骤 🚀"


def pytest_configure(config):
    config.addinivalue_line("markers", "nemo: needs the real NeMo Lens (Python 3.13 venv)")


@pytest.fixture(scope="session")
def guests() -> dict[str, str]:
    """Paths of the guests `tests/guests` builds (`cargo run -p lens-test-guests`)."""
    raw = os.environ.get("LENS_TEST_GUESTS")
    if not raw:
        raw = subprocess.run(
            ["cargo", "run", "-q", "-p", "lens-test-guests"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    return json.loads(raw)


def recorder(
    guests, out: pathlib.Path, encoding: str, cls=lens.WasmSpanExporter, settings=None, **kwargs
):
    """The recorder guest writing every batch it gets to `out/batches.jsonl`, as a `cls`."""
    return cls(
        guests["recorder"],
        settings={"out": "/out/batches.jsonl", "encoding": encoding, **(settings or {})},
        preopens=[{"host": str(out), "guest": "/out", "read_only": False}],
        name=kwargs.pop("name", "recorder"),
        **kwargs,
    )


#: The OTLP/JSON fields holding ids (hex there, base64 in protobuf's JSON mapping).
ID_KEYS = ("traceId", "spanId", "parentSpanId")


def from_otlp_json(text: str, message):
    """OTLP/JSON into `message` (an empty request of the signal). OTLP/JSON writes ids in hex
    where protobuf's JSON mapping has base64: the ids are checked to be hex of 8 or 16 bytes and
    turned into bytes first."""

    def ids_as_base64(node):
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ID_KEYS and isinstance(v, str) and v:
                    raw = bytes.fromhex(v)  # raises if not hex
                    assert len(raw) in (8, 16), (k, v)
                    node[k] = base64.b64encode(raw).decode()
                else:
                    ids_as_base64(v)
        elif isinstance(node, list):
            for v in node:
                ids_as_base64(v)

    doc = json.loads(text)
    ids_as_base64(doc)
    json_format.ParseDict(doc, message)
    return message


def recorded(out: pathlib.Path) -> list[dict]:
    """The recorder's lines."""
    path = out / "batches.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def provider_with_limits() -> TracerProvider:
    """A provider whose limits the rich trace exceeds (dropped counts on the wire)."""
    return TracerProvider(
        span_limits=SpanLimits(max_span_attributes=20, max_events=3, max_links=1),
    )


REMOTE = SpanContext(
    trace_id=0x0AF7651916CD43DD8448EB211C80319C,
    span_id=0xB7AD6B7169203331,
    is_remote=True,
    trace_flags=TraceFlags(TraceFlags.SAMPLED),
    trace_state=TraceState([("vendor", "abc"), ("lens", "b2")]),
)
LINKED = SpanContext(
    trace_id=0x5B8E0000000000000000000000000001,
    span_id=0x00F067AA0BA902B7,
    is_remote=True,
    trace_flags=TraceFlags(TraceFlags.DEFAULT),
)


def end_rich_trace(provider: TracerProvider) -> None:
    """A root of kind server under a remote parent with a trace state, with attributes of
    every type, events, links (one over the limit), an error status; a child of every other
    kind in a second scope with a version, schema URL and attributes; a span over the
    attribute and event limits."""
    trainer = provider.get_tracer("trainer")
    other = provider.get_tracer(
        "checkpointer",
        "2.1",
        schema_url="https://opentelemetry.io/schemas/1.21.0",
        attributes={"scope.attr": "x", "scope.n": 3},
    )
    every_type = {
        "s": "text ✓",
        "empty": "",
        "b": True,
        "i": -42,
        "big": 2**62,
        "f": 1.5,
        "sa": ("a", "b", ""),
        "ba": (True, False),
        "ia": (1, -2, 3),
        "fa": (-1.5, 1e300),
    }
    with trainer.start_as_current_span(
        RICH_ROOT,
        context=set_span_in_context(NonRecordingSpan(REMOTE)),
        kind=SpanKind.SERVER,
        links=[Link(LINKED, {"why": "data"}), Link(REMOTE, {"dropped": True})],
        attributes=every_type,
    ) as root:
        root.add_event("loss-spike", {"loss": 9.5, "tags": ("a", "b")})
        root.set_status(Status(StatusCode.ERROR, "nan loss"))
        for kind in (SpanKind.CLIENT, SpanKind.PRODUCER, SpanKind.CONSUMER, SpanKind.INTERNAL):
            with other.start_as_current_span(f"child-{kind.name.lower()}", kind=kind) as child:
                child.set_status(Status(StatusCode.OK))
    with trainer.start_as_current_span("limited") as limited:
        for i in range(22):
            limited.set_attribute(f"k{i}", i)
        for i in range(5):
            limited.add_event(f"e{i}")
