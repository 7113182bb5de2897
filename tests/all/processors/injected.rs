//! The config's processors apply to exporters injected in code (`span_exporter`,
//! `log_exporter`): a redaction processor configured for a rank sees what every exporter of it
//! sends. A processor naming only the config's exporters (which the injected ones replace)
//! applies to none and says so; a metric reader injected in code is said to be unprocessed.

use std::collections::HashMap;

use lens::config::{ExporterSpec, NoneExporterSpec, OnFault, ProcessorSpec, SignalConfig};
use lens::opentelemetry::trace::{Span as _, Tracer as _};
use lens::opentelemetry_sdk::logs::InMemoryLogExporter;
use lens::opentelemetry_sdk::trace::InMemorySpanExporter;
use lens::{LensConfig, Telemetry};
use lens_test_support::log::capture_log;
use lens_test_support::pipeline::{T, exporting};

use super::processor;

fn named_none(name: &str) -> ExporterSpec {
    ExporterSpec::None(NoneExporterSpec {
        name: Some(name.into()),
    })
}

fn only_for(mut spec: ProcessorSpec, exporter: &str) -> ProcessorSpec {
    let ProcessorSpec::Wasm(w) = &mut spec else {
        unreachable!()
    };
    w.exporters = vec![exporter.into()];
    spec
}

#[test]
fn span_and_log_processors_apply_to_exporters_injected_in_code() {
    let capture = capture_log();
    let config = LensConfig {
        run_id: "injected".into(),
        metrics_enabled: false,
        logs_enabled: true,
        traces: SignalConfig {
            // Replaced by the injected exporter; the processor naming it applies to none.
            exporters: vec![named_none("vendor")],
            processors: vec![
                processor(
                    "redact",
                    "redact",
                    &[("keys", "gen_ai.prompt")],
                    OnFault::Drop,
                ),
                only_for(
                    processor("vendor-only", "filter", &[("names", "step")], OnFault::Pass),
                    "vendor",
                ),
            ],
        },
        logs: SignalConfig {
            exporters: vec![named_none("vendor")],
            processors: vec![processor(
                "quiet",
                "filter",
                &[("names", "DEBUG")],
                OnFault::Pass,
            )],
        },
        ..exporting()
    };
    let spans = InMemorySpanExporter::default();
    let logs = InMemoryLogExporter::default();
    let handle = Telemetry::builder(config)
        .env(HashMap::<String, String>::new())
        .install_global(false)
        .named_span_exporter("memory", spans.clone())
        .named_log_exporter("memory", logs.clone())
        .install()
        .unwrap();
    let tracer = handle.tracer("t");
    for i in 0..12 {
        let mut s = tracer.start(if i % 2 == 0 { "gen_ai.chat" } else { "step" });
        s.set_attribute(lens::opentelemetry::KeyValue::new(
            "gen_ai.prompt",
            "secret",
        ));
        s.end();
    }
    super::log_every_third_debug(&handle, 9);
    handle.force_flush(T).unwrap();

    // Every span reached the injected exporter redacted; `step` spans were kept (the filter
    // names only `vendor`).
    let exported = spans.get_finished_spans().unwrap();
    assert_eq!(exported.len(), 12);
    for s in &exported {
        let prompt = s
            .attributes
            .iter()
            .find(|kv| kv.key.as_str() == "gen_ai.prompt");
        assert_ne!(
            prompt.map(|kv| kv.value.as_str().to_string()),
            Some("secret".to_string()),
            "{}: not redacted",
            s.name
        );
    }
    let stats = handle.stats();
    let memory = stats.exporter("memory").unwrap();
    assert_eq!((memory.received, memory.exported), (12, 12));
    assert!(memory.processors.contains_key("redact"));
    assert!(!memory.processors.contains_key("vendor-only"));
    assert_eq!(stats.span_processor("redact").unwrap().received, 12);
    // The log filter applies to every exporter: the DEBUG records are dropped and counted.
    assert_eq!(logs.get_emitted_logs().unwrap().len(), 6);
    let memory_logs = stats.log_exporter("memory").unwrap();
    assert_eq!(
        (
            memory_logs.received,
            memory_logs.exported,
            memory_logs.dropped_processor
        ),
        (9, 6, 3)
    );
    let warned = capture.matching("vendor-only");
    assert!(
        warned.iter().any(|l| l.contains(
            "[[traces.processors]] `vendor-only` applies to [\"vendor\"], which the traces \
             exporters injected in code (memory) replace: it runs for none of them"
        )),
        "{warned:?}"
    );
    handle.shutdown(T).unwrap();
}
