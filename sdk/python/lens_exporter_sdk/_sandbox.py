"""What the OpenTelemetry SDK needs to import inside a component, which has no threads and no
`ctypes` (no native libraries to load).

- `Resource.create` (run at import, for defaults) detects resources on a thread pool: the same
  detectors run here one after the other, with the same merge order and error handling.
- The metrics SDK reads a float's IEEE 754 bits with `c_uint64.from_buffer(c_double(x)).value`
  (its exponential-histogram mapping); without `_ctypes`, a `ctypes` offering exactly that,
  through `struct`, takes its place.
"""

import struct
import sys
import types


class CDouble:
    """`ctypes.c_double`, as far as the metrics SDK uses it."""

    def __init__(self, value=0.0):
        self.value = float(value)


class CUInt64:
    """`ctypes.c_uint64`, as far as the metrics SDK uses it: a double's bits."""

    def __init__(self, value=0):
        self.value = int(value)

    @classmethod
    def from_buffer(cls, double):
        return cls(struct.unpack("<Q", struct.pack("<d", double.value))[0])


try:
    import ctypes  # noqa: F401
except ImportError:
    _ctypes = types.ModuleType("ctypes", "float bits only: see lens_exporter_sdk._sandbox")
    _ctypes.c_double = CDouble
    _ctypes.c_uint64 = CUInt64
    sys.modules["ctypes"] = _ctypes

from opentelemetry.sdk import resources  # noqa: E402


def _detect_in_order(detectors, initial_resource=None, timeout=5):
    merged = initial_resource or resources.Resource.create()
    for detector in detectors:
        try:
            found = detector.detect()
        except Exception:
            if detector.raise_on_error:
                raise
            found = resources.Resource.get_empty()
        merged = merged.merge(found)
    return merged


resources.get_aggregated_resources = _detect_in_order
