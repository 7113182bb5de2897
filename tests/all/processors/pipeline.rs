//! Processors in a rank's pipeline: the exporters they apply to, every span in exactly one
//! counter of each exporter, a disabled processor, components built for 0.3.0 behind one, a
//! processor swapped in place by a reload, processors added, removed, reordered and re-aimed
//! by reloads under load, and a refused one.

use std::collections::HashMap;

use lens::config::{ExporterSpec, OnFault, ProcessorSpec, SignalConfig, WasmProcessorSpec};
use lens::opentelemetry::trace::{Span as _, Tracer as _};
use lens::{LensConfig, Telemetry, TelemetryHandle};
use lens_test_support::pipeline::{T, exporting};
use lens_test_support::wasm::{lines, recorder_at};

use super::processor;

fn install(exporters: Vec<ExporterSpec>, processors: Vec<ProcessorSpec>) -> TelemetryHandle {
    try_install(exporters, processors).unwrap()
}

/// An exporting rank's config with these span exporters and processors (metrics off).
fn config(exporters: Vec<ExporterSpec>, processors: Vec<ProcessorSpec>) -> LensConfig {
    LensConfig {
        run_id: "processors".into(),
        metrics_enabled: false,
        traces: SignalConfig {
            exporters,
            processors,
        },
        ..exporting()
    }
}

fn try_install(
    exporters: Vec<ExporterSpec>,
    processors: Vec<ProcessorSpec>,
) -> Result<TelemetryHandle, lens::LensError> {
    Telemetry::builder(config(exporters, processors))
        .env(HashMap::<String, String>::new())
        .install_global(false)
        .install()
}

fn named_none(name: &str) -> ExporterSpec {
    ExporterSpec::None(lens::config::NoneExporterSpec {
        name: Some(name.into()),
    })
}

/// Ends `n` spans of the `gen_ai` mix (see `gen_ai_spans`) and flushes.
fn end_spans(handle: &TelemetryHandle, n: usize) {
    let tracer = handle.tracer("t");
    for i in 0..n {
        let name = ["gen_ai.chat", "step", "data_loader"][i % 3];
        let mut s = tracer.start(name);
        if name == "gen_ai.chat" {
            s.set_attribute(lens::opentelemetry::KeyValue::new(
                "gen_ai.prompt",
                "secret",
            ));
        }
        s.end();
    }
    handle.force_flush(T).unwrap();
}

fn only_for(mut spec: ProcessorSpec, exporters: &[&str]) -> ProcessorSpec {
    let ProcessorSpec::Wasm(w) = &mut spec else {
        unreachable!()
    };
    w.exporters = exporters.iter().map(|e| e.to_string()).collect();
    spec
}

#[test]
fn processors_apply_in_order_to_the_exporters_they_name_and_every_span_is_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    let vendor = recorder_at(dir.path(), "vendor", "vendor.jsonl", "typed", &[]);
    let handle = install(
        vec![ExporterSpec::Wasm(vendor), named_none("local")],
        vec![
            only_for(
                processor("drop-steps", "filter", &[("names", "step")], OnFault::Pass),
                &["vendor"],
            ),
            processor(
                "redact",
                "redact",
                &[("keys", "gen_ai.prompt")],
                OnFault::Drop,
            ),
        ],
    );
    end_spans(&handle, 30);
    let stats = handle.stats();
    let vendor = stats.exporter("vendor").unwrap();
    let local = stats.exporter("local").unwrap();
    assert_eq!((vendor.received, vendor.exported), (30, 20));
    assert_eq!(vendor.dropped_processor, 10);
    assert_eq!(vendor.processors["drop-steps"].dropped, 10);
    assert_eq!(vendor.processors["redact"].dropped, 0);
    assert_eq!(
        (local.received, local.exported, local.dropped_processor),
        (30, 30, 0)
    );
    assert!(!local.processors.contains_key("drop-steps"));
    for e in [vendor, local] {
        assert_eq!(e.received, e.exported + e.dropped(), "{}", e.name);
        assert_eq!(e.processor_faults, 0);
    }
    // The processors' own counts: `redact` saw both exporters' batches.
    let redact = stats.span_processor("redact").unwrap();
    assert_eq!((redact.received, redact.exported), (20 + 30, 20 + 30));
    assert_eq!(
        stats
            .span_processor("drop-steps")
            .unwrap()
            .dropped_processor,
        10
    );
    handle.shutdown(T).unwrap();
    let recorded: Vec<serde_json::Value> = lines(&dir.path().join("vendor.jsonl"))
        .into_iter()
        .filter_map(|l| l.get("typed").cloned())
        .flat_map(|t| t.as_array().unwrap().clone())
        .collect();
    assert_eq!(recorded.len(), 20);
    let text = serde_json::to_string(&recorded).unwrap();
    assert!(
        !text.contains("secret") && !text.contains("\"step\""),
        "{text}"
    );
    assert_eq!(text.matches("lens.redacted").count(), 10);
}

