//! Section `processors`, continued: what a sandboxed metric processor costs per data point of
//! one collection, against a native Rust redaction of the same OTLP request in the same run,
//! and what a log processor costs per record, against its own typed no-op (the way in).

use lens::InMemoryMetricReader;
use lens::opentelemetry::KeyValue;
use lens::opentelemetry::metrics::MeterProvider as _;
use lens::opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use lens::opentelemetry_proto::tonic::common::v1::{
    AnyValue, KeyValue as ProtoKeyValue, any_value,
};
use lens::opentelemetry_proto::tonic::metrics::v1::metric::Data;
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::metrics::SdkMeterProvider;
use lens::wasm::{GuestOutputCopy, Signal, WasmProcessor};

use crate::processors::{Subject, noops_and, per_item, spec};
use crate::{Opts, Row};

const METRICS: &str = "Metric processors: cost per data point of a 512-point collection (ns)";
const LOGS: &str = "Log processors: export-side cost per record of a 512-record batch (ns)";

fn processor(signal: Signal, mode: &str, extra: &[(&str, &str)]) -> WasmProcessor {
    let resource = Resource::builder_empty().build();
    let none = GuestOutputCopy::None;
    WasmProcessor::from_config_with_output(mode, &spec(mode, extra), signal, &resource, none)
        .unwrap()
        .0
}

/// 64 counters, 8 attribute sets each (a `user` among them): 512 data points.
fn collection() -> ExportMetricsServiceRequest {
    let reader = InMemoryMetricReader::new();
    let provider = SdkMeterProvider::builder()
        .with_reader(reader.clone())
        .build();
    let meter = provider.meter("bench");
    for c in 0..64 {
        let counter = meter.u64_counter(format!("train.counter_{c}")).build();
        for u in 0..8 {
            let attrs = [
                KeyValue::new("user", format!("user-{u}")),
                KeyValue::new("phase", "train"),
            ];
            counter.add(u + 1, &attrs);
        }
    }
    ExportMetricsServiceRequest::from(&reader.get_metrics_data().unwrap())
}

/// The native reference: `user` removed from every data point holding it, which gets
/// `lens.redacted = true` (what the test processor's `redact` answers, applied in Rust).
fn redact_natively(request: &mut ExportMetricsServiceRequest) {
    let metrics = request
        .resource_metrics
        .iter_mut()
        .flat_map(|r| &mut r.scope_metrics)
        .flat_map(|s| &mut s.metrics);
    for m in metrics {
        let Some(Data::Sum(sum)) = &mut m.data else {
            continue;
        };
        for p in &mut sum.data_points {
            p.attributes.retain(|a| a.key != "user");
            p.attributes.push(ProtoKeyValue {
                key: "lens.redacted".into(),
                value: Some(AnyValue {
                    value: Some(any_value::Value::BoolValue(true)),
                }),
                ..Default::default()
            });
        }
    }
}

fn row(group: &'static str, name: &str, value: f64, base: Option<(f64, &'static str)>) -> Row {
    Row {
        group,
        name: name.into(),
        value,
        unit: "ns/item",
        ratio: base.map(|(b, what)| (value / b, what)),
    }
}

pub(crate) fn signal_processors(opts: &Opts, rows: &mut Vec<Row>) {
    let rounds = if opts.quick { 20 } else { 300 };
    let request = collection();
    let points = 512;
    let native = per_item(rounds, &request, points, |mut r| {
        redact_natively(&mut r);
        std::hint::black_box(r);
    });
    rows.push(row(
        METRICS,
        "native Rust redaction of the request (baseline)",
        native,
        None,
    ));
    let subjects = noops_and((
        "wasm redaction of `user`, typed",
        "redact",
        vec![("keys", "user")],
    ));
    for (name, mode, extra) in subjects {
        let p = processor(Signal::Metrics, mode, &extra);
        p.process_metrics(&mut request.clone()); // warm
        let ns = per_item(rounds, &request, points, |mut r| {
            std::hint::black_box(p.process_metrics(&mut r));
        });
        rows.push(row(METRICS, name, ns, Some((native, "× native redaction"))));
    }

    let records = lens::testing::many_logs(512);
    let noop = processor(Signal::Logs, "noop", &[("encoding", "typed")]);
    noop.process_logs(records.clone());
    let base = per_item(rounds, &records, records.len(), |b| {
        std::hint::black_box(noop.process_logs(b));
    });
    rows.push(row(LOGS, "wasm no-op, typed (baseline)", base, None));
    let subjects: [Subject<'static>; 3] = [
        (
            "wasm no-op, otlp-protobuf",
            "noop",
            vec![("encoding", "otlp-protobuf")],
        ),
        (
            "wasm redaction of `phase`, typed (every record rebuilt)",
            "redact",
            vec![("keys", "phase")],
        ),
        (
            "wasm rewrite, typed (event name, attribute, body on half)",
            "rewrite",
            vec![],
        ),
    ];
    for (name, mode, extra) in subjects {
        let p = processor(Signal::Logs, mode, &extra);
        p.process_logs(records.clone());
        let ns = per_item(rounds, &records, records.len(), |b| {
            std::hint::black_box(p.process_logs(b));
        });
        rows.push(row(LOGS, name, ns, Some((base, "× typed no-op"))));
    }
}
