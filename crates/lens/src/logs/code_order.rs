//! The `log` bridge's loggers: the SDK's, with each record's `code.*` attributes in the order
//! OpenTelemetry-Python's logging handler writes them (`code.file.path`, `code.function.name`,
//! `code.line.number`, then the record's own), so that a console line is NeMo Lens's byte for
//! byte. opentelemetry-appender-log writes the line before the function, and an SDK log record
//! cannot reorder what it holds: the attributes wait here until the record is emitted.

use std::borrow::Cow;
use std::time::SystemTime;

use opentelemetry::logs::{AnyValue, LogRecord, Logger, LoggerProvider, Severity};
use opentelemetry::{InstrumentationScope, Key, SpanId, TraceFlags, TraceId};
use opentelemetry_sdk::logs::{SdkLogRecord, SdkLogger, SdkLoggerProvider};

/// The keys that go first, in Python's order.
const CODE_KEYS: [&str; 3] = ["code.file.path", "code.function.name", "code.line.number"];

/// A provider handing out [`CodeOrderLogger`]s over the SDK's (a handle to it: the SDK's
/// provider is shared).
#[derive(Debug)]
pub(super) struct CodeOrderProvider(pub(super) SdkLoggerProvider);

impl LoggerProvider for CodeOrderProvider {
    type Logger = CodeOrderLogger;

    fn logger_with_scope(&self, scope: InstrumentationScope) -> CodeOrderLogger {
        CodeOrderLogger(self.0.logger_with_scope(scope))
    }
}

/// The SDK's logger, its records' attributes ordered at `emit`.
#[derive(Debug)]
pub(super) struct CodeOrderLogger(SdkLogger);

/// An SDK record and the attributes it will get.
#[derive(Debug)]
pub(super) struct PendingRecord {
    record: SdkLogRecord,
    attributes: Vec<(Key, AnyValue)>,
}

impl Logger for CodeOrderLogger {
    type LogRecord = PendingRecord;

    fn create_log_record(&self) -> PendingRecord {
        PendingRecord {
            record: self.0.create_log_record(),
            attributes: Vec::new(),
        }
    }

    fn emit(&self, mut pending: PendingRecord) {
        let rank = |k: &Key| {
            CODE_KEYS
                .iter()
                .position(|c| *c == k.as_str())
                .unwrap_or(CODE_KEYS.len())
        };
        // Stable: the record's own attributes keep their order after the three.
        pending.attributes.sort_by_key(|(k, _)| rank(k));
        pending.record.add_attributes(pending.attributes);
        self.0.emit(pending.record);
    }

    fn event_enabled(&self, level: Severity, target: &str, name: Option<&str>) -> bool {
        self.0.event_enabled(level, target, name)
    }
}

impl LogRecord for PendingRecord {
    fn set_event_name(&mut self, name: &'static str) {
        self.record.set_event_name(name);
    }

    fn set_target<T>(&mut self, target: T)
    where
        T: Into<Cow<'static, str>>,
    {
        self.record.set_target(target);
    }

    fn set_timestamp(&mut self, timestamp: SystemTime) {
        self.record.set_timestamp(timestamp);
    }

    fn set_observed_timestamp(&mut self, timestamp: SystemTime) {
        self.record.set_observed_timestamp(timestamp);
    }

    fn set_severity_text(&mut self, text: &'static str) {
        self.record.set_severity_text(text);
    }

    fn set_severity_number(&mut self, number: Severity) {
        self.record.set_severity_number(number);
    }

    fn set_body(&mut self, body: AnyValue) {
        self.record.set_body(body);
    }

    fn add_attributes<I, K, V>(&mut self, attributes: I)
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<Key>,
        V: Into<AnyValue>,
    {
        self.attributes
            .extend(attributes.into_iter().map(|(k, v)| (k.into(), v.into())));
    }

    fn add_attribute<K, V>(&mut self, key: K, value: V)
    where
        K: Into<Key>,
        V: Into<AnyValue>,
    {
        self.attributes.push((key.into(), value.into()));
    }

    fn set_trace_context(
        &mut self,
        trace_id: TraceId,
        span_id: SpanId,
        trace_flags: Option<TraceFlags>,
    ) {
        self.record
            .set_trace_context(trace_id, span_id, trace_flags);
    }
}
