//! The trace pipeline: rank-aware sampler, Lens's batch processor, fan-out, statistics.

mod fanout;
mod processor;
mod sampler;
pub(crate) mod self_metrics;
mod stats;

pub use fanout::TRUNCATED_ATTRIBUTE;
pub(crate) use fanout::{FanOutCore, FanOutSpanProcessor};
pub use processor::{BatchSpanProcessor, DisabledSpanProcessor};
pub use sampler::RankAwareSampler;
pub use stats::{DeliveryStats, DropReason, ExporterSnapshot, ExporterStats};
