"""{{name}}: a Lens exporter for {{signals}}, written as OpenTelemetry Python SDK exporters.

`lens build` makes build/{{name}}.wasm; `lens check build/{{name}}.wasm` runs the conformance
suite on it and shows what it printed. Each class below is an OpenTelemetry SDK exporter: the
Lens Python SDK (`lens_exporter_sdk`) hands it the objects the SDK's own exporters receive.
Replace the bodies of `export` with calls to your backend; a line on stdout is the easiest start
(`lens check` shows it under its case, `lens demo` writes it into its run folder).

Each factory receives `settings`, the exporter's `settings` table from the config (a dict of
strings), and `settings.resource`, the rank's OpenTelemetry `Resource` (`service.name`,
`dl.rank`, ...). The host owns retries: raise `lens_exporter_sdk.RetryableExportError` for a
transient failure, never sleep in `export`.
"""

import sys

import lens_exporter_sdk
