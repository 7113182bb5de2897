//! Every byte a guest hands the host counts against its entry's limits: a processor's answer
//! (aliased buffers in every list- and string-typed field, one huge value), an exporter's
//! error, a host call's arguments (one huge write to stdout), host resources created in a
//! loop. Each is a fault of that component (`answer limit`), its batch meets `on_fault`, the
//! counts balance, and the rank's peak memory stays under its entries' stated worst case.

use lens::FaultKind;
use lens::config::OnFault;
use lens::opentelemetry_sdk::Resource;
use lens::trace::ExporterStats;
use lens::wasm::{WasmProcessor, WasmSpanExporter};
use lens_test_support::hostile::peak_rss;
use lens_test_support::wasm::{HOSTILE, export, spec};

use crate::processors::{gen_ai_spans, processor};

fn build(mode: &str, extra: &[(&str, &str)], answer_mib: Option<u64>) -> WasmProcessor {
    let mut spec = processor(mode, mode, extra, OnFault::Pass);
    let lens::config::ProcessorSpec::Wasm(w) = &mut spec else {
        unreachable!()
    };
    w.component.memory_limit_mib = Some(64);
    w.component.call_timeout_ms = Some(10_000);
    w.component.max_answer_mib = answer_mib;
    WasmProcessor::from_config(mode, &spec, &Resource::builder_empty().build())
        .unwrap()
        .0
}

/// Faults of `p` by kind so far.
fn faults(p: &WasmProcessor) -> Vec<(FaultKind, u64)> {
    p.stats().snapshot().traps.into_iter().collect()
}

#[test]
fn an_aliased_answer_is_refused_at_the_answer_limit_in_every_field() {
    for field in ["string", "bytes", "key", "rename", "remove", "string-array"] {
        // 40 references to one 16 MiB buffer: 640 MiB to lift (1.3 GiB for the arrays).
        let p = build("aliased", &[("field", field)], None);
        let batch = gen_ai_spans(8);
        let (out, counts) = p.process_spans(batch.clone());
        assert_eq!(
            out, batch,
            "{field}: passed on unprocessed (on_fault = pass)"
        );
        assert_eq!(counts.faults, 8, "{field}");
        assert_eq!(faults(&p), [(FaultKind::AnswerLimit, 1)], "{field}");
        let s = p.stats().snapshot();
        assert_eq!(s.received, s.exported + s.dropped(), "{field}: {s:?}");
    }
}

#[test]
fn an_answer_within_the_limit_is_accepted_and_one_past_it_refused() {
    // One string value: the lift counts its bytes and the answer's records (well under 64 KiB).
    let within = build(
        "huge",
        &[("huge_bytes", &((4 << 20) - (64 << 10)).to_string())],
        Some(4),
    );
    let (out, counts) = within.process_spans(gen_ai_spans(3));
    assert_eq!(counts.faults, 0, "{:?}", faults(&within));
    let huge = out[0]
        .attributes
        .iter()
        .find(|a| a.key.as_str() == "huge")
        .unwrap();
    assert_eq!(huge.value.as_str().len(), (4 << 20) - (64 << 10));

    let past = build(
        "huge",
        &[("huge_bytes", &((4 << 20) + 1).to_string())],
        Some(4),
    );
    let (_, counts) = past.process_spans(gen_ai_spans(3));
    assert_eq!(counts.faults, 3);
    assert_eq!(faults(&past), [(FaultKind::AnswerLimit, 1)]);
}

fn hostile(
    mode: &str,
    extra: &[(&str, &str)],
    answer_mib: u64,
) -> (WasmSpanExporter, std::sync::Arc<ExporterStats>) {
    let mut settings = vec![("mode", mode)];
    settings.extend_from_slice(extra);
    let mut s = spec(HOSTILE, &settings);
    s.memory_limit_mib = Some(64);
    s.max_answer_mib = Some(answer_mib);
    s.call_timeout_ms = Some(10_000);
    WasmSpanExporter::from_config(mode, &s, &Resource::builder_empty().build()).unwrap()
}