#[test]
fn a_processor_disabled_at_setup_fails_open_or_closed() {
    for (on_fault, exported) in [(OnFault::Pass, 6), (OnFault::Drop, 0)] {
        let handle = install(
            vec![named_none("local")],
            vec![processor("broken", "refuse-init", &[], on_fault)],
        );
        end_spans(&handle, 6);
        let stats = handle.stats();
        let local = stats.exporter("local").unwrap();
        assert_eq!(local.exported, exported);
        assert_eq!(local.dropped_processor, 6 - exported);
        assert_eq!(local.processors["broken"].faults, 6);
        let broken = stats.span_processor("broken").unwrap();
        assert!(
            broken
                .disabled
                .as_deref()
                .unwrap()
                .contains("this processor refuses to start"),
            "{broken:?}"
        );
        handle.shutdown(T).unwrap();
    }
    let mut strict = processor("broken", "refuse-init", &[], OnFault::Pass);
    let ProcessorSpec::Wasm(WasmProcessorSpec { component, .. }) = &mut strict else {
        unreachable!()
    };
    component.on_setup_failure = Some(lens::config::SetupFailurePolicy::Fail);
    let err = try_install(vec![named_none("local")], vec![strict]).unwrap_err();
    assert!(
        err.to_string().starts_with("wasm exporter `broken`")
            || err.to_string().contains("`broken`"),
        "{err}"
    );
    assert!(
        err.to_string().contains("this processor refuses to start"),
        "{err}"
    );
}

#[test]
fn an_exporter_built_for_0_3_0_runs_behind_a_processor() {
    let dir = tempfile::tempdir().unwrap();
    let mut old = recorder_at(dir.path(), "old", "old.jsonl", "typed", &[]);
    old.path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/all/fixtures/recorder-lens-exporter-0.3.0.wasm");
    let handle = install(
        vec![ExporterSpec::Wasm(old)],
        vec![processor(
            "drop-steps",
            "filter",
            &[("names", "step")],
            OnFault::Pass,
        )],
    );
    end_spans(&handle, 9);
    assert_eq!(handle.stats().exporter("old").unwrap().exported, 6);
    handle.shutdown(T).unwrap();
}

