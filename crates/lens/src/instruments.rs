//! Domain metrics with NeMo Lens's instrument names, units, kinds and descriptions (its
//! `nemo.lens.instruments`), so dashboards built for NeMo Lens read Lens ranks unchanged:
//! inference (`gen_ai.*`, OpenTelemetry's GenAI conventions), reinforcement learning (`rl.*`)
//! and Gym (`gym.*`). Checked against the NeMo Lens package (`tests/all/parity`).
//!
//! Each family is a struct of instruments built once from a meter, and a record of optional
//! values (`None` is skipped, as NeMo Lens skips `None`):
//!
//! ```
//! use lens::instruments::{RlInstruments, RlMetrics};
//! # let config = lens::LensConfig { enabled: true, exporter: "none".into(), ..Default::default() };
//! # let handle = lens::Telemetry::builder(config).rank(0).world_size(1).install_global(false).install().unwrap();
//! let rl = RlInstruments::new(&handle.meter("trainer"));
//! rl.record(&RlMetrics { reward_mean: Some(0.82), kl_divergence: Some(0.013), ..Default::default() });
//! ```

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Gauge, Histogram, Meter};

use crate::semconv;

/// The inference instruments: `gen_ai.server.request.duration` (histogram, `s`) and
/// `gen_ai.client.token.usage` (histogram, `{token}`).
#[derive(Debug, Clone)]
pub struct InferenceInstruments {
    server_request_duration: Histogram<f64>,
    token_usage: Histogram<u64>,
}

/// One inference request's values (NeMo Lens's `record_inference_metrics` arguments).
#[derive(Debug, Clone)]
pub struct InferenceMetrics<'a> {
    /// Server-side duration in seconds.
    pub request_duration_s: Option<f64>,
    /// The model, `gen_ai.request.model`.
    pub model: Option<&'a str>,
    /// Prompt tokens.
    pub input_tokens: Option<u64>,
    /// Generated tokens.
    pub output_tokens: Option<u64>,
    /// `gen_ai.provider.name`; default `nemo`.
    pub provider_name: &'a str,
    /// `gen_ai.operation.name`; default `text_completion`.
    pub operation_name: &'a str,
}

impl Default for InferenceMetrics<'_> {
    fn default() -> Self {
        Self {
            request_duration_s: None,
            model: None,
            input_tokens: None,
            output_tokens: None,
            provider_name: "nemo",
            operation_name: "text_completion",
        }
    }
}

impl InferenceInstruments {
    /// The instruments on `meter`.
    pub fn new(meter: &Meter) -> Self {
        Self {
            server_request_duration: meter
                .f64_histogram("gen_ai.server.request.duration")
                .with_unit("s")
                .with_description("GenAI server request duration.")
                .build(),
            token_usage: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Number of input and output tokens used.")
                .build(),
        }
    }

    /// Records one request: its duration, and its input and output tokens apart
    /// (`gen_ai.token.type`), each with the operation, provider and model.
    pub fn record(&self, m: &InferenceMetrics<'_>) {
        let mut attrs = vec![
            KeyValue::new(semconv::GENAI_OPERATION_NAME, m.operation_name.to_string()),
            KeyValue::new(semconv::GENAI_PROVIDER_NAME, m.provider_name.to_string()),
        ];
        if let Some(model) = m.model.filter(|s| !s.is_empty()) {
            attrs.push(KeyValue::new(
                semconv::GENAI_REQUEST_MODEL,
                model.to_string(),
            ));
        }
        let duration = finite(
            m.request_duration_s,
            "Histogram",
            "gen_ai.server.request.duration",
        );
        if let Some(d) = duration {
            self.server_request_duration.record(d, &attrs);
        }
        for (tokens, kind) in [(m.input_tokens, "input"), (m.output_tokens, "output")] {
            if let Some(n) = tokens {
                let mut with_type = attrs.clone();
                with_type.push(KeyValue::new(semconv::GENAI_TOKEN_TYPE, kind));
                self.token_usage.record(n, &with_type);
            }
        }
    }
}

