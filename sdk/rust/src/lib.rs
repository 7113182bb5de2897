//! Write Lens exporters in Rust: implement [`SpanExporter`] (and/or [`MetricExporter`],
//! [`LogExporter`]) and name the types in [`export!`]. The SDK holds the WIT bindings
//! (`lens:exporter@0.4.0`), keeps one exporter per instance, answers `export` after `shutdown`,
//! and hands each batch over as borrowed views.
//!
//! ```no_run
//! use lens_exporter_sdk::{Config, ExportResult, SpanBatch, SpanExporter};
//!
//! struct Stdout {
//!     prefix: String,
//! }
//!
//! impl SpanExporter for Stdout {
//!     fn new(config: Config) -> Result<Self, String> {
//!         let prefix = config.setting("prefix").unwrap_or("span").to_string();
//!         Ok(Stdout { prefix })
//!     }
//!
//!     fn export(&mut self, batch: SpanBatch<'_>) -> ExportResult {
//!         for span in batch.spans() {
//!             let trace = span.span_context.trace_id;
//!             println!("{} {} {trace} {}ns", self.prefix, span.name, span.duration_nanos());
//!             for (key, value) in span.attributes() {
//!                 println!("  {key}={value}");
//!             }
//!         }
//!         Ok(())
//!     }
//! }
//!
//! lens_exporter_sdk::export!(spans: Stdout);
//! ```
//!
//! (The same example as `docs/writing-an-exporter.md`'s.) Build with `cargo build --release
//! --target wasm32-wasip2`; the `.wasm` is the component.
//!
//! Map of modules:
//! - [`trace`]: [`SpanExporter`] and [`SpanBatch`]; [`span`]: the span views ([`Span`], its
//!   events, links, status, scope), reading typed records or OTLP protobuf in place (`wire`:
//!   the protobuf reader); [`context`]: ids and [`SpanContext`].
//! - [`value`]: attribute values and lists.
//! - [`metrics`], [`logs`]: the other two signals' traits, over borrowed WIT records.
//! - [`process`]: [`SpanProcessor`] and the [`Edits`] it answers with (drop, set or remove
//!   attributes, rename, set status), by span index.
//! - [`export`](mod@export): settings and resource ([`Config`]), [`Encoding`], [`ExportError`].
//! - `http` (feature `http`): one POST over `wasi:http`, its response mapped to an
//!   [`ExportResult`] as OTLP exporters do (the key stays on the host: `credentials`).
//! - `serialize` (feature `serde`): `Serialize` for values, attributes and ids.
//! - `bindings`, `adapter`: the generated bindings and the glue `export!` expands to.

#[doc(hidden)]
pub mod adapter;
#[doc(hidden)]
pub mod bindings;
pub mod context;
pub mod export;
#[cfg(feature = "http")]
pub mod http;
pub mod logs;
pub mod metrics;
pub mod process;
#[cfg(feature = "serde")]
mod serialize;
pub mod span;
pub mod trace;
pub mod value;
mod wire;

#[cfg(test)]
mod tests;

pub use context::{HexId, SpanContext, SpanId, TraceId};
pub use export::{Config, Encoding, ExportError, ExportResult};
pub use logs::{LogBatch, LogExporter};
pub use metrics::{MetricBatch, MetricExporter};
pub use process::{Edits, LogProcessor, MetricProcessor, NewStatus, SpanProcessor};
pub use span::{Event, Link, Scope, Span, SpanKind, Status};
pub use trace::{SpanBatch, SpanExporter};
pub use value::{Array, Attributes, Value};

/// The WIT data types (resource, key-value, value, …), for exporters that want the records.
pub use bindings::spans::lens::exporter::types as wit;

