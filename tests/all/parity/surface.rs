//! The helpers training code calls, against NeMo Lens's: span-group specs, safe attributes with
//! redaction, the semantic-convention names, and the inference, RL and Gym instruments (name,
//! unit, description, kind, value type and every recorded point).

use lens::instruments::{
    GymInstruments, GymMetrics, InferenceInstruments, InferenceMetrics, RlInstruments, RlMetrics,
};
use lens::opentelemetry::metrics::MeterProvider as _;
use lens::opentelemetry::{Array, Value};
use lens::opentelemetry_sdk::metrics::SdkMeterProvider;
use lens::opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use lens::trace::SpanGroups;
use lens::trace::attributes::{RedactKeys, safe_attributes};
use serde_json::{Value as Json, json};

use super::oracle::ask;

const SPECS: [&str; 12] = [
    "default",
    "per_step",
    "all",
    "",
    " , ",
    "DEFAULT",
    "job, step",
    "Per_Step,checkpoint",
    "optimizer,,forward_backward",
    "warmup",
    "default, warm up",
    "step;job",
];

fn safe_cases() -> Vec<Json> {
    vec![
        json!({"attributes": {"lr": 3e-4, "step": 100, "ok": true, "phase": "train"}}),
        json!({"attributes": {"prompt": "tell me", "text": "x", "token": "abc", "key": "k",
                              "password": "p", "secret": "s", "input_text": "i",
                              "output_text": "o", "keys": "not redacted", "Prompt": "case"}}),
        json!({"attributes": {"token": 5, "key": true, "secret": 1.5}}),
        json!({"attributes": {"tags": ["a", "b"], "prompt": ["lists", "are", "kept"],
                              "ids": [1, 2, 3], "flags": [true, false], "xs": [0.5, 1.5],
                              "empty": []}}),
        json!({"attributes": {"none": null, "nested": {"a": 1}, "with_none": [1, null],
                              "deep": [[1], [2]], "objs": [{"a": 1}]}}),
        json!({"attributes": {"model": "llama", "user_text": "u", "prompt": "p"},
               "redact_keys": ["model", "user_text"]}),
        json!({"attributes": {"big": 9007199254740993_i64, "neg": -7, "zero": 0.0,
                              "unicode": "步骤 ✓"}}),
    ]
}

