//! {{name}}: a Lens processor for {{signals}}.
//!
//! `lens build` makes build/{{name}}.wasm; `lens check build/{{name}}.wasm` runs the processor
//! suite on it and shows what it printed. Each type below implements one of the SDK's
//! processor traits (`cargo doc --open` shows the SDK's API): it sees each batch before the
//! exporters it applies to and records in `Edits`, by index, what changes — `drop`,
//! `set_attribute`, `remove_attribute`, `rename`. What it does not name passes unchanged, and
//! nothing crosses back for it. These drop the items named in the `drop` setting and remove the
//! attributes named in `keys` (comma-separated; default `user.email`), marking the item
//! `lens.redacted = true`.
//!
//! `Config` holds the processor's `settings` table from the config (`config.setting("key")`)
//! and the rank's resource. An `Err` (or a panic) sends the batch on unprocessed, or drops it,
//! as the entry's `on_fault` says.

use lens_exporter_sdk::{Config, Edits};

/// What every processor below does with its settings.
struct Rules {
    drop: Vec<String>,
    keys: Vec<String>,
}

impl Rules {
    fn new(config: &Config) -> Self {
        let list = |key: &str, default: &str| -> Vec<String> {
            config
                .setting(key)
                .unwrap_or(default)
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        };
        Rules {
            drop: list("drop", ""),
            keys: list("keys", "user.email"),
        }
    }

    /// The edits of item `i`, called `name`, whose attributes have `keys`.
    fn apply<'a>(
        &self,
        i: usize,
        name: &str,
        keys: impl Iterator<Item = &'a str>,
        edits: &mut Edits,
    ) {
        if self.drop.iter().any(|d| d == name) {
            edits.drop(i);
            return;
        }
        let mut redacted = false;
        for key in keys {
            if self.keys.iter().any(|k| k == key) {
                edits.remove_attribute(i, key);
                redacted = true;
            }
        }
        if redacted {
            edits.set_attribute(i, "lens.redacted", true);
        }
    }
}