/// Exports the component: each signal it serves and the type implementing it, in any order and
/// any subset, e.g. `export!(spans: MyExporter)` or
/// `export!(spans: Lines, metrics: MetricLines, logs: LogLines)`; processors are
/// `export!(span_processor: Redact)`, `export!(metric_processor: Downsample)`,
/// `export!(log_processor: QuietLogs)`. A component exports exactly the
/// interfaces named, so the host refuses it, by name, under a signal it does not serve.
#[macro_export]
macro_rules! export {
    ($($signal:ident : $ty:ty),+ $(,)?) => {
        $( $crate::__export_signal!($signal, $ty); )+
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __export_signal {
    (spans, $ty:ty) => {
        const _: () = {
            use $crate::bindings::spans::exports::lens::exporter::span_exporter::Guest;
            use $crate::bindings::spans::lens::exporter::types as __t;
            ::std::thread_local! {
                static SLOT: $crate::adapter::Slot<$ty> = const { $crate::adapter::Slot::new() };
            }
            struct __LensSpans;
            impl Guest for __LensSpans {
                fn init(
                    settings: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
                    resource: __t::Resource,
                ) -> ::std::result::Result<__t::Encoding, ::std::string::String> {
                    $crate::adapter::span_init::<$ty>(&SLOT, settings, resource)
                }
                fn export(batch: __t::Batch) -> ::std::result::Result<(), __t::ExportError> {
                    $crate::adapter::span_export::<$ty>(&SLOT, batch)
                }
                fn force_flush() -> ::std::result::Result<(), ::std::string::String> {
                    $crate::adapter::force_flush(&SLOT, <$ty as $crate::SpanExporter>::force_flush)
                }
                fn shutdown() -> ::std::result::Result<(), ::std::string::String> {
                    $crate::adapter::shutdown(&SLOT, <$ty as $crate::SpanExporter>::shutdown)
                }
            }
            $crate::bindings::spans::__export_spans!(__LensSpans with_types_in $crate::bindings::spans);
        };
    };
    (metrics, $ty:ty) => {
        const _: () = {
            use $crate::bindings::metrics::exports::lens::exporter::metric_exporter::Guest;
            use $crate::bindings::metrics::lens::exporter::metric_types as __m;
            use $crate::bindings::spans::lens::exporter::types as __t;
            ::std::thread_local! {
                static SLOT: $crate::adapter::Slot<$ty> = const { $crate::adapter::Slot::new() };
            }
            struct __LensMetrics;
            impl Guest for __LensMetrics {
                fn init(
                    settings: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
                    resource: __t::Resource,
                ) -> ::std::result::Result<__m::MetricPreferences, ::std::string::String> {
                    $crate::adapter::metric_init::<$ty>(&SLOT, settings, resource)
                }
                fn export(batch: __m::MetricBatch) -> ::std::result::Result<(), __t::ExportError> {
                    $crate::adapter::metric_export::<$ty>(&SLOT, batch)
                }
                fn force_flush() -> ::std::result::Result<(), ::std::string::String> {
                    $crate::adapter::force_flush(&SLOT, <$ty as $crate::MetricExporter>::force_flush)
                }
                fn shutdown() -> ::std::result::Result<(), ::std::string::String> {
                    $crate::adapter::shutdown(&SLOT, <$ty as $crate::MetricExporter>::shutdown)
                }
            }
            $crate::bindings::metrics::__export_metrics!(__LensMetrics with_types_in $crate::bindings::metrics);
        };
    };
    (logs, $ty:ty) => {
        const _: () = {
            use $crate::bindings::logs::exports::lens::exporter::log_exporter::Guest;
            use $crate::bindings::logs::lens::exporter::log_types as __l;
            use $crate::bindings::spans::lens::exporter::types as __t;
            ::std::thread_local! {
                static SLOT: $crate::adapter::Slot<$ty> = const { $crate::adapter::Slot::new() };
            }
            struct __LensLogs;
            impl Guest for __LensLogs {
                fn init(
                    settings: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
                    resource: __t::Resource,
                ) -> ::std::result::Result<__t::Encoding, ::std::string::String> {
                    $crate::adapter::log_init::<$ty>(&SLOT, settings, resource)
                }
                fn export(batch: __l::LogBatch) -> ::std::result::Result<(), __t::ExportError> {
                    $crate::adapter::log_export::<$ty>(&SLOT, batch)
                }
                fn force_flush() -> ::std::result::Result<(), ::std::string::String> {
                    $crate::adapter::force_flush(&SLOT, <$ty as $crate::LogExporter>::force_flush)
                }
                fn shutdown() -> ::std::result::Result<(), ::std::string::String> {
                    $crate::adapter::shutdown(&SLOT, <$ty as $crate::LogExporter>::shutdown)
                }
            }
            $crate::bindings::logs::__export_logs!(__LensLogs with_types_in $crate::bindings::logs);
        };
    };
    (span_processor, $ty:ty) => {
        const _: () = {
            use $crate::bindings::processors::exports::lens::exporter::span_processor::Guest;
            use $crate::bindings::processors::lens::exporter::edit_types as __e;
            use $crate::bindings::spans::lens::exporter::types as __t;
            ::std::thread_local! {
                static SLOT: $crate::adapter::Slot<$ty> = const { $crate::adapter::Slot::new() };
            }
            struct __LensSpanProcessor;
            impl Guest for __LensSpanProcessor {
                fn init(
                    settings: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
                    resource: __t::Resource,
                ) -> ::std::result::Result<__t::Encoding, ::std::string::String> {
                    $crate::adapter::span_processor_init::<$ty>(&SLOT, settings, resource)
                }
                fn process(
                    batch: __t::Batch,
                ) -> ::std::result::Result<::std::vec::Vec<__e::ItemEdit>, ::std::string::String> {
                    $crate::adapter::span_process::<$ty>(&SLOT, batch)
                }
                fn shutdown() -> ::std::result::Result<(), ::std::string::String> {
                    $crate::adapter::shutdown(&SLOT, <$ty as $crate::SpanProcessor>::shutdown)
                }
            }
            $crate::bindings::processors::__export_span_processors!(__LensSpanProcessor with_types_in $crate::bindings::processors);
        };
    };
    (log_processor, $ty:ty) => {
        const _: () = {
            use $crate::bindings::log_processors::exports::lens::exporter::log_processor::Guest;
            use $crate::bindings::logs::lens::exporter::log_types as __l;
            use $crate::bindings::processors::lens::exporter::edit_types as __e;
            use $crate::bindings::spans::lens::exporter::types as __t;
            ::std::thread_local! {
                static SLOT: $crate::adapter::Slot<$ty> = const { $crate::adapter::Slot::new() };
            }
            struct __LensLogProcessor;
            impl Guest for __LensLogProcessor {
                fn init(
                    settings: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
                    resource: __t::Resource,
                ) -> ::std::result::Result<__t::Encoding, ::std::string::String> {
                    $crate::adapter::log_processor_init::<$ty>(&SLOT, settings, resource)
                }
                fn process(
                    batch: __l::LogBatch,
                ) -> ::std::result::Result<::std::vec::Vec<__e::ItemEdit>, ::std::string::String> {
                    $crate::adapter::log_process::<$ty>(&SLOT, batch)
                }
                fn shutdown() -> ::std::result::Result<(), ::std::string::String> {
                    $crate::adapter::shutdown(&SLOT, <$ty as $crate::LogProcessor>::shutdown)
                }
            }
            $crate::bindings::log_processors::__export_log_processors!(__LensLogProcessor with_types_in $crate::bindings::log_processors);
        };
    };
    (metric_processor, $ty:ty) => {
        const _: () = {
            use $crate::bindings::metric_processors::exports::lens::exporter::metric_processor::Guest;
            use $crate::bindings::metrics::lens::exporter::metric_types as __m;
            use $crate::bindings::processors::lens::exporter::edit_types as __e;
            use $crate::bindings::spans::lens::exporter::types as __t;
            ::std::thread_local! {
                static SLOT: $crate::adapter::Slot<$ty> = const { $crate::adapter::Slot::new() };
            }
            struct __LensMetricProcessor;
            impl Guest for __LensMetricProcessor {
                fn init(
                    settings: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
                    resource: __t::Resource,
                ) -> ::std::result::Result<__t::Encoding, ::std::string::String> {
                    $crate::adapter::metric_processor_init::<$ty>(&SLOT, settings, resource)
                }
                fn process(
                    batch: __m::MetricBatch,
                ) -> ::std::result::Result<::std::vec::Vec<__e::ItemEdit>, ::std::string::String> {
                    $crate::adapter::metric_process::<$ty>(&SLOT, batch)
                }
                fn shutdown() -> ::std::result::Result<(), ::std::string::String> {
                    $crate::adapter::shutdown(&SLOT, <$ty as $crate::MetricProcessor>::shutdown)
                }
            }
            $crate::bindings::metric_processors::__export_metric_processors!(__LensMetricProcessor with_types_in $crate::bindings::metric_processors);
        };
    };
    ($other:ident, $ty:ty) => {
        ::std::compile_error!(::std::concat!(
            "lens_exporter_sdk::export!: `", ::std::stringify!($other),
            "` is not a signal (spans, metrics, logs), `span_processor`, `metric_processor` or `log_processor`"
        ));
    };
}
