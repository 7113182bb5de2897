//! The trace pipeline: rank-aware sampler, Lens's batch processor, fan-out, statistics.

mod fanout;
mod processor;
pub(crate) mod sampler;
pub(crate) mod self_metrics;
mod stats;
mod tracer;

pub(crate) use fanout::{FanOutCore, FanOutSpanProcessor};
pub use fanout::{TRUNCATED_ATTRIBUTE, TRUNCATED_REASON, TRUNCATED_REASON_KEY};
pub use processor::{BatchSpanProcessor, DisabledSpanProcessor};
pub use sampler::{RankAwareSampler, sampler_from_env, sdk_disabled};
pub use stats::{DeliveryStats, DropReason, ExporterSnapshot, ExporterStats};
pub use tracer::{LensSpan, LensTracer, LensTracerProvider};
