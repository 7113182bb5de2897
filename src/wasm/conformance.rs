//! What `lens check` runs against an exporter component: validation, capabilities, timings,
//! and a conformance suite independent of any guest SDK.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry::trace::{Link, Span, SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Array, KeyValue, StringValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};

use super::WasmSpanExporter;
use super::engine;
use crate::config::WasmExporterSpec;
use crate::error::LensError;

/// One conformance case and how it went.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// What was checked.
    pub name: &'static str,
    /// Time taken, or what went wrong.
    pub outcome: Result<Duration, String>,
}

/// Everything `lens check` reports.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// File size in bytes.
    pub size: usize,
    /// SHA-256 of the file.
    pub sha256: String,
    /// Imports grouped by capability (`files`, `environment`, `http`, …).
    pub capabilities: Vec<(&'static str, Vec<String>)>,
    /// Compile time without any cache.
    pub cold_compile: Duration,
    /// Load time through the on-disk cache (after one load populated it).
    pub cached_load: Duration,
    /// Whether that load was served from the cache.
    pub cache_hit: bool,
    /// The encoding the guest asked for.
    pub encoding: Option<&'static str>,
    /// The cases, in order.
    pub cases: Vec<CaseResult>,
    /// Mean cost per span over the 10k-span case, nanoseconds.
    pub per_span_ns: Option<f64>,
    /// Peak linear memory of the instance, bytes.
    pub peak_memory_bytes: u64,
}

impl CheckReport {
    /// The failed cases.
    pub fn failures(&self) -> Vec<&CaseResult> {
        self.cases.iter().filter(|c| c.outcome.is_err()).collect()
    }
}

/// Capability group of an import name.
pub fn capability(import: &str) -> &'static str {
    let groups = [
        ("wasi:filesystem/", "files"),
        ("wasi:cli/environment", "environment"),
        ("wasi:http/", "http"),
        ("wasi:sockets/", "sockets"),
        ("wasi:clocks/", "clocks"),
        ("wasi:random/", "random"),
        ("wasi:cli/std", "stdio"),
        ("wasi:cli/terminal", "stdio"),
        ("wasi:cli/exit", "exit"),
        ("wasi:io/", "streams"),
    ];
    groups
        .iter()
        .find(|(prefix, _)| import.starts_with(prefix))
        .map(|(_, g)| *g)
        .unwrap_or("other")
}

#[derive(Debug, Clone, Default)]
struct Collect(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Collect {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(batch);
        Ok(())
    }
}

