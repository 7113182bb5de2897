"""Python spans through the SDK's BatchSpanProcessor into the recorder guest arrive, field by
field, as the SDK's InMemorySpanExporter sees them: in the typed encoding, and in OTLP protobuf
and OTLP/JSON compared with the Python SDK's own OTLP encoder."""

from __future__ import annotations

import pytest
from conftest import (
    RICH_ROOT,
    end_rich_trace,
    from_otlp_json,
    provider_with_limits,
    recorded,
    recorder,
)
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def run_trace(exporter, bulk: int = 0):
    """The rich trace (and `bulk` plain spans) into `exporter` and the in-memory oracle."""
    oracle = InMemorySpanExporter()
    provider = provider_with_limits()
    provider.add_span_processor(SimpleSpanProcessor(oracle))
    provider.add_span_processor(BatchSpanProcessor(exporter, max_export_batch_size=512))
    end_rich_trace(provider)
    tracer = provider.get_tracer("bulk")
    for i in range(bulk):
        with tracer.start_as_current_span("bulk") as s:
            s.set_attribute("i", i)
    provider.shutdown()
    return oracle.get_finished_spans()


def typed_value(v):
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, int):
        return {"s64": v}
    if isinstance(v, float):
        return {"f64": v}
    if isinstance(v, str):
        return {"string": v}
    first = v[0] if v else ""
    kind = {bool: "bool", int: "s64", float: "f64"}.get(type(first), "string")
    return {f"{kind}-array": list(v)}


def typed_attrs(attrs) -> dict:
    return {k: typed_value(v) for k, v in (attrs or {}).items()}


def typed(span) -> dict:
    """A ReadableSpan in the recorder's typed-batch record."""
    cx = span.context
    status = span.status.status_code.name.lower()
    return {
        "scope": span.instrumentation_scope.name,
        "scope_version": span.instrumentation_scope.version,
        "name": span.name,
        "trace_id": f"{cx.trace_id:032x}",
        "span_id": f"{cx.span_id:016x}",
        "flags": int(cx.trace_flags),
        "remote": cx.is_remote,
        "trace_state": cx.trace_state.to_header(),
        "dropped": [span.dropped_attributes, span.dropped_events, span.dropped_links],
        "parent_span_id": f"{span.parent.span_id:016x}" if span.parent else None,
        "kind": span.kind.name.lower(),
        "start": span.start_time,
        "end": span.end_time,
        "attributes": typed_attrs(span.attributes),
        "events": [
            {"name": e.name, "time": e.timestamp, "attributes": typed_attrs(e.attributes)}
            for e in span.events
        ],
        "links": [
            {"span_id": f"{link.context.span_id:016x}", "attributes": typed_attrs(link.attributes)}
            for link in span.links
        ],
        "status": {"error": span.status.description} if status == "error" else status,
    }


def test_typed_batches_hold_every_field_of_every_span(guests, tmp_path):
    exporter = recorder(guests, tmp_path, "typed")
    spans = run_trace(exporter, bulk=1100)
    lines = recorded(tmp_path)
    batches = [line["typed"] for line in lines if "typed" in line]
    assert len(batches) >= 3 and all(len(b) <= 512 for b in batches)
    got = {s["span_id"]: s for b in batches for s in b}
    assert len(got) == len(spans) == 1106
    for span in spans:
        assert got[f"{span.context.span_id:016x}"] == typed(span), span.name
    root = got[f"{next(s for s in spans if s.name == RICH_ROOT).context.span_id:016x}"]
    assert root["trace_state"] == "vendor=abc,lens=b2"
    assert root["dropped"] == [0, 0, 1]
    limited = next(s for s in got.values() if s["name"] == "limited")
    assert limited["dropped"] == [2, 2, 0]
    # The guest's init got the spans' resource (after the one it was built with).
    inits = [line["init"] for line in lines if "init" in line]
    resource = spans[0].resource.attributes
    assert inits[-1]["resource"] == typed_attrs(resource)
    stats = exporter.stats()
    assert stats["exported"] == stats["received"] == 1106
    assert stats["dropped"] == 0 and stats["traps"] == {}