/// NeMo Lens's `record_inference_metrics(meter, …)` (the SDK reuses instruments of one name).
pub fn record_inference_metrics(meter: &Meter, metrics: &InferenceMetrics<'_>) {
    InferenceInstruments::new(meter).record(metrics)
}

/// The RL instruments: nine gauges (three of them NeMo Lens 0.2.0's) and two histograms in
/// milliseconds.
#[derive(Debug, Clone)]
pub struct RlInstruments {
    reward_mean: Gauge<f64>,
    kl_divergence: Gauge<f64>,
    policy_loss: Gauge<f64>,
    value_loss: Gauge<f64>,
    entropy: Gauge<f64>,
    response_length_mean: Gauge<f64>,
    grad_norm: Gauge<f64>,
    learning_rate: Gauge<f64>,
    throughput_tokens_per_sec: Gauge<f64>,
    generation_duration_ms: Histogram<f64>,
    rollout_duration_ms: Histogram<f64>,
}

/// One RL step's values (NeMo Lens's `record_rl_metrics` arguments).
#[derive(Debug, Clone, Default)]
pub struct RlMetrics {
    /// `rl.reward.mean`.
    pub reward_mean: Option<f64>,
    /// `rl.kl_divergence`.
    pub kl_divergence: Option<f64>,
    /// `rl.policy_loss`.
    pub policy_loss: Option<f64>,
    /// `rl.value_loss`.
    pub value_loss: Option<f64>,
    /// `rl.entropy`.
    pub entropy: Option<f64>,
    /// `rl.response_length.mean`.
    pub response_length_mean: Option<f64>,
    /// `rl.grad_norm` (NeMo Lens 0.2.0).
    pub grad_norm: Option<f64>,
    /// `rl.learning_rate` (NeMo Lens 0.2.0).
    pub learning_rate: Option<f64>,
    /// `rl.throughput.tokens_per_sec`, unit `{token}/s` (NeMo Lens 0.2.0).
    pub throughput_tokens_per_sec: Option<f64>,
    /// `rl.generation.duration_ms`.
    pub generation_duration_ms: Option<f64>,
    /// `rl.rollout.duration_ms`.
    pub rollout_duration_ms: Option<f64>,
}

/// `value` if it is finite; else `None` and the warning NeMo Lens logs. Both SDKs ignore a
/// non-finite measurement (a NaN would poison a sum for good), OpenTelemetry-Python saying so
/// (`Set amount nan is not finite on Gauge rl.reward.mean, ignoring measurement.`), the Rust SDK
/// silently: a training loop logging a NaN loss learns it from Lens as from NeMo Lens.
fn finite(value: Option<f64>, kind: &str, name: &str) -> Option<f64> {
    let v = value?;
    if v.is_finite() {
        return Some(v);
    }
    // Python's `str(float)`: `nan`, `inf`, `-inf`.
    let shown = if v.is_nan() {
        "nan"
    } else if v > 0.0 {
        "inf"
    } else {
        "-inf"
    };
    let verb = if kind == "Gauge" { "Set" } else { "Record" };
    log::warn!("{verb} amount {shown} is not finite on {kind} {name}, ignoring measurement.");
    None
}

fn gauge(meter: &Meter, name: &'static str, description: &'static str) -> Gauge<f64> {
    meter.f64_gauge(name).with_description(description).build()
}

fn millis(meter: &Meter, name: &'static str, description: &'static str) -> Histogram<f64> {
    meter
        .f64_histogram(name)
        .with_unit("ms")
        .with_description(description)
        .build()
}