/// Spans made by a real SDK tracer, so the suite sends what production sends.
fn make_spans(f: impl FnOnce(&opentelemetry_sdk::trace::SdkTracer)) -> Vec<SpanData> {
    let sink = Collect::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(sink.clone())
        .build();
    f(&provider.tracer("lens.check"));
    sink.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

fn one_span() -> Vec<SpanData> {
    make_spans(|t| t.start("one").end())
}

fn every_value_type() -> Vec<SpanData> {
    make_spans(|t| {
        let mut s = t.start("values");
        s.set_attribute(KeyValue::new("string", "s"));
        s.set_attribute(KeyValue::new("bool", true));
        s.set_attribute(KeyValue::new("s64", i64::MIN));
        s.set_attribute(KeyValue::new("f64", f64::MAX));
        s.set_attribute(KeyValue::new(
            "string-array",
            Value::Array(Array::String(vec![
                StringValue::from("a"),
                StringValue::from(""),
            ])),
        ));
        s.set_attribute(KeyValue::new(
            "bool-array",
            Value::Array(Array::Bool(vec![true, false])),
        ));
        s.set_attribute(KeyValue::new(
            "s64-array",
            Value::Array(Array::I64(vec![-1, 0, 1])),
        ));
        s.set_attribute(KeyValue::new(
            "f64-array",
            Value::Array(Array::F64(vec![0.5, -0.0])),
        ));
        s.set_attribute(KeyValue::new("empty", ""));
        s.end();
    })
}

fn unicode() -> Vec<SpanData> {
    make_spans(|t| {
        let mut s = t.start("步骤 ✓ 🚀 ünïcødé");
        s.set_attribute(KeyValue::new("клю́ч", "значе́ние \u{0} \"quotes\" \\ \n"));
        s.end();
    })
}

fn events_links_status() -> Vec<SpanData> {
    make_spans(|t| {
        t.in_span("parent", |cx| {
            let parent = cx.span().span_context().clone();
            cx.span()
                .add_event("checkpoint", vec![KeyValue::new("step", 7)]);
            cx.span().set_status(Status::error("diverged"));
            let mut child = t
                .span_builder("child")
                .with_kind(SpanKind::Client)
                .with_links(vec![Link::with_context(parent)])
                .start(t);
            child.set_status(Status::Ok);
            child.end();
        })
    })
}

fn many(n: usize) -> Vec<SpanData> {
    make_spans(|t| {
        for i in 0..n {
            let mut s = t.start("step");
            s.set_attribute(KeyValue::new("step", i as i64));
            s.set_attribute(KeyValue::new("loss", 1.0 / (1.0 + i as f64)));
            s.set_attribute(KeyValue::new("phase", "train"));
            s.set_attribute(KeyValue::new("rank", 0));
            s.end();
        }
    })
}

fn run(e: &WasmSpanExporter, batch: Vec<SpanData>) -> Result<Duration, String> {
    let started = Instant::now();
    futures_executor::block_on(e.export(batch))
        .map(|()| started.elapsed())
        .map_err(|e| e.to_string())
}

/// Validates `spec.path` and runs the suite against it with `spec`'s grants and settings.
pub fn check(spec: &WasmExporterSpec) -> Result<CheckReport, LensError> {
    let name = "check";
    let err = |message: String| LensError::WasmLoad {
        exporter: name.into(),
        path: spec.path.clone(),
        message,
    };
    let engine = engine::engine(spec.fuel_per_call.is_some()).map_err(err)?;
    let cold = Instant::now();
    let loaded = super::load_with(&spec.path, spec.sha256.as_deref(), engine, None).map_err(err)?;
    let cold_compile = cold.elapsed();
    let cached = engine;
    super::load(&spec.path, None, cached).map_err(err)?; // populate the cache
    let hits_before = engine::cache_stats().map(|s| s.hits).unwrap_or(0);
    let warm = Instant::now();
    super::load(&spec.path, None, cached).map_err(err)?;
    let cached_load = warm.elapsed();
    let cache_hit = engine::cache_stats().map(|s| s.hits).unwrap_or(0) > hits_before;
    let mut capabilities: Vec<(&'static str, Vec<String>)> = Vec::new();
    for import in &loaded.imports {
        let group = capability(import);
        match capabilities.iter_mut().find(|(g, _)| *g == group) {
            Some((_, list)) => list.push(import.clone()),
            None => capabilities.push((group, vec![import.clone()])),
        }
    }

    let resource = Resource::builder_empty()
        .with_attributes([
            KeyValue::new("service.name", "lens-check"),
            KeyValue::new("dl.rank", 0),
        ])
        .build();
    let (exporter, stats) = WasmSpanExporter::from_config(name, spec, &resource)?;
    let mut cases = vec![CaseResult {
        name: "init with the given settings",
        outcome: Ok(Duration::ZERO),
    }];
    let mut case = |name: &'static str, outcome: Result<Duration, String>| {
        cases.push(CaseResult { name, outcome })
    };
    case("empty batch", run(&exporter, Vec::new()));
    case("one span", run(&exporter, one_span()));
    case(
        "every attribute value type",
        run(&exporter, every_value_type()),
    );
    case("unicode names and values", run(&exporter, unicode()));
    case(
        "events, links and status",
        run(&exporter, events_links_status()),
    );
    let bulk = many(10_240);
    let started = Instant::now();
    let mut bulk_result = Ok(Duration::ZERO);
    for chunk in bulk.chunks(512) {
        if let Err(e) = run(&exporter, chunk.to_vec()) {
            bulk_result = Err(e);
            break;
        }
    }
    let bulk_time = started.elapsed();
    let per_span_ns = bulk_result
        .is_ok()
        .then(|| bulk_time.as_nanos() as f64 / bulk.len() as f64);
    case(
        "10k spans in batches of 512",
        bulk_result.map(|_| bulk_time),
    );
    let flush = Instant::now();
    case(
        "force-flush",
        exporter
            .force_flush()
            .map(|()| flush.elapsed())
            .map_err(|e| e.to_string()),
    );
    let shut = Instant::now();
    case(
        "shutdown, then an export fails cleanly",
        match exporter.export_after_guest_shutdown(one_span()) {
            Ok(true) => Ok(shut.elapsed()),
            Ok(false) => Err("the guest accepted an export after shutdown".into()),
            Err(e) => Err(e),
        },
    );
    let snapshot = stats.snapshot();
    if !snapshot.traps.is_empty() {
        case("no traps", Err(format!("traps: {:?}", snapshot.traps)));
    }
    Ok(CheckReport {
        size: loaded.size,
        sha256: loaded.sha256,
        capabilities,
        cold_compile,
        cached_load,
        cache_hit,
        encoding: exporter.encoding(),
        cases,
        per_span_ns,
        peak_memory_bytes: snapshot.peak_memory_bytes,
    })
}
