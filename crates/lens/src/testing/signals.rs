//! Metric collections and log records made by the real SDK, covering every metric kind and
//! every log body type: what `lens check` sends a metric or log exporter, and what the tests
//! compare a guest's output with.

use std::sync::{Arc, Mutex};

use opentelemetry::logs::{AnyValue, LogRecord as _, Logger, LoggerProvider as _, Severity};
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::{TraceContextExt, Tracer, TracerProvider as _};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::logs::{LogProcessor, SdkLogRecord, SdkLoggerProvider};
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::{Aggregation, Instrument, SdkMeterProvider, Stream, Temporality};
use opentelemetry_sdk::trace::SdkTracerProvider;

use crate::InMemoryMetricReader;

/// The metric kinds OTLP has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// A counter and an up-down counter.
    Sum,
    /// A gauge.
    Gauge,
    /// An explicit-bucket histogram.
    Histogram,
    /// A base-2 exponential histogram.
    ExponentialHistogram,
}

impl MetricKind {
    /// Every kind.
    pub const ALL: [MetricKind; 4] = [
        MetricKind::Sum,
        MetricKind::Gauge,
        MetricKind::Histogram,
        MetricKind::ExponentialHistogram,
    ];
}

/// One collection of the instruments of `kinds` (a counter and an up-down counter for sums),
/// each with two attribute sets, recorded through a real SDK meter, in `temporality`.
pub fn metrics_of(kinds: &[MetricKind], temporality: Temporality) -> ResourceMetrics {
    let reader = InMemoryMetricReader::with_temporality(temporality);
    let provider = SdkMeterProvider::builder()
        .with_reader(reader.clone())
        .with_view(|i: &Instrument| {
            (i.name() == "check.exponential").then(|| {
                Stream::builder()
                    .with_aggregation(Aggregation::Base2ExponentialHistogram {
                        max_size: 160,
                        max_scale: 20,
                        record_min_max: true,
                    })
                    .build()
                    .expect("a valid stream")
            })
        })
        .build();
    let meter = provider.meter("lens.check");
    let phases = [
        KeyValue::new("phase", "train"),
        KeyValue::new("phase", "eval"),
    ];
    for (i, phase) in phases.iter().enumerate() {
        let attrs = std::slice::from_ref(phase);
        let scale = i as f64 + 1.0;
        for kind in kinds {
            match kind {
                MetricKind::Sum => {
                    meter
                        .u64_counter("check.tokens")
                        .with_unit("{token}")
                        .with_description("tokens processed")
                        .build()
                        .add(100 * (i as u64 + 1), attrs);
                    meter
                        .i64_up_down_counter("check.queue_depth")
                        .build()
                        .add(i as i64 - 3, attrs);
                }
                MetricKind::Gauge => meter
                    .f64_gauge("check.loss")
                    .build()
                    .record(2.5 / scale, attrs),
                MetricKind::Histogram => {
                    let h = meter
                        .f64_histogram("check.step_time")
                        .with_unit("s")
                        .with_boundaries(vec![0.1, 0.5, 1.0])
                        .build();
                    for v in [0.05, 0.3, 0.7, 2.0] {
                        h.record(v * scale, attrs);
                    }
                }
                MetricKind::ExponentialHistogram => {
                    let h = meter.f64_histogram("check.exponential").build();
                    for v in [0.05, 0.3, 0.7, 2.0] {
                        h.record(v * scale, attrs);
                    }
                }
            }
        }
    }
    reader.get_metrics_data().expect("collecting metrics")
}

/// One collection holding every metric kind, in `temporality`.
pub fn every_metric_kind(temporality: Temporality) -> ResourceMetrics {
    metrics_of(&MetricKind::ALL, temporality)
}

/// One counter with `n` attribute sets: a collection of `n` data points, for bulk cases and
/// benchmarks.
pub fn many_data_points(n: usize) -> ResourceMetrics {
    let reader = InMemoryMetricReader::new();
    let provider = SdkMeterProvider::builder()
        .with_reader(reader.clone())
        // The default limit (2,000 attribute sets) would fold the rest into an overflow point.
        .with_view(move |_: &Instrument| {
            Stream::builder().with_cardinality_limit(n + 1).build().ok()
        })
        .build();
    let counter = provider
        .meter("lens.check")
        .u64_counter("check.tokens")
        .build();
    for i in 0..n {
        counter.add(i as u64 + 1, &[KeyValue::new("rank", i as i64)]);
    }
    reader.get_metrics_data().expect("collecting metrics")
}

