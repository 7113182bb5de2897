//! Loading `.wasm` exporters: every bad input gets its own message naming the exporter and the
//! file, pins are checked, and an exporter refusing `init` fails setup with its words.

use std::collections::HashMap;
use std::path::Path;

use lens::config::SetupFailurePolicy;
use lens::opentelemetry::trace::{Span, Tracer};
use lens::opentelemetry_sdk::Resource;
use lens::wasm::WasmSpanExporter;
use lens::{LensConfig, LensError, Telemetry};
use lens_test_support::pipeline::{T, exporting};
use lens_test_support::wasm::{HOSTILE, RECORDER, install_alone, recorder_spec, spec};

fn load_error(path: &Path, pin: Option<&str>) -> String {
    let mut s = spec(path.to_str().unwrap(), &[]);
    s.sha256 = pin.map(String::from);
    match WasmSpanExporter::from_config("bad", &s, &Resource::builder_empty().build()) {
        Err(LensError::WasmLoad { source, .. }) => source.to_string(),
        Err(other) => panic!("unexpected error {other}"),
        Ok(_) => panic!("{} loaded", path.display()),
    }
}

#[test]
fn bad_wasm_inputs_each_get_their_message() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    assert_eq!(
        load_error(&dir.path().join("missing.wasm"), None),
        "file not found"
    );
    assert_eq!(
        load_error(dir.path(), None),
        "is a directory, not a .wasm component file"
    );
    assert_eq!(
        load_error(&p("text.wasm", b"hello, world"), None),
        "not a WebAssembly file (no `\\0asm` header)"
    );
    let core = wat::parse_str("(module (func (export \"f\")))").unwrap();
    assert_eq!(
        load_error(&p("core.wasm", &core), None),
        "is a core WebAssembly module, not a component: build it for wasm32-wasip2, or wrap it with `wasm-tools component new`"
    );
    let empty = wat::parse_str("(component)").unwrap();
    assert_eq!(
        load_error(&p("empty.wasm", &empty), None),
        "does not export `lens:exporter/span-exporter@0.4.0`, `metric-exporter@0.4.0` or `log-exporter@0.4.0` (it exports nothing); is it built for a `lens:exporter` world (`exporter`, `metrics`, `logs` or `all-signals`)?"
    );
    let imports = wat::parse_str(
        r#"(component
             (import "vendor:telemetry/sink@1.0.0" (instance (export "send" (func))))
             (import "wasi:cli/environment@0.2.0" (instance))
           )"#,
    )
    .unwrap();
    assert_eq!(
        load_error(&p("imports.wasm", &imports), None),
        "imports the host does not provide: `vendor:telemetry/sink@1.0.0` (the host offers WASI 0.2 and wasi:http only)"
    );
    // A component exporting a `shutdown` function under `interface`.
    let exporting = |interface: &str| {
        wat::parse_str(format!(
            r#"(component
                 (core module $m (func (export "f")))
                 (core instance $i (instantiate $m))
                 (func $f (canon lift (core func $i "f")))
                 (instance $e (export "shutdown" (func $f)))
                 (export "{interface}" (instance $e))
               )"#
        ))
        .unwrap()
    };
    const SUPPORTED: &str =
        "`lens:exporter/span-exporter@0.4.0`, `metric-exporter@0.4.0` or `log-exporter@0.4.0`";
    assert_eq!(
        load_error(
            &p("v1.wasm", &exporting("lens:exporter/span-exporter@0.1.0")),
            None
        ),
        format!(
            "targets `lens:exporter/span-exporter@0.1.0`, but this host supports {SUPPORTED}; rebuild it against this host's `wit/` (span records are unchanged since 0.1.0)"
        )
    );
    assert_eq!(
        load_error(
            &p("v5.wasm", &exporting("lens:exporter/span-exporter@0.5.0")),
            None
        ),
        format!("targets `lens:exporter/span-exporter@0.5.0`, but this host supports {SUPPORTED}")
    );
    // The right name, not the right functions: found when the first instance starts, at setup.
    assert_eq!(
        load_error(
            &p("v4.wasm", &exporting("lens:exporter/span-exporter@0.4.0")),
            None
        ),
        "its `lens:exporter/span-exporter@0.4.0` does not match the WIT this host was built with: no `init` function in `lens:exporter/span-exporter@0.4.0`"
    );
    // An older version still served is named as it is.
    assert_eq!(
        load_error(
            &p("v3.wasm", &exporting("lens:exporter/span-exporter@0.3.0")),
            None
        ),
        "its `lens:exporter/span-exporter@0.3.0` does not match the WIT this host was built with: no `init` function in `lens:exporter/span-exporter@0.3.0`"
    );
    let truncated = &std::fs::read(RECORDER).unwrap()[..4096];
    assert!(load_error(&p("truncated.wasm", truncated), None).starts_with("invalid component: "));
    let pin = "0".repeat(64);
    let digest = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(std::fs::read(RECORDER).unwrap()))
    };
    assert_eq!(
        load_error(Path::new(RECORDER), Some(&pin)),
        format!("sha256 is {digest}, but the config pins {pin}: refusing to load it")
    );
}

#[test]
fn a_correct_sha256_pin_loads() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = recorder_spec(dir.path(), "typed");
    use sha2::Digest;
    s.sha256 =
        Some(hex::encode(sha2::Sha256::digest(std::fs::read(RECORDER).unwrap())).to_uppercase());
    WasmSpanExporter::from_config("pinned", &s, &Resource::builder_empty().build()).unwrap();
}

