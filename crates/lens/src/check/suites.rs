//! The conformance cases of each exporter interface: the batches a real SDK makes, sent as
//! the host's processor or reader would, each timed or failed with the guest's words.

use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry::InstrumentationScope;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkError;
use opentelemetry_sdk::logs::{LogBatch, LogExporter, SdkLogRecord};
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

use super::{CaseResult, NAME, SignalReport};
use crate::batch::ExporterStats;
use crate::config::WasmExporterSpec;
use crate::encoding::logs::encode_logs;
use crate::encoding::metrics::{data_points, encode_metrics};
use crate::error::LensError;
use crate::testing::{
    LogRecords, MetricKind, every_log_body, many_data_points, many_logs, metrics_of, spans,
};
use crate::wasm::sandbox::instance::Payload;
use crate::wasm::sandbox::interface::Preferences;
use crate::wasm::{
    GuestOutputBuffer, GuestOutputCopy, Signal, WasmLogExporter, WasmMetricExporter,
    WasmSpanExporter,
};

/// Times `f`; its error is the case's failure.
fn timed(f: impl FnOnce() -> Result<(), OTelSdkError>) -> Result<Duration, String> {
    let started = Instant::now();
    f().map(|()| started.elapsed()).map_err(|e| e.to_string())
}

/// The cases run so far, and the bulk case's cost per item.
pub(super) struct Cases {
    cases: Vec<CaseResult>,
    per_item_ns: Option<f64>,
    /// What the guest writes, taken after each case.
    output: Arc<GuestOutputBuffer>,
    /// Without `--retry`: the exporter's counts, to tell a case that ended at a `retryable`
    /// answer, and how many batches had by the last case.
    not_retried: Option<(Arc<ExporterStats>, u64)>,
}

impl Cases {
    /// The cases of an exporter just started (what it printed so far is its `init`'s).
    pub(super) fn new(output: &Arc<GuestOutputBuffer>) -> Self {
        Self {
            cases: vec![CaseResult::new(
                "init with the given settings",
                Ok(Duration::ZERO),
                output,
            )],
            per_item_ns: None,
            output: output.clone(),
            not_retried: None,
        }
    }

    /// Cases whose exporter (counted in `stats`) is not retried: a case ending at a
    /// `retryable` answer says so, instead of the host's "export failed after 1 attempt".
    fn without_retries(mut self, stats: &Arc<ExporterStats>, retry: bool) -> Self {
        if !retry {
            self.not_retried = Some((stats.clone(), stats.snapshot().retries_exhausted));
        }
        self
    }

    pub(super) fn case(&mut self, name: &'static str, outcome: Result<Duration, String>) {
        let outcome = match (&mut self.not_retried, outcome) {
            (Some((stats, seen)), Err(e)) => {
                let snapshot = stats.snapshot();
                if snapshot.retries_exhausted > *seen {
                    *seen = snapshot.retries_exhausted;
                    let line = snapshot.last_error.unwrap_or(e);
                    let said = line
                        .strip_prefix("retryable, given up after 1 attempt: ")
                        .unwrap_or(&line);
                    Err(format!(
                        "answered `retryable`: {said}; not retried (`lens check --retry` retries \
                         as a rank does, within the export timeout)"
                    ))
                } else {
                    Err(e)
                }
            }
            (_, outcome) => outcome,
        };
        self.cases
            .push(CaseResult::new(name, outcome, &self.output));
    }

    /// The bulk case: `items` items in `run`, its mean cost per item kept.
    fn bulk(
        &mut self,
        name: &'static str,
        items: u64,
        run: impl FnOnce() -> Result<(), OTelSdkError>,
    ) {
        self.bulk_outcome(name, items, || timed(run));
    }

    /// The bulk case whose `run` times itself.
    pub(super) fn bulk_outcome(
        &mut self,
        name: &'static str,
        items: u64,
        run: impl FnOnce() -> Result<Duration, String>,
    ) {
        let outcome = run();
        if let Ok(d) = &outcome {
            self.per_item_ns = Some(d.as_nanos() as f64 / items.max(1) as f64);
        }
        self.case(name, outcome);
    }

    /// The report, with the traps and peak memory the exporter's statistics saw.
    pub(super) fn report(
        mut self,
        signal: Signal,
        encoding: Option<&'static str>,
        stats: &ExporterStats,
    ) -> SignalReport {
        let snapshot = stats.snapshot();
        if !snapshot.traps.is_empty() {
            let traps: Vec<String> = snapshot
                .traps
                .iter()
                .map(|(kind, n)| format!("{kind} ×{n}"))
                .collect();
            self.case("no traps", Err(format!("traps: {}", traps.join(", "))));
        }
        SignalReport {
            interface: String::new(),
            signal,
            encoding,
            cases: self.cases,
            per_item_ns: self.per_item_ns,
            peak_memory_bytes: snapshot.peak_memory_bytes,
        }
    }
}

fn export_spans(e: &WasmSpanExporter, batch: Vec<SpanData>) -> Result<(), OTelSdkError> {
    futures_executor::block_on(e.export(batch))
}

