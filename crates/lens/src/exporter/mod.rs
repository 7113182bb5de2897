//! The native exporters a config can name: `otlp` (opentelemetry-otlp, gRPC or HTTP),
//! `console` (OpenTelemetry-Python's JSON shapes, as NeMo Lens prints) and `none`; Lens's compact
//! JSON renderings ([`json`]) for the JSON-lines guests and the demo's files.

pub mod console;
pub mod json;
pub mod otlp;
pub mod python_dumps;
pub mod python_json;

pub use console::{
    ConsoleLogExporter, ConsoleMetricExporter, ConsoleOut, ConsoleSpanExporter, NoopLogExporter,
    NoopSpanExporter,
};
pub use otlp::{OtlpLogExporter, OtlpMetricExporter, OtlpSpanExporter};