fn tagged(v: &Value) -> Json {
    let list = |a: Vec<Json>| json!({ "array": a });
    match v {
        Value::Bool(b) => json!({ "bool": b }),
        Value::I64(i) => json!({ "int": i }),
        Value::F64(f) => json!({ "double": f }),
        Value::String(s) => json!({ "string": s.as_str() }),
        Value::Array(Array::Bool(a)) => list(a.iter().map(|b| json!({ "bool": b })).collect()),
        Value::Array(Array::I64(a)) => list(a.iter().map(|i| json!({ "int": i })).collect()),
        Value::Array(Array::F64(a)) => list(a.iter().map(|f| json!({ "double": f })).collect()),
        Value::Array(Array::String(a)) => {
            list(a.iter().map(|s| json!({ "string": s.as_str() })).collect())
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// What Lens records for the same calls, in the oracle's shape.
fn lens_instruments() -> Json {
    let reader = lens::InMemoryMetricReader::new();
    let provider = SdkMeterProvider::builder()
        .with_reader(reader.clone())
        .build();
    let meter = provider.meter("parity");
    InferenceInstruments::new(&meter).record(&InferenceMetrics {
        request_duration_s: Some(0.25),
        model: Some("llama-8b"),
        input_tokens: Some(120),
        output_tokens: Some(48),
        ..Default::default()
    });
    InferenceInstruments::new(&meter).record(&InferenceMetrics {
        request_duration_s: Some(1.5),
        model: Some(""),
        provider_name: "vllm",
        operation_name: "chat",
        ..Default::default()
    });
    RlInstruments::new(&meter).record(&RlMetrics {
        reward_mean: Some(0.82),
        kl_divergence: Some(0.013),
        policy_loss: Some(-0.4),
        value_loss: Some(0.9),
        entropy: Some(1.7),
        response_length_mean: Some(312.5),
        generation_duration_ms: Some(850.0),
        rollout_duration_ms: Some(2400.0),
        // NeMo Lens 0.2.0's gauges: not in the 0.1.0 this suite runs (a unit test has them).
        ..Default::default()
    });
    // Non-finite values: OpenTelemetry-Python ignores them (with a warning), so NeMo Lens's
    // gauges keep their last value and its histograms their count.
    RlInstruments::new(&meter).record(&RlMetrics {
        reward_mean: Some(f64::NAN),
        kl_divergence: Some(f64::INFINITY),
        rollout_duration_ms: Some(f64::NEG_INFINITY),
        ..Default::default()
    });
    GymInstruments::new(&meter).record(&GymMetrics {
        server_request_duration_ms: Some(12.5),
        rollout_duration_ms: Some(900.0),
        verify_duration_ms: Some(3.0),
        verify_success_rate: Some(0.75),
        active_servers: Some(4),
    });
    let data = reader.get_metrics_data().unwrap();
    let mut out = Vec::new();
    for sm in data.scope_metrics() {
        for m in sm.metrics() {
            let (kind, mut points) = match m.data() {
                AggregatedMetrics::F64(d) => points(d),
                AggregatedMetrics::I64(d) => points(d),
                AggregatedMetrics::U64(d) => points(d),
            };
            points.sort_by_key(|p| p.to_string());
            out.push(json!({
                "name": m.name(), "unit": m.unit(), "description": m.description(),
                "kind": kind, "points": points,
            }));
        }
    }
    out.sort_by_key(|m| m["name"].as_str().unwrap_or_default().to_string());
    Json::Array(out)
}

fn attrs<'a>(kvs: impl Iterator<Item = &'a lens::opentelemetry::KeyValue>) -> Json {
    let mut a: Vec<Json> = kvs
        .map(|kv| json!([kv.key.as_str(), tagged(&kv.value)]))
        .collect();
    a.sort_by_key(|p| p.to_string());
    Json::Array(a)
}

/// A recorded number: tagged as the oracle tags Python's `int` and `float`.
trait Num: Copy {
    fn tagged(self) -> Json;
    fn float(self) -> f64;
}

impl Num for f64 {
    fn tagged(self) -> Json {
        json!({ "double": self })
    }
    fn float(self) -> f64 {
        self
    }
}

impl Num for i64 {
    fn tagged(self) -> Json {
        json!({ "int": self })
    }
    fn float(self) -> f64 {
        self as f64
    }
}

impl Num for u64 {
    fn tagged(self) -> Json {
        json!({ "int": self })
    }
    fn float(self) -> f64 {
        self as f64
    }
}

fn points<T: Num>(data: &MetricData<T>) -> (&'static str, Vec<Json>) {
    let value = |v: T| v.tagged();
    match data {
        MetricData::Gauge(g) => (
            "gauge",
            g.data_points()
                .map(|p| json!({"attributes": attrs(p.attributes()), "value": value(p.value())}))
                .collect(),
        ),
        MetricData::Histogram(h) => (
            "histogram",
            h.data_points()
                .map(|p| {
                    json!({"attributes": attrs(p.attributes()),
                           "value": {"count": p.count(), "sum": p.sum().float()}})
                })
                .collect(),
        ),
        MetricData::Sum(s) => (
            "sum",
            s.data_points()
                .map(|p| json!({"attributes": attrs(p.attributes()), "value": value(p.value())}))
                .collect(),
        ),
        MetricData::ExponentialHistogram(_) => ("exponentialhistogram", Vec::new()),
    }
}

#[test]
fn the_training_helpers_match_nemo_lens() {
    let cases = safe_cases();
    let answer = ask(&json!({
        "mode": "surface",
        "span_groups": SPECS,
        "safe_attributes": cases,
        "instruments": [
            {"family": "inference", "args": {"request_duration_s": 0.25, "model": "llama-8b",
                                             "input_tokens": 120, "output_tokens": 48}},
            {"family": "inference", "args": {"request_duration_s": 1.5, "model": "",
                                             "provider_name": "vllm", "operation_name": "chat"}},
            {"family": "rl", "args": {"reward_mean": 0.82, "kl_divergence": 0.013,
                                      "policy_loss": -0.4, "value_loss": 0.9, "entropy": 1.7,
                                      "response_length_mean": 312.5,
                                      "generation_duration_ms": 850.0,
                                      "rollout_duration_ms": 2400.0}},
            {"family": "rl", "args": {"reward_mean": "nan", "kl_divergence": "inf",
                                      "rollout_duration_ms": "-inf"}},
            {"family": "gym", "args": {"server_request_duration_ms": 12.5,
                                       "rollout_duration_ms": 900.0, "verify_duration_ms": 3.0,
                                       "verify_success_rate": 0.75, "active_servers": 4}},
        ],
    }));
    // Span groups: the same set, or NeMo Lens's error text.
    for (spec, nemo) in SPECS.iter().zip(answer["span_groups"].as_array().unwrap()) {
        let lens = match SpanGroups::resolve(spec) {
            Ok(g) => json!({ "groups": g.names() }),
            Err(e) => json!({ "error": e }),
        };
        assert_eq!(&lens, nemo, "span_groups = {spec:?}");
    }
    // Safe attributes: what ends up on the span, in order.
    for (case, nemo) in cases
        .iter()
        .zip(answer["safe_attributes"].as_array().unwrap())
    {
        let redact = match case.get("redact_keys") {
            Some(keys) => {
                RedactKeys::only(keys.as_array().unwrap().iter().map(|k| k.as_str().unwrap()))
            }
            None => RedactKeys::default(),
        };
        let lens: Vec<Json> = safe_attributes(case["attributes"].as_object().unwrap(), &redact)
            .iter()
            .map(|kv| json!([kv.key.as_str(), tagged(&kv.value)]))
            .collect();
        assert_eq!(&Json::Array(lens), nemo, "{case}");
    }
    // The semantic-convention names, every one of them.
    let nemo = answer["semconv"].as_object().unwrap();
    let mut lens: serde_json::Map<String, Json> = lens::semconv::ALL
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    lens.insert(
        "SEMCONV_VERSION".into(),
        json!(lens::semconv::SEMCONV_VERSION),
    );
    assert_eq!(&lens, nemo);
    // The instruments and what they recorded.
    assert_eq!(lens_instruments(), answer["instruments"]);
}
