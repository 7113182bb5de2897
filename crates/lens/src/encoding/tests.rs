//! The batch encodings, checked against the spans the SDK produced: field by field for the
//! typed records, byte for byte against `opentelemetry-proto` + `prost` for OTLP bytes, and read
//! back by `opentelemetry-proto`'s serde model for OTLP/JSON.

#[cfg(feature = "testing")]
mod signals;

use opentelemetry::trace::{Link, Span, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use prost::Message;

use super::otlp_bytes::{self, EncodedResource};
use super::otlp_json::{self, JsonResource};
use super::typed::owned::{resource, typed_batch};
use crate::bindings::types as wit;
use crate::testing::RICH_ROOT;

fn otlp_batch(spans: &[SpanData], res: &Resource) -> Vec<u8> {
    otlp_bytes::encode(spans, &EncodedResource::new(res))
}

fn otlp_json_batch(spans: &[SpanData], res: &Resource) -> String {
    otlp_json::encode(spans, &JsonResource::new(res))
}

/// The integer resource attribute `key` of an OTLP `ResourceSpans`.
fn otlp_resource_int(
    rs: &opentelemetry_proto::tonic::trace::v1::ResourceSpans,
    key: &str,
) -> Option<i64> {
    let attrs = &rs.resource.as_ref()?.attributes;
    match attrs.iter().find(|kv| kv.key == key)?.value.as_ref()?.value {
        Some(any_value::Value::IntValue(i)) => Some(i),
        _ => None,
    }
}

/// Spans covering every value type, events, links, status, unicode and two scopes, with a
/// rank's resource.
fn sample_spans() -> (Vec<SpanData>, Resource) {
    let spans = crate::testing::rich_trace_spans();
    let res = Resource::builder_empty()
        .with_attributes([
            KeyValue::new("service.name", "enc"),
            KeyValue::new("dl.rank", 1),
            KeyValue::new("service.instance.id", "enc-rank1"),
        ])
        .build();
    (spans, res)
}

fn hex_trace_id(id: (u64, u64)) -> String {
    format!("{:016x}{:016x}", id.0, id.1)
}

#[test]
fn typed_encoding_groups_by_scope_and_keeps_every_field() {
    let (spans, _) = sample_spans();
    assert_eq!(spans.len(), 2);
    let groups = typed_batch(&spans);
    assert_eq!(groups.len(), 2, "one group per scope");
    let (save_group, step_group) = (&groups[0], &groups[1]); // `save` ended first
    assert_eq!(save_group.scope.name, "checkpointer");
    assert_eq!(save_group.scope.version.as_deref(), Some("2.1"));
    assert_eq!(step_group.scope.name, "trainer");

    let step_sdk = spans.iter().find(|s| s.name == RICH_ROOT).unwrap();
    let step = &step_group.spans[0];
    assert_eq!(step.name, RICH_ROOT);
    assert_eq!(
        hex_trace_id(step.span_context.trace_id),
        step_sdk.span_context.trace_id().to_string()
    );
    assert_eq!(
        format!("{:016x}", step.span_context.span_id),
        step_sdk.span_context.span_id().to_string()
    );
    assert_eq!(step.parent_span_id, None, "a root has no parent");
    assert_eq!(step.span_context.trace_flags, 1);
    assert!(step.end_time >= step.start_time && step.start_time > 0);
    let attr = |k: &str| {
        step.attributes
            .iter()
            .find(|kv| kv.key == k)
            .map(|kv| kv.value.clone())
    };
    assert!(matches!(attr("s"), Some(wit::Value::String(s)) if s == "ünïcødé"));
    assert!(matches!(attr("b"), Some(wit::Value::Bool(true))));
    assert!(matches!(attr("i"), Some(wit::Value::S64(-42))));
    assert!(matches!(attr("f"), Some(wit::Value::F64(f)) if f == 0.25));
    assert!(matches!(attr("sa"), Some(wit::Value::StringArray(a)) if a == ["a", ""]));
    assert!(matches!(attr("ba"), Some(wit::Value::BoolArray(a)) if a == [false, true]));
    assert!(matches!(attr("ia"), Some(wit::Value::S64Array(a)) if a == [i64::MIN, 0, i64::MAX]));
    assert!(matches!(attr("fa"), Some(wit::Value::F64Array(a)) if a == [-1.5, 1e300]));
    assert_eq!(step.events.len(), 1);
    assert_eq!(step.events[0].name, "loss-spike");
    assert!(matches!(&step.status, wit::Status::Error(m) if m == "nan loss"));

    let save = &save_group.spans[0];
    assert_eq!(save.parent_span_id, Some(step.span_context.span_id));
    assert!(matches!(save.span_kind, wit::SpanKind::Producer));
    assert!(matches!(save.status, wit::Status::Ok));
    assert_eq!(save.links.len(), 1);
    assert_eq!(
        save.links[0].span_context.span_id,
        step.span_context.span_id
    );
}

#[test]
fn typed_encoding_of_an_empty_batch_is_empty() {
    assert!(typed_batch(&[]).is_empty());
}

#[test]
fn resource_reaches_init_with_the_rank_attributes() {
    let (_, res) = sample_spans();
    let r = resource(&res);
    let get = |k: &str| {
        r.attributes
            .iter()
            .find(|kv| kv.key == k)
            .map(|kv| kv.value.clone())
    };
    assert!(matches!(get("dl.rank"), Some(wit::Value::S64(1))));
    assert!(matches!(get("service.instance.id"), Some(wit::Value::String(s)) if s == "enc-rank1"));
}

#[test]
fn otlp_encoding_decodes_to_the_same_spans_and_resource() {
    let (spans, res) = sample_spans();
    let expected_trace = spans[0].span_context.trace_id().to_bytes().to_vec();
    let bytes = otlp_batch(&spans, &res);
    let request = ExportTraceServiceRequest::decode(bytes.as_slice()).unwrap();
    assert_eq!(request.resource_spans.len(), 1);
    let rs = &request.resource_spans[0];
    assert_eq!(otlp_resource_int(rs, "dl.rank"), Some(1));
    let mut names: Vec<(String, String)> = rs
        .scope_spans
        .iter()
        .flat_map(|ss| {
            let scope = ss.scope.as_ref().unwrap().name.clone();
            ss.spans
                .iter()
                .map(move |s| (scope.clone(), s.name.clone()))
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            ("checkpointer".to_string(), "save".to_string()),
            ("trainer".to_string(), RICH_ROOT.to_string())
        ]
    );
    for s in rs.scope_spans.iter().flat_map(|ss| &ss.spans) {
        assert_eq!(s.trace_id, expected_trace);
    }
    let step = rs
        .scope_spans
        .iter()
        .flat_map(|ss| &ss.spans)
        .find(|s| s.name == RICH_ROOT)
        .unwrap();
    let s_attr = step.attributes.iter().find(|kv| kv.key == "s").unwrap();
    assert_eq!(
        s_attr.value.as_ref().unwrap().value,
        Some(any_value::Value::StringValue("ünïcødé".into()))
    );
}

/// The generic encoding: `opentelemetry-proto`'s conversion, then `prost`.
fn prost_bytes(spans: Vec<SpanData>, res: &Resource) -> Vec<u8> {
    use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
    use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
    let res = ResourceAttributesWithSchema::from(res);
    ExportTraceServiceRequest {
        resource_spans: group_spans_by_resource_and_scope(spans, &res),
    }
    .encode_to_vec()
}

/// Equal bytes, or a failure naming the first differing offset and the bytes around it.
fn assert_same_bytes(ours: &[u8], generic: &[u8]) {
    if let Some(at) = (0..ours.len().min(generic.len())).find(|&i| ours[i] != generic[i]) {
        let window = |b: &[u8]| b[at.saturating_sub(8)..(at + 16).min(b.len())].to_vec();
        panic!(
            "first difference at byte {at}: ours {:?}, generic {:?}",
            window(ours),
            window(generic)
        );
    }
    assert_eq!(ours.len(), generic.len(), "same prefix, different lengths");
}

#[test]
fn otlp_bytes_equal_the_generic_prost_encoding_byte_for_byte() {
    let (spans, res) = sample_spans();
    assert_same_bytes(&otlp_batch(&spans, &res), &prost_bytes(spans, &res));
}

/// Lengths of 1, 2 and 3 varint bytes at every nesting level: a 200 KB batch, a 300-byte name,
/// 20 attributes, a link to a remote context, a schema URL, a traced scope version, and names
/// and values that JSON must escape.
fn large_batch() -> (Vec<SpanData>, Resource) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let tracer = provider.tracer_with_scope(
        InstrumentationScope::builder("bulk")
            .with_version("0.1")
            .with_schema_url("https://opentelemetry.io/schemas/1.30.0")
            .with_attributes([KeyValue::new("scope.attr", 7)])
            .build(),
    );
    let remote = opentelemetry::trace::SpanContext::new(
        opentelemetry::trace::TraceId::from(0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10),
        opentelemetry::trace::SpanId::from(0x1112_1314_1516_1718),
        opentelemetry::trace::TraceFlags::SAMPLED,
        true,
        "vendor=abc".parse().unwrap(),
    );
    let long_name = "n".repeat(300);
    for i in 0..1500i64 {
        let name = match i % 3 {
            0 => "short".to_string(),
            1 => long_name.clone(),
            _ => format!("quote \" back\\ nl\n tab\t cr\r nul\u{0} bell\u{7} del\u{7f} é {i}"),
        };
        let mut span = tracer
            .span_builder(name)
            .with_links(vec![Link::with_context(remote.clone())])
            .start_with_context(
                &tracer,
                &opentelemetry::Context::new().with_remote_span_context(remote.clone()),
            );
        for a in 0..20 {
            span.set_attribute(KeyValue::new(format!("k{a}"), i * a));
        }
        span.set_attribute(KeyValue::new("min", i64::MIN + i));
        span.set_attribute(KeyValue::new("tiny", 1e-300 * i as f64));
        span.set_attribute(KeyValue::new("huge", -1.5e300));
        span.set_attribute(KeyValue::new("empty", ""));
        span.add_event("e", vec![KeyValue::new("x", "y".repeat(200))]);
        span.end();
    }
    let spans = exporter.get_finished_spans().unwrap();
    let res = Resource::builder_empty()
        .with_schema_url(
            [KeyValue::new("service.name", "bulk")],
            "https://example.com/s",
        )
        .build();
    (spans, res)
}

