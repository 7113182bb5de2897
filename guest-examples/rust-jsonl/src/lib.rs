//! JSON lines exporter for spans, metrics and logs, on the Lens Rust SDK: one compact JSON
//! object per span, per metric data point, per log record. The host runs one instance per
//! signal, each with the settings of its own config entry.
//!
//! Settings (all optional):
//! - `path`: file to append to, inside a directory the config pre-opens, e.g.
//!   `/out/rank-{dl.rank}.jsonl`; `{key}` is replaced by that resource attribute. Without
//!   `path`, lines go to stdout (which the host forwards to its log).
//! - `include_resource`: `true` to add the resource to every line (default `false`).
//! - `encoding` (spans): `typed` (default) or `otlp-protobuf` (read in place by the SDK's views).
//! - `temporality` (metrics): `cumulative` (default), `delta` or `low-memory`.

mod logs;
mod metrics;
mod spans;

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};

use lens_exporter_sdk::{Attributes, Config, ExportResult};
use serde_json::Value as Json;

lens_exporter_sdk::export!(spans: spans::SpanLines, metrics: metrics::MetricLines, logs: logs::LogLines);

enum Sink {
    File(BufWriter<File>),
    Stdout,
}

/// Where one signal's lines go, and the buffer a batch's lines are written into first (every
/// write is a host call: one per batch).
struct Output {
    sink: Sink,
    /// The resource, when every line carries it.
    resource: Option<Json>,
    text: Vec<u8>,
}

/// A batch being rendered: one JSON object per line.
struct Lines<'a> {
    text: &'a mut Vec<u8>,
    resource: Option<&'a Json>,
}

impl Lines<'_> {
    /// One line from a serializable record (a JSON object).
    fn serialize(&mut self, record: &impl serde::Serialize) -> ExportResult {
        serde_json::to_writer(&mut *self.text, record)?;
        if let Some(r) = self.resource {
            self.text.pop(); // the closing brace
            self.text.extend_from_slice(b",\"resource\":");
            serde_json::to_writer(&mut *self.text, r)?;
            self.text.push(b'}');
        }
        self.text.push(b'\n');
        Ok(())
    }
}

/// Attributes as a JSON object.
fn attributes(kvs: Attributes<'_>) -> Json {
    serde_json::to_value(kvs).unwrap_or_default()
}

/// `{key}` placeholders replaced by resource attributes (missing keys stay as they are).
fn expand(template: &str, config: &Config) -> String {
    let mut out = template.to_string();
    for (key, v) in config.resource() {
        let needle = format!("{{{key}}}");
        if out.contains(&needle) {
            out = out.replace(&needle, &v.to_string());
        }
    }
    out
}

impl Output {
    fn open(config: &Config) -> Result<Self, String> {
        let sink = match config.setting("path") {
            Some(template) => {
                let path = expand(template, config);
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
        let resource = match config.setting("include_resource") {
            None | Some("false") => None,
            Some("true") => Some(attributes(config.resource())),
            Some(other) => {
                return Err(format!(
                    "`include_resource` must be true or false, not `{other}`"
                ));
            }
        };
        Ok(Output {
            sink,
            resource,
            text: Vec::new(),
        })
    }

    /// Renders a batch, then writes it to the sink at once.
    fn write(&mut self, render: impl FnOnce(&mut Lines<'_>) -> ExportResult) -> ExportResult {
        self.text.clear();
        render(&mut Lines {
            text: &mut self.text,
            resource: self.resource.as_ref(),
        })?;
        match &mut self.sink {
            Sink::File(f) => f.write_all(&self.text).and_then(|()| f.flush()),
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(&self.text).and_then(|()| out.flush())
            }
        }?;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        match &mut self.sink {
            Sink::File(f) => f.flush().map_err(|e| e.to_string()),
            Sink::Stdout => Ok(()),
        }
    }
}
