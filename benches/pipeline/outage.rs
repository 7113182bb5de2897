//! Section `outage` (run alone with `--only outage`): one rank sending spans at a fixed rate
//! to a real rotel collector over OTLP/gRPC, the collector killed for 3 s mid-run; spans
//! exported and lost, and the exported rate, with the exporters' retry budget (`timeout_ms`)
//! at its default of 10 s and cut to 0.5 s, beside the same run without an outage.

use std::time::{Duration, Instant};

use lens::config::OtlpProtocol;
use lens::opentelemetry::trace::Tracer;
use lens::{LensConfig, Telemetry};
use lens_test_support::collector::Collector;
use lens_test_support::pipeline::{exporting, otlp_signal};

use crate::{Opts, Row};

const GROUP: &str = "Collector outage: 20,000 spans/s for 9 s over OTLP/gRPC, the collector down from 1.5 s to 4.5 s";
const RATE: u64 = 20_000;
const SECONDS: u64 = 9;

/// One run: `(exported, lost, exported spans per second of the run)`.
fn run(outage: bool, timeout_ms: u64) -> (u64, u64, f64) {
    let mut collector = Collector::start_quiet();
    let protocol = OtlpProtocol::Grpc;
    let mut config = LensConfig {
        metrics_enabled: false,
        traces: otlp_signal(protocol, collector.endpoint(protocol, lens::Signal::Traces)),
        ..exporting()
    };
    if let lens::config::ExporterSpec::Otlp(o) = &mut config.traces.exporters[0] {
        o.timeout_ms = Some(timeout_ms);
    }
    // The queue holds the 3 s of the outage (60,000 spans) while the worker retries.
    config.batch.max_queue_size = 100_000;
    config.batch.scheduled_delay_ms = 100;
    let handle = Telemetry::builder(config)
        .rank(0)
        .world_size(1)
        .env(std::collections::HashMap::<String, String>::new())
        .install_global(false)
        .install()
        .unwrap();
    let tracer = handle.tracer("trainer");
    let total = RATE * SECONDS;
    let started = Instant::now();
    let (mut killed, mut restarted) = (!outage, !outage);
    for i in 0..total {
        tracer.in_span("step", |_| {});
        let now = started.elapsed();
        if !killed && now >= Duration::from_millis(1_500) {
            collector.kill();
            killed = true;
        }
        if !restarted && now >= Duration::from_millis(4_500) {
            collector.restart();
            restarted = true;
        }
        let due = started + Duration::from_micros((i + 1) * 1_000_000 / RATE);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    let _ = handle.shutdown(Duration::from_secs(30));
    let elapsed = started.elapsed().as_secs_f64();
    let e = handle.stats().exporters[0].clone();
    (e.exported, e.dropped(), e.exported as f64 / elapsed)
}

/// The section's rows.
pub fn outage(_opts: &Opts, rows: &mut Vec<Row>) {
    for (name, outage, timeout_ms) in [
        ("no outage (the baseline)", false, 10_000),
        (
            "outage, retries within the default 10 s `timeout_ms`",
            true,
            10_000,
        ),
        (
            "outage, retries within 0.5 s (`timeout_ms = 500`)",
            true,
            500,
        ),
    ] {
        let (exported, lost, rate) = run(outage, timeout_ms);
        println!("{name}: exported {exported}, lost {lost}, {rate:.0} exported spans/s");
        rows.push(Row {
            group: GROUP,
            name: format!("{name}: {exported} exported, {lost} lost"),
            value: rate,
            unit: "spans/s",
            ratio: None,
        });
    }
}
