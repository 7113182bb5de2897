//! A processor for tests (`lens:exporter@0.4.0`, world `all-processors`: spans, metrics and log
//! records). `settings.mode` picks what it does, to spans, metrics and log records alike (where
//! a log record's "name" is its severity text, for `filter`; a metric's attributes are those of
//! its data points, for `redact`):
//! - `noop`: answers no edit (any `encoding`: `typed`, `otlp-protobuf`, `otlp-json`);
//! - `redact`: removes the attributes named in `keys` (comma-separated) from every span holding
//!   one, and sets `lens.redacted = true` on it;
//! - `filter`: drops the spans whose name is in `names` (comma-separated);
//! - `rewrite`: renames every span to `<name>.x`, sets `index` (its index) and, on odd indices,
//!   an error status `odd`;
//! - misbehaviours: `trap` (every `trap_every`-th call, default every call), `hang` (spins),
//!   `error` (returns an error), `out-of-range`, `duplicate`, `set-body` (answers the host
//!   refuses for spans), `set-status` (refused for log records), `refuse-init`, `trap-init`;
//!   answers larger than their guest: `aliased` (`count` changes whose `field` all point at one
//!   buffer of `alias_mib` MiB) and `huge` (one string of `huge_mib` MiB, or `huge_bytes`);
//! - log records only: `rewrite` renames each record's event to `lens.event`, sets `index`,
//!   and replaces the body of odd ones with `[redacted]`;
//! - metrics: `rewrite` renames each metric to `<name>.x` and sets `index` on its data points
//!   (no status).

use std::sync::Mutex;

wit_bindgen::generate!({ path: "../../../../wit", world: "all-processors" });

use exports::lens::exporter::log_processor::Guest as LogGuest;
use exports::lens::exporter::metric_processor::Guest as MetricGuest;
use exports::lens::exporter::span_processor::Guest;
use lens::exporter::edit_types::{Action, Change, ItemEdit};
use lens::exporter::log_types::LogBatch;
use lens::exporter::metric_types::{Metric, MetricBatch, MetricData};
use lens::exporter::types::{Batch, Encoding, KeyValue, Resource, Status, Value};

#[derive(Default)]
struct State {
    mode: String,
    /// Every setting, for the modes' own numbers.
    settings: Vec<(String, String)>,
    keys: Vec<String>,
    names: Vec<String>,
    trap_every: u64,
    calls: u64,
}

static STATE: Mutex<State> = Mutex::new(State {
    mode: String::new(),
    settings: Vec::new(),
    keys: Vec::new(),
    names: Vec::new(),
    trap_every: 1,
    calls: 0,
});

impl State {
    fn setting(&self, key: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn number(&self, key: &str, default: usize) -> usize {
        self.setting(key)
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

struct Processor;

impl Guest for Processor {
    fn init(settings: Vec<(String, String)>, _resource: Resource) -> Result<Encoding, String> {
        let mut state = STATE.lock().unwrap();
        let mut encoding = Encoding::Typed;
        state.settings = settings.clone();
        for (k, v) in settings {
            match k.as_str() {
                "mode" => state.mode = v,
                "keys" => state.keys = list(&v),
                "names" => state.names = list(&v),
                "trap_every" => state.trap_every = v.parse().map_err(|_| "trap_every")?,
                "encoding" => {
                    encoding = match v.as_str() {
                        "typed" => Encoding::Typed,
                        "otlp-protobuf" => Encoding::OtlpProtobuf,
                        "otlp-json" => Encoding::OtlpJson,
                        other => return Err(format!("unknown encoding {other}")),
                    }
                }
                _ => {}
            }
        }
        match state.mode.as_str() {
            "refuse-init" => Err("this processor refuses to start".into()),
            "trap-init" => panic!("init traps"),
            _ => Ok(encoding),
        }
    }

    fn process(batch: Batch) -> Result<Vec<ItemEdit>, String> {
        let state = called();
        let spans: Vec<_> = match &batch {
            Batch::Typed(groups) => groups.iter().flat_map(|g| g.spans.iter()).collect(),
            _ => Vec::new(),
        };
        match state.mode.as_str() {
            "noop" => Ok(Vec::new()),
            "redact" => Ok(redact(spans.iter().map(|s| &s.attributes[..]), &state.keys)),
            "filter" => Ok(spans
                .iter()
                .enumerate()
                .filter(|(_, s)| state.names.contains(&s.name))
                .map(|(i, _)| ItemEdit {
                    index: i as u32,
                    action: Action::Drop,
                })
                .collect()),
            "rewrite" => Ok(spans
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let mut changes = vec![
                        Change::Rename(format!("{}.x", s.name)),
                        Change::SetAttribute(KeyValue {
                            key: "index".into(),
                            value: Value::S64(i as i64),
                        }),
                    ];
                    if i % 2 == 1 {
                        changes.push(Change::SetStatus(Status::Error("odd".into())));
                    }
                    edit(i, changes)
                })
                .collect()),
            other => {
                let other = other.to_string();
                let n = spans.len();
                misbehave(state, n).unwrap_or_else(|| Err(format!("unknown mode {other}")))
            }
        }
    }

    fn shutdown() -> Result<(), String> {
        Ok(())
    }
}

/// The state, one more call counted.
fn called() -> std::sync::MutexGuard<'static, State> {
    let mut state = STATE.lock().unwrap();
    state.calls += 1;
    state
}

