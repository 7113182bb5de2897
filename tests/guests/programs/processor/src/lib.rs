//! A span processor for tests (`lens:exporter@0.4.0`, world `span-processors`). `settings.mode`
//! picks what it does:
//! - `noop`: answers no edit (any `encoding`: `typed`, `otlp-protobuf`, `otlp-json`);
//! - `redact`: removes the attributes named in `keys` (comma-separated) from every span holding
//!   one, and sets `lens.redacted = true` on it;
//! - `filter`: drops the spans whose name is in `names` (comma-separated);
//! - `rewrite`: renames every span to `<name>.x`, sets `index` (its index) and, on odd indices,
//!   an error status `odd`;
//! - misbehaviours: `trap` (every `trap_every`-th call, default every call), `hang` (spins),
//!   `error` (returns an error), `out-of-range`, `duplicate`, `set-body` (answers the host
//!   refuses), `refuse-init`, `trap-init`.

use std::sync::Mutex;

wit_bindgen::generate!({ path: "../../../../wit", world: "span-processors" });

use exports::lens::exporter::span_processor::Guest;
use lens::exporter::edit_types::{Action, Change, ItemEdit};
use lens::exporter::types::{Batch, Encoding, KeyValue, Resource, Status, Value};

#[derive(Default)]
struct State {
    mode: String,
    keys: Vec<String>,
    names: Vec<String>,
    trap_every: u64,
    calls: u64,
}

static STATE: Mutex<State> = Mutex::new(State {
    mode: String::new(),
    keys: Vec::new(),
    names: Vec::new(),
    trap_every: 1,
    calls: 0,
});

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
        let mut state = STATE.lock().unwrap();
        state.calls += 1;
        let spans: Vec<_> = match &batch {
            Batch::Typed(groups) => groups.iter().flat_map(|g| g.spans.iter()).collect(),
            _ => Vec::new(),
        };
        let edit = |index: usize, changes: Vec<Change>| ItemEdit {
            index: index as u32,
            action: Action::Edit(changes),
        };
        match state.mode.as_str() {
            "noop" => Ok(Vec::new()),
            "redact" => Ok(spans
                .iter()
                .enumerate()
                .filter(|(_, s)| s.attributes.iter().any(|a| state.keys.contains(&a.key)))
                .map(|(i, s)| {
                    let mut changes: Vec<Change> = s
                        .attributes
                        .iter()
                        .filter(|a| state.keys.contains(&a.key))
                        .map(|a| Change::RemoveAttribute(a.key.clone()))
                        .collect();
                    changes.push(Change::SetAttribute(KeyValue {
                        key: "lens.redacted".into(),
                        value: Value::Bool(true),
                    }));
                    edit(i, changes)
                })
                .collect()),
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
            "out-of-range" => Ok(vec![edit(spans.len(), vec![])]),
            "duplicate" => Ok(vec![edit(0, vec![]), edit(0, vec![])]),
            "set-body" => Ok(vec![edit(0, vec![Change::SetBody("x".into())])]),
            other => Err(format!("unknown mode {other}")),
        }
    }

    fn shutdown() -> Result<(), String> {
        Ok(())
    }
}

export!(Processor);
