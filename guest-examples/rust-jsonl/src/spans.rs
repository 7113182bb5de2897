//! One line per span, the same shape as Lens's native JSON-lines exporter.

use serde_json::json;

use crate::exports::lens::exporter::span_exporter::Guest;
use crate::lens::exporter::types::{Batch, Encoding, ExportError, Resource, SpanKind, Status};
use crate::{JsonLines, attributes, trace_hex};

fn kind(k: SpanKind) -> &'static str {
    match k {
        SpanKind::Client => "client",
        SpanKind::Server => "server",
        SpanKind::Producer => "producer",
        SpanKind::Consumer => "consumer",
        SpanKind::Internal => "internal",
    }
}

impl Guest for JsonLines {
    fn init(settings: Vec<(String, String)>, resource: Resource) -> Result<Encoding, String> {
        crate::open(&settings, &resource)?;
        Ok(Encoding::Typed)
    }

    fn export(batch: Batch) -> Result<(), ExportError> {
        let Batch::Typed(groups) = batch else {
            return Err(ExportError::Rejected(
                "this exporter asked for typed batches".into(),
            ));
        };
        crate::write_lines(|emit| {
            for group in &groups {
                for s in &group.spans {
                    let cx = &s.span_context;
                    emit(json!({
                        "name": s.name,
                        "trace_id": trace_hex(cx.trace_id),
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
                            "trace_id": trace_hex(l.span_context.trace_id),
                            "span_id": format!("{:016x}", l.span_context.span_id),
                            "attributes": attributes(&l.attributes),
                        })).collect::<Vec<_>>(),
                        "scope": group.scope.name,
                    }))?;
                }
            }
            Ok(())
        })
    }

    fn force_flush() -> Result<(), String> {
        crate::flush()
    }

    fn shutdown() -> Result<(), String> {
        crate::shutdown()
    }
}
