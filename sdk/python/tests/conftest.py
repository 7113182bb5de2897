"""The SDK outside a component: its package on the path, and a stand-in for the `wit_world`
bindings componentize-py generates (only the names the SDK uses)."""

import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


class _Case:
    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return type(self) is type(other) and self.value == other.value

    def __repr__(self):
        return f"{type(self).__name__}({self.value!r})"


def _cases(module, *names):
    for name in names:
        setattr(module, name, type(name, (_Case,), {}))


class _Enum:
    OTLP_JSON = "otlp-json"
    OTLP_PROTOBUF = "otlp-protobuf"
    CUMULATIVE = "cumulative"
    DELTA = "delta"


wit_types = types.ModuleType("wit_world.imports.types")
_cases(
    wit_types,
    "Batch_OtlpJson",
    "Batch_OtlpProtobuf",
    "ExportError_Rejected",
    "ExportError_Retryable",
)
wit_types.Encoding = _Enum
wit_types.RetryHint = lambda message, delay_ms: (message, delay_ms)
_cases(
    wit_types,
    "Value_String",
    "Value_Bool",
    "Value_S64",
    "Value_F64",
    "Value_Bytes",
    "Value_StringArray",
    "Value_BoolArray",
    "Value_S64Array",
    "Value_F64Array",
    "Status_Error",
)
wit_types.Status_Unset = type("Status_Unset", (_Case,), {"__init__": lambda self: None})
wit_types.Status_Ok = type("Status_Ok", (_Case,), {"__init__": lambda self: None})
wit_types.KeyValue = lambda key, value: (key, value)
edit_types = types.ModuleType("wit_world.imports.edit_types")
_cases(
    edit_types,
    "Change_SetAttribute",
    "Change_RemoveAttribute",
    "Change_Rename",
    "Change_SetStatus",
    "Change_SetBody",
    "Action_Edit",
)
edit_types.Action_Drop = lambda: "drop"
edit_types.ItemEdit = lambda index, action: (index, action)
metric_types = types.ModuleType("wit_world.imports.metric_types")
_cases(metric_types, "MetricBatch_OtlpJson", "MetricBatch_OtlpProtobuf")
metric_types.Temporality = _Enum
metric_types.MetricPreferences = lambda encoding, temporality: (encoding, temporality)
log_types = types.ModuleType("wit_world.imports.log_types")
_cases(log_types, "LogBatch_OtlpJson", "LogBatch_OtlpProtobuf")
imports = types.ModuleType("wit_world.imports")
imports.types, imports.metric_types, imports.log_types = wit_types, metric_types, log_types
imports.edit_types = edit_types
exports = types.ModuleType("wit_world.exports")
exports.SpanExporter = exports.MetricExporter = exports.LogExporter = object
exports.SpanProcessor = exports.MetricProcessor = exports.LogProcessor = object
world = types.ModuleType("wit_world")
world.imports, world.exports = imports, exports
sys.modules.update(
    {
        "wit_world": world,
        "wit_world.imports": imports,
        "wit_world.exports": exports,
        "wit_world.imports.types": wit_types,
        "wit_world.imports.metric_types": metric_types,
        "wit_world.imports.log_types": log_types,
        "wit_world.imports.edit_types": edit_types,
    }
)
