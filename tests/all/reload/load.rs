//! Reloading a span exporter while a producer ends spans at full speed.

use std::time::Duration;

use lens::config::ExporterSpec;
use lens::{LensError, ReloadStep};
use lens_test_support::pipeline::T;
use lens_test_support::wasm::{HOSTILE, RECORDER, spec};

use super::{
    Producer, install, recorded, recorder_variant, sha256, span_stats, traces_config, vendor,
};

/// A hostile entry named `vendor` in `mode`.
fn hostile(mode: &str) -> ExporterSpec {
    let mut s = spec(HOSTILE, &[("mode", mode)]);
    s.name = Some("vendor".into());
    s.init_timeout_ms = Some(300);
    ExporterSpec::Wasm(s)
}

#[test]
fn a_span_exporter_reloads_under_load_to_new_and_broken_components_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let variant = recorder_variant(out, "b");
    let config = |spec| traces_config(vec![ExporterSpec::Wasm(spec)]);
    let handle = install(config(vendor(out, RECORDER.as_ref(), "a.jsonl")));
    let producer = Producer::start(&handle);
    let pause = || std::thread::sleep(Duration::from_millis(300));
    pause();

    // To a new component.
    let report = handle
        .reload_exporters(&config(vendor(out, &variant, "b.jsonl")))
        .unwrap();
    assert_eq!(report.reloaded.len(), 1, "{report:?}");
    let swap = &report.reloaded[0];
    assert_eq!(swap.exporter, "vendor");
    assert_eq!(swap.previous_sha256, sha256(RECORDER.as_ref()));
    assert_eq!(swap.sha256, sha256(&variant));
    assert_eq!(swap.retire_error, None);
    pause();

    // To broken ones: each refused at its step, naming the file; the variant keeps exporting.
    let garbage = out.join("garbage.wasm");
    std::fs::write(&garbage, b"not a component").unwrap();
    let empty = out.join("empty.wasm");
    std::fs::write(&empty, wat::parse_str("(component)").unwrap()).unwrap();
    let file = |path: &std::path::Path| {
        let mut s = vendor(out, path, "never.jsonl");
        s.init_timeout_ms = Some(300);
        ExporterSpec::Wasm(s)
    };
    let looping = lens_test_guests::LOOPING_START.as_ref();
    let broken: Vec<(ExporterSpec, ReloadStep, String)> = vec![
        (hostile("trap-init"), ReloadStep::Start, HOSTILE.into()),
        (hostile("refuse-init"), ReloadStep::Init, HOSTILE.into()),
        (
            file(&garbage),
            ReloadStep::Load,
            garbage.display().to_string(),
        ),
        (
            file(&empty),
            ReloadStep::Interface,
            empty.display().to_string(),
        ),
        (
            file(looping),
            ReloadStep::Start,
            looping.display().to_string(),
        ),
    ];
    let before = span_stats(&handle, "vendor").exported;
    for (entry, step, path) in broken {
        let error = handle
            .reload_exporters(&traces_config(vec![entry]))
            .unwrap_err();
        let message = error.to_string();
        match &error {
            LensError::Reload { step: got, .. } => assert_eq!(*got, step, "{message}"),
            other => panic!("not a refused reload: {other}"),
        }
        assert!(
            message.starts_with(&format!(
                "reload of wasm exporter `vendor` refused at {step} ({path}): "
            )) && message.ends_with("; the running component stays"),
            "{message}"
        );
    }
    let stats = span_stats(&handle, "vendor");
    assert!(
        stats.exported > before,
        "the variant kept exporting: {stats:?}"
    );
    assert_eq!(stats.reloads, 1);
    assert_eq!(stats.component_sha256, Some(sha256(&variant)));
    assert!(!out.join("never.jsonl").exists());
    pause();

    // And back.
    let report = handle
        .reload_exporters(&config(vendor(out, RECORDER.as_ref(), "c.jsonl")))
        .unwrap();
    assert_eq!(report.reloaded[0].sha256, sha256(RECORDER.as_ref()));
    pause();
    let produced = producer.stop();
    handle.shutdown(T).unwrap();

    let stats = span_stats(&handle, "vendor");
    assert_eq!(stats.received, produced, "{stats:?}");
    assert_eq!(
        stats.received,
        stats.exported + stats.dropped(),
        "{stats:?}"
    );
    assert_eq!(stats.dropped_export_failed + stats.dropped_shutdown, 0);
    assert_eq!(stats.reloads, 2);
    assert_eq!(stats.component_sha256, Some(sha256(RECORDER.as_ref())));
    let [a, b, c] = ["a", "b", "c"].map(|n| recorded(&out.join(format!("{n}.jsonl"))));
    for (part, r) in [("a", &a), ("b", &b), ("c", &c)] {
        assert!(!r.spans.is_empty(), "{part} exported nothing");
        assert!(r.spans.windows(2).all(|w| w[0] < w[1]), "{part} in order");
        // Each instance was initialised first and shut down last; a replaced one flushed
        // before its shutdown.
        assert_eq!(r.events["init"], vec![0], "{part}");
        assert_eq!(r.events["shutdown"], vec![r.lines - 1], "{part}");
        let flushed = r.events.get("force_flush").cloned().unwrap_or_default();
        let expected = if part == "c" {
            vec![]
        } else {
            vec![r.lines - 2]
        };
        assert_eq!(flushed, expected, "{part}");
    }
    // The output splits exactly at each switch: no span twice, none lost but the counted.
    assert!(a.spans.last() < b.spans.first() && b.spans.last() < c.spans.first());
    let exported = (a.spans.len() + b.spans.len() + c.spans.len()) as u64;
    assert_eq!(exported, stats.exported);
    assert_eq!(
        exported + stats.dropped_queue_full,
        produced,
        "every span exported once or counted as dropped"
    );
}

