//! A processor that traps, hangs, errs or answers what the host refuses: the batch passes on
//! unprocessed (`on_fault = "pass"`) or is dropped (`"drop"`), counted either way, and the
//! next batch gets a fresh instance.

use lens::config::OnFault;
use lens::opentelemetry_sdk::Resource;
use lens::wasm::WasmProcessor;

use super::{gen_ai_spans, processor};

fn build(mode: &str, extra: &[(&str, &str)], on_fault: OnFault) -> WasmProcessor {
    let spec = processor(mode, mode, extra, on_fault);
    WasmProcessor::from_config(mode, &spec, &Resource::builder_empty().build())
        .unwrap()
        .0
}

#[test]
fn every_fault_passes_the_batch_on_or_drops_it_as_configured() {
    let faults = [
        ("trap", vec![]),
        ("hang", vec![]),
        ("error", vec![]),
        ("out-of-range", vec![]),
        ("duplicate", vec![]),
        ("set-body", vec![]),
    ];
    for (mode, extra) in faults {
        for on_fault in [OnFault::Pass, OnFault::Drop] {
            let p = build(mode, &extra, on_fault);
            let batch = gen_ai_spans(9);
            let (out, counts) = p.process_spans(batch.clone());
            let stats = p.stats().snapshot();
            assert_eq!(counts.faults, 9, "{mode}");
            assert_eq!(stats.processor_faults, 9, "{mode}");
            match on_fault {
                OnFault::Pass => {
                    assert_eq!(out, batch, "{mode}: passed on unprocessed");
                    assert_eq!(counts.dropped, 0);
                    assert_eq!(stats.exported, 9);
                }
                _ => {
                    assert!(out.is_empty(), "{mode}: dropped");
                    assert_eq!(counts.dropped, 9);
                    assert_eq!(stats.dropped_processor, 9);
                }
            }
            assert_eq!(stats.received, stats.exported + stats.dropped(), "{mode}");
            let guest_said = stats.guest_errors == 1;
            let trapped = stats.traps.values().sum::<u64>() == 1;
            assert!(guest_said ^ trapped, "{mode}: {stats:?}");
        }
    }
}

#[test]
fn a_fresh_instance_takes_the_batch_after_a_trap() {
    let p = build("trap", &[("trap_every", "2")], OnFault::Drop);
    let mut fates = Vec::new();
    for _ in 0..3 {
        let (out, counts) = p.process_spans(gen_ai_spans(3));
        fates.push((out.len(), counts.dropped, counts.faults));
    }
    // Call 2 traps; call 3 is the first of a new instance.
    assert_eq!(fates, [(3, 0, 0), (0, 3, 3), (3, 0, 0)]);
    assert_eq!(p.stats().snapshot().restarts, 1);
}
