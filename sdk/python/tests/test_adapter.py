"""The component glue: factory, results, exceptions, retries and the life cycle."""

import json
from pathlib import Path

import lens_exporter_sdk as sdk
import pytest
from opentelemetry.sdk.metrics import Counter
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    MetricExporter,
    MetricExportResult,
)
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from wit_world.imports import metric_types, types


class Resource:
    attributes = ()
    schema_url = None


class Recording(SpanExporter):
    def __init__(self, settings):
        self.settings, self.spans, self.answer = settings, [], settings.get("answer")
        self.flushed = self.closed = False

    def export(self, spans):
        if self.answer == "raise":
            raise ConnectionError("backend unreachable")
        if self.answer == "retry":
            raise sdk.RetryableExportError("busy", delay_ms=250)
        self.spans.extend(spans)
        return SpanExportResult.FAILURE if self.answer == "failure" else SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis=30000):
        self.flushed = True
        return self.answer != "no-flush"

    def shutdown(self):
        self.closed = True


def batch(spans=1):
    request = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "scope": {"name": "t"},
                        "spans": [
                            {"traceId": "01" * 16, "spanId": "02" * 8, "name": f"s{i}"}
                            for i in range(spans)
                        ],
                    }
                ]
            }
        ]
    }
    return types.Batch_OtlpJson(json.dumps(request))


def started(**settings):
    component = sdk.span_exporter(Recording)
    assert component().init(list(settings.items()), Resource()) == "otlp-json"
    return component


def error_of(call):
    with pytest.raises(sdk.Err) as e:
        call()
    return e.value.value


def test_spans_reach_the_exporter_built_from_the_settings():
    component = started(path="/out/x")
    component().export(batch(3))  # a new object per call, as componentize-py makes them
    exporter = component.exporter
    assert exporter.settings == {"path": "/out/x"} and exporter.settings.resource.attributes == {}
    assert [s.name for s in exporter.spans] == ["s0", "s1", "s2"]
    component().force_flush()
    assert exporter.flushed
    component().shutdown()
    assert exporter.closed


def test_failure_and_exceptions_reject_with_the_reason():
    assert error_of(
        lambda: started(answer="failure")().export(batch())
    ) == types.ExportError_Rejected("Recording.export returned FAILURE")
    raised = error_of(lambda: started(answer="raise")().export(batch()))
    assert raised == types.ExportError_Rejected(
        "export raised ConnectionError: backend unreachable"
    )


def test_a_retryable_error_asks_the_host_to_retry():
    assert error_of(
        lambda: started(answer="retry")().export(batch())
    ) == types.ExportError_Retryable(("busy", 250))


def test_the_life_cycle_is_enforced():
    component = sdk.span_exporter(Recording)
    assert error_of(lambda: component().export(batch())) == types.ExportError_Rejected(
        "the exporter was not initialized"
    )
    component().init([], Resource())
    component().shutdown()
    assert error_of(lambda: component().export(batch())) == types.ExportError_Rejected(
        "the exporter is shut down"
    )
    assert error_of(lambda: component().shutdown()) == "already shut down"
    assert (
        error_of(lambda: started(answer="no-flush")().force_flush())
        == "Recording.force_flush returned False"
    )


def test_a_failing_factory_refuses_init():
    def factory(settings):
        raise ValueError("`path` is required")

    error = error_of(lambda: sdk.span_exporter(factory)().init([], Resource()))
    assert error == "the exporter's factory failed: ValueError: `path` is required"


def test_a_metric_exporter_s_preferred_temporality_reaches_the_host():
    class Delta(MetricExporter):
        def __init__(self, settings):
            super().__init__(preferred_temporality={Counter: AggregationTemporality.DELTA})

        def export(self, metrics_data, timeout_millis=10_000, **kwargs):
            return MetricExportResult.SUCCESS

        def force_flush(self, timeout_millis=10_000):
            return True

        def shutdown(self, timeout_millis=30_000, **kwargs):
            pass

    preferences = sdk.metric_exporter(Delta)().init([], Resource())
    assert preferences == ("otlp-json", metric_types.Temporality.DELTA)


def test_the_docs_example_runs(capsys):
    """The Python snippet of docs/writing-an-exporter.md, as a user copies it."""
    docs = (Path(__file__).resolve().parents[3] / "docs" / "writing-an-exporter.md").read_text()
    section = docs[docs.index("### Python") :]
    snippet = section[section.index("```python\n") + len("```python\n") :]
    snippet = snippet[: snippet.index("```")]
    module = {}
    exec(compile(snippet, "writing-an-exporter.md", "exec"), module)
    component = module["SpanExporter"]
    component().init([("prefix", "rank3")], Resource())
    component().export(batch(2))
    assert capsys.readouterr().out.splitlines() == [
        f"rank3 s{i} {'01' * 16} {{}}" for i in range(2)
    ]
