//! One line per span, the same shape as Lens's native JSON-lines exporter, serialized straight
//! from the SDK's views (no JSON tree in between).

use lens_exporter_sdk::{
    Attributes, Config, Encoding, ExportResult, SpanBatch, SpanExporter, SpanId, Status, TraceId,
};
use serde::Serialize;

use crate::Output;

#[derive(Serialize)]
struct Line<'a> {
    name: &'a str,
    trace_id: TraceId,
    span_id: SpanId,
    parent_span_id: SpanId,
    kind: &'static str,
    start_unix_nano: u64,
    end_unix_nano: u64,
    duration_ns: u64,
    status: LineStatus<'a>,
    attributes: Attributes<'a>,
    events: Vec<EventLine<'a>>,
    links: Vec<LinkLine<'a>>,
    scope: &'a str,
}

#[derive(Serialize)]
struct LineStatus<'a> {
    code: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
}

#[derive(Serialize)]
struct EventLine<'a> {
    name: &'a str,
    time_unix_nano: u64,
    attributes: Attributes<'a>,
}

#[derive(Serialize)]
struct LinkLine<'a> {
    trace_id: TraceId,
    span_id: SpanId,
    attributes: Attributes<'a>,
}

pub struct SpanLines {
    output: Output,
    encoding: Encoding,
}

impl SpanExporter for SpanLines {
    fn new(config: Config) -> Result<Self, String> {
        let encoding = match config.setting("encoding") {
            None | Some("typed") => Encoding::Typed,
            Some("otlp-protobuf") => Encoding::OtlpProtobuf,
            Some(other) => {
                return Err(format!(
                    "`encoding` must be typed or otlp-protobuf, not `{other}`"
                ));
            }
        };
        Ok(SpanLines {
            output: Output::open(&config)?,
            encoding,
        })
    }

    fn encoding(&self) -> Encoding {
        self.encoding
    }

    fn export(&mut self, batch: SpanBatch<'_>) -> ExportResult {
        self.output.write(|lines| {
            for s in batch.spans() {
                let (code, message) = match s.status {
                    Status::Unset => ("unset", None),
                    Status::Ok => ("ok", None),
                    Status::Error(m) => ("error", Some(m)),
                };
                lines.serialize(&Line {
                    name: s.name,
                    trace_id: s.span_context.trace_id,
                    span_id: s.span_context.span_id,
                    parent_span_id: s.parent_span_id.unwrap_or_default(),
                    kind: s.kind.as_str(),
                    start_unix_nano: s.start_time,
                    end_unix_nano: s.end_time,
                    duration_ns: s.duration_nanos(),
                    status: LineStatus { code, message },
                    attributes: s.attributes(),
                    events: s
                        .events()
                        .map(|e| EventLine {
                            name: e.name,
                            time_unix_nano: e.time,
                            attributes: e.attributes,
                        })
                        .collect(),
                    links: s
                        .links()
                        .map(|l| LinkLine {
                            trace_id: l.span_context.trace_id,
                            span_id: l.span_context.span_id,
                            attributes: l.attributes,
                        })
                        .collect(),
                    scope: s.scope.name,
                })?;
            }
            Ok(())
        })
    }

    fn force_flush(&mut self) -> Result<(), String> {
        self.output.flush()
    }

    fn shutdown(&mut self) -> Result<(), String> {
        self.output.flush()
    }
}
