//! Section `spool` (run alone with `--only spool`): what an exporter's disk spool costs, against
//! a real rotel collector over OTLP/HTTP on 127.0.0.1, each figure a ratio in the same run:
//! the application thread's ns per span with a spool configured against without; delivering
//! N spans directly against writing them to the spool (the collector down) and against
//! replaying them from it (the collector back).

use std::path::Path;
use std::time::{Duration, Instant};

use lens::config::{OtlpExporterSpec, OtlpProtocol, SpoolSpec};
use lens::{ExporterSnapshot, Telemetry, TelemetryHandle};
use lens_test_support::collector::Collector;
use lens_test_support::pipeline::{otlp_spec, traces_to};

use crate::{Opts, Row, median, ns_per_span, one_span};

const APP: &str =
    "Disk spool (issue 40): the application thread, ns per span, with a spool against without";
const PATH: &str = "Disk spool (issue 40): N spans delivered directly, written to the spool, replayed from it, spans/s";

fn install(collector: &Collector, spool: Option<&Path>, queue: usize) -> TelemetryHandle {
    let protocol = OtlpProtocol::HttpProtobuf;
    let spec = OtlpExporterSpec {
        timeout_ms: Some(300),
        spool: spool.map(|dir| SpoolSpec {
            dir: Some(dir.to_path_buf()),
            max_mib: Some(4096),
            ..Default::default()
        }),
        ..otlp_spec(protocol, collector.endpoint(protocol, lens::Signal::Traces))
    };
    let mut config = traces_to(spec);
    config.batch.max_queue_size = queue;
    config.batch.scheduled_delay_ms = 50;
    Telemetry::builder(config)
        .rank(0)
        .world_size(1)
        .env(std::collections::HashMap::<String, String>::new())
        .install_global(false)
        .install()
        .unwrap()
}

fn stats(handle: &TelemetryHandle) -> ExporterSnapshot {
    handle.stats().exporters[0].clone()
}

/// Waits until `done` holds for the exporter's counters; the time it took from `since`.
fn until(
    handle: &TelemetryHandle,
    since: Instant,
    done: impl Fn(&ExporterSnapshot) -> bool,
) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(300);
    while !done(&stats(handle)) {
        assert!(Instant::now() < deadline, "{:?}", stats(handle));
        std::thread::sleep(Duration::from_millis(2));
    }
    since.elapsed().as_secs_f64()
}

/// The section's rows.
pub fn spool(opts: &Opts, rows: &mut Vec<Row>) {
    let n: u64 = if opts.quick { 50_000 } else { 200_000 };
    let mut collector = Collector::start_quiet();
    let dir = tempfile::tempdir().unwrap();

    // The application thread, the collector up: 5 rounds each, alternating.
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for round in 0..5 {
        for spooled in [false, true] {
            let spool = dir.path().join(format!("app-{round}"));
            let handle = install(&collector, spooled.then_some(spool.as_path()), 1 << 20);
            let tracer = handle.tracer("bench");
            let ns = ns_per_span(n as usize / 2, |i| one_span(&tracer, i));
            let _ = handle.shutdown(Duration::from_secs(60));
            if spooled { &mut with } else { &mut without }.push(ns);
        }
    }
    let (base, spooled) = (median(without.clone()), median(with.clone()));
    let spread = |v: &[f64]| {
        let (lo, hi) = v
            .iter()
            .fold((f64::MAX, 0f64), |(l, h), x| (l.min(*x), h.max(*x)));
        format!("{lo:.0}–{hi:.0}")
    };
    for (name, value, spread, ratio) in [
        (
            "without a spool (the baseline)",
            base,
            spread(&without),
            None,
        ),
        (
            "with a spool, the collector up",
            spooled,
            spread(&with),
            Some((spooled / base, "× without")),
        ),
    ] {
        rows.push(Row {
            group: APP,
            name: format!("{name} (5 rounds: {spread})"),
            value,
            unit: "ns/span",
            ratio,
        });
    }

    // Direct: n spans to the collector.
    let spans = |handle: &TelemetryHandle| {
        let tracer = handle.tracer("bench");
        for i in 0..n as i64 {
            one_span(&tracer, i);
        }
    };
    let direct = install(&collector, None, n as usize);
    let started = Instant::now();
    spans(&direct);
    let direct_s = until(&direct, started, |s| s.exported == n);
    let _ = direct.shutdown(Duration::from_secs(60));

    // Written: the collector down, the same spans into the spool.
    collector.kill();
    let spool = dir.path().join("path");
    let down = install(&collector, Some(&spool), n as usize);
    let started = Instant::now();
    spans(&down);
    let written_s = until(&down, started, |s| s.spooled == n);
    let _ = down.shutdown(Duration::from_millis(500));
    let on_disk: u64 = std::fs::read_dir(&spool)
        .unwrap()
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum();
    drop(down);

    // Replayed: the collector back, a new installation finds them.
    collector.restart();
    let started = Instant::now();
    let up = install(&collector, Some(&spool), n as usize);
    let replayed_s = until(&up, started, |s| s.replayed == n);
    let _ = up.shutdown(Duration::from_secs(60));
    let rate = |s: f64| n as f64 / s;
    println!(
        "spool: {n} spans direct {direct_s:.2} s, written {written_s:.2} s ({:.1} MiB, {:.0} B/span), replayed {replayed_s:.2} s",
        on_disk as f64 / (1 << 20) as f64,
        on_disk as f64 / n as f64
    );
    for (name, s) in [
        (
            format!("{n} spans exported directly (the baseline)"),
            direct_s,
        ),
        (
            format!(
                "{n} spans written to the spool, the collector down ({:.0} bytes/span on disk)",
                on_disk as f64 / n as f64
            ),
            written_s,
        ),
        (
            format!("{n} spans replayed from the spool by the next process"),
            replayed_s,
        ),
    ] {
        rows.push(Row {
            group: PATH,
            name,
            value: rate(s),
            unit: "spans/s",
            ratio: (s != direct_s).then(|| (direct_s / s, "× direct")),
        });
    }
}