/// Spans: empty, one, every value type, unicode, events/links/status, 10k in batches of 512,
/// force-flush.
pub(super) fn spans(
    spec: &WasmExporterSpec,
    resource: &Resource,
    output: &Arc<GuestOutputBuffer>,
    retry: bool,
) -> Result<SignalReport, LensError> {
    let copy = GuestOutputCopy::Sink(output.clone());
    let (exporter, stats) = WasmSpanExporter::from_config_with_output(NAME, spec, resource, copy)?;
    let mut c = Cases::new(output).without_retries(&stats, retry);
    c.case("empty batch", timed(|| export_spans(&exporter, Vec::new())));
    c.case("one span", timed(|| export_spans(&exporter, spans::one())));
    c.case(
        "every attribute value type",
        timed(|| export_spans(&exporter, spans::every_value_type())),
    );
    c.case(
        "unicode names and values",
        timed(|| export_spans(&exporter, spans::unicode())),
    );
    c.case(
        "events, links and status",
        timed(|| export_spans(&exporter, spans::events_links_status())),
    );
    let bulk = spans::many(10_240);
    c.bulk("10k spans in batches of 512", bulk.len() as u64, || {
        bulk.chunks(512)
            .try_for_each(|chunk| export_spans(&exporter, chunk.to_vec()))
    });
    c.case("force-flush", timed(|| exporter.force_flush()));
    let encoding = exporter.encoding();
    let _ = exporter.shutdown();
    Ok(c.report(Signal::Traces, encoding, &stats))
}

fn export_metrics(e: &WasmMetricExporter, metrics: &ResourceMetrics) -> Result<(), OTelSdkError> {
    futures_executor::block_on(e.export(metrics))
}

/// Metrics: an empty collection, each kind alone (sum, gauge, histogram, exponential
/// histogram) in the temporality the guest asked for, all kinds at once, 1,000 data points,
/// force-flush.
pub(super) fn metrics(
    spec: &WasmExporterSpec,
    resource: &Resource,
    output: &Arc<GuestOutputBuffer>,
    retry: bool,
) -> Result<SignalReport, LensError> {
    let copy = GuestOutputCopy::Sink(output.clone());
    let (exporter, stats) =
        WasmMetricExporter::from_config_with_output(NAME, spec, resource, copy)?;
    let temporality = exporter.temporality();
    let mut c = Cases::new(output).without_retries(&stats, retry);
    c.case(
        "empty collection",
        timed(|| export_metrics(&exporter, &ResourceMetrics::default())),
    );
    let kinds: [(&'static str, MetricKind); 4] = [
        ("sums (counter, up-down counter)", MetricKind::Sum),
        ("gauge", MetricKind::Gauge),
        ("histogram", MetricKind::Histogram),
        ("exponential histogram", MetricKind::ExponentialHistogram),
    ];
    for (name, kind) in kinds {
        let collection = metrics_of(&[kind], temporality);
        c.case(name, timed(|| export_metrics(&exporter, &collection)));
    }
    let all = metrics_of(&MetricKind::ALL, temporality);
    c.case(
        "every kind in one collection",
        timed(|| export_metrics(&exporter, &all)),
    );
    let bulk = many_data_points(1_000);
    c.bulk("1,000 data points", data_points(&bulk), || {
        export_metrics(&exporter, &bulk)
    });
    c.case("force-flush", timed(|| exporter.force_flush()));
    let encoding = exporter.encoding();
    let _ = exporter.shutdown();
    Ok(c.report(Signal::Metrics, encoding, &stats))
}

fn export_logs(
    e: &WasmLogExporter,
    records: &[(SdkLogRecord, InstrumentationScope)],
) -> Result<(), OTelSdkError> {
    let refs: Vec<(&SdkLogRecord, &InstrumentationScope)> =
        records.iter().map(|(r, s)| (r, s)).collect();
    futures_executor::block_on(e.export(LogBatch::new(&refs)))
}

/// Logs: an empty batch, one record per body type (none, string, bool, integer, double, bytes,
/// list, map), all of them with a span context, 10k records in batches of 512, force-flush.
pub(super) fn logs(
    spec: &WasmExporterSpec,
    resource: &Resource,
    output: &Arc<GuestOutputBuffer>,
    retry: bool,
) -> Result<SignalReport, LensError> {
    let copy = GuestOutputCopy::Sink(output.clone());
    let (exporter, stats) = WasmLogExporter::from_config_with_output(NAME, spec, resource, copy)?;
    let mut c = Cases::new(output).without_retries(&stats, retry);
    c.case("empty batch", timed(|| export_logs(&exporter, &[])));
    let records: LogRecords = every_log_body();
    let names: [&'static str; 8] = [
        "body: none",
        "body: string",
        "body: bool",
        "body: integer",
        "body: double",
        "body: bytes",
        "body: list",
        "body: map",
    ];
    for (name, record) in names.into_iter().zip(&records) {
        c.case(
            name,
            timed(|| export_logs(&exporter, std::slice::from_ref(record))),
        );
    }
    c.case(
        "every body type in one batch, with a span context",
        timed(|| export_logs(&exporter, &records)),
    );
    let bulk = many_logs(10_240);
    c.bulk("10k records in batches of 512", bulk.len() as u64, || {
        bulk.chunks(512)
            .try_for_each(|chunk| export_logs(&exporter, chunk))
    });
    c.case("force-flush", timed(|| exporter.force_flush()));
    let encoding = exporter.encoding();
    let _ = exporter.shutdown();
    Ok(c.report(Signal::Logs, encoding, &stats))
}

/// How the "export after shutdown" case makes one batch of `signal` for an instance.
pub(super) fn one_item(signal: Signal) -> fn(&Preferences, &Resource) -> Payload {
    match signal {
        Signal::Traces => |_, _| Payload::Spans(spans::one()),
        Signal::Metrics => |p, _| {
            let collection = metrics_of(
                &[MetricKind::Gauge],
                opentelemetry_sdk::metrics::Temporality::Cumulative,
            );
            Payload::Metrics(encode_metrics(&collection, p.encoding))
        },
        Signal::Logs => |p, resource| {
            let records = every_log_body();
            let refs: Vec<(&SdkLogRecord, &InstrumentationScope)> =
                records.iter().take(2).map(|(r, s)| (r, s)).collect();
            Payload::Logs(encode_logs(&LogBatch::new(&refs), resource, p.encoding))
        },
    }
}
