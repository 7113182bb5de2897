//! Guest faults never reach training: deadlines (in wasm and blocked in a host call), the
//! memory limit, panics, huge errors and fuel each fail their batch only; instances are rebuilt,
//! repeated faults back off, every span is counted, and the health metrics say what happened.

use std::time::{Duration, Instant};

use lens::opentelemetry::trace::{Span, Tracer};
use lens::opentelemetry_sdk::Resource;
use lens::testing::RecordingSpanExporter;
use lens::wasm::WasmSpanExporter;
use lens::{FaultKind, TelemetryHandle};
use lens_test_support::pipeline::T;
use lens_test_support::wasm::{HOSTILE, direct, export, install, install_alone, spec};

#[test]
fn infinite_loop_hits_the_deadline_and_the_instance_is_rebuilt() {
    let (e, stats) = direct("loop", &[]);
    let started = Instant::now();
    let err = export(&e, &["a"]).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(
        err.contains("wasm exporter `hostile-loop`: deadline"),
        "{err}"
    );
    // The next batch gets a fresh instance (which loops again): a restart, then backoff.
    assert!(export(&e, &["b"]).unwrap_err().contains("deadline"));
    let s = stats.snapshot();
    assert_eq!(s.traps.get(&FaultKind::Deadline), Some(&2));
    assert_eq!(s.restarts, 1);
    let backing_off = export(&e, &["c"]).unwrap_err();
    assert!(backing_off.contains("backing off"), "{backing_off}");
}

#[test]
fn memory_bomb_hits_the_memory_limit() {
    let (e, stats) = direct("memory-bomb", &[]);
    let err = export(&e, &["a"]).unwrap_err();
    assert!(err.contains("memory limit"), "{err}");
    let s = stats.snapshot();
    assert_eq!(s.traps.get(&FaultKind::MemoryLimit), Some(&1));
    assert!(s.peak_memory_bytes <= 32 << 20, "{}", s.peak_memory_bytes);
}

#[test]
fn panic_on_a_span_named_boom_fails_that_batch_only() {
    let (e, stats) = direct("panic-on-boom", &[]);
    export(&e, &["ok"]).unwrap();
    let err = export(&e, &["x", "boom"]).unwrap_err();
    assert!(err.contains("unreachable"), "{err}");
    // The panic's own words are in the fault (logged at `warn`), forwarded stderr or not.
    assert!(
        err.contains("its stderr: ") && err.contains("a span named boom"),
        "{err}"
    );
    export(&e, &["fine"]).unwrap(); // a fresh instance, no backoff after one fault
    let s = stats.snapshot();
    assert_eq!(
        (s.restarts, s.traps.get(&FaultKind::Unreachable)),
        (1, Some(&1))
    );
}

/// With `forward_stdio = false` the guest's stderr reaches no log, but a trapping instance's
/// last words are still in its fault's message.
#[test]
fn a_panic_message_is_in_the_fault_even_when_stdio_is_not_forwarded() {
    let mut s = spec(HOSTILE, &[("mode", "panic-on-boom")]);
    s.forward_stdio = Some(false);
    let (e, _) =
        WasmSpanExporter::from_config("quiet", &s, &Resource::builder_empty().build()).unwrap();
    let err = export(&e, &["boom"]).unwrap_err();
    assert!(
        err.contains("panicked at") && err.contains("a span named boom"),
        "{err}"
    );
}

#[test]
fn huge_error_strings_are_truncated_and_the_instance_kept() {
    let (e, stats) = direct("huge-error", &[]);
    let err = export(&e, &["a"]).unwrap_err();
    assert!(err.len() < 1200, "{} bytes", err.len());
    assert!(
        err.ends_with(&format!("… [{} more bytes]", (10 << 20) - 1024)),
        "{}",
        &err[err.len() - 40..]
    );
    export(&e, &["b"]).unwrap_err();
    let s = stats.snapshot();
    assert_eq!((s.guest_errors, s.restarts), (2, 0));
    assert!(s.traps.is_empty());
}

