//! [`RankAwareSampler`]: one keep/drop decision per rank, made at construction.

use opentelemetry::trace::{Link, SpanKind, TraceContextExt};
use opentelemetry::{Context, KeyValue, TraceId};
use opentelemetry_sdk::trace::ShouldSample;
use opentelemetry_sdk::trace::{SamplingDecision, SamplingResult};

use crate::strategy::rank_is_sampled;

/// Keeps every span of a rank or drops every span of it, with the same hash and rate as the
/// `sampled` export strategy. Dropped spans are non-recording.
#[derive(Debug, Clone, Copy)]
pub struct RankAwareSampler {
    keep: bool,
}

impl RankAwareSampler {
    /// Decides for `rank` at `rate` (fraction of ranks kept, `0..=1`).
    pub fn new(rank: u32, rate: f64) -> Self {
        Self {
            keep: rank_is_sampled(rank, rate),
        }
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