/// The span names the recorder wrote to `file` in `dir`.
fn recorded_names(dir: &std::path::Path, file: &str) -> Vec<String> {
    lines(&dir.join(file))
        .into_iter()
        .filter_map(|l| l.get("typed").cloned())
        .flat_map(|t| t.as_array().unwrap().clone())
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_reload_swaps_a_processor_s_settings_in_place_and_its_counts_carry_on() {
    let dir = tempfile::tempdir().unwrap();
    let vendor = || ExporterSpec::Wasm(recorder_at(dir.path(), "vendor", "v.jsonl", "typed", &[]));
    let quiet = |names| processor("quiet", "filter", &[("names", names)], OnFault::Drop);
    let handle = install(vec![vendor()], vec![quiet("step")]);
    end_spans(&handle, 9);
    let report = handle
        .reload_exporters(&config(vec![vendor()], vec![quiet("data_loader")]))
        .unwrap();
    assert_eq!(report.reloaded.len(), 1, "{report:?}");
    assert_eq!(report.reloaded[0].exporter, "quiet");
    assert_eq!(report.kept, [(lens::Signal::Traces, "vendor".to_string())]);
    end_spans(&handle, 9);
    // The same entry again: kept, nothing swapped.
    let again = handle
        .reload_exporters(&config(vec![vendor()], vec![quiet("data_loader")]))
        .unwrap();
    assert!(
        !again.changed_anything() && again.reloaded.is_empty(),
        "{again:?}"
    );
    handle.shutdown(T).unwrap();
    let names = recorded_names(dir.path(), "v.jsonl");
    let (before, after) = names.split_at(6);
    assert!(before.iter().all(|n| n != "step"), "{before:?}");
    assert!(after.iter().all(|n| n != "data_loader"), "{after:?}");
    assert!(after.iter().any(|n| n == "step"), "{after:?}");
    let stats = handle.stats();
    let v = stats.exporter("vendor").unwrap();
    assert_eq!((v.received, v.exported, v.dropped_processor), (18, 12, 6));
    let quiet = stats.span_processor("quiet").unwrap();
    assert_eq!((quiet.received, quiet.reloads), (18, 1));
}

/// The span names of each batch the recorder wrote to `file` in `dir`, in order.
fn recorded_batches(dir: &std::path::Path, file: &str) -> Vec<Vec<String>> {
    lines(&dir.join(file))
        .into_iter()
        .filter_map(|l| l.get("typed").cloned())
        .map(|t| {
            t.as_array()
                .unwrap()
                .iter()
                .map(|s| s["name"].as_str().unwrap().to_string())
                .collect()
        })
        .collect()
}

#[test]
fn a_reload_adds_removes_reorders_and_re_aims_processors_under_load_each_batch_through_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let vendor = || ExporterSpec::Wasm(recorder_at(dir.path(), "vendor", "v.jsonl", "typed", &[]));
    let drop =
        |name: &str, names: &str| processor(name, "filter", &[("names", names)], OnFault::Drop);
    let exporters = || vec![vendor(), named_none("local")];
    let handle = install(exporters(), vec![drop("no-steps", "step")]);
    let tracer = handle.tracer("t");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let producer = {
        let (tracer, stop) = (tracer.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                tracer
                    .start(["gen_ai.chat", "step", "data_loader"][n as usize % 3])
                    .end();
                n += 1;
                if n.is_multiple_of(64) {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
            n
        })
    };
    let pause = || std::thread::sleep(std::time::Duration::from_millis(150));
    pause();
    // Added: a second filter after the first (every exporter).
    let added = vec![drop("no-steps", "step"), drop("no-loading", "data_loader")];
    let report = handle
        .reload_exporters(&config(exporters(), added))
        .unwrap();
    assert_eq!(report.processors, [lens::Signal::Traces], "{report:?}");
    assert_eq!(report.kept.len(), 2, "the exporters stay: {report:?}");
    pause();
    // Reordered, the first re-aimed at `local` only: the vendor now keeps its steps.
    let reordered = vec![
        drop("no-loading", "data_loader"),
        only_for(drop("no-steps", "step"), &["local"]),
    ];
    handle
        .reload_exporters(&config(exporters(), reordered))
        .unwrap();
    pause();
    // Removed: none left for the vendor but the loading filter; renamed for good measure.
    let renamed = vec![drop("loading-filter", "data_loader")];
    handle
        .reload_exporters(&config(exporters(), renamed))
        .unwrap();
    pause();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let produced = producer.join().unwrap();
    handle.shutdown(T).unwrap();

    let stats = handle.stats();
    let v = stats.exporter("vendor").unwrap();
    assert_eq!(v.received, produced, "{v:?}");
    assert_eq!(v.received, v.exported + v.dropped(), "{v:?}");
    assert_eq!(v.dropped(), v.dropped_processor, "{v:?}");
    let by: u64 = v.processors.values().map(|c| c.dropped).sum();
    assert_eq!(
        by, v.dropped_processor,
        "every drop is one processor's: {v:?}"
    );
    // Each batch went through one chain: steps and loading never both in a batch (no chain
    // kept both), and the vendor's batches show the first chain (no steps) before the last
    // ones (no loading), never after.
    let batches = recorded_batches(dir.path(), "v.jsonl");
    let recorded: usize = batches.iter().map(Vec::len).sum();
    assert_eq!(recorded as u64, v.exported);
    let phase = |b: &Vec<String>| {
        let steps = b.iter().any(|n| n == "step");
        let loading = b.iter().any(|n| n == "data_loader");
        assert!(!(steps && loading), "a batch through two chains: {b:?}");
        // A batch of chats only could be any chain's.
        match (steps, loading) {
            (false, true) => Some(0),
            (true, false) => Some(2),
            _ => None,
        }
    };
    let phases: Vec<u8> = batches.iter().filter_map(phase).collect();
    assert!(phases.windows(2).all(|w| w[0] <= w[1]), "{phases:?}");
    assert!(phases.contains(&0) && phases.contains(&2), "{phases:?}");
    // `local` lost its steps until the last reload, and its loading after the second.
    let local = stats.exporter("local").unwrap();
    assert_eq!(local.received, produced);
    assert_eq!(
        local.received,
        local.exported + local.dropped_processor,
        "{local:?}"
    );
    for name in ["no-steps", "no-loading", "loading-filter"] {
        let p = stats
            .span_processor(name)
            .unwrap_or_else(|| panic!("{name} listed"));
        assert!(p.received > 0, "{name}: {p:?}");
    }
}

