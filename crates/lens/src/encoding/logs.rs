//! How a batch of log records reaches a guest: `lens:exporter/log-types.log-batch` as WIT
//! records, or an OTLP `ExportLogsServiceRequest` as protobuf or OTLP/JSON (through
//! `opentelemetry-proto`, the messages the OTLP exporter sends).

use opentelemetry::InstrumentationScope;
use opentelemetry::logs::AnyValue;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::AnyValue as OtlpAnyValue;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_proto::transform::logs::tonic::group_logs_by_resource_and_scope;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::{LogBatch, SdkLogRecord};
use prost::Message;

use super::typed::owned::scope;
use super::typed::trace_id_pair;
use super::unix_nanos;
use crate::bindings::log_types as wit;
use crate::bindings::types::{self as wit_types, Encoding};

/// `batch` in `encoding`, for records of `resource`.
pub(crate) fn encode_logs(
    batch: &LogBatch<'_>,
    resource: &Resource,
    encoding: Encoding,
) -> wit::LogBatch {
    match encoding {
        Encoding::Typed => wit::LogBatch::Typed(typed(batch)),
        Encoding::OtlpProtobuf => {
            wit::LogBatch::OtlpProtobuf(request(batch, resource).encode_to_vec())
        }
        Encoding::OtlpJson => wit::LogBatch::OtlpJson(
            serde_json::to_string(&request(batch, resource)).expect("OTLP messages serialize"),
        ),
    }
}

pub(crate) fn request(batch: &LogBatch<'_>, resource: &Resource) -> ExportLogsServiceRequest {
    ExportLogsServiceRequest {
        resource_logs: group_logs_by_resource_and_scope(
            batch,
            &ResourceAttributesWithSchema::from(resource),
        ),
    }
}

/// The scope a record is exported under: its logger's, named after the record's target when
/// it has one (as the OTLP exporter does).
fn exported_scope(record: &SdkLogRecord, logger: &InstrumentationScope) -> InstrumentationScope {
    match record.target() {
        Some(target) if target.as_ref() != logger.name() => {
            InstrumentationScope::builder(target.clone())
                .with_version(logger.version().unwrap_or_default().to_owned())
                .with_schema_url(logger.schema_url().unwrap_or_default().to_owned())
                .with_attributes(logger.attributes().cloned())
                .build()
        }
        _ => logger.clone(),
    }
}

/// The records as WIT records, grouped by exported scope in order of first appearance.
pub(crate) fn typed(batch: &LogBatch<'_>) -> Vec<wit::ScopeLogs> {
    let mut groups: Vec<(InstrumentationScope, Vec<wit::LogRecord>)> = Vec::new();
    for (record, logger) in batch.iter() {
        let key = exported_scope(record, logger);
        let record = log_record(record);
        match groups.iter_mut().find(|(s, _)| *s == key) {
            Some((_, records)) => records.push(record),
            None => groups.push((key, vec![record])),
        }
    }
    groups
        .into_iter()
        .map(|(s, records)| wit::ScopeLogs {
            scope: scope(&s),
            records,
        })
        .collect()
}

fn log_record(r: &SdkLogRecord) -> wit::LogRecord {
    let cx = r.trace_context();
    wit::LogRecord {
        timestamp: r.timestamp().map(unix_nanos),
        observed_timestamp: r.observed_timestamp().map(unix_nanos),
        severity_text: r.severity_text().map(str::to_string),
        severity_number: r.severity_number().map(|s| s as u8),
        body: r.body().map_or(wit::AnyValue::Empty, body),
        attributes: r
            .attributes_iter()
            .map(|(k, v)| wit_types::KeyValue {
                key: k.to_string(),
                value: attribute(v),
            })
            .collect(),
        event_name: r.event_name().map(str::to_string),
        trace_id: cx.map(|c| trace_id_pair(c.trace_id)),
        span_id: cx.map(|c| u64::from_be_bytes(c.span_id.to_bytes())),
        trace_flags: cx.and_then(|c| c.trace_flags).map(|f| f.to_u8()),
    }
}

/// OTLP/JSON `AnyValue` text of `v`, e.g. `{"arrayValue":{"values":[{"intValue":"1"}]}}`.
fn any_value_json(v: &AnyValue) -> String {
    serde_json::to_string(&OtlpAnyValue::from(v.clone())).expect("OTLP messages serialize")
}

/// A body: scalars as themselves, lists and maps as their OTLP/JSON text.
pub(crate) fn body(v: &AnyValue) -> wit::AnyValue {
    match v {
        AnyValue::String(s) => wit::AnyValue::String(s.to_string()),
        AnyValue::Boolean(b) => wit::AnyValue::Bool(*b),
        AnyValue::Int(i) => wit::AnyValue::S64(*i),
        AnyValue::Double(f) => wit::AnyValue::F64(*f),
        AnyValue::Bytes(b) => wit::AnyValue::Bytes(b.to_vec()),
        AnyValue::ListAny(_) => wit::AnyValue::Array(any_value_json(v)),
        AnyValue::Map(_) => wit::AnyValue::Kvlist(any_value_json(v)),
        _ => wit::AnyValue::String(any_value_json(v)),
    }
}

/// An attribute value: scalars and homogeneous scalar lists as the WIT's typed values, any
/// other list or map as its OTLP/JSON text.
fn attribute(v: &AnyValue) -> wit_types::Value {
    use wit_types::Value as W;
    fn all<T>(items: &[AnyValue], f: impl Fn(&AnyValue) -> Option<T>) -> Option<Vec<T>> {
        items.iter().map(f).collect()
    }
    match v {
        AnyValue::String(s) => W::String(s.to_string()),
        AnyValue::Boolean(b) => W::Bool(*b),
        AnyValue::Int(i) => W::S64(*i),
        AnyValue::Double(f) => W::F64(*f),
        AnyValue::Bytes(b) => W::Bytes(b.to_vec()),
        AnyValue::ListAny(items) if !items.is_empty() => {
            let strings = all(items, |i| match i {
                AnyValue::String(s) => Some(s.to_string()),
                _ => None,
            });
            let ints = || {
                all(items, |i| {
                    if let AnyValue::Int(n) = i {
                        Some(*n)
                    } else {
                        None
                    }
                })
            };
            let floats = || {
                all(items, |i| {
                    if let AnyValue::Double(n) = i {
                        Some(*n)
                    } else {
                        None
                    }
                })
            };
            let bools = || {
                all(items, |i| {
                    if let AnyValue::Boolean(n) = i {
                        Some(*n)
                    } else {
                        None
                    }
                })
            };
            match (strings, ints(), floats(), bools()) {
                (Some(s), ..) => W::StringArray(s),
                (_, Some(i), ..) => W::S64Array(i),
                (_, _, Some(f), _) => W::F64Array(f),
                (.., Some(b)) => W::BoolArray(b),
                _ => W::String(any_value_json(v)),
            }
        }
        _ => W::String(any_value_json(v)),
    }
}
