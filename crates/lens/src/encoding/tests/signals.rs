//! The metric and log encodings against the SDK's own data and `opentelemetry-proto`'s
//! messages.

use opentelemetry::InstrumentationScope;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::{LogBatch, SdkLogRecord};
use opentelemetry_sdk::metrics::Temporality;
use prost::Message;
use serde_json::Value as Json;

use crate::bindings::log_types::{AnyValue, LogBatch as WitLogBatch};
use crate::bindings::metric_types::{MetricBatch, MetricData, MetricNumber, Temporality as Wit};
use crate::bindings::types::Encoding;
use crate::encoding::logs::encode_logs;
use crate::encoding::metrics::{data_points, encode_metrics};
use crate::encoding::metrics_otlp::{encode_otlp_metrics, otlp_data_points};
use crate::testing::{every_log_body, every_metric_kind};

fn resource() -> Resource {
    Resource::builder_empty()
        .with_attribute(opentelemetry::KeyValue::new("service.name", "enc"))
        .build()
}

#[test]
fn typed_metrics_hold_every_point_of_every_kind() {
    let rm = every_metric_kind(Temporality::Delta);
    let MetricBatch::Typed(scopes) = encode_metrics(&rm, Encoding::Typed) else {
        panic!("typed");
    };
    let mut kinds = Vec::new();
    let mut points = 0;
    for m in scopes.iter().flat_map(|s| &s.metrics) {
        let (kind, n) = match &m.data {
            MetricData::Gauge(g) => ("gauge", g.data_points.len()),
            MetricData::Sum(s) => {
                // A delta reader keeps up-down counters cumulative, as the specification says.
                let expected = if s.is_monotonic {
                    Wit::Delta
                } else {
                    Wit::Cumulative
                };
                assert_eq!(s.temporality, expected, "{}", m.name);
                ("sum", s.data_points.len())
            }
            MetricData::Histogram(h) => {
                for p in &h.data_points {
                    assert_eq!(p.bucket_counts.len(), p.explicit_bounds.len() + 1);
                    assert_eq!(p.count, p.bucket_counts.iter().sum::<u64>());
                }
                ("histogram", h.data_points.len())
            }
            MetricData::ExponentialHistogram(h) => {
                for p in &h.data_points {
                    let buckets: u64 = p.positive.counts.iter().sum::<u64>() + p.zero_count;
                    assert_eq!(p.count, buckets + p.negative.counts.iter().sum::<u64>());
                }
                ("exponential", h.data_points.len())
            }
        };
        kinds.push((m.name.clone(), kind));
        points += n;
    }
    kinds.sort();
    assert_eq!(
        kinds,
        [
            ("check.exponential".to_string(), "exponential"),
            ("check.loss".to_string(), "gauge"),
            ("check.queue_depth".to_string(), "sum"),
            ("check.step_time".to_string(), "histogram"),
            ("check.tokens".to_string(), "sum"),
        ]
    );
    assert_eq!(points as u64, data_points(&rm));
    assert_eq!(points, 10);
    let tokens = scopes
        .iter()
        .flat_map(|s| &s.metrics)
        .find(|m| m.name == "check.tokens")
        .unwrap();
    let MetricData::Sum(sum) = &tokens.data else {
        panic!("sum")
    };
    let mut values: Vec<u64> = sum
        .data_points
        .iter()
        .map(|p| match p.value {
            MetricNumber::U64(u) => u,
            _ => panic!("a u64 counter"),
        })
        .collect();
    values.sort();
    assert_eq!(values, [100, 200]);
}

#[test]
fn otlp_metrics_are_the_proto_crate_s_request_in_both_encodings() {
    let rm = every_metric_kind(Temporality::Cumulative);
    let expected = ExportMetricsServiceRequest::from(&rm);
    let MetricBatch::OtlpProtobuf(bytes) = encode_metrics(&rm, Encoding::OtlpProtobuf) else {
        panic!("protobuf");
    };
    assert_eq!(
        ExportMetricsServiceRequest::decode(bytes.as_slice()).unwrap(),
        expected
    );
    let MetricBatch::OtlpJson(text) = encode_metrics(&rm, Encoding::OtlpJson) else {
        panic!("json");
    };
    let back: ExportMetricsServiceRequest = serde_json::from_str(&text).unwrap();
    assert_eq!(back, expected);
    // OTLP/JSON's mapping: 64-bit integers as strings, enums as numbers, camelCase names.
    let json: Json = serde_json::from_str(&text).unwrap();
    let metrics = &json["resourceMetrics"][0]["scopeMetrics"][0]["metrics"];
    let tokens = metrics
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "check.tokens")
        .unwrap();
    assert_eq!(tokens["sum"]["aggregationTemporality"], 2);
    assert_eq!(tokens["sum"]["isMonotonic"], true);
    let point = &tokens["sum"]["dataPoints"][0];
    assert!(point["timeUnixNano"].is_string(), "{point}");
    assert!(
        point["asInt"].is_string() || point["asInt"].is_number(),
        "{point}"
    );
}

