//! A processor's edits, applied by the host, against native reference processors on the same
//! spans: redaction, a filter by name, renames and status, a no-op in every encoding, and two
//! processors in a row.

use lens::config::OnFault;
use lens::opentelemetry::KeyValue;
use lens::opentelemetry::trace::Status;
use lens::opentelemetry_sdk::Resource;
use lens::testing::spans;
use lens::wasm::WasmProcessor;

use super::{attribute, filter, gen_ai_spans, processor, redact, set};

fn build(name: &str, mode: &str, extra: &[(&str, &str)]) -> WasmProcessor {
    let spec = processor(name, mode, extra, OnFault::Pass);
    WasmProcessor::from_config(name, &spec, &Resource::builder_empty().build())
        .unwrap()
        .0
}

const KEYS: &[&str] = &["gen_ai.prompt", "gen_ai.completion"];

#[test]
fn redaction_matches_the_native_reference() {
    let p = build(
        "redact",
        "redact",
        &[("keys", "gen_ai.prompt,gen_ai.completion")],
    );
    let batch = gen_ai_spans(30);
    let (out, counts) = p.process_spans(batch.clone());
    assert_eq!(out, redact(batch, KEYS));
    assert_eq!((counts.dropped, counts.faults), (0, 0));
    let chats: Vec<_> = out.iter().filter(|s| s.name == "gen_ai.chat").collect();
    assert_eq!(chats.len(), 10);
    for s in chats {
        assert_eq!(attribute(s, "gen_ai.prompt"), None);
        assert_eq!(attribute(s, "lens.redacted"), Some(true.into()));
        assert_eq!(attribute(s, "gen_ai.request.model"), Some("llama".into()));
    }
    let stats = p.stats().snapshot();
    assert_eq!((stats.received, stats.exported), (30, 30));
}

#[test]
fn a_filter_by_name_matches_the_native_reference_and_counts_its_drops() {
    let p = build("filter", "filter", &[("names", "data_loader,step")]);
    let batch = gen_ai_spans(31);
    let (out, counts) = p.process_spans(batch.clone());
    assert_eq!(out, filter(batch, &["data_loader", "step"]));
    assert_eq!(out.len(), 11);
    assert_eq!((counts.dropped, counts.faults), (20, 0));
    let stats = p.stats().snapshot();
    assert_eq!(
        (stats.received, stats.exported, stats.dropped_processor),
        (31, 11, 20)
    );
}

#[test]
fn renames_attributes_and_status_land_on_the_spans_named() {
    let p = build("rewrite", "rewrite", &[]);
    let batch = spans::events_links_status();
    let mut expected = batch.clone();
    for (i, s) in expected.iter_mut().enumerate() {
        s.name = format!("{}.x", s.name).into();
        set(s, KeyValue::new("index", i as i64));
        if i % 2 == 1 {
            s.status = Status::error("odd");
        }
    }
    let (out, _) = p.process_spans(batch);
    // Ids, times, events and links are the host's own: untouched.
    assert_eq!(out, expected);
}

#[test]
fn a_no_op_passes_every_batch_unchanged_in_every_encoding() {
    for encoding in ["typed", "otlp-protobuf", "otlp-json"] {
        let p = build("noop", "noop", &[("encoding", encoding)]);
        for batch in [
            spans::one(),
            spans::every_value_type(),
            spans::unicode(),
            spans::events_links_status(),
            spans::many(1000),
        ] {
            let (out, counts) = p.process_spans(batch.clone());
            assert_eq!(out, batch, "{encoding}");
            assert_eq!((counts.dropped, counts.faults), (0, 0));
        }
    }
}

#[test]
fn two_processors_apply_in_order() {
    let filter_first = build("filter", "filter", &[("names", "step")]);
    let then_redact = build("redact", "redact", &[("keys", "gen_ai.prompt")]);
    let batch = gen_ai_spans(12);
    let (out, _) = filter_first.process_spans(batch.clone());
    let (out, _) = then_redact.process_spans(out);
    assert_eq!(out, redact(filter(batch, &["step"]), &["gen_ai.prompt"]));
    assert_eq!(out.len(), 8);
}

#[test]
fn the_example_redaction_processors_match_the_native_reference_in_rust_and_python() {
    use lens::config::{ProcessorSpec, WasmExporterSpec, WasmProcessorSpec};
    for example in ["rust-redact.wasm", "python-redact.wasm"] {
        let spec = ProcessorSpec::Wasm(WasmProcessorSpec {
            component: WasmExporterSpec {
                path: lens_test_support::dist(example),
                ..Default::default()
            },
            on_fault: OnFault::Drop,
            ..Default::default()
        });
        let resource = Resource::builder_empty().build();
        let (p, _) = WasmProcessor::from_config(example, &spec, &resource).unwrap();
        let batch = gen_ai_spans(60);
        let (out, counts) = p.process_spans(batch.clone());
        assert_eq!(counts.faults, 0, "{example}");
        assert_eq!(out, redact(batch, KEYS), "{example}");
    }
}

#[test]
fn the_example_filters_match_the_native_reference_in_rust_and_javascript() {
    use lens::config::{ProcessorSpec, WasmExporterSpec, WasmProcessorSpec};
    for example in ["rust-filter.wasm", "js-filter.wasm"] {
        let spec = ProcessorSpec::Wasm(WasmProcessorSpec {
            component: WasmExporterSpec {
                path: lens_test_support::dist(example),
                settings: [("names".to_string(), "data_loader, step".to_string())].into(),
                ..Default::default()
            },
            ..Default::default()
        });
        let resource = Resource::builder_empty().build();
        let (p, _) = WasmProcessor::from_config(example, &spec, &resource).unwrap();
        let batch = gen_ai_spans(60);
        let (out, counts) = p.process_spans(batch.clone());
        assert_eq!((counts.dropped, counts.faults), (40, 0), "{example}");
        assert_eq!(out, filter(batch, &["data_loader", "step"]), "{example}");
    }
}