#[test]
fn a_refused_reload_of_processors_leaves_the_running_chain() {
    let dir = tempfile::tempdir().unwrap();
    let vendor = || ExporterSpec::Wasm(recorder_at(dir.path(), "vendor", "v.jsonl", "typed", &[]));
    let p = || processor("drop-steps", "filter", &[("names", "step")], OnFault::Pass);
    let handle = install(vec![vendor()], vec![p()]);
    let mut broken = processor("more", "noop", &[], OnFault::Pass);
    let ProcessorSpec::Wasm(w) = &mut broken else {
        unreachable!()
    };
    w.component.path = dir.path().join("missing.wasm");
    let err = handle
        .reload_exporters(&config(vec![vendor()], vec![p(), broken]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("more") && err.contains("missing.wasm"),
        "{err}"
    );
    end_spans(&handle, 9);
    handle.shutdown(T).unwrap();
    let v = handle.stats().exporter("vendor").cloned().unwrap();
    assert_eq!(
        (v.received, v.exported, v.dropped_processor),
        (9, 6, 3),
        "{v:?}"
    );
    assert!(handle.stats().span_processor("more").is_none());
}

#[test]
fn the_health_metrics_count_each_processor_s_drops_per_exporter() {
    use lens::opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
    let reader = lens::InMemoryMetricReader::new();
    let drop_steps = processor("drop-steps", "filter", &[("names", "step")], OnFault::Pass);
    let config = LensConfig {
        metrics_enabled: true,
        ..config(vec![named_none("local")], vec![drop_steps])
    };
    let handle = Telemetry::builder(config)
        .env(HashMap::<String, String>::new())
        .install_global(false)
        .metric_reader(reader.clone())
        .install()
        .unwrap();
    end_spans(&handle, 30);
    let data = reader.get_metrics_data().unwrap();
    let points = |name: &str| {
        let AggregatedMetrics::U64(MetricData::Sum(sum)) =
            lens_test_support::pipeline::metric(&data, name)
        else {
            panic!("{name} is a u64 sum")
        };
        sum.data_points()
            .map(|p| {
                let mut attrs: Vec<String> = p
                    .attributes()
                    .map(|kv| format!("{}={}", kv.key, kv.value))
                    .collect();
                attrs.sort();
                (attrs.join(","), p.value())
            })
            .collect::<Vec<_>>()
    };
    let processed = points("lens.exporter.processed");
    assert!(
        processed.contains(&(
            "exporter=local,outcome=dropped,processor=drop-steps,signal=traces".into(),
            10
        )),
        "{processed:?}"
    );
    let spans = points("lens.exporter.spans");
    assert!(
        spans.contains(&(
            "exporter=local,outcome=dropped_processor,signal=traces".into(),
            10
        )),
        "{spans:?}"
    );
    handle.shutdown(T).unwrap();
}

#[test]
fn an_exporter_added_or_rebuilt_by_a_reload_gets_the_processors() {
    let p = || processor("drop-steps", "filter", &[("names", "step")], OnFault::Pass);
    let handle = install(vec![named_none("local")], vec![p()]);
    end_spans(&handle, 9);
    let mut rebuilt = config(vec![named_none("local"), named_none("new")], vec![p()]);
    rebuilt.batch.max_export_batch_size = 7;
    let report = handle.reload_exporters(&rebuilt).unwrap();
    assert_eq!(report.added.len(), 1, "{report:?}");
    assert_eq!(report.replaced.len(), 1, "{report:?}");
    end_spans(&handle, 9);
    handle.shutdown(T).unwrap();
    let stats = handle.stats();
    let count = |name: &str| {
        let e = stats.exporter(name).unwrap();
        (e.received, e.exported, e.dropped_processor)
    };
    assert_eq!(count("local"), (18, 12, 6));
    assert_eq!(count("new"), (9, 6, 3));
    let drop_steps = stats.span_processor("drop-steps").unwrap();
    assert_eq!(drop_steps.received, 27, "{drop_steps:?}");
}