impl RlInstruments {
    /// The instruments on `meter`.
    pub fn new(meter: &Meter) -> Self {
        Self {
            reward_mean: gauge(meter, "rl.reward.mean", "Mean reward across rollout batch."),
            kl_divergence: gauge(
                meter,
                "rl.kl_divergence",
                "KL divergence between policy and reference.",
            ),
            policy_loss: gauge(meter, "rl.policy_loss", "Policy gradient loss."),
            value_loss: gauge(meter, "rl.value_loss", "Value function loss."),
            entropy: gauge(meter, "rl.entropy", "Policy entropy."),
            response_length_mean: gauge(
                meter,
                "rl.response_length.mean",
                "Mean generated response length (tokens).",
            ),
            grad_norm: gauge(
                meter,
                semconv::RL_GRAD_NORM,
                "Gradient norm of the policy update.",
            ),
            learning_rate: gauge(
                meter,
                semconv::RL_LEARNING_RATE,
                "Current optimizer learning rate.",
            ),
            throughput_tokens_per_sec: meter
                .f64_gauge(semconv::RL_THROUGHPUT_TOKENS_PER_SEC)
                .with_unit("{token}/s")
                .with_description("Training throughput in tokens per second.")
                .build(),
            generation_duration_ms: millis(
                meter,
                "rl.generation.duration_ms",
                "Duration of text generation in milliseconds.",
            ),
            rollout_duration_ms: millis(
                meter,
                "rl.rollout.duration_ms",
                "Duration of rollout collection in milliseconds.",
            ),
        }
    }

    /// Records the values that are set.
    pub fn record(&self, m: &RlMetrics) {
        for (gauge, name, value) in [
            (&self.reward_mean, "rl.reward.mean", m.reward_mean),
            (&self.kl_divergence, "rl.kl_divergence", m.kl_divergence),
            (&self.policy_loss, "rl.policy_loss", m.policy_loss),
            (&self.value_loss, "rl.value_loss", m.value_loss),
            (&self.entropy, "rl.entropy", m.entropy),
            (
                &self.response_length_mean,
                "rl.response_length.mean",
                m.response_length_mean,
            ),
            (&self.grad_norm, semconv::RL_GRAD_NORM, m.grad_norm),
            (
                &self.learning_rate,
                semconv::RL_LEARNING_RATE,
                m.learning_rate,
            ),
            (
                &self.throughput_tokens_per_sec,
                semconv::RL_THROUGHPUT_TOKENS_PER_SEC,
                m.throughput_tokens_per_sec,
            ),
        ] {
            if let Some(v) = finite(value, "Gauge", name) {
                gauge.record(v, &[]);
            }
        }
        for (histogram, name, value) in [
            (
                &self.generation_duration_ms,
                "rl.generation.duration_ms",
                m.generation_duration_ms,
            ),
            (
                &self.rollout_duration_ms,
                "rl.rollout.duration_ms",
                m.rollout_duration_ms,
            ),
        ] {
            if let Some(v) = finite(value, "Histogram", name) {
                histogram.record(v, &[]);
            }
        }
    }
}

/// NeMo Lens's `record_rl_metrics(meter, …)`.
pub fn record_rl_metrics(meter: &Meter, metrics: &RlMetrics) {
    RlInstruments::new(meter).record(metrics)
}

/// The Gym instruments: three histograms in milliseconds and two gauges.
#[derive(Debug, Clone)]
pub struct GymInstruments {
    server_request_duration_ms: Histogram<f64>,
    rollout_duration_ms: Histogram<f64>,
    verify_duration_ms: Histogram<f64>,
    verify_success_rate: Gauge<f64>,
    active_servers: Gauge<i64>,
}

/// One Gym report's values (NeMo Lens's `record_gym_metrics` arguments).
#[derive(Debug, Clone, Default)]
pub struct GymMetrics {
    /// `gym.server.request_duration_ms`.
    pub server_request_duration_ms: Option<f64>,
    /// `gym.rollout.duration_ms`.
    pub rollout_duration_ms: Option<f64>,
    /// `gym.verify.duration_ms`.
    pub verify_duration_ms: Option<f64>,
    /// `gym.verify.success_rate`.
    pub verify_success_rate: Option<f64>,
    /// `gym.servers.active` (an integer gauge, as NeMo Lens's `int` argument makes it).
    pub active_servers: Option<i64>,
}