def normalized(request: ExportTraceServiceRequest) -> list:
    """The request's content independent of grouping order: per (resource, scope), the spans
    sorted by id, every repeated attribute list sorted by key."""
    out = []
    for rs in request.resource_spans:
        resource = json_format.MessageToDict(rs.resource)
        resource["attributes"] = sorted(resource.get("attributes", []), key=lambda a: a["key"])
        for ss in rs.scope_spans:
            scope = json_format.MessageToDict(ss.scope)
            spans = []
            for span in ss.spans:
                d = json_format.MessageToDict(span)
                d["attributes"] = sorted(d.get("attributes", []), key=lambda a: a["key"])
                spans.append(d)
            spans.sort(key=lambda d: d["spanId"])
            out.append([resource, rs.schema_url, scope, ss.schema_url, spans])
    out.sort(key=lambda g: (g[2].get("name", ""), g[3]))
    return out


@pytest.mark.parametrize("encoding", ["otlp", "otlp-json"])
def test_otlp_batches_equal_the_python_sdks_own_encoding(guests, tmp_path, encoding):
    exporter = recorder(guests, tmp_path, encoding)
    spans = run_trace(exporter)
    got = ExportTraceServiceRequest()
    for line in recorded(tmp_path):
        if "otlp" in line:
            got.MergeFrom(ExportTraceServiceRequest.FromString(bytes(line["otlp"])))
        elif "otlp_json" in line:
            got.MergeFrom(from_otlp_json(line["otlp_json"], ExportTraceServiceRequest()))
    # Two fields the Python SDK's encoder leaves out and Lens writes, as OTLP defines them:
    # the trace flags in the low byte of `flags`, and a link's trace state. Checked here, then
    # set aside for the comparison.
    by_id = {f"{s.context.span_id:016x}": s for s in spans}
    for rs in got.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                sdk = by_id[span.span_id.hex()]
                assert span.flags & 0xFF == int(sdk.context.trace_flags), sdk.name
                span.flags &= 0x300
                for link, sdk_link in zip(span.links, sdk.links, strict=True):
                    assert link.trace_state == sdk_link.context.trace_state.to_header()
                    assert link.flags & 0xFF == int(sdk_link.context.trace_flags)
                    link.trace_state = ""
                    link.flags &= 0x300
    assert normalized(got) == normalized(encode_spans(spans))


class PublicOnly:
    """A stand-in offering only `ReadableSpan`'s public API: the converter reads the SDK's own
    spans off their instance dictionaries, anything else through these properties."""

    def __init__(self, span):
        self.__span = span

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.__span, name)


@pytest.mark.parametrize("encoding", ["typed", "otlp"])
def test_the_public_api_reads_the_same_spans_as_the_sdks_own_fields(guests, tmp_path, encoding):
    oracle = InMemorySpanExporter()
    provider = provider_with_limits()
    provider.add_span_processor(SimpleSpanProcessor(oracle))
    end_rich_trace(provider)
    spans = oracle.get_finished_spans()
    records = {}
    for path, batch in [("fields", spans), ("public", [PublicOnly(s) for s in spans])]:
        out = tmp_path / path
        out.mkdir()
        exporter = recorder(guests, out, encoding)
        assert exporter.export(batch).name == "SUCCESS"
        exporter.shutdown()
        (line,) = [line for line in recorded(out) if "init" not in line]
        records[path] = (
            line["typed"]
            if encoding == "typed"
            # The resource's attributes come out in a per-process hash order: compare content.
            else normalized(ExportTraceServiceRequest.FromString(bytes(line["otlp"])))
        )
    assert records["fields"] == records["public"]
    groups = records["fields"]
    count = len(groups) if encoding == "typed" else sum(len(g[4]) for g in groups)
    assert count == len(spans) == 6
