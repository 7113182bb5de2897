//! Sandboxed processors (`[[traces.processors]]`, metrics, logs; `lens:exporter@0.4.0`): their edits
//! against native reference processors, their place in the pipeline (the exporters they apply
//! to, their order, the accounting), and their faults.

mod check;
mod demo;
mod edits;
mod faults;
mod injected;
mod logs;
mod metrics;
mod otlp;
mod pipeline;

use lens::config::{OnFault, ProcessorSpec, WasmExporterSpec, WasmProcessorSpec};
use lens::opentelemetry::{Key, KeyValue, Value};
use lens::opentelemetry_sdk::trace::SpanData;
use lens_test_guests::PROCESSOR;
use lens_test_support::wasm::spec;

/// The test processor guest named `name` in `mode` with `extra` settings, failing as
/// `on_fault` says.
pub(super) fn processor(
    name: &str,
    mode: &str,
    extra: &[(&str, &str)],
    on_fault: OnFault,
) -> ProcessorSpec {
    let mut settings = vec![("mode", mode)];
    settings.extend_from_slice(extra);
    let component = WasmExporterSpec {
        name: Some(name.into()),
        call_timeout_ms: Some(300),
        memory_limit_mib: Some(32),
        ..spec(PROCESSOR, &settings)
    };
    ProcessorSpec::Wasm(WasmProcessorSpec {
        component,
        on_fault,
        ..Default::default()
    })
}

/// The native reference of `mode = "redact"`: the `keys` removed from every span holding
/// one, which gets `lens.redacted = true`.
pub(super) fn redact(mut spans: Vec<SpanData>, keys: &[&str]) -> Vec<SpanData> {
    for s in &mut spans {
        if s.attributes.iter().any(|a| keys.contains(&a.key.as_str())) {
            s.attributes.retain(|a| !keys.contains(&a.key.as_str()));
            set(s, KeyValue::new("lens.redacted", true));
        }
    }
    spans
}

/// The native reference of `mode = "filter"`: the spans named in `names` dropped.
pub(super) fn filter(mut spans: Vec<SpanData>, names: &[&str]) -> Vec<SpanData> {
    spans.retain(|s| !names.contains(&s.name.as_ref()));
    spans
}

/// Sets an attribute as the host applies `set-attribute`: in place, else appended.
pub(super) fn set(span: &mut SpanData, kv: KeyValue) {
    match span.attributes.iter_mut().find(|a| a.key == kv.key) {
        Some(a) => a.value = kv.value,
        None => span.attributes.push(kv),
    }
}

/// A `gen_ai` training batch: `n` spans, every third a `gen_ai.chat` holding a prompt and a
/// completion, the others steps and data loading.
pub(super) fn gen_ai_spans(n: usize) -> Vec<SpanData> {
    lens::testing::record_spans(|t| {
        use lens::opentelemetry::trace::{Span as _, Tracer as _};
        for i in 0..n {
            let name = ["gen_ai.chat", "step", "data_loader"][i % 3];
            let mut s = t.start(name);
            s.set_attribute(KeyValue::new("step", i as i64));
            if name == "gen_ai.chat" {
                s.set_attribute(KeyValue::new("gen_ai.prompt", format!("secret prompt {i}")));
                s.set_attribute(KeyValue::new("gen_ai.completion", "secret answer"));
                s.set_attribute(KeyValue::new("gen_ai.request.model", "llama"));
            }
            s.end();
        }
    })
}

/// The value of `key` on `span`.
pub(super) fn attribute(span: &SpanData, key: &str) -> Option<Value> {
    let key = Key::from(key.to_string());
    span.attributes
        .iter()
        .find(|a| a.key == key)
        .map(|a| a.value.clone())
}

/// Logs `n` records through `handle`'s bridge (target `train`), every third at `DEBUG`, the
/// rest at `INFO`.
pub(super) fn log_every_third_debug(handle: &lens::TelemetryHandle, n: usize) {
    let bridge = handle.log_bridge(log::LevelFilter::Trace, "train");
    for i in 0..n {
        let level = if i % 3 == 0 {
            log::Level::Debug
        } else {
            log::Level::Info
        };
        log::Log::log(
            &bridge,
            &log::Record::builder()
                .level(level)
                .target("train")
                .args(format_args!("record {i}"))
                .build(),
        );
    }
}
