"""Span processors: the edits a processor records become the host's answer, by index; errors
become the call's error, and the life cycle is the exporters'."""

import json

import lens_exporter_sdk as sdk
import pytest
from test_adapter import Resource, batch
from wit_world.imports import edit_types, types


def test_edits_answer_each_span_once_in_index_order_and_a_drop_wins():
    edits = sdk.Edits()
    assert edits.to_wit() == []
    edits.rename(3, "renamed")
    edits.set_attribute(3, "cost.centre", "research")
    edits.remove_attribute(3, "gen_ai.prompt")
    edits.set_status(3, "error", "bad")
    edits.set_attribute(1, "n", 7)
    edits.drop(1)
    edits.set_attribute(1, "ignored", True)
    edits.drop(0)
    assert edits.is_dropped(1) and not edits.is_dropped(3)
    assert len(edits) == 3
    assert edits.to_wit() == [
        (0, "drop"),
        (1, "drop"),
        (
            3,
            edit_types.Action_Edit(
                [
                    edit_types.Change_Rename("renamed"),
                    edit_types.Change_SetAttribute(("cost.centre", types.Value_String("research"))),
                    edit_types.Change_RemoveAttribute("gen_ai.prompt"),
                    edit_types.Change_SetStatus(types.Status_Error("bad")),
                ]
            ),
        ),
    ]


@pytest.mark.parametrize(
    ("value", "wit"),
    [
        (True, types.Value_Bool(True)),
        (3, types.Value_S64(3)),
        (0.5, types.Value_F64(0.5)),
        ("x", types.Value_String("x")),
        (b"\x00", types.Value_Bytes(b"\x00")),
        (["a", "b"], types.Value_StringArray(["a", "b"])),
        ((1, 2), types.Value_S64Array([1, 2])),
        ([True, False], types.Value_BoolArray([True, False])),
        ([0.5], types.Value_F64Array([0.5])),
    ],
)
def test_attribute_values_take_their_wit_type(value, wit):
    edits = sdk.Edits()
    edits.set_attribute(0, "k", value)
    assert edits.to_wit() == [
        (0, edit_types.Action_Edit([edit_types.Change_SetAttribute(("k", wit))]))
    ]


@pytest.mark.parametrize("value", [None, [], [1, "a"], [True, 1], {"a": 1}])
def test_values_a_span_attribute_cannot_hold_are_refused(value):
    edits = sdk.Edits()
    edits.set_attribute(0, "k", value)
    with pytest.raises(TypeError, match="attribute value"):
        edits.to_wit()


def test_bad_indices_and_statuses_are_refused_at_once():
    edits = sdk.Edits()
    with pytest.raises(ValueError, match="span index -1"):
        edits.rename(-1, "x")
    with pytest.raises(ValueError, match="status 'bad'"):
        edits.set_status(0, "bad")


class Filter:
    def __init__(self, settings):
        self.names = settings["names"].split(",")
        self.closed = False

    def process(self, spans, edits):
        for i, span in enumerate(spans):
            if span.name in self.names:
                edits.drop(i)
            elif span.name == "boom":
                raise RuntimeError("cannot process")
            else:
                edits.set_attribute(i, "seen", True)

    def shutdown(self):
        self.closed = True


def processor(names="s1"):
    cls = sdk.span_processor(Filter)
    component = cls()
    assert component.init([("names", names)], Resource()) == "otlp-json"
    return cls, component


def test_the_processor_gets_the_batch_s_spans_in_order_and_answers_its_edits():
    cls, component = processor("s1")
    answer = component.process(batch(3))
    seen = edit_types.Action_Edit(
        [edit_types.Change_SetAttribute(("seen", types.Value_Bool(True)))]
    )
    assert answer == [(0, seen), (1, "drop"), (2, seen)]
    component.shutdown()
    assert cls.exporter.closed
    with pytest.raises(sdk.Err, match="shut down"):
        component.process(batch(1))
    with pytest.raises(sdk.Err, match="already shut down"):
        component.shutdown()


def test_an_exception_in_process_is_the_call_s_error():
    _, component = processor("none")
    request = json.loads(batch(1).value)
    request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"] = "boom"
    with pytest.raises(sdk.Err, match="process raised RuntimeError: cannot process"):
        component.process(types.Batch_OtlpJson(json.dumps(request)))


def test_a_factory_failing_refuses_init():
    cls = sdk.span_processor(lambda settings: settings["missing"])
    with pytest.raises(sdk.Err, match="factory failed: KeyError"):
        cls().init([], Resource())


def test_a_log_processor_gets_the_batch_s_records_and_answers_its_edits():
    from wit_world.imports import log_types

    class Quiet:
        def process(self, records, edits):
            for i, r in enumerate(records):
                if r.log_record.severity_text == "DEBUG":
                    edits.drop(i)
                else:
                    edits.set_body(i, "[redacted]")
                    edits.rename(i, "lens.event")

    records = [
        {"severityText": text, "body": {"stringValue": f"record {i}"}}
        for i, text in enumerate(["DEBUG", "INFO"])
    ]
    request = {"resourceLogs": [{"scopeLogs": [{"scope": {"name": "t"}, "logRecords": records}]}]}
    cls = sdk.log_processor(lambda settings: Quiet())
    component = cls()
    assert component.init([], Resource()) == "otlp-json"
    answer = component.process(log_types.LogBatch_OtlpJson(json.dumps(request)))
    changes = [edit_types.Change_SetBody("[redacted]"), edit_types.Change_Rename("lens.event")]
    assert answer == [(0, "drop"), (1, edit_types.Action_Edit(changes))]
    with pytest.raises(sdk.Err, match="reads OTLP/JSON"):
        component.process(types.Batch_OtlpJson("{}"))


def test_a_metric_processor_gets_the_collection_s_metrics_in_order_and_answers_its_edits():
    from wit_world.imports import metric_types

    class Downsample:
        def process(self, metrics, edits):
            for i, m in enumerate(metrics):
                if m.name == "hot":
                    edits.drop(i)
                else:
                    edits.rename(i, m.name + ".x")
                    edits.remove_attribute(i, "user")

    def gauge(name):
        point = {"asDouble": 1.5, "timeUnixNano": "1", "attributes": []}
        return {"name": name, "gauge": {"dataPoints": [point]}}

    request = {
        "resourceMetrics": [
            {
                "scopeMetrics": [
                    {"scope": {"name": "a"}, "metrics": [gauge("loss")]},
                    {"scope": {"name": "b"}, "metrics": [gauge("hot"), gauge("tokens")]},
                ]
            }
        ]
    }
    cls = sdk.metric_processor(lambda settings: Downsample())
    component = cls()
    assert component.init([], Resource()) == "otlp-json"
    answer = component.process(metric_types.MetricBatch_OtlpJson(json.dumps(request)))
    edited = [edit_types.Change_Rename("tokens.x"), edit_types.Change_RemoveAttribute("user")]
    assert answer[1] == (1, "drop")
    assert answer[2] == (2, edit_types.Action_Edit(edited))
    assert [index for index, _ in answer] == [0, 1, 2]
    with pytest.raises(sdk.Err, match="reads OTLP/JSON"):
        component.process(types.Batch_OtlpJson("{}"))