/// Item `index` with `changes`.
fn edit(index: usize, changes: Vec<Change>) -> ItemEdit {
    ItemEdit {
        index: index as u32,
        action: Action::Edit(changes),
    }
}

/// `mode = "redact"`, for either signal: each item holding one of `keys` loses it and gets
/// `lens.redacted = true`.
fn redact<'a>(items: impl Iterator<Item = &'a [KeyValue]>, keys: &[String]) -> Vec<ItemEdit> {
    items
        .enumerate()
        .filter(|(_, attributes)| attributes.iter().any(|a| keys.contains(&a.key)))
        .map(|(i, attributes)| {
            let mut changes: Vec<Change> = attributes
                .iter()
                .filter(|a| keys.contains(&a.key))
                .map(|a| Change::RemoveAttribute(a.key.clone()))
                .collect();
            changes.push(Change::SetAttribute(KeyValue {
                key: "lens.redacted".into(),
                value: Value::Bool(true),
            }));
            ItemEdit {
                index: i as u32,
                action: Action::Edit(changes),
            }
        })
        .collect()
}

/// `count` changes (default 40) whose `field` (`string`, `bytes`, `key`, `rename`,
/// `string-array`, `remove`) all point at one buffer of `alias_mib` MiB (default 16): an answer
/// many times larger to lift than the guest's memory. The aliases are never freed by Rust (the
/// buffer is leaked first); the bindings' post-return may free them, after the host lifted.
fn aliased(state: &State) -> Vec<Change> {
    let mib: usize = state.number("alias_mib", 16);
    let count: usize = state.number("count", 40);
    let buffer: &'static mut [u8] = Vec::leak(vec![b'a'; mib << 20]);
    let (ptr, len) = (buffer.as_mut_ptr(), buffer.len());
    // SAFETY (of a kind): every alias is the same leaked bytes, valid UTF-8; a hostile guest
    // is the point, and none of them is dropped by this code.
    let string = || unsafe { String::from_raw_parts(ptr, len, len) };
    let bytes = || unsafe { Vec::from_raw_parts(ptr, len, len) };
    let field = state.setting("field").unwrap_or("string").to_string();
    (0..count)
        .map(|i| match field.as_str() {
            "bytes" => Change::SetAttribute(KeyValue {
                key: format!("k{i}"),
                value: Value::Bytes(bytes()),
            }),
            "key" => Change::SetAttribute(KeyValue {
                key: string(),
                value: Value::Bool(true),
            }),
            "rename" => Change::Rename(string()),
            "remove" => Change::RemoveAttribute(string()),
            "string-array" => Change::SetAttribute(KeyValue {
                key: format!("k{i}"),
                value: Value::StringArray(vec![string(), string()]),
            }),
            _ => Change::SetAttribute(KeyValue {
                key: format!("k{i}"),
                value: Value::String(string()),
            }),
        })
        .collect()
}

/// What the misbehaviours answer, for either signal (`None`: the mode is not one).
fn misbehave(
    state: std::sync::MutexGuard<'_, State>,
    items: usize,
) -> Option<Result<Vec<ItemEdit>, String>> {
    Some(match state.mode.as_str() {
        "trap" if state.calls.is_multiple_of(state.trap_every) => {
            drop(state);
            panic!("processor traps on call")
        }
        "trap" => Ok(Vec::new()),
        "hang" => {
            drop(state);
            #[allow(clippy::empty_loop)]
            loop {}
        }
        "error" => Err("the processor cannot process this batch".into()),
        "out-of-range" => Ok(vec![edit(items, vec![])]),
        "duplicate" => Ok(vec![edit(0, vec![]), edit(0, vec![])]),
        "set-body" => Ok(vec![edit(0, vec![Change::SetBody("x".into())])]),
        "set-status" => Ok(vec![edit(0, vec![Change::SetStatus(Status::Ok)])]),
        "aliased" => Ok(vec![edit(0, aliased(&state))]),
        "huge" => {
            let mib: usize = state.number("huge_mib", 64);
            let bytes = state.number("huge_bytes", mib << 20);
            Ok(vec![edit(
                0,
                vec![Change::SetAttribute(KeyValue {
                    key: "huge".into(),
                    value: Value::String("h".repeat(bytes)),
                })],
            )])
        }
        _ => return None,
    })
}

