//! The example exporters in every language write exactly what the native JSON-lines exporter
//! writes, span for span. Built by `guest-examples/build.sh` (the Rust one is also built into
//! the binary as the built-in exporter).

use lens_test_support::dist;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use lens::config::{ExporterSpec, SignalConfig, WasmExporterSpec, WasmPreopen};
use lens::opentelemetry::trace::{Link, Span, SpanKind, Status, TraceContextExt, Tracer};
use lens::opentelemetry::{Array, KeyValue, StringValue, Value};
use lens::testing::JsonLinesFileExporter;
use lens::wasm::GuestOutputCopy;
use lens::{LensConfig, Telemetry};
use lens_test_support::pipeline::exporting;
use serde_json::Value as Json;

enum Output {
    /// The guest writes to `/out/guest-{dl.rank}.jsonl`.
    File,
    /// The guest writes to stdout, copied as written into a folder
    /// (`TelemetryBuilder::guest_output`, what `lens demo` does per rank).
    Stdout,
}

/// Runs the same spans through the guest (given `extra` settings) and the native exporter;
/// returns both, sorted.
fn run(
    name: &str,
    wasm: PathBuf,
    output: Output,
    extra: &[(&str, &str)],
    spans: usize,
) -> (Vec<Json>, Vec<Json>) {
    let dir = tempfile::tempdir().unwrap();
    let printed = tempfile::tempdir().unwrap();
    let mut settings: std::collections::BTreeMap<String, String> = match output {
        Output::File => [("path".to_string(), "/out/guest-{dl.rank}.jsonl".to_string())].into(),
        Output::Stdout => Default::default(),
    };
    settings.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let config = LensConfig {
        run_id: "lang".into(),
        metrics_enabled: false,
        traces: SignalConfig {
            processors: Vec::new(),
            exporters: vec![ExporterSpec::Wasm(WasmExporterSpec {
                name: Some(name.into()),
                path: wasm,
                preopens: vec![WasmPreopen {
                    host: dir.path().into(),
                    guest: "/out".into(),
                    read_only: false,
                }],
                settings,
                call_timeout_ms: Some(20_000),
                ..Default::default()
            })],
        },
        ..exporting()
    };
    let handle = Telemetry::builder(config)
        .rank(5)
        .world_size(8)
        .env(HashMap::<String, String>::new())
        .install_global(false)
        .guest_output(GuestOutputCopy::dir(printed.path()))
        .install()
        .unwrap();
    let native_path = dir.path().join("native.jsonl");
    handle.add_span_exporter(
        "native",
        JsonLinesFileExporter::create(&native_path).unwrap(),
    );
    let tracer = handle.tracer("trainer");
    for step in 0..spans as i64 {
        tracer.in_span("step", |cx| {
            let span = cx.span();
            let parent = span.span_context().clone();
            span.set_attribute(KeyValue::new("step", step));
            span.set_attribute(KeyValue::new("loss", 1.0 / (1.0 + step as f64)));
            span.set_attribute(KeyValue::new("lr", 2.0));
            span.set_attribute(KeyValue::new("phase", "träin \"q\" \\ \n 步骤 🚀"));
            span.set_attribute(KeyValue::new("ok", step % 2 == 0));
            span.set_attribute(KeyValue::new("big", i64::MIN + step));
            span.set_attribute(KeyValue::new(
                "dims",
                Value::Array(Array::I64(vec![8, -4096])),
            ));
            span.set_attribute(KeyValue::new(
                "scales",
                Value::Array(Array::F64(vec![0.5, 3.0, 1e300])),
            ));
            span.set_attribute(KeyValue::new(
                "flags",
                Value::Array(Array::Bool(vec![true])),
            ));
            // Not representable in JSON: every exporter writes `null`.
            span.set_attribute(KeyValue::new(
                "overflow",
                if step % 2 == 0 {
                    f64::INFINITY
                } else {
                    f64::NAN
                },
            ));
            span.set_attribute(KeyValue::new(
                "tags",
                Value::Array(Array::String(vec![StringValue::from("a")])),
            ));
            span.add_event("grad-norm", vec![KeyValue::new("norm", 0.25)]);
            if step % 7 == 0 {
                span.set_status(Status::error("spike"));
            }
            let mut opt = tracer
                .span_builder("optimizer")
                .with_kind(SpanKind::Client)
                .with_links(vec![Link::with_context(parent)])
                .start(&tracer);
            opt.set_status(Status::Ok);
            opt.end();
        });
    }
    handle.shutdown(Duration::from_secs(30)).unwrap();
    let e = handle.stats().exporter(name).unwrap().clone();
    assert_eq!((e.exported, e.dropped()), (2 * spans as u64, 0), "{e:?}");
    let parse = |lines: Vec<String>| -> Vec<Json> {
        let mut v: Vec<Json> = lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        v.sort_by_key(|l| l["span_id"].as_str().unwrap().to_string());
        v
    };
    let read = |p: &Path| {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let guest = match output {
        Output::File => read(&dir.path().join("guest-5.jsonl")),
        Output::Stdout => read(&printed.path().join(format!("{name}.stdout"))),
    };
    (parse(guest), parse(read(&native_path)))
}

fn same_as_native(name: &str, wasm: PathBuf, output: Output) {
    same_as_native_with(name, wasm, output, &[]);
}

fn same_as_native_with(name: &str, wasm: PathBuf, output: Output, extra: &[(&str, &str)]) {
    let (guest, native) = run(name, wasm, output, extra, 150);
    assert_eq!(guest.len(), 300, "{name}");
    for (g, n) in guest.iter().zip(&native) {
        assert_eq!(g, n, "{name}");
    }
}

#[test]
fn builtin_rust_guest_matches_native() {
    same_as_native("builtin", crate::builtin_jsonl(), Output::File);
}

/// The built-in reads typed batches by default; the SDK's views over OTLP protobuf bytes, read
/// in place, must write the same lines.
#[test]
fn builtin_rust_guest_on_otlp_protobuf_batches_matches_native() {
    same_as_native_with(
        "builtin-protobuf",
        dist("rust-jsonl.wasm"),
        Output::File,
        &[("encoding", "otlp-protobuf")],
    );
}

#[test]
fn the_rust_example_in_dist_is_the_builtin_exporter_built_once() {
    // `guest-examples/build.sh` and the command line's build script share one target directory.
    assert!(
        std::fs::read(dist("rust-jsonl.wasm")).unwrap()
            == std::fs::read(env!("LENS_BUILTIN_JSONL_WASM")).unwrap(),
        "guest-examples/dist/rust-jsonl.wasm differs from the built-in exporter"
    );
}

#[test]
fn c_guest_matches_native() {
    same_as_native("c", dist("c-jsonl.wasm"), Output::File);
}

#[test]
fn python_guest_matches_native() {
    same_as_native("python", dist("python-jsonl.wasm"), Output::File);
}

#[test]
fn javascript_guest_matches_native() {
    same_as_native("js", dist("js-jsonl.wasm"), Output::Stdout);
}
