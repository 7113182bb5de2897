//! The trace pipeline: Lens's tracer (open spans, the launcher's trace, span groups), the
//! rank-aware sampler, Lens's batch processor (with the stages each batch goes through before
//! its exporter: [`ExportStage`], the sandboxed processors), fan-out, statistics.

pub mod attributes;
mod fanout;
pub mod flags;
pub mod groups;
mod open_spans;
mod processor;
pub(crate) mod sampler;
pub(crate) mod self_metrics;
mod tracer;

pub use crate::batch::{
    Chain, DeliveryStats, DirectExport, DropReason, ExportStage, ExporterSnapshot, ExporterStats,
    Processed, ProcessorCounts, Retained, Stages, run_stages,
};
pub(crate) use fanout::{FanOutCore, FanOutSpanProcessor};
pub use fanout::{TRUNCATED_ATTRIBUTE, TRUNCATED_REASON, TRUNCATED_REASON_KEY};
pub use groups::{SpanGroups, is_span_group_enabled, set_enabled_span_groups};
pub use processor::{BatchSpanProcessor, DisabledSpanProcessor};
pub use sampler::{RankAwareSampler, sampler_from_env, sdk_disabled};
pub use tracer::{LensSpan, LensTracer, LensTracerProvider};