#[test]
fn an_exporter_error_over_the_limit_is_a_fault_and_one_under_it_an_error() {
    // `huge-error` returns a 10 MiB error string.
    let (under, under_stats) = hostile("huge-error", &[], 16);
    let err = export(&under, &["a"]).unwrap_err();
    assert!(err.contains("more bytes]"), "{err}");
    assert!(under_stats.snapshot().traps.is_empty());

    let (over, over_stats) = hostile("huge-error", &[], 4);
    let err = export(&over, &["a"]).unwrap_err();
    assert!(err.contains("more than max_answer_mib (4 MiB)"), "{err}");
    assert_eq!(
        over_stats.snapshot().traps.into_iter().collect::<Vec<_>>(),
        [(FaultKind::AnswerLimit, 1)]
    );
}

#[test]
fn one_host_call_over_the_limit_is_a_fault() {
    // A single 32 MiB write to stdout: the host call's argument is refused before it is copied.
    let (e, _) = hostile("huge-write", &[("mib", "32")], 16);
    let err = export(&e, &["a"]).unwrap_err();
    assert!(err.contains("more than max_answer_mib (16 MiB)"), "{err}");
    let (fine, _) = hostile("huge-write", &[("mib", "1")], 16);
    let err = export(&fine, &["a"]).unwrap_err();
    assert!(err.contains("probe huge-write"), "{err}");
}

#[test]
fn a_guest_creating_resources_in_a_loop_is_stopped() {
    let (e, stats) = hostile("resource-loop", &[], 16);
    let err = export(&e, &["a"]).unwrap_err();
    let traps = stats.snapshot().traps;
    assert_eq!(traps.values().sum::<u64>(), 1, "{err}: {traps:?}");
    assert!(!err.contains("probe resource-loop"), "not stopped: {err}");
}

#[test]
fn sixteen_lanes_of_aliased_answers_stay_under_the_stated_worst_case() {
    lens_test_support::isolated(|| {
        const LANES: usize = 16;
        // Each lane: a 32 MiB memory (the guest holds a 16 MiB buffer in it) and a 16 MiB
        // answer limit; 40 aliases of the buffer ask the host to lift 640 MiB each time.
        let processors: Vec<WasmProcessor> = (0..LANES)
            .map(|i| {
                let mut spec = processor(&format!("alias-{i}"), "aliased", &[], OnFault::Pass);
                let lens::config::ProcessorSpec::Wasm(w) = &mut spec else {
                    unreachable!()
                };
                w.component.memory_limit_mib = Some(32);
                w.component.call_timeout_ms = Some(20_000);
                WasmProcessor::from_config("alias", &spec, &Resource::builder_empty().build())
                    .unwrap()
                    .0
            })
            .collect();
        let before = peak_rss();
        std::thread::scope(|s| {
            for p in &processors {
                s.spawn(move || {
                    for _ in 0..3 {
                        let (_, counts) = p.process_spans(gen_ai_spans(64));
                        assert_eq!(counts.faults, 64);
                    }
                });
            }
        });
        let worst = (LANES as u64) * ((32 + 16) << 20);
        // The test binary, wasmtime's engine and the compiled guests, before any lane ran.
        let allowance = before + (64 << 20);
        let peak = peak_rss();
        eprintln!(
            "peak RSS {} MiB (before the lanes ran: {} MiB; stated worst case {} MiB)",
            peak >> 20,
            before >> 20,
            worst >> 20
        );
        assert!(
            peak <= worst + allowance,
            "peak RSS {} MiB over {} MiB",
            peak >> 20,
            (worst + allowance) >> 20
        );
        for p in &processors {
            let s = p.stats().snapshot();
            assert_eq!(s.received, s.exported + s.dropped(), "{s:?}");
            // Every span met the fault (the lane backs off after two in a row, failing the
            // third batch fast); only answer-limit faults.
            assert_eq!(s.processor_faults, s.received, "{s:?}");
            assert!(
                s.traps.keys().all(|k| *k == FaultKind::AnswerLimit),
                "{s:?}"
            );
            assert!(s.traps.get(&FaultKind::AnswerLimit) >= Some(&1), "{s:?}");
        }
    });
}