#[test]
fn a_guest_blocked_in_a_host_call_is_abandoned_at_the_deadline() {
    let (e, stats) = direct("slow", &[("sleep_ms", "5000")]);
    let started = Instant::now();
    let err = export(&e, &["a"]).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(err.contains("blocked in a host call"), "{err}");
    assert_eq!(stats.snapshot().traps.get(&FaultKind::Deadline), Some(&1));
}

#[test]
fn fuel_budget_stops_a_loop_deterministically() {
    let mut s = spec(HOSTILE, &[("mode", "loop")]);
    s.fuel_per_call = Some(5_000_000);
    s.call_timeout_ms = Some(30_000); // the fuel, not the deadline, must stop it
    let (e, stats) =
        WasmSpanExporter::from_config("fuel", &s, &Resource::builder_empty().build()).unwrap();
    let err = export(&e, &["a"]).unwrap_err();
    assert!(err.contains("wasm exporter `fuel`: fuel"), "{err}");
    assert_eq!(stats.snapshot().traps.get(&FaultKind::Fuel), Some(&1));
}

/// Ten spans through `handle`, one named `boom` if asked, then a flush (a failed batch fails
/// the flush, never the application).
fn ten_spans(handle: &TelemetryHandle, boom: bool) {
    let tracer = handle.tracer("t");
    for i in 0..10 {
        tracer
            .start(if boom && i == 3 { "boom" } else { "fine" })
            .end();
    }
    let _ = handle.force_flush(T);
}

/// A `panic-on-boom` guest named `hostile` with `lanes` instances, and the oracle.
fn panic_on_boom(lanes: usize) -> (TelemetryHandle, RecordingSpanExporter) {
    let mut hostile = spec(HOSTILE, &[("mode", "panic-on-boom")]);
    hostile.name = Some("hostile".into());
    hostile.batch.max_concurrent_exports = Some(lanes);
    install(vec![hostile], 10)
}

/// After shutdown: (exported, failed, dropped, traps, restarts) of `hostile`.
fn hostile_counts(handle: &TelemetryHandle) -> (u64, u64, u64, u64, u64) {
    handle.shutdown(T).unwrap();
    let stats = handle.stats();
    let w = stats.exporter("hostile").unwrap();
    assert_eq!(w.received, w.exported + w.dropped(), "{w:?}");
    let traps = w.traps.get(&FaultKind::Unreachable).copied().unwrap_or(0);
    (
        w.exported,
        w.dropped_export_failed,
        w.dropped(),
        traps,
        w.restarts,
    )
}

#[test]
fn traps_never_reach_training_and_the_counts_add_up() {
    let (handle, oracle) = panic_on_boom(1);
    ten_spans(&handle, false); // exported
    ten_spans(&handle, true); // trap: dropped, instance discarded
    ten_spans(&handle, false); // fresh instance: exported (restart 1)
    ten_spans(&handle, true); // second trap within 10 s: dropped, backoff 1 s starts
    ten_spans(&handle, false); // dropped: backing off
    std::thread::sleep(Duration::from_millis(1100));
    ten_spans(&handle, false); // backoff over: fresh instance, exported (restart 2)
    assert_eq!(hostile_counts(&handle), (30, 30, 30, 2, 2));
    assert_eq!(oracle.len(), 60, "the other exporter got every span");
}

#[test]
fn with_two_instances_batches_avoid_the_one_backing_off() {
    let (handle, _) = panic_on_boom(2);
    ten_spans(&handle, true); // instance 0 traps
    ten_spans(&handle, true); // instance 1 traps
    ten_spans(&handle, true); // instance 0 rebuilt, traps again: backs off for 1 s
    ten_spans(&handle, false); // instance 1 rebuilt: exported
    ten_spans(&handle, false); // instance 0's turn, but it is backing off: instance 1 exports
    ten_spans(&handle, false); // instance 1 again
    assert_eq!(hostile_counts(&handle), (30, 30, 30, 3, 2));
}

/// A data point as `[values of its attributes sorted by key]=value` (the SDK may hand the
/// attributes in any order).
fn point<'a>(attrs: impl Iterator<Item = &'a lens::opentelemetry::KeyValue>, value: u64) -> String {
    let mut attrs: Vec<_> = attrs.collect();
    attrs.sort_by_key(|kv| kv.key.clone());
    let values: Vec<String> = attrs.iter().map(|kv| kv.value.to_string()).collect();
    format!("{values:?}={value}")
}

