//! Section 3: metric and log export through guests against the native console exporters
//! (OpenTelemetry-Python's JSON shapes, into a file), and the no-op guest's boundary cost per
//! encoding, each round alternating the native exporter and the guest.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use lens::config::WasmExporterSpec;
use lens::exporter::{ConsoleLogExporter, ConsoleMetricExporter, ConsoleOut};
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::logs::{LogBatch, LogExporter};
use lens::opentelemetry_sdk::metrics::data::ResourceMetrics;
use lens::opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use lens::testing::LogRecords;
use lens::wasm::{WasmLogExporter, WasmMetricExporter};

use crate::{Opts, Row, dist, jsonl_spec, median};

const METRICS: &str = "Metric export, data points per second (collections of 1,000 points)";
const LOGS: &str = "Log export, records per second (batches of 512)";

/// The guests measured for metrics and logs, by row name.
fn guests(builtin: &Path, dir: &Path) -> Vec<(String, WasmExporterSpec)> {
    let mut js = jsonl_spec(dist("js-jsonl.wasm"), dir);
    js.settings.clear();
    js.forward_stdio = Some(false);
    let noop = |encoding: &str| WasmExporterSpec {
        name: Some("noop".into()),
        path: lens_test_guests::RECORDER.into(),
        settings: [
            ("out".to_string(), "/out/noop.jsonl".to_string()),
            ("encoding".to_string(), encoding.to_string()),
            ("discard".to_string(), "true".to_string()),
        ]
        .into(),
        preopens: jsonl_spec(builtin.to_path_buf(), dir).preopens,
        call_timeout_ms: Some(60_000),
        ..Default::default()
    };
    vec![
        (
            "Rust JSON-lines guest (typed)".into(),
            jsonl_spec(builtin.to_path_buf(), dir),
        ),
        ("no-op guest, typed".into(), noop("typed")),
        ("no-op guest, OTLP bytes".into(), noop("otlp")),
        ("no-op guest, OTLP JSON".into(), noop("otlp-json")),
        (
            "Python JSON-lines guest (OTLP JSON)".into(),
            jsonl_spec(dist("python-jsonl.wasm"), dir),
        ),
        ("JavaScript JSON-lines guest (OTLP JSON, stdout)".into(), js),
    ]
}

/// Items per second of `export` over `calls` calls of `items` items each.
fn rate(calls: usize, items: usize, export: &dyn Fn()) -> f64 {
    let started = Instant::now();
    (0..calls).for_each(|_| export());
    (calls * items) as f64 / started.elapsed().as_secs_f64()
}

/// One signal's rows: the native exporter (the limit), then each guest with its ratio of
/// native time per item, rounds alternating the two.
#[allow(clippy::too_many_arguments)]
fn measure<'a>(
    opts: &Opts,
    group: &'static str,
    unit: &'static str,
    items: usize,
    native: &dyn Fn(),
    guest: &dyn Fn(&WasmExporterSpec) -> Box<dyn Fn() + 'a>,
    specs: &[(String, WasmExporterSpec)],
    rows: &mut Vec<Row>,
) {
    let rounds = if opts.quick { 3 } else { 5 };
    let calls = if opts.quick { 5 } else { 20 };
    native(); // warm up
    let mut native_rates = Vec::new();
    let mut measured = Vec::new();
    for (name, spec) in specs.iter().filter(|(n, _)| opts.matches(n)) {
        let export = guest(spec);
        export(); // warm up (first instance, caches)
        let (mut rates, mut ratios) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let n = rate(calls, items, native);
            let g = rate(calls, items, &*export);
            native_rates.push(n);
            rates.push(g);
            ratios.push(n / g);
        }
        measured.push(Row {
            group,
            name: name.clone(),
            value: median(rates),
            unit,
            ratio: Some((median(ratios), "× native time per item")),
        });
    }
    if native_rates.is_empty() {
        native_rates.push(rate(calls, items, native));
    }
    rows.push(Row {
        group,
        name: "native console exporter into a file (the limit)".into(),
        value: median(native_rates),
        unit,
        ratio: None,
    });
    rows.extend(measured);
}

fn file_out(dir: &Path, name: &str) -> ConsoleOut {
    let file = std::fs::File::create(dir.join(name)).unwrap();
    ConsoleOut::Writer(Arc::new(Mutex::new(std::io::BufWriter::new(file))))
}

/// A guest exporting `collection` at each call.
fn metric_guest<'a>(
    resource: &Resource,
    collection: &'a ResourceMetrics,
) -> impl Fn(&WasmExporterSpec) -> Box<dyn Fn() + 'a> {
    let resource = resource.clone();
    move |spec| {
        let (e, _) = WasmMetricExporter::from_config("bench", spec, &resource).unwrap();
        Box::new(move || futures_executor::block_on(e.export(collection)).unwrap())
    }
}

/// A guest exporting `records` at each call.
fn log_guest<'a>(
    resource: &Resource,
    records: &'a LogRecords,
) -> impl Fn(&WasmExporterSpec) -> Box<dyn Fn() + 'a> {
    let resource = resource.clone();
    move |spec| {
        let (e, _) = WasmLogExporter::from_config("bench", spec, &resource).unwrap();
        Box::new(move || {
            let refs: Vec<_> = records.iter().map(|(r, s)| (r, s)).collect();
            futures_executor::block_on(e.export(LogBatch::new(&refs))).unwrap()
        })
    }
}

/// Section 3.
pub fn signals(opts: &Opts, builtin: &Path, dir: &Path, rows: &mut Vec<Row>) {
    let resource = Resource::builder_empty().build();
    let specs = guests(builtin, dir);
    let collection: ResourceMetrics = lens::testing::many_data_points(1_000);
    let points = lens::data_points(&collection) as usize;
    let native = ConsoleMetricExporter::new(file_out(dir, "native-metrics.jsonl"));
    let native_export = || futures_executor::block_on(native.export(&collection)).unwrap();
    measure(
        opts,
        METRICS,
        "points/s",
        points,
        &native_export,
        &metric_guest(&resource, &collection),
        &specs,
        rows,
    );
    let records: LogRecords = lens::testing::many_logs(512);
    let native = ConsoleLogExporter::new(file_out(dir, "native-logs.jsonl"));
    let native_export = || {
        let refs: Vec<_> = records.iter().map(|(r, s)| (r, s)).collect();
        futures_executor::block_on(native.export(LogBatch::new(&refs))).unwrap()
    };
    measure(
        opts,
        LOGS,
        "records/s",
        records.len(),
        &native_export,
        &log_guest(&resource, &records),
        &specs,
        rows,
    );
}