#[test]
fn a_reload_of_a_standalone_exporter_swaps_between_batches() {
    use lens::opentelemetry_sdk::Resource;
    use lens::wasm::WasmSpanExporter;
    use lens_test_support::wasm::spans;

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let first = vendor(out, RECORDER.as_ref(), "one.jsonl");
    let empty = Resource::builder_empty().build();
    let (exporter, stats) = WasmSpanExporter::from_config("vendor", &first, &empty).unwrap();
    let export = |names: &[&'static str]| {
        futures_executor::block_on(lens::opentelemetry_sdk::trace::SpanExporter::export(
            &exporter,
            spans(names),
        ))
        .unwrap()
    };
    export(&["s0", "s1"]);
    let variant = recorder_variant(out, "two");
    let reloaded = exporter
        .reload(&vendor(out, &variant, "two.jsonl"))
        .unwrap();
    assert_eq!(reloaded.sha256, sha256(&variant));
    export(&["s2"]);
    // Another batch size is a queue setting: refused, the running component stays.
    let mut resized = vendor(out, RECORDER.as_ref(), "three.jsonl");
    resized.batch.max_export_batch_size = Some(7);
    let error = exporter.reload(&resized).unwrap_err().to_string();
    assert_eq!(
        error,
        "reload refused for exporter `vendor`: its `batch` settings differ from the running \
         entry's; they size the exporter's queue, fixed when it was built (from a telemetry \
         handle, a reload rebuilds the span or log entry's processor for them); nothing was \
         changed"
    );
    export(&["s3"]);
    lens::opentelemetry_sdk::trace::SpanExporter::shutdown(&exporter).unwrap();
    assert_eq!(recorded(&out.join("one.jsonl")).spans, vec![0, 1]);
    assert_eq!(recorded(&out.join("two.jsonl")).spans, vec![2, 3]);
    let s = stats.snapshot();
    assert_eq!((s.reloads, s.component_sha256), (1, Some(sha256(&variant))));
    assert!(!out.join("three.jsonl").exists());
}

#[test]
fn a_reload_under_load_with_two_instances_loses_and_repeats_nothing() {
    // Two batches export side by side: the switch cannot split the output in order, but every
    // span is still exported once or counted as dropped.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let variant = recorder_variant(out, "lanes");
    let config = |spec: lens::config::WasmExporterSpec| {
        let mut c = traces_config(vec![ExporterSpec::Wasm(spec)]);
        c.batch.max_concurrent_exports = 2;
        c
    };
    // A file per instance (`{lens.instance}`): two writers would interleave in one.
    let handle = install(config(vendor(
        out,
        RECORDER.as_ref(),
        "a-{lens.instance}.jsonl",
    )));
    let producer = Producer::start(&handle);
    std::thread::sleep(Duration::from_millis(300));
    handle
        .reload_exporters(&config(vendor(out, &variant, "b-{lens.instance}.jsonl")))
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let produced = producer.stop();
    handle.shutdown(T).unwrap();
    let stats = span_stats(&handle, "vendor");
    assert_eq!(stats.received, produced);
    assert_eq!(
        stats.received,
        stats.exported + stats.dropped(),
        "{stats:?}"
    );
    let mut all: Vec<u64> = ["a-0", "a-1", "b-0", "b-1"]
        .iter()
        .flat_map(|n| recorded(&out.join(format!("{n}.jsonl"))).spans)
        .collect();
    assert_eq!(all.len() as u64, stats.exported);
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len() as u64, stats.exported, "no span exported twice");
}
