//! Lens's own health as OpenTelemetry metrics, read from the delivery statistics at each
//! collection (no cost on the span path).
//!
//! | metric | attributes |
//! |---|---|
//! | `lens.spans.produced`, `lens.spans.truncated` | — |
//! | `lens.exporter.spans`, `lens.exporter.log_records`, `lens.exporter.data_points` | `exporter`, `signal`, `outcome` = `exported` / `dropped_queue_full` / `dropped_export_failed` / `dropped_shutdown` / `dropped_disabled` / `dropped_rejected` / `dropped_processor` |
//! | `lens.exporter.processed` (spans, log records, data points) | `exporter`, `signal`, `processor`, `outcome` = `dropped` / `faulted` |
//! | `lens.exporter.disabled` (1 when disabled at setup) | `exporter`, `signal`, `reason` |
//! | `lens.exporter.batches` | `exporter`, `signal`, `outcome` = `ok` / `failed` |
//! | `lens.exporter.retries` | `exporter`, `signal`, `outcome` = `retried` / `exhausted` |
//! | `lens.exporter.restarts`, `lens.exporter.guest_errors` | `exporter`, `signal` |
//! | `lens.exporter.traps` | `exporter`, `signal`, `kind` |
//! | `lens.exporter.memory.peak` (bytes) | `exporter`, `signal` |
//! | `lens.exporter.latency` (seconds) | `exporter`, `signal`, `quantile` = `0.5` / `0.99` |
//!
//! Every exporter of every signal is observed: `signal` is `traces`, `metrics` or `logs`.

use std::sync::Arc;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{AsyncInstrument, Meter};

use crate::batch::{DeliveryStats, ExporterSnapshot};
use crate::signal::Signal;

/// Where the instruments read the installation's statistics at each collection.
pub(crate) type StatsSource = Arc<dyn Fn() -> DeliveryStats + Send + Sync>;

/// Reports one value with extra attributes (the exporter attribute is added).
type Observe<'a> = &'a dyn Fn(u64, Vec<KeyValue>);

/// Keeps the registered instruments alive.
pub(crate) type Instruments = Vec<Box<dyn std::any::Any + Send + Sync>>;

/// The attributes naming an exporter: its name and signal.
fn exporter(signal: Signal, e: &ExporterSnapshot) -> [KeyValue; 2] {
    [
        KeyValue::new("exporter", e.name.clone()),
        KeyValue::new("signal", signal.as_str()),
    ]
}

/// Every exporter of every signal, with its signal.
fn each(stats: &DeliveryStats) -> impl Iterator<Item = (Signal, &ExporterSnapshot)> {
    let traces = stats.exporters.iter().map(|e| (Signal::Traces, e));
    let metrics = stats.metric_exporters.iter().map(|e| (Signal::Metrics, e));
    let logs = stats.log_exporters.iter().map(|e| (Signal::Logs, e));
    traces.chain(metrics).chain(logs)
}

/// Registers the instruments on `meter`.
pub(crate) fn register(meter: &Meter, core: StatsSource) -> Instruments {
    let mut keep = rank_counters(meter, &core);
    keep.extend(exporter_counters(meter, &core));
    keep.extend(exporter_gauges(meter, core));
    keep
}

/// `lens.spans.produced` and `lens.spans.truncated`.
fn rank_counters(meter: &Meter, core: &StatsSource) -> Instruments {
    let counter = |name: &'static str, description: &'static str, f: fn(&DeliveryStats) -> u64| {
        let c = core.clone();
        Box::new(
            meter
                .u64_observable_counter(name)
                .with_description(description)
                .with_unit("{span}")
                .with_callback(move |o| o.observe(f(&c()), &[]))
                .build(),
        ) as Box<dyn std::any::Any + Send + Sync>
    };
    vec![
        counter("lens.spans.produced", "Spans ended on this rank", |s| {
            s.spans_produced
        }),
        counter(
            "lens.spans.truncated",
            "Spans still open at shutdown, ended by Lens",
            |s| s.spans_truncated,
        ),
    ]
}

