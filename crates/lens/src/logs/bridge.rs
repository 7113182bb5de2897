//! The logging bridge: `log` records and `tracing` events become OpenTelemetry log records
//! (opentelemetry-appender-log and opentelemetry-appender-tracing), with a level threshold and
//! a target filter, as NeMo Lens's `setup_logging_bridge(logger_name, level)`.
//!
//! On the wire a record's target is its scope name (opentelemetry-proto groups by it), as a
//! Python logger's name is there. A bridge that cannot be installed never breaks the
//! application: it says why and the application logs as before.

use opentelemetry_appender_log::OpenTelemetryLogBridge;

use super::code_order::{CodeOrderLogger, CodeOrderProvider};
#[cfg(feature = "tracing")]
use opentelemetry_sdk::logs::SdkLogger;
use opentelemetry_sdk::logs::SdkLoggerProvider;

/// Whether `target` is `filter` or below it: the empty filter takes every target, `a` takes
/// `a`, `a::b` and `a.b` (Rust modules and dotted Python-style names alike).
fn target_matches(filter: &str, target: &str) -> bool {
    filter.is_empty()
        || target
            .strip_prefix(filter)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with("::") || rest.starts_with('.'))
}

/// A [`log::Log`] sending the records at or above a level, under a target, to a logger
/// provider. [`install`](Self::install) makes it the process's logger; an application with its
/// own logger can call it from there instead.
pub struct LogBridge {
    inner: OpenTelemetryLogBridge<CodeOrderProvider, CodeOrderLogger>,
    level: log::LevelFilter,
    target: String,
}

impl std::fmt::Debug for LogBridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogBridge")
            .field("level", &self.level)
            .field("target", &self.target)
            .finish()
    }
}

impl LogBridge {
    /// A bridge into `provider` for the records at `level` or above whose target is `target`
    /// or below it (`""`: every target).
    pub fn new(
        provider: &SdkLoggerProvider,
        level: log::LevelFilter,
        target: impl Into<String>,
    ) -> Self {
        Self {
            inner: OpenTelemetryLogBridge::new(&CodeOrderProvider(provider.clone())),
            level,
            target: target.into(),
        }
    }

    /// Makes this bridge the process's `log` logger and raises `log`'s maximum level to its
    /// threshold. `Err` (with the reason, also logged to stderr) when another logger is
    /// installed already; the application goes on with that one.
    pub fn install(self) -> Result<(), String> {
        let level = self.level;
        match log::set_boxed_logger(Box::new(self)) {
            Ok(()) => {
                log::set_max_level(level.max(log::max_level()));
                Ok(())
            }
            Err(e) => {
                let reason = format!(
                    "lens: the logging bridge is not installed: {e} (another `log` logger is); \
                     call the bridge from that logger to export its records"
                );
                eprintln!("{reason}");
                Err(reason)
            }
        }
    }

    fn accepts(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= self.level && target_matches(&self.target, metadata.target())
    }
}

impl log::Log for LogBridge {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        self.accepts(metadata) && self.inner.enabled(metadata)
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.accepts(record.metadata()) {
            // A fault in the exporting path is no reason to take the caller down.
            let _ =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.inner.log(record)));
        }
    }

    fn flush(&self) {}
}

/// The `tracing` layer of the logging bridge: opentelemetry-appender-tracing's, filtered.
#[cfg(feature = "tracing")]
pub type TracingLogLayer<S> = tracing_subscriber::filter::Filtered<
    opentelemetry_appender_tracing::layer::OpenTelemetryTracingBridge<SdkLoggerProvider, SdkLogger>,
    tracing_subscriber::filter::Targets,
    S,
>;

/// A `tracing` layer sending the events at `level` or above under `target` (`""`: every
/// target) to `provider`.
#[cfg(feature = "tracing")]
pub fn tracing_log_layer<S>(
    provider: &SdkLoggerProvider,
    level: tracing::Level,
    target: &str,
) -> TracingLogLayer<S>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    use tracing_subscriber::Layer as _;
    let filter = if target.is_empty() {
        tracing_subscriber::filter::Targets::new().with_default(level)
    } else {
        tracing_subscriber::filter::Targets::new().with_target(target, level)
    };
    opentelemetry_appender_tracing::layer::OpenTelemetryTracingBridge::new(provider)
        .with_filter(filter)
}

#[cfg(test)]
mod tests {
    use super::target_matches;

    #[test]
    fn targets_match_themselves_and_what_is_below() {
        for (filter, target, expected) in [
            ("", "anything::at_all", true),
            ("train", "train", true),
            ("train", "train::loop", true),
            ("train", "train.loop", true),
            ("train", "trainer", false),
            ("train::loop", "train", false),
            ("train", "data::train", false),
        ] {
            assert_eq!(
                target_matches(filter, target),
                expected,
                "{filter} / {target}"
            );
        }
    }
}
