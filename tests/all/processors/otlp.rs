//! The use the processors are for: prompts stripped, and noise dropped, before spans leave the
//! node for a real OTLP collector (rotel, on 127.0.0.1), with the example processors.

use std::time::Duration;

use lens::config::{
    ExporterSpec, OnFault, OtlpProtocol, ProcessorSpec, SignalConfig, WasmExporterSpec,
    WasmProcessorSpec,
};
use lens::opentelemetry::KeyValue;
use lens::opentelemetry::trace::{Span as _, Tracer as _};
use lens::{LensConfig, Telemetry};
use lens_test_support::collector::Collector;
use lens_test_support::dist;
use lens_test_support::pipeline::{LocalInstall, exporting, otlp_spec};

const T: Duration = Duration::from_secs(20);

fn example(file: &str, settings: &[(&str, &str)], on_fault: OnFault) -> ProcessorSpec {
    ProcessorSpec::Wasm(WasmProcessorSpec {
        component: WasmExporterSpec {
            path: dist(file),
            settings: settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        },
        on_fault,
        ..Default::default()
    })
}

#[test]
fn no_prompt_and_no_filtered_span_reaches_a_real_collector() {
    let collector = Collector::start();
    let protocol = OtlpProtocol::HttpProtobuf;
    let endpoint = collector.endpoint(protocol, lens::Signal::Traces);
    let config = LensConfig {
        service_name: "processors-e2e".into(),
        metrics_enabled: false,
        traces: SignalConfig {
            exporters: vec![ExporterSpec::Otlp(otlp_spec(protocol, endpoint))],
            processors: vec![
                example(
                    "rust-filter.wasm",
                    &[("names", "data_loader")],
                    OnFault::Pass,
                ),
                example("rust-redact.wasm", &[], OnFault::Drop),
            ],
        },
        ..exporting()
    };
    let handle = Telemetry::builder(config).local();
    let tracer = handle.tracer("trainer");
    let mut chat = tracer.start("gen_ai.chat");
    chat.set_attribute(KeyValue::new("gen_ai.prompt", "TOP SECRET PROMPT"));
    chat.set_attribute(KeyValue::new("gen_ai.completion", "TOP SECRET ANSWER"));
    chat.set_attribute(KeyValue::new("gen_ai.request.model", "lens-7b"));
    chat.end();
    tracer.start("data_loader").end();
    tracer.start("step").end();
    handle.force_flush(T).unwrap();
    let out = collector.wait_for("the chat and the step", |o| {
        let names = Collector::span_names(o);
        names.contains(&"gen_ai.chat".to_string()) && names.contains(&"step".to_string())
    });
    assert!(!out.contains("TOP SECRET"), "{out}");
    assert!(
        !Collector::span_names(&out).contains(&"data_loader".to_string()),
        "{out}"
    );
    assert!(out.contains("lens.redacted: Bool(true)"), "{out}");
    assert!(out.contains("gen_ai.request.model: Str(lens-7b)"), "{out}");
    handle.shutdown(T).unwrap();
    let stats = handle.stats();
    let e = &stats.exporters[0];
    assert_eq!(
        (e.received, e.exported, e.dropped_processor),
        (3, 2, 1),
        "{e:?}"
    );
    assert_eq!(e.processors["rust-filter"].dropped, 1);
}