#[test]
fn otlp_bytes_of_large_messages_and_a_remote_parent_equal_the_generic_encoding() {
    let (spans, res) = large_batch();
    let ours = otlp_batch(&spans, &res);
    assert!(ours.len() > 200_000, "{} bytes", ours.len());
    assert_same_bytes(&ours, &prost_bytes(spans, &res));
}

/// The generic message `opentelemetry-proto` builds from the spans.
fn generic_request(spans: Vec<SpanData>, res: &Resource) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest::decode(prost_bytes(spans, res).as_slice()).unwrap()
}

#[test]
fn otlp_json_reads_back_as_the_generic_message() {
    // `opentelemetry-proto`'s serde model of OTLP/JSON is the oracle: it must read our text
    // back into exactly the message the generic conversion builds from the same spans.
    for (spans, res) in [sample_spans(), large_batch()] {
        let json = otlp_json_batch(&spans, &res);
        let parsed: ExportTraceServiceRequest = serde_json::from_str(&json)
            .unwrap_or_else(|e| panic!("{e}: {}", &json[..json.len().min(2000)]));
        assert_eq!(parsed, generic_request(spans, &res));
    }
}

#[test]
fn otlp_json_follows_the_specification_s_json_mapping() {
    let (spans, res) = sample_spans();
    let json: serde_json::Value = serde_json::from_str(&otlp_json_batch(&spans, &res)).unwrap();
    let rs = &json["resourceSpans"][0];
    let rank = rs["resource"]["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|kv| kv["key"] == "dl.rank")
        .unwrap();
    assert_eq!(rank["value"], serde_json::json!({"intValue": "1"}));
    let step = rs["scopeSpans"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|ss| ss["spans"].as_array().unwrap())
        .find(|s| s["name"] == RICH_ROOT)
        .unwrap();
    let trace_id = step["traceId"].as_str().unwrap();
    assert_eq!(trace_id.len(), 32);
    assert!(
        trace_id
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    assert_eq!(step["spanId"].as_str().unwrap().len(), 16);
    assert!(
        step.get("parentSpanId").is_none(),
        "a root has no parent field"
    );
    assert!(
        step.get("traceState").is_none(),
        "empty fields are left out"
    );
    assert_eq!(step["kind"], 1, "enums are numbers");
    let start = step["startTimeUnixNano"].as_str().unwrap();
    assert!(start.parse::<u64>().unwrap() > 1_600_000_000_000_000_000);
    assert_eq!(
        step["status"],
        serde_json::json!({"message": "nan loss", "code": 2})
    );
    assert_eq!(step["flags"], 0x101, "sampled, remote state known, local");
    assert_eq!(
        step["events"][0]["attributes"][0]["value"]["doubleValue"],
        9.5
    );
}

#[test]
fn otlp_json_writes_non_finite_doubles_and_empty_arrays_as_the_mapping_says() {
    use opentelemetry::{Array, Value};
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let tracer = provider.tracer("edge");
    let mut span = tracer.start("edge");
    span.set_attribute(KeyValue::new("nan", f64::NAN));
    span.set_attribute(KeyValue::new("inf", f64::INFINITY));
    span.set_attribute(KeyValue::new("ninf", f64::NEG_INFINITY));
    span.set_attribute(KeyValue::new("whole", 2.0));
    span.set_attribute(KeyValue::new("none", Value::Array(Array::I64(vec![]))));
    span.end();
    let spans = exporter.get_finished_spans().unwrap();
    let res = Resource::builder_empty().build();
    let text = otlp_json_batch(&spans, &res);
    assert!(text.contains(r#""value":{"doubleValue":2.0}"#), "{text}");
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let attrs = &json["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"];
    let value = |key: &str| {
        attrs
            .as_array()
            .unwrap()
            .iter()
            .find(|kv| kv["key"] == key)
            .unwrap()["value"]
            .clone()
    };
    assert_eq!(value("nan"), serde_json::json!({"doubleValue": "NaN"}));
    assert_eq!(value("inf"), serde_json::json!({"doubleValue": "Infinity"}));
    assert_eq!(
        value("ninf"),
        serde_json::json!({"doubleValue": "-Infinity"})
    );
    assert_eq!(
        value("none"),
        serde_json::json!({"arrayValue": {"values": []}})
    );
    assert!(json["resourceSpans"][0].get("schemaUrl").is_none());
    assert_eq!(json["resourceSpans"][0]["resource"], serde_json::json!({}));
}