fn refs(
    records: &[(SdkLogRecord, InstrumentationScope)],
) -> Vec<(&SdkLogRecord, &InstrumentationScope)> {
    records.iter().map(|(r, s)| (r, s)).collect()
}

#[test]
fn typed_logs_keep_every_body_type_and_the_span_context() {
    let records = every_log_body();
    let refs = refs(&records);
    let WitLogBatch::Typed(scopes) =
        encode_logs(&LogBatch::new(&refs), &resource(), Encoding::Typed)
    else {
        panic!("typed");
    };
    assert_eq!(scopes.len(), 1);
    let got = &scopes[0].records;
    assert_eq!(got.len(), 8);
    let kinds: Vec<&str> = got
        .iter()
        .map(|r| match &r.body {
            AnyValue::Empty => "empty",
            AnyValue::String(_) => "string",
            AnyValue::Bool(_) => "bool",
            AnyValue::S64(_) => "s64",
            AnyValue::F64(_) => "f64",
            AnyValue::Bytes(_) => "bytes",
            AnyValue::Array(_) => "array",
            AnyValue::Kvlist(_) => "kvlist",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "empty", "string", "bool", "s64", "f64", "bytes", "array", "kvlist"
        ]
    );
    assert!(matches!(&got[5].body, AnyValue::Bytes(b) if b == &[0, 1, 254, 255]));
    let AnyValue::Array(list) = &got[6].body else {
        panic!()
    };
    assert_eq!(
        serde_json::from_str::<Json>(list).unwrap(),
        serde_json::json!({"arrayValue": {"values": [{"intValue": "1"}, {"stringValue": "a"}]}})
    );
    assert_eq!(got[0].event_name.as_deref(), Some("lens.check.event"));
    assert_eq!(got[1].severity_text.as_deref(), Some("WARN"));
    assert_eq!(got[1].severity_number, Some(13));
    let (sdk, _) = &records[7];
    let cx = sdk.trace_context().unwrap();
    assert_eq!(
        got[7].span_id,
        Some(u64::from_be_bytes(cx.span_id.to_bytes()))
    );
    assert!(got[7].trace_id.is_some() && got[6].trace_id.is_none());
}

#[test]
fn otlp_logs_are_the_proto_crate_s_request_with_hex_ids() {
    let records = every_log_body();
    let refs = refs(&records);
    let batch = LogBatch::new(&refs);
    let WitLogBatch::OtlpProtobuf(bytes) = encode_logs(&batch, &resource(), Encoding::OtlpProtobuf)
    else {
        panic!("protobuf");
    };
    let decoded = ExportLogsServiceRequest::decode(bytes.as_slice()).unwrap();
    let WitLogBatch::OtlpJson(text) = encode_logs(&batch, &resource(), Encoding::OtlpJson) else {
        panic!("json");
    };
    let back: ExportLogsServiceRequest = serde_json::from_str(&text).unwrap();
    assert_eq!(back, decoded);
    let logs = &decoded.resource_logs[0];
    assert_eq!(logs.scope_logs[0].log_records.len(), 8);
    let json: Json = serde_json::from_str(&text).unwrap();
    let last = &json["resourceLogs"][0]["scopeLogs"][0]["logRecords"][7];
    let cx = records[7].0.trace_context().unwrap();
    assert_eq!(last["traceId"], cx.trace_id.to_string());
    assert_eq!(last["spanId"], cx.span_id.to_string());
    assert_eq!(
        json["resourceLogs"][0]["resource"]["attributes"][0]["value"]["stringValue"],
        "enc"
    );
}

#[test]
fn typed_metrics_from_an_otlp_request_equal_those_from_the_sdk_s_data() {
    // The Python package hands over OTLP requests; a guest asking for typed records must get
    // what a Rust rank's guest gets from the same data. OTLP has no unsigned numbers: the SDK's
    // `u64` points arrive as `s64`.
    for temporality in [Temporality::Cumulative, Temporality::Delta] {
        let rm = every_metric_kind(temporality);
        let request = ExportMetricsServiceRequest::from(&rm);
        assert_eq!(otlp_data_points(&request), data_points(&rm));
        let (MetricBatch::Typed(sdk), MetricBatch::Typed(otlp)) = (
            encode_metrics(&rm, Encoding::Typed),
            encode_otlp_metrics(&request, Encoding::Typed),
        ) else {
            panic!("typed");
        };
        let sdk = format!("{sdk:?}").replace("U64(", "S64(");
        assert!(
            sdk.contains("Histogram") && sdk.contains("ExponentialHistogram"),
            "{sdk}"
        );
        assert_eq!(format!("{otlp:?}"), sdk);
        // The OTLP encodings are the request itself.
        let MetricBatch::OtlpProtobuf(bytes) =
            encode_otlp_metrics(&request, Encoding::OtlpProtobuf)
        else {
            panic!("protobuf");
        };
        assert_eq!(
            ExportMetricsServiceRequest::decode(bytes.as_slice()).unwrap(),
            request
        );
    }
}