impl LogGuest for Processor {
    fn init(settings: Vec<(String, String)>, resource: Resource) -> Result<Encoding, String> {
        <Processor as Guest>::init(settings, resource)
    }

    fn process(batch: LogBatch) -> Result<Vec<ItemEdit>, String> {
        let state = called();
        let records: Vec<_> = match &batch {
            LogBatch::Typed(groups) => groups.iter().flat_map(|g| g.records.iter()).collect(),
            _ => Vec::new(),
        };
        match state.mode.as_str() {
            "noop" => Ok(Vec::new()),
            "redact" => Ok(redact(
                records.iter().map(|r| &r.attributes[..]),
                &state.keys,
            )),
            "filter" => Ok(records
                .iter()
                .enumerate()
                .filter(|(_, r)| {
                    r.severity_text
                        .as_ref()
                        .is_some_and(|t| state.names.contains(t))
                })
                .map(|(i, _)| ItemEdit {
                    index: i as u32,
                    action: Action::Drop,
                })
                .collect()),
            "rewrite" => Ok((0..records.len())
                .map(|i| {
                    let mut changes = vec![
                        Change::Rename("lens.event".into()),
                        Change::SetAttribute(KeyValue {
                            key: "index".into(),
                            value: Value::S64(i as i64),
                        }),
                    ];
                    if i % 2 == 1 {
                        changes.push(Change::SetBody("[redacted]".into()));
                    }
                    edit(i, changes)
                })
                .collect()),
            _ => {
                let n = records.len();
                misbehave(state, n).unwrap_or_else(|| Err("unknown mode".into()))
            }
        }
    }

    fn shutdown() -> Result<(), String> {
        Ok(())
    }
}

impl MetricGuest for Processor {
    fn init(settings: Vec<(String, String)>, resource: Resource) -> Result<Encoding, String> {
        <Processor as Guest>::init(settings, resource)
    }

    fn process(batch: MetricBatch) -> Result<Vec<ItemEdit>, String> {
        let state = called();
        let metrics: Vec<_> = match &batch {
            MetricBatch::Typed(groups) => groups.iter().flat_map(|g| g.metrics.iter()).collect(),
            _ => Vec::new(),
        };
        match state.mode.as_str() {
            "noop" => Ok(Vec::new()),
            // A metric's attributes: every key of any of its data points.
            "redact" => {
                let keys: Vec<Vec<KeyValue>> = metrics.iter().map(|m| point_keys(m)).collect();
                Ok(redact(keys.iter().map(|k| &k[..]), &state.keys))
            }
            "filter" => Ok(metrics
                .iter()
                .enumerate()
                .filter(|(_, m)| state.names.contains(&m.name))
                .map(|(i, _)| ItemEdit {
                    index: i as u32,
                    action: Action::Drop,
                })
                .collect()),
            "rewrite" => Ok(metrics
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    edit(
                        i,
                        vec![
                            Change::Rename(format!("{}.x", m.name)),
                            Change::SetAttribute(KeyValue {
                                key: "index".into(),
                                value: Value::S64(i as i64),
                            }),
                        ],
                    )
                })
                .collect()),
            _ => {
                let n = metrics.len();
                misbehave(state, n).unwrap_or_else(|| Err("unknown mode".into()))
            }
        }
    }

    fn shutdown() -> Result<(), String> {
        Ok(())
    }
}

/// The attributes of every data point of `m` (one entry per key).
fn point_keys(m: &Metric) -> Vec<KeyValue> {
    let lists: Vec<&Vec<KeyValue>> = match &m.data {
        MetricData::Gauge(g) => g.data_points.iter().map(|p| &p.attributes).collect(),
        MetricData::Sum(s) => s.data_points.iter().map(|p| &p.attributes).collect(),
        MetricData::Histogram(h) => h.data_points.iter().map(|p| &p.attributes).collect(),
        MetricData::ExponentialHistogram(h) => {
            h.data_points.iter().map(|p| &p.attributes).collect()
        }
    };
    let mut all: Vec<KeyValue> = Vec::new();
    for kv in lists.into_iter().flatten() {
        if !all.iter().any(|a| a.key == kv.key) {
            all.push(kv.clone());
        }
    }
    all
}

export!(Processor);
