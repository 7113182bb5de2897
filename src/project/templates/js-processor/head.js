// {{name}}: a Lens processor for {{signals}}.
//
// `lens build` makes build/{{name}}.wasm; `lens check build/{{name}}.wasm` runs the processor
// suite on it and shows what it printed. Each processor below sees each batch before the
// exporters it applies to and records in `edits`, by index, what changes: `edits.drop(i)`,
// `setAttribute(i, key, value)`, `removeAttribute(i, key)`, `rename(i, name)`. What it does
// not name passes unchanged, and nothing crosses back for it. These drop the items named in
// the `drop` setting and remove the attributes named in `keys` (comma-separated; default
// `user.email`), marking the item `lens.redacted = true`.
//
// Each factory gets the processor's `settings` (an object of strings) and the rank's resource.
// A throw sends the batch on unprocessed, or drops it, as the entry's `on_fault` says.

