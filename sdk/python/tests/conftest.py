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
    CUMULATIVE = "cumulative"
    DELTA = "delta"


wit_types = types.ModuleType("wit_world.imports.types")
_cases(wit_types, "Batch_OtlpJson", "ExportError_Rejected", "ExportError_Retryable")
wit_types.Encoding = _Enum
wit_types.RetryHint = lambda message, delay_ms: (message, delay_ms)
wit_types.Value_Bytes = type("Value_Bytes", (_Case,), {})
metric_types = types.ModuleType("wit_world.imports.metric_types")
_cases(metric_types, "MetricBatch_OtlpJson")
metric_types.Temporality = _Enum
metric_types.MetricPreferences = lambda encoding, temporality: (encoding, temporality)
log_types = types.ModuleType("wit_world.imports.log_types")
_cases(log_types, "LogBatch_OtlpJson")
imports = types.ModuleType("wit_world.imports")
imports.types, imports.metric_types, imports.log_types = wit_types, metric_types, log_types
exports = types.ModuleType("wit_world.exports")
exports.SpanExporter = exports.MetricExporter = exports.LogExporter = object
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
    }
)