#[test]
fn an_exporter_refusing_to_start_fails_setup_with_its_message() {
    let err = WasmSpanExporter::from_config(
        "picky",
        &spec(HOSTILE, &[("mode", "refuse-init")]),
        &Resource::builder_empty().build(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "wasm exporter `picky` ({HOSTILE}): init failed: init: this exporter refuses to start"
        )
    );
}

#[test]
fn a_config_naming_a_missing_wasm_exporter_fails_setup_with_its_name_and_path() {
    let cfg = LensConfig {
        exporter: "exporters/vendor.wasm".into(),
        metrics_enabled: false,
        run_id: "x".into(),
        ..exporting()
    };
    let err = Telemetry::builder(cfg)
        .env(HashMap::<String, String>::new())
        .install_global(false)
        .install()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "wasm exporter `vendor` (exporters/vendor.wasm): file not found"
    );
}

/// The hostile guest in `mode` as the only exporter of a rank, with its setup policy.
fn rank_with(
    mode: &[(&str, &str)],
    policy: Option<SetupFailurePolicy>,
) -> Result<lens::TelemetryHandle, LensError> {
    let mut hostile = spec(HOSTILE, mode);
    hostile.name = Some("hostile".into());
    hostile.call_timeout_ms = Some(300);
    hostile.init_timeout_ms = Some(300);
    hostile.on_setup_failure = policy;
    install_alone(hostile, None)
}

/// A hung `init` holds the rank's setup for the start deadline (`init_timeout_ms`, default
/// 5 s), not for the call deadline (here a minute).
#[test]
fn a_hung_init_holds_setup_for_the_start_deadline_only() {
    let mut hostile = spec(HOSTILE, &[("mode", "noop"), ("init_sleep_ms", "3600000")]);
    hostile.name = Some("hostile".into());
    hostile.call_timeout_ms = Some(60_000);
    let started = std::time::Instant::now();
    let handle = install_alone(hostile, None).expect("the rank trains");
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(20), "{took:?}");
    let stats = handle.stats();
    let why = stats.exporter("hostile").unwrap().disabled.clone().unwrap();
    assert!(why.contains("`init` did not return within 5s"), "{why}");
    handle.shutdown(T).unwrap();
}

#[test]
fn a_guest_failing_at_setup_is_disabled_by_default_and_the_rank_trains() {
    for (mode, reason) in [
        (
            vec![("mode", "refuse-init")],
            "init failed: init: this exporter refuses to start",
        ),
        (
            vec![("mode", "noop"), ("init_sleep_ms", "5000")],
            "`init` did not return within 300ms",
        ),
    ] {
        let handle = rank_with(&mode, None).expect("the rank trains");
        let tracer = handle.tracer("t");
        for _ in 0..7 {
            tracer.start("step").end();
        }
        handle.shutdown(T).unwrap();
        let stats = handle.stats();
        let e = stats.exporter("hostile").unwrap();
        assert_eq!((e.received, e.exported, e.dropped_disabled), (7, 0, 7));
        assert_eq!(e.dropped(), 7);
        let why = e.disabled.as_deref().expect("the reason is kept");
        assert!(why.contains(reason), "{why}");
        assert!(why.contains("wasm exporter `hostile`"), "{why}");
    }
}

#[test]
fn with_on_setup_failure_fail_the_setup_fails() {
    let err = rank_with(&[("mode", "refuse-init")], Some(SetupFailurePolicy::Fail)).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("init failed: init: this exporter refuses to start"),
        "{err}"
    );
}

#[test]
fn a_config_error_fails_setup_whatever_the_policy() {
    let mut missing = spec("nowhere/exporter.wasm", &[]);
    missing.on_setup_failure = Some(SetupFailurePolicy::Disable);
    let err = install_alone(missing, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "wasm exporter `exporter` (nowhere/exporter.wasm): file not found"
    );
}

#[test]
fn a_disabled_exporter_shows_in_the_health_metrics() {
    use lens::opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
    let reader = lens::InMemoryMetricReader::new();
    let mut hostile = spec(HOSTILE, &[("mode", "refuse-init")]);
    hostile.name = Some("hostile".into());
    let handle = install_alone(hostile, Some(&reader)).unwrap();
    handle.tracer("t").start("step").end();
    let data = reader.get_metrics_data().unwrap();
    let metric = |name: &str| lens_test_support::pipeline::metric(&data, name);
    let AggregatedMetrics::U64(MetricData::Gauge(disabled)) = metric("lens.exporter.disabled")
    else {
        panic!("lens.exporter.disabled is a u64 gauge")
    };
    let point = disabled.data_points().next().unwrap();
    assert_eq!(point.value(), 1);
    let reason = point
        .attributes()
        .find(|kv| kv.key.as_str() == "reason")
        .map(|kv| kv.value.to_string())
        .unwrap();
    assert!(
        reason.ends_with("this exporter refuses to start"),
        "{reason}"
    );
    let AggregatedMetrics::U64(MetricData::Sum(spans)) = metric("lens.exporter.spans") else {
        panic!("lens.exporter.spans is a u64 sum")
    };
    let dropped_disabled = spans
        .data_points()
        .find(|p| {
            p.attributes()
                .any(|kv| kv.key.as_str() == "outcome" && kv.value.as_str() == "dropped_disabled")
        })
        .unwrap();
    assert_eq!(dropped_disabled.value(), 1);
    handle.shutdown(T).unwrap();
}
