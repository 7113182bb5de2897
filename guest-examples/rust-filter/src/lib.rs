//! A processor that drops noise by name, for spans, metrics and log records (by event name):
//! the items named exactly in `names`, or starting with one of `prefixes` (both
//! comma-separated). For metrics,
//! `keep_every = N` downsamples instead of dropping: a matching metric passes in one
//! collection out of N (the first, then every Nth), e.g. a hot gauge exported every tenth
//! interval. What it keeps is not named in its answer.
//!
//! ```toml
//! [[traces.processors]]
//! kind = "wasm"
//! path = "guest-examples/dist/rust-filter.wasm"
//! settings = { names = "data_loader", prefixes = "prefetch." }
//! exporters = ["vendor"]   # only what goes to the vendor is filtered
//!
//! [[metrics.processors]]
//! kind = "wasm"
//! path = "guest-examples/dist/rust-filter.wasm"
//! settings = { names = "train.grad_norm", keep_every = "10" }
//! ```

use lens_exporter_sdk::{
    Config, Edits, LogBatch, LogProcessor, MetricBatch, MetricProcessor, SpanBatch, SpanProcessor,
};

struct Filter {
    names: Vec<String>,
    prefixes: Vec<String>,
    /// Metrics: pass a matching metric in one collection of this many (0: never).
    keep_every: u64,
    /// Metrics: collections seen by this instance.
    collections: u64,
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

impl Filter {
    fn from_config(config: &Config) -> Result<Self, String> {
        let keep_every = match config.setting("keep_every") {
            None => 0,
            Some(n) => n
                .trim()
                .parse()
                .map_err(|_| format!("`keep_every` is a whole number, not `{n}`"))?,
        };
        let filter = Filter {
            names: list(config, "names"),
            prefixes: list(config, "prefixes"),
            keep_every,
            collections: 0,
        };
        if filter.names.is_empty() && filter.prefixes.is_empty() {
            return Err("set `names` or `prefixes`: this filter would drop nothing".into());
        }
        Ok(filter)
    }

    fn matches(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
            || self.prefixes.iter().any(|p| name.starts_with(p.as_str()))
    }
}

impl SpanProcessor for Filter {
    fn new(config: Config) -> Result<Self, String> {
        Filter::from_config(&config)
    }

    fn process(&mut self, batch: SpanBatch<'_>, edits: &mut Edits) -> Result<(), String> {
        for (i, span) in batch.spans().enumerate() {
            if self.matches(span.name) {
                edits.drop(i);
            }
        }
        Ok(())
    }
}

impl MetricProcessor for Filter {
    fn new(config: Config) -> Result<Self, String> {
        Filter::from_config(&config)
    }

    fn process(&mut self, batch: MetricBatch<'_>, edits: &mut Edits) -> Result<(), String> {
        let MetricBatch::Scopes(scopes) = batch else {
            return Err("this filter reads typed collections".into());
        };
        let keep = self.keep_every > 0 && self.collections.is_multiple_of(self.keep_every);
        self.collections += 1;
        if keep {
            return Ok(());
        }
        for (i, metric) in scopes.iter().flat_map(|s| &s.metrics).enumerate() {
            if self.matches(&metric.name) {
                edits.drop(i);
            }
        }
        Ok(())
    }
}

impl LogProcessor for Filter {
    fn new(config: Config) -> Result<Self, String> {
        Filter::from_config(&config)
    }

    fn process(&mut self, batch: LogBatch<'_>, edits: &mut Edits) -> Result<(), String> {
        for (i, record) in batch.records().enumerate() {
            if record
                .event_name
                .as_deref()
                .is_some_and(|n| self.matches(n))
            {
                edits.drop(i);
            }
        }
        Ok(())
    }
}

lens_exporter_sdk::export!(
    span_processor: Filter,
    metric_processor: Filter,
    log_processor: Filter,
);
