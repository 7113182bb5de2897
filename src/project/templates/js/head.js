// {{name}}: a Lens exporter for {{signals}}, written as OpenTelemetry JS exporters.
//
// `lens build` makes build/{{name}}.wasm; `lens check build/{{name}}.wasm` runs the conformance
// suite on it and shows what it printed. Each class below is an OpenTelemetry JS exporter
// (`export(items, resultCallback)`, `forceFlush()`, `shutdown()`): the Lens JavaScript SDK hands
// it the objects OpenTelemetry JS's exporters receive. Replace the bodies of `export` with calls
// to your backend; `console.log` is the easiest start (`lens check` shows it under its case,
// `lens demo` writes it into its run folder).
//
// Each factory receives `settings`, the exporter's `settings` table from the config (an object
// of strings), and `resource` (`resource.attributes["dl.rank"]`, …). Calls are synchronous:
// call `resultCallback` before `export` returns. Throw `RetryableExportError` for a transient
// failure (the host retries), never wait in `export`.

