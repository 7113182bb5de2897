"""{{name}}: a Lens processor for {{signals}}.

`lens build` makes build/{{name}}.wasm; `lens check build/{{name}}.wasm` runs the
processor suite on it and shows what it printed. Each class below sees each batch
before the exporters it applies to and records in `edits`, by index, what changes:
`edits.drop(i)`, `edits.set_attribute(i, key, value)`, `edits.remove_attribute(i, key)`,
`edits.rename(i, name)`. What it does not name passes unchanged, and nothing crosses
back for it. These drop the items named in the `drop` setting and remove the attributes
named in `keys` (comma-separated; default `user.email`), marking the item
`lens.redacted = True`.

Each class is built with the processor's `settings` table (a `dict` of strings; its
`resource` attribute is the rank's OpenTelemetry `Resource`). An exception sends the
batch on unprocessed, or drops it, as the entry's `on_fault` says.
"""

import lens_exporter_sdk


class Rules:
    def __init__(self, settings):
        def names(key, default=""):
            items = settings.get(key, default).split(",")
            return [n.strip() for n in items if n.strip()]

        self.drop = set(names("drop"))
        self.keys = set(names("keys", "user.email"))

    def apply(self, edits, i, name, keys):
        """The edits of item `i`, called `name`, whose attributes have `keys`."""
        if name in self.drop:
            edits.drop(i)
            return
        found = sorted(self.keys.intersection(keys))
        for key in found:
            edits.remove_attribute(i, key)
        if found:
            edits.set_attribute(i, "lens.redacted", True)
