//! Section `processors` (run alone with `--only processors`): what a sandboxed span processor
//! costs per span on the export side, against a native Rust processor doing the same work on
//! the same batches in the same run, and the application thread's cost with and without one.

use std::time::Instant;

use lens::config::{
    ExporterSpec, NoneExporterSpec, OnFault, ProcessorSpec, WasmExporterSpec, WasmProcessorSpec,
};
use lens::opentelemetry::trace::{Span as _, Tracer};
use lens::opentelemetry::{Key, KeyValue};
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::trace::SpanData;
use lens::wasm::WasmProcessor;

use crate::{Opts, Row, lens_rank, ns_per_span, one_span, wasm_config};

const GROUP: &str = "Span processors: export-side cost per span of a 512-span batch (ns)";
const APP: &str = "Span processors: application thread, ns per span";
const KEYS: [&str; 2] = ["gen_ai.prompt", "gen_ai.completion"];

/// The test processor in `mode` with `extra` settings, failing closed.
pub(crate) fn spec(mode: &str, extra: &[(&str, &str)]) -> ProcessorSpec {
    let mut settings: Vec<(String, String)> = vec![("mode".into(), mode.into())];
    settings.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    ProcessorSpec::Wasm(WasmProcessorSpec {
        component: WasmExporterSpec {
            name: Some(mode.into()),
            path: lens_test_guests::PROCESSOR.into(),
            settings: settings.into_iter().collect(),
            call_timeout_ms: Some(60_000),
            ..Default::default()
        },
        on_fault: OnFault::Drop,
        ..Default::default()
    })
}

/// 512 spans: every third a `gen_ai.chat` with a prompt and a completion.
fn batch() -> Vec<SpanData> {
    lens::testing::record_spans(|t| {
        for i in 0..512 {
            let chat = i % 3 == 0;
            let mut s = t.start(if chat { "gen_ai.chat" } else { "step" });
            s.set_attribute(KeyValue::new("step", i as i64));
            if chat {
                s.set_attribute(KeyValue::new("gen_ai.prompt", format!("prompt {i}")));
                s.set_attribute(KeyValue::new("gen_ai.completion", "answer"));
            }
            s.end();
        }
    })
}

/// The native reference: the same redaction in Rust.
fn redact_natively(mut spans: Vec<SpanData>) -> Vec<SpanData> {
    let keys = KEYS.map(Key::from_static_str);
    for s in &mut spans {
        if s.attributes.iter().any(|a| keys.contains(&a.key)) {
            s.attributes.retain(|a| !keys.contains(&a.key));
            s.attributes.push(KeyValue::new("lens.redacted", true));
        }
    }
    spans
}

/// ns per item of `f` over `rounds` fresh copies of `input` holding `items` items (copying
/// excluded).
pub(crate) fn per_item<T: Clone>(
    rounds: usize,
    input: &T,
    items: usize,
    mut f: impl FnMut(T),
) -> f64 {
    let mut total = 0.0;
    for _ in 0..rounds {
        let copy = input.clone();
        let started = Instant::now();
        f(copy);
        total += started.elapsed().as_nanos() as f64;
    }
    total / (rounds * items) as f64
}

/// A measured processor: its row's name, its mode and its settings.
pub(crate) type Subject<'a> = (&'static str, &'static str, Vec<(&'static str, &'a str)>);

/// The no-op processor in each encoding (the way in), then `redaction`.
pub(crate) fn noops_and(redaction: Subject<'_>) -> [Subject<'_>; 4] {
    [
        ("wasm no-op, typed", "noop", vec![("encoding", "typed")]),
        (
            "wasm no-op, otlp-protobuf",
            "noop",
            vec![("encoding", "otlp-protobuf")],
        ),
        (
            "wasm no-op, otlp-json",
            "noop",
            vec![("encoding", "otlp-json")],
        ),
        redaction,
    ]
}

pub(crate) fn processors(opts: &Opts, rows: &mut Vec<Row>) {
    let rounds = if opts.quick { 20 } else { 300 };
    let spans = batch();
    let native = per_item(rounds, &spans, spans.len(), |b| {
        std::hint::black_box(redact_natively(b));
    });
    rows.push(Row {
        group: GROUP,
        name: "native Rust redaction (baseline)".into(),
        value: native,
        unit: "ns/span",
        ratio: None,
    });
    let keys = KEYS.join(",");
    let redaction = (
        "wasm redaction, typed",
        "redact",
        vec![("keys", keys.as_str())],
    );
    measure(noops_and(redaction), rounds, &spans, Some(native), rows);

    // The application thread: a rank exporting to `none`, without and with the redaction.
    let n = if opts.quick { 20_000 } else { 200_000 };
    let none = ExporterSpec::None(NoneExporterSpec {
        name: Some("none".into()),
    });
    let mut plain = wasm_config(WasmExporterSpec::default());
    plain.traces.exporters = vec![none];
    plain.batch.max_queue_size = n + 1;
    let mut with = plain.clone();
    with.traces.processors = vec![spec("redact", &[("keys", keys.as_str())])];
    let mut results = Vec::new();
    for (name, config) in [("no processor", plain), ("redaction processor", with)] {
        let handle = lens_rank(config, 0, 1);
        let tracer = handle.tracer("bench");
        let ns = ns_per_span(n, |i| one_span(&tracer, i));
        handle.shutdown(std::time::Duration::from_secs(60)).unwrap();
        results.push((name, ns));
    }
    let base = results[0].1;
    for (name, ns) in results {
        rows.push(Row {
            group: APP,
            name: name.into(),
            value: ns,
            unit: "ns/span",
            ratio: Some((ns / base, "× no processor")),
        });
    }
}

/// Each subject on `spans`, `rounds` times (after one warm-up), as a row (with its ratio to
/// `native` when given).
fn measure<'a>(
    subjects: impl IntoIterator<Item = Subject<'a>>,
    rounds: usize,
    spans: &Vec<SpanData>,
    native: Option<f64>,
    rows: &mut Vec<Row>,
) {
    let resource = Resource::builder_empty().build();
    for (name, mode, extra) in subjects {
        let p = WasmProcessor::from_config(mode, &spec(mode, &extra), &resource)
            .unwrap()
            .0;
        p.process_spans(spans.clone()); // warm
        let ns = per_item(rounds, spans, spans.len(), |b| {
            std::hint::black_box(p.process_spans(b));
        });
        rows.push(Row {
            group: GROUP,
            name: name.into(),
            value: ns,
            unit: "ns/span",
            ratio: native.map(|native| (ns / native, "× native redaction")),
        });
    }
}

/// Section `typed-crossing` (`--only typed-crossing [--batches N]`, for profiles): only the
/// typed no-op and the typed redaction on the 512-span batch, `N` rounds each (default 300).
pub(crate) fn typed_crossing(opts: &Opts, rows: &mut Vec<Row>) {
    let keys = KEYS.join(",");
    let subjects = [
        ("typed no-op", "noop", vec![("encoding", "typed")]),
        ("typed redaction", "redact", vec![("keys", keys.as_str())]),
    ];
    measure(subjects, opts.batches.unwrap_or(300), &batch(), None, rows);
}
