//! A span, metric and log processor that strips prompts and completions (and any attribute
//! named in `keys`) before spans, metrics and log records leave the node: every attribute named
//! in `keys` (default: the OpenTelemetry GenAI attributes that carry user content) is removed,
//! or with `mask = "true"` replaced by `[REDACTED]`, and the item gets `lens.redacted = true`
//! (a metric: on each of its data points, when any of them holds such a key, e.g. `user`).
//! Items without such an attribute are not named in the answer, so they cross nothing back.
//! The same component serves `[[traces.processors]]`, `[[metrics.processors]]` and
//! `[[logs.processors]]`.
//!
//! ```toml
//! [[traces.processors]]
//! kind = "wasm"
//! path = "guest-examples/dist/rust-redact.wasm"
//! on_fault = "drop"        # never send a batch unredacted
//! settings = { keys = "gen_ai.prompt,gen_ai.completion", mask = "false" }
//! ```

use std::collections::BTreeSet;

use lens_exporter_sdk::{
    Config, Edits, LogBatch, LogProcessor, MetricBatch, MetricProcessor, SpanBatch, SpanProcessor,
};

/// The GenAI attributes holding what users and models said.
const DEFAULT_KEYS: &str = "gen_ai.prompt,gen_ai.completion,gen_ai.input.messages,\
                            gen_ai.output.messages,gen_ai.system_instructions";

struct Redact {
    keys: Vec<String>,
    mask: bool,
}

impl SpanProcessor for Redact {
    fn new(config: Config) -> Result<Self, String> {
        let keys = config.setting("keys").unwrap_or(DEFAULT_KEYS);
        let keys: Vec<String> = keys
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(String::from)
            .collect();
        if keys.is_empty() {
            return Err("`keys` names no attribute".into());
        }
        let mask = match config.setting("mask").unwrap_or("false") {
            "true" => true,
            "false" => false,
            other => {
                return Err(format!(
                    "`mask` = {other:?}: expected \"true\" or \"false\""
                ));
            }
        };
        Ok(Redact { keys, mask })
    }

    fn process(&mut self, batch: SpanBatch<'_>, edits: &mut Edits) -> Result<(), String> {
        for (i, span) in batch.spans().enumerate() {
            self.redact(i, span.attributes().map(|(key, _)| key), edits);
        }
        Ok(())
    }
}

impl LogProcessor for Redact {
    fn new(config: Config) -> Result<Self, String> {
        <Redact as SpanProcessor>::new(config)
    }

    fn process(&mut self, batch: LogBatch<'_>, edits: &mut Edits) -> Result<(), String> {
        for (i, record) in batch.records().enumerate() {
            self.redact(i, record.attributes.iter().map(|kv| kv.key.as_str()), edits);
        }
        Ok(())
    }
}

impl MetricProcessor for Redact {
    fn new(config: Config) -> Result<Self, String> {
        <Redact as SpanProcessor>::new(config)
    }

    fn process(&mut self, batch: MetricBatch<'_>, edits: &mut Edits) -> Result<(), String> {
        let MetricBatch::Scopes(scopes) = batch else {
            return Err("this processor reads typed collections".into());
        };
        for (i, metric) in scopes.iter().flat_map(|s| &s.metrics).enumerate() {
            // Each key once, whichever data points hold it.
            let keys: BTreeSet<&str> = metric
                .data_point_attributes()
                .into_iter()
                .flatten()
                .map(|kv| kv.key.as_str())
                .collect();
            self.redact(i, keys.into_iter(), edits);
        }
        Ok(())
    }
}

impl Redact {
    /// The edits of item `i`, whose attributes have `keys`.
    fn redact<'a>(&self, i: usize, keys: impl Iterator<Item = &'a str>, edits: &mut Edits) {
        let mut redacted = false;
        for key in keys {
            if self.keys.iter().any(|k| k == key) {
                if self.mask {
                    edits.set_attribute(i, key, "[REDACTED]");
                } else {
                    edits.remove_attribute(i, key);
                }
                redacted = true;
            }
        }
        if redacted {
            edits.set_attribute(i, "lens.redacted", true);
        }
    }
}

lens_exporter_sdk::export!(
    span_processor: Redact,
    metric_processor: Redact,
    log_processor: Redact,
);
