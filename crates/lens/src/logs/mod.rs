//! The log signal: Lens's batch log processor (the span processor's accounting, for records)
//! and the logging bridge from the `log` crate and `tracing` (NeMo Lens's
//! `setup_logging_bridge`).
//!
//! A record emitted inside a span carries that span's trace and span ids: the SDK's logger
//! takes them from the current context, which Lens's tracer sets (`in_span`, `mark_span_as_active`)
//! and so does the `tracing` layer for `#[instrument]` spans.

mod bridge;
mod code_order;
mod fanout;
mod processor;

pub use bridge::LogBridge;
#[cfg(feature = "tracing")]
pub use bridge::{TracingLogLayer, tracing_log_layer};
pub(crate) use fanout::{FanOutLogProcessor, LogFanOut};
pub use processor::{BatchLogProcessor, Queued};
