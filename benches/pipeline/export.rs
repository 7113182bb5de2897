//! Section 2: export throughput of every guest against the native exporter, and the no-op guest's
//! boundary cost per encoding and batch size.

use std::path::Path;
use std::time::Instant;

use lens::config::WasmExporterSpec;
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::trace::{SpanData, SpanExporter};
use lens::testing::JsonLinesFileExporter;
use lens::wasm::WasmSpanExporter;

use crate::{Opts, Row, dist, jsonl_spec, median, noop_spec};

const THROUGHPUT: &str = "Export throughput, spans per second (batches of 512)";
const BOUNDARY: &str = "No-op guest boundary cost, µs per span (batches of 512 unless stated)";

/// The guests measured, by row name.
fn guests(builtin: &Path, dir: &Path) -> Vec<(String, WasmExporterSpec)> {
    let mut fuel = jsonl_spec(builtin.to_path_buf(), dir);
    fuel.fuel_per_call = Some(1 << 40);
    let mut protobuf = jsonl_spec(builtin.to_path_buf(), dir);
    protobuf
        .settings
        .insert("encoding".into(), "otlp-protobuf".into());
    let mut js = jsonl_spec(dist("js-jsonl.wasm"), dir);
    js.settings.clear();
    js.forward_stdio = Some(false);
    vec![
        (
            "Rust JSON-lines guest on the SDK (typed)".into(),
            jsonl_spec(builtin.to_path_buf(), dir),
        ),
        (
            "Rust JSON-lines guest on the SDK (OTLP bytes read in place)".into(),
            protobuf,
        ),
        (
            "Rust JSON-lines guest on the SDK (typed), fuel metered too".into(),
            fuel,
        ),
        ("no-op guest, typed".into(), noop_spec("typed")),
        ("no-op guest, OTLP bytes".into(), noop_spec("otlp")),
        ("no-op guest, OTLP JSON".into(), noop_spec("otlp-json")),
        (
            "C JSON-lines guest (typed)".into(),
            jsonl_spec(dist("c-jsonl.wasm"), dir),
        ),
        (
            "Python JSON-lines guest (OTLP JSON)".into(),
            jsonl_spec(dist("python-jsonl.wasm"), dir),
        ),
        ("JavaScript JSON-lines guest (OTLP JSON, stdout)".into(), js),
    ]
}

/// Rounds of the export section: each alternates the native baseline and the exporter under
/// test, so that the machine's drift hits both.
struct Rounds<'a> {
    batch: &'a [SpanData],
    rounds: usize,
    per_round: usize,
}

impl Rounds<'_> {
    /// Spans per second through `export`, over one round (copies made outside the clock: the
    /// batch processor hands over batches it owns).
    fn rate(&self, export: &dyn Fn(Vec<SpanData>)) -> f64 {
        let copies: Vec<Vec<SpanData>> = (0..self.per_round).map(|_| self.batch.to_vec()).collect();
        let started = Instant::now();
        copies.into_iter().for_each(export);
        (self.per_round * self.batch.len()) as f64 / started.elapsed().as_secs_f64()
    }
}

/// Section 2; returns the peak memory of each guest.
pub fn export_throughput(
    opts: &Opts,
    builtin: &Path,
    dir: &Path,
    batch: &[SpanData],
    rows: &mut Vec<Row>,
) -> Vec<(String, u64)> {
    let batches = opts.batches.unwrap_or(if opts.quick { 20 } else { 100 });
    let rounds = if opts.quick { 3 } else { 5 };
    let r = Rounds {
        batch,
        rounds,
        per_round: batches.div_ceil(rounds),
    };
    let native = JsonLinesFileExporter::create(dir.join("native.jsonl")).unwrap();
    let native_export = |b| futures_executor::block_on(native.export(b)).unwrap();
    native_export(batch.to_vec()); // warm up
    let resource = Resource::builder_empty().build();
    let (mut native_rates, mut boundary, mut memory) = (Vec::new(), Vec::new(), Vec::new());
    for (name, spec) in guests(builtin, dir).iter().filter(|(n, _)| opts.matches(n)) {
        let (e, stats) = WasmSpanExporter::from_config("bench", spec, &resource).unwrap();
        let guest_export = |b| futures_executor::block_on(e.export(b)).unwrap();
        guest_export(batch.to_vec()); // warm up (first instance, caches)
        let (mut rates, mut ratios) = (Vec::new(), Vec::new());
        for _ in 0..r.rounds {
            let native_rate = r.rate(&native_export);
            let rate = r.rate(&guest_export);
            native_rates.push(native_rate);
            rates.push(rate);
            ratios.push(native_rate / rate);
        }
        let _ = e.shutdown();
        let rate = median(rates);
        rows.push(Row {
            group: THROUGHPUT,
            name: name.clone(),
            value: rate,
            unit: "spans/s",
            ratio: Some((median(ratios), "× native time per span")),
        });
        if name.starts_with("no-op") {
            boundary.push((name.clone(), 1e6 / rate));
        }
        memory.push((name.clone(), stats.snapshot().peak_memory_bytes));
    }
    if native_rates.is_empty() {
        native_rates.push(r.rate(&native_export));
    }
    let first = rows
        .iter()
        .position(|r| r.group == THROUGHPUT)
        .unwrap_or(rows.len());
    rows.insert(
        first,
        Row {
            group: THROUGHPUT,
            name: "native Rust JSON-lines exporter (the limit)".into(),
            value: median(native_rates),
            unit: "spans/s",
            ratio: None,
        },
    );
    if opts.matches("no-op") {
        boundary.extend(boundary_by_batch_size(&r, &resource));
    }
    rows.extend(boundary.into_iter().map(|(name, us)| Row {
        group: BOUNDARY,
        name,
        value: us,
        unit: "µs",
        ratio: None,
    }));
    memory
}

/// The no-op guests at batches of 64 and 2048 (the same number of spans in all).
fn boundary_by_batch_size(r: &Rounds<'_>, resource: &Resource) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for size in [64usize, 2048] {
        let sized: Vec<SpanData> = (0..size)
            .map(|i| r.batch[i % r.batch.len()].clone())
            .collect();
        let n = (r.per_round * r.batch.len()).div_ceil(size);
        for (encoding, label) in [
            ("typed", "typed"),
            ("otlp", "OTLP bytes"),
            ("otlp-json", "OTLP JSON"),
        ] {
            let (e, _) =
                WasmSpanExporter::from_config("bench", &noop_spec(encoding), resource).unwrap();
            let export = |b| futures_executor::block_on(e.export(b)).unwrap();
            export(sized.clone());
            let us = median(
                (0..r.rounds)
                    .map(|_| {
                        let copies: Vec<Vec<SpanData>> = (0..n).map(|_| sized.clone()).collect();
                        let started = Instant::now();
                        copies.into_iter().for_each(&export);
                        started.elapsed().as_secs_f64() * 1e6 / (n * size) as f64
                    })
                    .collect(),
            );
            let _ = e.shutdown();
            out.push((format!("no-op guest, {label}, batch {size}"), us));
        }
    }
    out
}
