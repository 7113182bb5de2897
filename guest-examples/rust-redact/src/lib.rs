//! A span processor that strips prompts and completions from `gen_ai` spans before they leave
//! the node: every attribute named in `keys` (default: the OpenTelemetry GenAI attributes that
//! carry user content) is removed, or with `mask = "true"` replaced by `[REDACTED]`, and the
//! span gets `lens.redacted = true`. Spans without such an attribute are not named in the
//! answer, so they cross nothing back.
//!
//! ```toml
//! [[traces.processors]]
//! kind = "wasm"
//! path = "guest-examples/dist/rust-redact.wasm"
//! on_fault = "drop"        # never send a batch unredacted
//! settings = { keys = "gen_ai.prompt,gen_ai.completion", mask = "false" }
//! ```

use lens_exporter_sdk::{Config, Edits, SpanBatch, SpanProcessor};

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
            let mut redacted = false;
            for (key, _) in span.attributes() {
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
        Ok(())
    }
}

lens_exporter_sdk::export!(span_processor: Redact);