impl GymInstruments {
    /// The instruments on `meter`.
    pub fn new(meter: &Meter) -> Self {
        Self {
            server_request_duration_ms: millis(
                meter,
                "gym.server.request_duration_ms",
                "Gym server request duration in milliseconds.",
            ),
            rollout_duration_ms: millis(
                meter,
                "gym.rollout.duration_ms",
                "Rollout collection duration in milliseconds.",
            ),
            verify_duration_ms: millis(
                meter,
                "gym.verify.duration_ms",
                "Verification endpoint duration in milliseconds.",
            ),
            verify_success_rate: gauge(
                meter,
                "gym.verify.success_rate",
                "Fraction of successful verifications.",
            ),
            active_servers: meter
                .i64_gauge("gym.servers.active")
                .with_description("Number of active Gym servers.")
                .build(),
        }
    }

    /// Records the values that are set.
    pub fn record(&self, m: &GymMetrics) {
        for (histogram, name, value) in [
            (
                &self.server_request_duration_ms,
                "gym.server.request_duration_ms",
                m.server_request_duration_ms,
            ),
            (
                &self.rollout_duration_ms,
                "gym.rollout.duration_ms",
                m.rollout_duration_ms,
            ),
            (
                &self.verify_duration_ms,
                "gym.verify.duration_ms",
                m.verify_duration_ms,
            ),
        ] {
            if let Some(v) = finite(value, "Histogram", name) {
                histogram.record(v, &[]);
            }
        }
        if let Some(v) = finite(m.verify_success_rate, "Gauge", "gym.verify.success_rate") {
            self.verify_success_rate.record(v, &[]);
        }
        if let Some(v) = m.active_servers {
            self.active_servers.record(v, &[]);
        }
    }
}

/// NeMo Lens's `record_gym_metrics(meter, …)`.
pub fn record_gym_metrics(meter: &Meter, metrics: &GymMetrics) {
    GymInstruments::new(meter).record(metrics)
}

#[cfg(test)]
mod tests {
    use opentelemetry::metrics::MeterProvider as _;
    use opentelemetry_sdk::metrics::SdkMeterProvider;
    use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};

    use super::*;

    /// NeMo Lens 0.2.0's three RL gauges (not in the 0.1.0 the differential suite runs): their
    /// names, unit and values as its `record_rl_metrics` writes them.
    #[test]
    fn the_rl_gauges_nemo_lens_added_after_0_1_0_record_their_values() {
        let reader = crate::InMemoryMetricReader::new();
        let provider = SdkMeterProvider::builder()
            .with_reader(reader.clone())
            .build();
        RlInstruments::new(&provider.meter("rl")).record(&RlMetrics {
            grad_norm: Some(1.25),
            learning_rate: Some(3e-5),
            throughput_tokens_per_sec: Some(48_000.0),
            ..Default::default()
        });
        let data = reader.get_metrics_data().unwrap();
        let mut got: Vec<(String, String, String, f64)> = data
            .scope_metrics()
            .flat_map(|sm| sm.metrics())
            .map(|m| {
                let AggregatedMetrics::F64(MetricData::Gauge(g)) = m.data() else {
                    panic!("{} is not an f64 gauge", m.name());
                };
                let value = g.data_points().next().unwrap().value();
                (
                    m.name().into(),
                    m.unit().into(),
                    m.description().into(),
                    value,
                )
            })
            .collect();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            got,
            [
                (
                    "rl.grad_norm",
                    "",
                    "Gradient norm of the policy update.",
                    1.25
                ),
                (
                    "rl.learning_rate",
                    "",
                    "Current optimizer learning rate.",
                    3e-5
                ),
                (
                    "rl.throughput.tokens_per_sec",
                    "{token}/s",
                    "Training throughput in tokens per second.",
                    48_000.0
                ),
            ]
            .map(|(n, u, d, v)| (n.to_string(), u.to_string(), d.to_string(), v))
        );
    }
}
