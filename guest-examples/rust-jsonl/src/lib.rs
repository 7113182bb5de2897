//! JSON lines exporter for spans, metrics and logs (world `all-signals`): one compact JSON
//! object per span, per metric data point, per log record. The host runs one instance per
//! signal, each with the settings of its own config entry.
//!
//! Settings (all optional):
//! - `path`: file to append to, inside a directory the config pre-opens, e.g.
//!   `/out/rank-{dl.rank}.jsonl`; `{key}` is replaced by that resource attribute. Without
//!   `path`, lines go to stdout (which the host forwards to its log).
//! - `include_resource`: `true` to add the resource to every line (default `false`).
//! - `temporality` (metrics): `cumulative` (default), `delta` or `low-memory`.

mod logs;
mod metrics;
mod spans;

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::sync::Mutex;

use serde_json::{Map, Value as Json, json};

wit_bindgen::generate!({ path: "../../wit", world: "all-signals" });

use lens::exporter::types::{ExportError, KeyValue, Resource, Value};

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

/// A 128-bit trace id as hex.
fn trace_hex(id: (u64, u64)) -> String {
    format!("{:016x}{:016x}", id.0, id.1)
}

/// Opens the sink the settings name and keeps it with the rest of the instance's state; the
/// settings' value of `key` is returned for the signal's own use.
fn open(settings: &[(String, String)], resource: &Resource) -> Result<(), String> {
    let get = |k: &str| {
        settings
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    let sink = match get("path") {
        Some(template) => {
            let path = expand(template, resource);
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
    Ok(())
}

/// Writes the lines `render` produces into the instance's buffer, then the buffer to the sink
/// in one write (every write is a host call).
fn write_lines(
    render: impl FnOnce(&mut dyn FnMut(Json) -> Result<(), String>) -> Result<(), String>,
) -> Result<(), ExportError> {
    let rejected = |e: String| ExportError::Rejected(e);
    let mut guard = STATE.lock().unwrap();
    let state = guard
        .as_mut()
        .ok_or_else(|| rejected("export after shutdown".into()))?;
    let State {
        text,
        resource,
        sink,
    } = state;
    text.clear();
    let mut emit = |mut line: Json| {
        if let Some(r) = resource.as_ref() {
            line["resource"] = r.clone();
        }
        serde_json::to_writer(&mut *text, &line).map_err(|e| e.to_string())?;
        text.push(b'\n');
        Ok(())
    };
    render(&mut emit).map_err(rejected)?;
    match sink {
        Sink::File(f) => f.write_all(text).and_then(|()| f.flush()),
        Sink::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(text).and_then(|()| out.flush())
        }
    }
    .map_err(|e| rejected(e.to_string()))
}

fn flush() -> Result<(), String> {
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

/// The exporter of every signal.
struct JsonLines;

export!(JsonLines);
