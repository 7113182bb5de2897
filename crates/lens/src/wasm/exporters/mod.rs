//! Stage 7, the exporters: the SDK's exporter traits over an entry's reloadable lanes —
//! [`WasmSpanExporter`] behind the batch span processor, [`WasmMetricExporter`] behind the
//! periodic reader, [`WasmLogExporter`] behind the batch log processor.
//!
//! May call: [`super::reload`] and the stages before it; never [`super::processors`].

pub mod log;
pub mod metric;
pub mod span;

pub use log::WasmLogExporter;
pub use metric::WasmMetricExporter;
pub use span::WasmSpanExporter;
