//! Wasm exporter entries for the test guests (`lens-test-guests`), installed in a pipeline next
//! to the oracle, or driven directly.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lens::config::{ExporterSpec, SignalConfig, WasmExporterSpec, WasmPreopen};
use lens::opentelemetry::Context;
use lens::opentelemetry::trace::{
    Span, SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState, Tracer,
    TracerProvider,
};
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use lens::testing::RecordingSpanExporter;
use lens::trace::ExporterStats;
use lens::wasm::WasmSpanExporter;
use lens::{LensConfig, Telemetry, TelemetryHandle};

use crate::pipeline::exporting;
pub use lens_test_guests::{HOSTILE, RECORDER};

/// An entry for the component at `path` with these settings and a 1 s call deadline.
pub fn spec(path: &str, settings: &[(&str, &str)]) -> WasmExporterSpec {
    WasmExporterSpec {
        path: PathBuf::from(path),
        settings: settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        call_timeout_ms: Some(1000),
        ..Default::default()
    }
}

/// The recorder guest, named `recorder`, writing `/out/batches.jsonl` into `dir` in
/// `encoding` (`typed`, `otlp`, `otlp-json`).
pub fn recorder_spec(dir: &Path, encoding: &str) -> WasmExporterSpec {
    let mut s = spec(
        RECORDER,
        &[("out", "/out/batches.jsonl"), ("encoding", encoding)],
    );
    s.name = Some("recorder".into());
    s.preopens = vec![WasmPreopen {
        host: dir.to_path_buf(),
        guest: "/out".into(),
        read_only: false,
    }];
    s
}

/// The recorder guest named `name`, writing `/out/<file>` into `dir` in `encoding`, with
/// `extra` settings (`retryable`, `partial`, `temporality`, …).
pub fn recorder_at(
    dir: &Path,
    name: &str,
    file: &str,
    encoding: &str,
    extra: &[(&str, &str)],
) -> WasmExporterSpec {
    let mut s = recorder_spec(dir, encoding);
    s.name = Some(name.into());
    s.settings.insert("out".into(), format!("/out/{file}"));
    for (k, v) in extra {
        s.settings.insert(k.to_string(), v.to_string());
    }
    s
}

/// Rank 2 of 4 exporting through `specs` (batches of at most `batch` spans), with the oracle
/// added as a second exporter named `oracle`.
pub fn install(
    specs: Vec<WasmExporterSpec>,
    batch: usize,
) -> (TelemetryHandle, RecordingSpanExporter) {
    let mut config = LensConfig {
        run_id: "wasm".into(),
        metrics_enabled: false,
        ..exporting()
    };
    config.batch.max_export_batch_size = batch;
    config.traces = SignalConfig {
        exporters: specs.into_iter().map(ExporterSpec::Wasm).collect(),
        processors: Vec::new(),
    };
    let handle = Telemetry::builder(config)
        .rank(2)
        .world_size(4)
        .env(HashMap::<String, String>::new())
        .install_global(false)
        .install()
        .unwrap();
    let oracle = RecordingSpanExporter::default();
    handle.add_span_exporter("oracle", oracle.clone());
    (handle, oracle)
}

/// Rank 0 of 1 whose only span exporter is `spec`: its metrics go to `reader` when given (and
/// are off otherwise).
pub fn install_alone(
    spec: WasmExporterSpec,
    reader: Option<&lens::InMemoryMetricReader>,
) -> Result<TelemetryHandle, lens::LensError> {
    let config = LensConfig {
        run_id: "alone".into(),
        metrics_enabled: reader.is_some(),
        traces: SignalConfig {
            exporters: vec![ExporterSpec::Wasm(spec)],
            processors: Vec::new(),
        },
        ..exporting()
    };
    let mut builder = Telemetry::builder(config)
        .env(HashMap::<String, String>::new())
        .install_global(false);
    if let Some(reader) = reader {
        builder = builder.metric_reader(reader.clone());
    }
    builder.install()
}

/// The JSON lines of a file.
pub fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The hostile guest in `mode` (with `extra` settings), named `hostile-<mode>`, with a 300 ms
/// call deadline and 32 MiB of memory, outside any pipeline.
pub fn direct(mode: &str, extra: &[(&str, &str)]) -> (WasmSpanExporter, Arc<ExporterStats>) {
    let mut settings = vec![("mode", mode)];
    settings.extend_from_slice(extra);
    let mut s = spec(HOSTILE, &settings);
    s.name = Some(format!("hostile-{mode}"));
    s.call_timeout_ms = Some(300);
    s.memory_limit_mib = Some(32);
    WasmSpanExporter::from_config(
        &format!("hostile-{mode}"),
        &s,
        &Resource::builder_empty().build(),
    )
    .unwrap()
}

/// One span per name, ended in order.
pub fn spans(names: &[&'static str]) -> Vec<SpanData> {
    let oracle = RecordingSpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(oracle.clone())
        .build();
    let tracer = provider.tracer("t");
    for n in names {
        tracer.start(*n).end();
    }
    oracle.spans()
}

/// Exports one span per name through `e`; the error as text.
pub fn export(e: &WasmSpanExporter, names: &[&'static str]) -> Result<(), String> {
    futures_executor::block_on(e.export(spans(names))).map_err(|e| e.to_string())
}

/// A context whose span is remote (another process's), sampled, with a two-entry trace state:
/// spans started in it have a remote parent.
pub fn remote_parent() -> Context {
    let remote = SpanContext::new(
        TraceId::from(0x5b8e_0000_0000_0000_0000_0000_0000_0001),
        SpanId::from(0x00f0_67aa_0ba9_02b7),
        TraceFlags::SAMPLED,
        true,
        TraceState::from_key_value([("vendor", "a1"), ("lens", "b2")]).unwrap(),
    );
    Context::new().with_remote_span_context(remote)
}
