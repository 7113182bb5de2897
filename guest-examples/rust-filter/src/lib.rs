//! A span processor that drops noisy spans by name: those named exactly in `names`, or
//! starting with one of `prefixes` (both comma-separated). The spans it keeps are not named in
//! its answer.
//!
//! ```toml
//! [[traces.processors]]
//! kind = "wasm"
//! path = "guest-examples/dist/rust-filter.wasm"
//! settings = { names = "data_loader", prefixes = "prefetch." }
//! exporters = ["vendor"]   # only what goes to the vendor is filtered
//! ```

use lens_exporter_sdk::{Config, Edits, SpanBatch, SpanProcessor};

struct Filter {
    names: Vec<String>,
    prefixes: Vec<String>,
}

fn list(config: &Config, key: &str) -> Vec<String> {
    config
        .setting(key)
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

impl SpanProcessor for Filter {
    fn new(config: Config) -> Result<Self, String> {
        let filter = Filter {
            names: list(&config, "names"),
            prefixes: list(&config, "prefixes"),
        };
        if filter.names.is_empty() && filter.prefixes.is_empty() {
            return Err("set `names` or `prefixes`: this filter would drop nothing".into());
        }
        Ok(filter)
    }

    fn process(&mut self, batch: SpanBatch<'_>, edits: &mut Edits) -> Result<(), String> {
        for (i, span) in batch.spans().enumerate() {
            let name = span.name;
            if self.names.iter().any(|n| n == name)
                || self.prefixes.iter().any(|p| name.starts_with(p.as_str()))
            {
                edits.drop(i);
            }
        }
        Ok(())
    }
}

lens_exporter_sdk::export!(span_processor: Filter);
