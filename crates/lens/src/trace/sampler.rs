//! [`RankAwareSampler`]: one keep/drop decision per rank, made at construction.

use opentelemetry::trace::{Link, SpanKind, TraceContextExt};
use opentelemetry::{Context, KeyValue, TraceId};
use opentelemetry_sdk::trace::{Sampler, SamplingDecision, SamplingResult, ShouldSample};

use crate::config::env::EnvSource;
use crate::config::python;
use crate::strategy::rank_is_sampled;

/// Keeps every span of a rank or drops every span of it, with the same hash and rate as the
/// `sampled` export strategy. Dropped spans are non-recording.
#[derive(Debug, Clone, Copy)]
pub struct RankAwareSampler {
    keep: bool,
}

impl RankAwareSampler {
    /// Decides for `rank` at `rate` (fraction of ranks kept, `0..=1`): every rank at 1 or
    /// more, none at 0 or less, else the `sampled` strategy's hash, as NeMo Lens decides.
    pub fn new(rank: u32, rate: f64) -> Self {
        let keep = if rate >= 1.0 {
            true
        } else if rate <= 0.0 {
            false
        } else {
            rank_is_sampled(rank, rate)
        };
        Self { keep }
    }

    /// Whether this rank's spans are kept.
    pub fn keeps(&self) -> bool {
        self.keep
    }
}

impl ShouldSample for RankAwareSampler {
    fn should_sample(
        &self,
        parent_context: Option<&Context>,
        _trace_id: TraceId,
        _name: &str,
        _span_kind: &SpanKind,
        _attributes: &[KeyValue],
        _links: &[Link],
    ) -> SamplingResult {
        let trace_state = parent_context
            .filter(|cx| cx.has_active_span())
            .map(|cx| cx.span().span_context().trace_state().clone())
            .unwrap_or_default();
        SamplingResult {
            decision: if self.keep {
                SamplingDecision::RecordAndSample
            } else {
                SamplingDecision::Drop
            },
            attributes: Vec::new(),
            trace_state,
        }
    }
}

/// The sampler of an exporting rank without the rank-aware sampler: `OTEL_TRACES_SAMPLER` and
/// `OTEL_TRACES_SAMPLER_ARG`, read as the Python SDK under NeMo Lens reads them. The name is
/// lowercased (not stripped); an unknown one is logged and the default,
/// `parentbased_always_on`, used. The ratio is `float()`; an invalid one, or one outside
/// `0..=1`, is logged and 1.0 used.
pub fn sampler_from_env(env: &dyn EnvSource) -> Sampler {
    let name = env
        .get("OTEL_TRACES_SAMPLER")
        .map(|n| n.to_lowercase())
        .unwrap_or_else(|| "parentbased_always_on".to_string());
    let ratio = || {
        let arg = env.get("OTEL_TRACES_SAMPLER_ARG");
        match arg.as_deref().map(python::float) {
            Some(Some(r)) if (0.0..=1.0).contains(&r) => r,
            Some(_) => {
                log::warn!(
                    "OTEL_TRACES_SAMPLER_ARG={:?} is not a ratio between 0 and 1: using 1.0",
                    arg.unwrap_or_default()
                );
                1.0
            }
            None => 1.0,
        }
    };
    let parent_based = |root| Sampler::ParentBased(Box::new(root));
    match name.as_str() {
        "always_on" => Sampler::AlwaysOn,
        "always_off" => Sampler::AlwaysOff,
        "traceidratio" => Sampler::TraceIdRatioBased(ratio()),
        "parentbased_always_on" => parent_based(Sampler::AlwaysOn),
        "parentbased_always_off" => parent_based(Sampler::AlwaysOff),
        "parentbased_traceidratio" => parent_based(Sampler::TraceIdRatioBased(ratio())),
        other => {
            log::warn!(
                "OTEL_TRACES_SAMPLER={other:?} is not a sampler: using parentbased_always_on"
            );
            parent_based(Sampler::AlwaysOn)
        }
    }
}

/// Whether `OTEL_SDK_DISABLED` turns the SDK off (`true` in any case, spaces around ignored):
/// the rank then records nothing, though it counts as exporting, as under the Python SDK.
pub fn sdk_disabled(env: &dyn EnvSource) -> bool {
    env.get("OTEL_SDK_DISABLED")
        .is_some_and(|v| python::strip(&v).eq_ignore_ascii_case("true"))
}