/// An observable counter read from every exporter (of the signal `only`, if given), with the
/// exporter's name and signal added to the attributes `f` gives each value.
fn counter(
    meter: &Meter,
    core: &StatsSource,
    name: &'static str,
    description: &'static str,
    unit: &'static str,
    only: Option<Signal>,
    f: fn(&ExporterSnapshot, Observe<'_>),
) -> Box<dyn std::any::Any + Send + Sync> {
    let c = core.clone();
    Box::new(
        meter
            .u64_observable_counter(name)
            .with_description(description)
            .with_unit(unit)
            .with_callback(move |o: &dyn AsyncInstrument<u64>| {
                let stats = c();
                for (signal, e) in each(&stats).filter(|(s, _)| only.is_none_or(|o| o == *s)) {
                    f(e, &|value, attrs| {
                        let mut all = exporter(signal, e).to_vec();
                        all.extend(attrs);
                        o.observe(value, &all)
                    });
                }
            })
            .build(),
    )
}

/// The per-exporter counters, each observed once per exporter (plus its own attributes).
fn exporter_counters(meter: &Meter, core: &StatsSource) -> Instruments {
    let counter =
        |name, description, unit, only, f| counter(meter, core, name, description, unit, only, f);
    let per_exporter = |name, description, unit, f| counter(name, description, unit, None, f);
    let items = |e: &ExporterSnapshot, obs: Observe<'_>| {
        for (outcome, v) in [
            ("exported", e.exported),
            ("dropped_queue_full", e.dropped_queue_full),
            ("dropped_export_failed", e.dropped_export_failed),
            ("dropped_shutdown", e.dropped_shutdown),
            ("dropped_disabled", e.dropped_disabled),
            ("dropped_rejected", e.dropped_rejected),
            ("dropped_processor", e.dropped_processor),
        ] {
            obs(v, vec![KeyValue::new("outcome", outcome)]);
        }
    };
    vec![
        counter(
            "lens.exporter.spans",
            "Spans per exporter by outcome",
            "{span}",
            Some(Signal::Traces),
            items,
        ),
        counter(
            "lens.exporter.data_points",
            "Metric data points per exporter by outcome",
            "{data_point}",
            Some(Signal::Metrics),
            items,
        ),
        counter(
            "lens.exporter.log_records",
            "Log records per exporter by outcome",
            "{log_record}",
            Some(Signal::Logs),
            items,
        ),
        per_exporter(
            "lens.exporter.retries",
            "Export attempts repeated after a retryable failure, and batches given up",
            "{attempt}",
            |e, obs| {
                obs(e.retries, vec![KeyValue::new("outcome", "retried")]);
                obs(
                    e.retries_exhausted,
                    vec![KeyValue::new("outcome", "exhausted")],
                );
            },
        ),
        per_exporter(
            "lens.exporter.batches",
            "Export calls by outcome",
            "{batch}",
            |e, obs| {
                obs(e.batches_exported, vec![KeyValue::new("outcome", "ok")]);
                obs(e.batches_failed, vec![KeyValue::new("outcome", "failed")]);
            },
        ),
        counter(
            "lens.exporter.processed",
            "Items (spans, log records, data points) each processor dropped, or that met its fault, on their way to each exporter",
            "{item}",
            None,
            |e, obs| {
                for (processor, counts) in &e.processors {
                    for (outcome, v) in [("dropped", counts.dropped), ("faulted", counts.faults)] {
                        obs(
                            v,
                            vec![
                                KeyValue::new("processor", processor.clone()),
                                KeyValue::new("outcome", outcome),
                            ],
                        );
                    }
                }
            },
        ),
        per_exporter(
            "lens.exporter.restarts",
            "Sandboxed exporter instances rebuilt after a fault",
            "{restart}",
            |e, obs| obs(e.restarts, vec![]),
        ),
        per_exporter(
            "lens.exporter.reloads",
            "Sandboxed exporter components swapped in by a reload",
            "{reload}",
            |e, obs| obs(e.reloads, vec![]),
        ),
        per_exporter(
            "lens.exporter.guest_errors",
            "Export calls a guest answered with an error",
            "{call}",
            |e, obs| obs(e.guest_errors, vec![]),
        ),
        per_exporter(
            "lens.exporter.traps",
            "Guest faults by kind",
            "{trap}",
            |e, obs| {
                for (kind, n) in &e.traps {
                    obs(*n, vec![KeyValue::new("kind", kind.to_string())]);
                }
            },
        ),
    ]
}

/// `lens.exporter.memory.peak`, `lens.exporter.latency`, `lens.exporter.disabled` and
/// `lens.exporter.component`.
fn exporter_gauges(meter: &Meter, core: StatsSource) -> Instruments {
    let c = core.clone();
    let c2 = core.clone();
    let c3 = core.clone();
    let memory = meter
        .u64_observable_gauge("lens.exporter.memory.peak")
        .with_description("Peak linear memory of a sandboxed exporter instance")
        .with_unit("By")
        .with_callback(move |o| {
            for (signal, e) in each(&c()) {
                o.observe(e.peak_memory_bytes, &exporter(signal, e));
            }
        })
        .build();
    let latency = meter
        .f64_observable_gauge("lens.exporter.latency")
        .with_description("Export call latency quantiles (log2 bucket upper bounds)")
        .with_unit("s")
        .with_callback(move |o| {
            for (signal, e) in each(&core()) {
                for (q, value) in [("0.5", e.latency_p50), ("0.99", e.latency_p99)] {
                    let [name, signal] = exporter(signal, e);
                    o.observe(
                        value.as_secs_f64(),
                        &[name, signal, KeyValue::new("quantile", q)],
                    );
                }
            }
        })
        .build();
    let disabled = meter
        .u64_observable_gauge("lens.exporter.disabled")
        .with_description("1 for an exporter disabled at setup, with the reason")
        .with_callback(move |o| {
            for (signal, e) in each(&c2()) {
                if let Some(reason) = &e.disabled {
                    let [name, signal] = exporter(signal, e);
                    o.observe(1, &[name, signal, KeyValue::new("reason", reason.clone())]);
                }
            }
        })
        .build();
    let component = meter
        .u64_observable_gauge("lens.exporter.component")
        .with_description("1 for the component a sandboxed exporter runs, by its SHA-256")
        .with_callback(move |o| {
            for (signal, e) in each(&c3()) {
                if let Some(sha) = &e.component_sha256 {
                    let [name, signal] = exporter(signal, e);
                    o.observe(1, &[name, signal, KeyValue::new("sha256", sha.clone())]);
                }
            }
        })
        .build();
    vec![
        Box::new(memory),
        Box::new(latency),
        Box::new(disabled),
        Box::new(component),
    ]
}