/// Log records as the batch log processor queues them, with their logger's scope.
pub type LogRecords = Vec<(SdkLogRecord, InstrumentationScope)>;

/// Keeps every record emitted.
#[derive(Debug, Default, Clone)]
struct Keep(Arc<Mutex<LogRecords>>);

impl LogProcessor for Keep {
    fn emit(&self, record: &mut SdkLogRecord, scope: &InstrumentationScope) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((record.clone(), scope.clone()));
    }
    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }
    fn shutdown_with_timeout(&self, _timeout: std::time::Duration) -> OTelSdkResult {
        Ok(())
    }
}

/// Records emitted through a real SDK logger by `f`.
pub fn record_logs(f: impl FnOnce(&opentelemetry_sdk::logs::SdkLogger)) -> LogRecords {
    let keep = Keep::default();
    let provider = SdkLoggerProvider::builder()
        .with_log_processor(keep.clone())
        .build();
    f(&provider.logger("lens.check"));
    keep.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Every body type OTLP has: none, string, bool, integer, double, bytes, a list and a map
/// (nested), one record each, with severities, attributes, an event name and, for the last,
/// the span it was emitted in.
pub fn every_log_body() -> LogRecords {
    let bodies: Vec<Option<AnyValue>> = vec![
        None,
        Some(AnyValue::String("checkpoint saved".into())),
        Some(AnyValue::Boolean(true)),
        Some(AnyValue::Int(-42)),
        Some(AnyValue::Double(0.125)),
        Some(AnyValue::Bytes(Box::new(vec![0, 1, 254, 255]))),
        Some(AnyValue::ListAny(Box::new(vec![
            AnyValue::Int(1),
            AnyValue::String("a".into()),
        ]))),
        Some(AnyValue::Map(Box::new(
            [
                ("step".into(), AnyValue::Int(7)),
                (
                    "nested".into(),
                    AnyValue::ListAny(Box::new(vec![AnyValue::Boolean(false)])),
                ),
            ]
            .into_iter()
            .collect(),
        ))),
    ];
    let tracer_provider = SdkTracerProvider::builder().build();
    let tracer = tracer_provider.tracer("lens.check");
    record_logs(|logger| {
        let n = bodies.len();
        for (i, body) in bodies.into_iter().enumerate() {
            let mut record = logger.create_log_record();
            record.set_severity_number(if i % 2 == 0 {
                Severity::Info
            } else {
                Severity::Warn
            });
            record.set_severity_text(if i % 2 == 0 { "INFO" } else { "WARN" });
            if let Some(body) = body {
                record.set_body(body);
            }
            record.set_timestamp(std::time::SystemTime::now());
            record.set_observed_timestamp(std::time::SystemTime::now());
            record.add_attribute("index", i as i64);
            record.add_attribute("code.filepath", "train.py");
            if i == 0 {
                record.set_event_name("lens.check.event");
            }
            if i + 1 == n {
                tracer.in_span("step", |cx| {
                    let span = cx.span();
                    let sc = span.span_context();
                    record.set_trace_context(sc.trace_id(), sc.span_id(), Some(sc.trace_flags()));
                });
            }
            logger.emit(record);
        }
    })
}

/// `n` plain records (a string body and two attributes), for bulk cases and benchmarks.
pub fn many_logs(n: usize) -> LogRecords {
    record_logs(|logger| {
        for i in 0..n {
            let mut record = logger.create_log_record();
            record.set_severity_number(Severity::Info);
            record.set_severity_text("INFO");
            record.set_body(AnyValue::String(format!("step {i} done").into()));
            record.set_timestamp(std::time::SystemTime::now());
            record.add_attribute("step", i as i64);
            record.add_attribute("phase", "train");
            logger.emit(record);
        }
    })
}
