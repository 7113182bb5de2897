//! Lens's own health as OpenTelemetry metrics, read from the delivery statistics at each
//! collection (no cost on the span path).
//!
//! | metric | attributes |
//! |---|---|
//! | `lens.spans.produced`, `lens.spans.truncated` | — |
//! | `lens.exporter.spans` | `exporter`, `outcome` = `exported` / `dropped_queue_full` / `dropped_export_failed` / `dropped_shutdown` |
//! | `lens.exporter.batches` | `exporter`, `outcome` = `ok` / `failed` |
//! | `lens.exporter.restarts`, `lens.exporter.guest_errors` | `exporter` |
//! | `lens.exporter.traps` | `exporter`, `kind` |
//! | `lens.exporter.memory.peak` (bytes) | `exporter` |
//! | `lens.exporter.latency` (seconds) | `exporter`, `quantile` = `0.5` / `0.99` |

use std::sync::Arc;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{AsyncInstrument, Meter};

use super::fanout::FanOutCore;
use super::stats::ExporterSnapshot;

/// Reports one value with extra attributes (the exporter attribute is added).
type Observe<'a> = &'a dyn Fn(u64, Vec<KeyValue>);

/// Keeps the registered instruments alive.
pub(crate) type Instruments = Vec<Box<dyn std::any::Any + Send + Sync>>;

fn exporter(e: &ExporterSnapshot) -> KeyValue {
    KeyValue::new("exporter", e.name.clone())
}

/// Registers the instruments on `meter`.
pub(crate) fn register(meter: &Meter, core: Arc<FanOutCore>) -> Instruments {
    let mut keep: Instruments = Vec::new();
    let c = core.clone();
    keep.push(Box::new(
        meter
            .u64_observable_counter("lens.spans.produced")
            .with_description("Spans ended on this rank")
            .with_unit("{span}")
            .with_callback(move |o| o.observe(c.stats().spans_produced, &[]))
            .build(),
    ));
    let c = core.clone();
    keep.push(Box::new(
        meter
            .u64_observable_counter("lens.spans.truncated")
            .with_description("Spans still open at shutdown, ended by Lens")
            .with_unit("{span}")
            .with_callback(move |o| o.observe(c.stats().spans_truncated, &[]))
            .build(),
    ));
    let per_exporter = |name: &'static str,
                        description: &'static str,
                        unit: &'static str,
                        f: fn(&ExporterSnapshot, Observe<'_>)| {
        let c = core.clone();
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
            .build()
    };
    keep.push(Box::new(per_exporter(
        "lens.exporter.spans",
        "Spans per exporter by outcome",
        "{span}",
        |e, obs| {
            for (outcome, v) in [
                ("exported", e.exported),
                ("dropped_queue_full", e.dropped_queue_full),
                ("dropped_export_failed", e.dropped_export_failed),
                ("dropped_shutdown", e.dropped_shutdown),
            ] {
                obs(v, vec![KeyValue::new("outcome", outcome)]);
            }
        },
    )));
    keep.push(Box::new(per_exporter(
        "lens.exporter.batches",
        "Export calls by outcome",
        "{batch}",
        |e, obs| {
            obs(e.batches_exported, vec![KeyValue::new("outcome", "ok")]);
            obs(e.batches_failed, vec![KeyValue::new("outcome", "failed")]);
        },
    )));
    keep.push(Box::new(per_exporter(
        "lens.exporter.restarts",
        "Sandboxed exporter instances rebuilt after a fault",
        "{restart}",
        |e, obs| obs(e.restarts, vec![]),
    )));
    keep.push(Box::new(per_exporter(
        "lens.exporter.guest_errors",
        "Export calls a guest answered with an error",
        "{call}",
        |e, obs| obs(e.guest_errors, vec![]),
    )));
    keep.push(Box::new(per_exporter(
        "lens.exporter.traps",
        "Guest faults by kind",
        "{trap}",
        |e, obs| {
            for (kind, n) in &e.traps {
                obs(*n, vec![KeyValue::new("kind", kind.to_string())]);
            }
        },
    )));
    let c = core.clone();
    keep.push(Box::new(
        meter
            .u64_observable_gauge("lens.exporter.memory.peak")
            .with_description("Peak linear memory of a sandboxed exporter instance")
            .with_unit("By")
            .with_callback(move |o| {
                for e in c.stats().exporters {
                    o.observe(e.peak_memory_bytes, &[exporter(&e)]);
                }
            })
            .build(),
    ));
    let c = core;
    keep.push(Box::new(
        meter
            .f64_observable_gauge("lens.exporter.latency")
            .with_description("Export call latency quantiles (log2 bucket upper bounds)")
            .with_unit("s")
            .with_callback(move |o| {
                for e in c.stats().exporters {
                    o.observe(
                        e.latency_p50.as_secs_f64(),
                        &[exporter(&e), KeyValue::new("quantile", "0.5")],
                    );
                    o.observe(
                        e.latency_p99.as_secs_f64(),
                        &[exporter(&e), KeyValue::new("quantile", "0.99")],
                    );
                }
            })
            .build(),
    ));
    keep
}
