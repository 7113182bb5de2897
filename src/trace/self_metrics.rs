//! Lens's own health as OpenTelemetry metrics, read from the delivery statistics at each
//! collection (no cost on the span path).
//!
//! | metric | attributes |
//! |---|---|
//! | `lens.spans.produced`, `lens.spans.truncated` | — |
//! | `lens.exporter.spans` | `exporter`, `outcome` = `exported` / `dropped_queue_full` / `dropped_export_failed` / `dropped_shutdown` / `dropped_disabled` |
//! | `lens.exporter.disabled` (1 when disabled at setup) | `exporter`, `reason` |
//! | `lens.exporter.batches` | `exporter`, `outcome` = `ok` / `failed` |
//! | `lens.exporter.restarts`, `lens.exporter.guest_errors` | `exporter` |
//! | `lens.exporter.traps` | `exporter`, `kind` |
//! | `lens.exporter.memory.peak` (bytes) | `exporter` |
//! | `lens.exporter.latency` (seconds) | `exporter`, `quantile` = `0.5` / `0.99` |

use std::sync::Arc;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{AsyncInstrument, Meter};

use super::fanout::FanOutCore;
use crate::batch::{DeliveryStats, ExporterSnapshot};

/// Reports one value with extra attributes (the exporter attribute is added).
type Observe<'a> = &'a dyn Fn(u64, Vec<KeyValue>);

/// Keeps the registered instruments alive.
pub(crate) type Instruments = Vec<Box<dyn std::any::Any + Send + Sync>>;

fn exporter(e: &ExporterSnapshot) -> KeyValue {
    KeyValue::new("exporter", e.name.clone())
}

/// Registers the instruments on `meter`.
pub(crate) fn register(meter: &Meter, core: Arc<FanOutCore>) -> Instruments {
    let mut keep = rank_counters(meter, &core);
    keep.extend(exporter_counters(meter, &core));
    keep.extend(exporter_gauges(meter, core));
    keep
}

/// `lens.spans.produced` and `lens.spans.truncated`.
fn rank_counters(meter: &Meter, core: &Arc<FanOutCore>) -> Instruments {
    let counter = |name: &'static str, description: &'static str, f: fn(&DeliveryStats) -> u64| {
        let c = core.clone();
        Box::new(
            meter
                .u64_observable_counter(name)
                .with_description(description)
                .with_unit("{span}")
                .with_callback(move |o| o.observe(f(&c.stats()), &[]))
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

/// The per-exporter counters, each observed once per exporter (plus its own attributes).
fn exporter_counters(meter: &Meter, core: &Arc<FanOutCore>) -> Instruments {
    let per_exporter = |name: &'static str,
                        description: &'static str,
                        unit: &'static str,
                        f: fn(&ExporterSnapshot, Observe<'_>)| {
        let c = core.clone();
        Box::new(
            meter
                .u64_observable_counter(name)
                .with_description(description)
                .with_unit(unit)
                .with_callback(move |o: &dyn AsyncInstrument<u64>| {
                    for e in c.stats().exporters {
                        f(&e, &|value, mut attrs| {
                            attrs.insert(0, exporter(&e));
                            o.observe(value, &attrs)
                        });
                    }
                })
                .build(),
        ) as Box<dyn std::any::Any + Send + Sync>
    };
    vec![
        per_exporter(
            "lens.exporter.spans",
            "Spans per exporter by outcome",
            "{span}",
            |e, obs| {
                for (outcome, v) in [
                    ("exported", e.exported),
                    ("dropped_queue_full", e.dropped_queue_full),
                    ("dropped_export_failed", e.dropped_export_failed),
                    ("dropped_shutdown", e.dropped_shutdown),
                    ("dropped_disabled", e.dropped_disabled),
                ] {
                    obs(v, vec![KeyValue::new("outcome", outcome)]);
                }
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
        per_exporter(
            "lens.exporter.restarts",
            "Sandboxed exporter instances rebuilt after a fault",
            "{restart}",
            |e, obs| obs(e.restarts, vec![]),
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

/// `lens.exporter.memory.peak`, `lens.exporter.latency` and `lens.exporter.disabled`.
fn exporter_gauges(meter: &Meter, core: Arc<FanOutCore>) -> Instruments {
    let c = core.clone();
    let c2 = core.clone();
    let memory = meter
        .u64_observable_gauge("lens.exporter.memory.peak")
        .with_description("Peak linear memory of a sandboxed exporter instance")
        .with_unit("By")
        .with_callback(move |o| {
            for e in c.stats().exporters {
                o.observe(e.peak_memory_bytes, &[exporter(&e)]);
            }
        })
        .build();
    let latency = meter
        .f64_observable_gauge("lens.exporter.latency")
        .with_description("Export call latency quantiles (log2 bucket upper bounds)")
        .with_unit("s")
        .with_callback(move |o| {
            for e in core.stats().exporters {
                for (q, value) in [("0.5", e.latency_p50), ("0.99", e.latency_p99)] {
                    o.observe(
                        value.as_secs_f64(),
                        &[exporter(&e), KeyValue::new("quantile", q)],
                    );
                }
            }
        })
        .build();
    let disabled = meter
        .u64_observable_gauge("lens.exporter.disabled")
        .with_description("1 for an exporter disabled at setup, with the reason")
        .with_callback(move |o| {
            for e in c2.stats().exporters {
                if let Some(reason) = &e.disabled {
                    o.observe(1, &[exporter(&e), KeyValue::new("reason", reason.clone())]);
                }
            }
        })
        .build();
    vec![Box::new(memory), Box::new(latency), Box::new(disabled)]
}