#[test]
fn guest_health_is_reported_as_lens_metrics() {
    let reader = lens::InMemoryMetricReader::new();
    let mut hostile = spec(HOSTILE, &[("mode", "panic-on-boom")]);
    hostile.name = Some("hostile".into());
    let handle = install_alone(hostile, Some(&reader)).unwrap();
    let tracer = handle.tracer("t");
    tracer.start("boom").end();
    let _ = handle.force_flush(T);
    tracer.start("fine").end();
    let _ = handle.force_flush(T);
    let data = reader.get_metrics_data().unwrap();
    let find = |name: &str| -> Vec<String> {
        use lens::opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
        let mut out = Vec::new();
        for m in data
            .scope_metrics()
            .flat_map(|s| s.metrics())
            .filter(|m| m.name() == name)
        {
            match m.data() {
                AggregatedMetrics::U64(MetricData::Sum(s)) => {
                    out.extend(s.data_points().map(|p| point(p.attributes(), p.value())))
                }
                AggregatedMetrics::U64(MetricData::Gauge(g)) => {
                    out.extend(g.data_points().map(|p| point(p.attributes(), p.value())))
                }
                _ => {}
            }
        }
        out
    };
    assert_eq!(
        find("lens.exporter.traps"),
        // exporter, kind, signal
        [r#"["hostile", "unreachable", "traces"]=1"#]
    );
    assert_eq!(
        find("lens.exporter.restarts"),
        [r#"["hostile", "traces"]=1"#]
    );
    let memory = find("lens.exporter.memory.peak");
    assert_eq!(memory.len(), 1);
    let bytes: u64 = memory[0].rsplit('=').next().unwrap().parse().unwrap();
    assert!(bytes >= 64 * 1024, "{memory:?}");
    handle.shutdown(T).unwrap();
}

/// For each hostile behaviour inside a real pipeline: the application never waits, the other
/// exporter gets every span, and the hostile exporter's counts add up.
fn hostile_in_a_pipeline(mode: &str, extra: &[(&str, &str)]) {
    let mut settings = vec![("mode", mode)];
    settings.extend_from_slice(extra);
    let mut hostile = spec(HOSTILE, &settings);
    hostile.name = Some("hostile".into());
    hostile.call_timeout_ms = Some(200);
    hostile.memory_limit_mib = Some(32);
    let (handle, oracle) = install(vec![hostile], 10);
    let tracer = handle.tracer("t");
    let started = Instant::now();
    for i in 0..50 {
        tracer.start(if i == 25 { "boom" } else { "step" }).end();
    }
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "ending spans waited: {:?}",
        started.elapsed()
    );
    let _ = handle.force_flush(T);
    let _ = handle.shutdown(T);
    let stats = handle.stats();
    let w = stats.exporter("hostile").unwrap();
    assert_eq!(
        oracle.len(),
        50,
        "{mode}: the other exporter got every span"
    );
    assert_eq!(w.received, 50, "{mode}");
    assert_eq!(w.exported + w.dropped(), 50, "{mode}: {w:?}");
}

macro_rules! hostile_pipeline_tests {
    ($($test:ident => $mode:expr $(, $k:expr => $v:expr)*;)*) => {$(
        #[test]
        fn $test() {
            hostile_in_a_pipeline($mode, &[$(($k, $v)),*]);
        }
    )*};
}

hostile_pipeline_tests! {
    pipeline_survives_an_infinite_loop => "loop";
    pipeline_survives_a_memory_bomb => "memory-bomb";
    pipeline_survives_a_panic_on_boom => "panic-on-boom";
    pipeline_survives_huge_errors => "huge-error";
    pipeline_survives_a_slow_exporter => "slow", "sleep_ms" => "1000";
    pipeline_survives_file_probes => "read-file";
    pipeline_survives_env_probes => "read-env";
    pipeline_survives_socket_probes => "socket";
    pipeline_survives_http_probes => "http";
    pipeline_survives_periodic_traps => "trap-every", "every" => "2";
}
