//! JSON lines exporter: one compact JSON object per span, the same shape as Lens's native
//! `console` exporter.
//!
//! Settings (all optional):
//! - `path`: file to append to, inside a directory the config pre-opens, e.g.
//!   `/out/rank-{dl.rank}.jsonl`; `{key}` is replaced by that resource attribute. Without
//!   `path`, lines go to stdout (which the host forwards to its log).
//! - `include_resource`: `true` to add the resource to every line (default `false`).

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::sync::Mutex;

use serde_json::{Map, Value as Json, json};

wit_bindgen::generate!({ path: "../../wit", world: "exporter" });

use exports::lens::exporter::span_exporter::Guest;
use lens::exporter::types::{Batch, Encoding, KeyValue, Resource, SpanKind, Status, Value};

enum Sink {
    File(BufWriter<File>),
    Stdout,
}

struct State {
    sink: Sink,
    resource: Option<Json>,
    /// The batch's lines, serialized straight into one buffer kept across batches (as the
    /// native exporter writes straight into its `BufWriter`).
    text: Vec<u8>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

fn value(v: &Value) -> Json {
    match v {
        Value::String(s) => json!(s),
        Value::Bool(b) => json!(b),
        Value::S64(i) => json!(i),
        Value::F64(f) => json!(f),
        Value::Bytes(b) => json!(b),
        Value::StringArray(a) => json!(a),
        Value::BoolArray(a) => json!(a),
        Value::S64Array(a) => json!(a),
        Value::F64Array(a) => json!(a),
    }
}

fn attributes(kvs: &[KeyValue]) -> Json {
    Json::Object(
        kvs.iter()
            .map(|kv| (kv.key.clone(), value(&kv.value)))
            .collect::<Map<_, _>>(),
    )
}

/// `{key}` placeholders replaced by resource attributes (missing keys stay as they are).
fn expand(template: &str, resource: &Resource) -> String {
    let mut out = template.to_string();
    for kv in &resource.attributes {
        let needle = format!("{{{}}}", kv.key);
        if out.contains(&needle) {
            let text = match &kv.value {
                Value::String(s) => s.clone(),
                other => value(other).to_string(),
            };
            out = out.replace(&needle, &text);
        }
    }
    out
}

fn kind(k: SpanKind) -> &'static str {
    match k {
        SpanKind::Client => "client",
        SpanKind::Server => "server",
        SpanKind::Producer => "producer",
        SpanKind::Consumer => "consumer",
        SpanKind::Internal => "internal",
    }
}

struct JsonLines;

impl Guest for JsonLines {
    fn init(settings: Vec<(String, String)>, resource: Resource) -> Result<Encoding, String> {
        let get = |k: &str| {
            settings
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        let sink = match get("path") {
            Some(template) => {
                let path = expand(template, &resource);
                let file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .map_err(|e| {
                        format!("cannot open {path}: {e} (is its directory pre-opened read-write?)")
                    })?;
                Sink::File(BufWriter::with_capacity(1 << 16, file))
            }
            None => Sink::Stdout,
        };
        let include_resource = match get("include_resource") {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(format!(
                    "`include_resource` must be true or false, not `{other}`"
                ));
            }
        };
        let resource = include_resource.then(|| attributes(&resource.attributes));
        *STATE.lock().unwrap() = Some(State {
            sink,
            resource,
            text: Vec::new(),
        });
        Ok(Encoding::Typed)
    }

    fn export(batch: Batch) -> Result<(), String> {
        let Batch::Typed(groups) = batch else {
            return Err("this exporter asked for typed batches".into());
        };
        let mut guard = STATE.lock().unwrap();
        let state = guard.as_mut().ok_or("export after shutdown")?;
        let text = &mut state.text;
        text.clear();
        for group in &groups {
            for s in &group.spans {
                let cx = &s.span_context;
                let mut line = json!({
                    "name": s.name,
                    "trace_id": format!("{:016x}{:016x}", cx.trace_id.0, cx.trace_id.1),
                    "span_id": format!("{:016x}", cx.span_id),
                    "parent_span_id": format!("{:016x}", s.parent_span_id.unwrap_or(0)),
                    "kind": kind(s.span_kind),
                    "start_unix_nano": s.start_time,
                    "end_unix_nano": s.end_time,
                    "duration_ns": s.end_time.saturating_sub(s.start_time),
                    "status": match &s.status {
                        Status::Unset => json!({"code": "unset"}),
                        Status::Ok => json!({"code": "ok"}),
                        Status::Error(m) => json!({"code": "error", "message": m}),
                    },
                    "attributes": attributes(&s.attributes),
                    "events": s.events.iter().map(|e| json!({
                        "name": e.name, "time_unix_nano": e.time, "attributes": attributes(&e.attributes),
                    })).collect::<Vec<_>>(),
                    "links": s.links.iter().map(|l| json!({
                        "trace_id": format!("{:016x}{:016x}", l.span_context.trace_id.0, l.span_context.trace_id.1),
                        "span_id": format!("{:016x}", l.span_context.span_id),
                        "attributes": attributes(&l.attributes),
                    })).collect::<Vec<_>>(),
                    "scope": group.scope.name,
                });
                if let Some(r) = &state.resource {
                    line["resource"] = r.clone();
                }
                serde_json::to_writer(&mut *text, &line).map_err(|e| e.to_string())?;
                text.push(b'\n');
            }
        }
        // One write per batch: every write is a host call.
        match &mut state.sink {
            Sink::File(f) => f.write_all(text).and_then(|()| f.flush()),
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(text).and_then(|()| out.flush())
            }
        }
        .map_err(|e| e.to_string())
    }

    fn force_flush() -> Result<(), String> {
        match STATE.lock().unwrap().as_mut().map(|s| &mut s.sink) {
            Some(Sink::File(f)) => f.flush().map_err(|e| e.to_string()),
            _ => Ok(()),
        }
    }

    fn shutdown() -> Result<(), String> {
        match STATE.lock().unwrap().take() {
            Some(State {
                sink: Sink::File(mut f),
                ..
            }) => f.flush().map_err(|e| e.to_string()),
            Some(_) => Ok(()),
            None => Err("already shut down".into()),
        }
    }
}

export!(JsonLines);
