//! Section 3: the hand-written encoders against the crates they would otherwise be: Lens writes OTLP
//! bytes and OTLP/JSON straight from `SpanData`; the crate path converts the spans into
//! `opentelemetry-proto`'s messages, then encodes them with `prost` or `serde_json`. The
//! hand-written code stays only while these rows show it pays.

use std::time::Instant;

use lens::opentelemetry::KeyValue;
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::trace::SpanData;
use lens::testing::{otlp_json_batch, otlp_protobuf_batch};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
use prost::Message;

use crate::{Opts, Row, median};

const GROUP: &str = "Encoders, µs per span (batches of 512): Lens's writers against the crate path";

/// A rank's resource, as Lens builds it (a dozen attributes).
fn rank_resource() -> Resource {
    Resource::builder_empty()
        .with_attributes([
            KeyValue::new("service.name", "llama-pretrain"),
            KeyValue::new("service.version", "1.4.0"),
            KeyValue::new("dl.rank", 3),
            KeyValue::new("dl.world_size", 8),
            KeyValue::new("dl.local_rank", 3),
            KeyValue::new("nemo.run.id", "5f2c9a1b7d3e"),
            KeyValue::new("service.instance.id", "5f2c9a1b7d3e-rank3"),
            KeyValue::new("host.name", "node-017"),
            KeyValue::new("process.pid", 41_234),
            KeyValue::new("slurm.job.id", "123456"),
            KeyValue::new("telemetry.sdk.language", "rust"),
        ])
        .build()
}

/// The crate path's request for `spans`.
fn generic(spans: Vec<SpanData>, resource: &Resource) -> ExportTraceServiceRequest {
    let resource = ResourceAttributesWithSchema::from(resource);
    ExportTraceServiceRequest {
        resource_spans: group_spans_by_resource_and_scope(spans, &resource),
    }
}

/// µs per span of `encode` over `reps` batches; the batches it owns are copied outside the clock.
fn per_span(batch: &[SpanData], reps: usize, encode: &dyn Fn(Vec<SpanData>) -> usize) -> f64 {
    let copies: Vec<Vec<SpanData>> = (0..reps).map(|_| batch.to_vec()).collect();
    let started = Instant::now();
    let mut bytes = 0;
    for c in copies {
        bytes += encode(c);
    }
    std::hint::black_box(bytes);
    started.elapsed().as_secs_f64() * 1e6 / (reps * batch.len()) as f64
}

/// Section 3.
pub fn encoders(opts: &Opts, batch: &[SpanData], rows: &mut Vec<Row>) {
    let resource = rank_resource();
    let (rounds, reps) = if opts.quick { (3, 20) } else { (7, 100) };
    type Encode<'a> = &'a dyn Fn(Vec<SpanData>) -> usize;
    let ours_bytes: Encode<'_> = &|b| otlp_protobuf_batch(&b, &resource).len();
    let crate_bytes: Encode<'_> = &|b| generic(b, &resource).encode_to_vec().len();
    let ours_json: Encode<'_> = &|b| otlp_json_batch(&b, &resource).len();
    let crate_json: Encode<'_> = &|b| serde_json::to_string(&generic(b, &resource)).unwrap().len();
    for (label, ours, theirs, crate_name) in [
        (
            "OTLP protobuf",
            ours_bytes,
            crate_bytes,
            "opentelemetry-proto + prost",
        ),
        (
            "OTLP/JSON",
            ours_json,
            crate_json,
            "opentelemetry-proto (with-serde) + serde_json",
        ),
    ] {
        let (mut a, mut b, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            let x = per_span(batch, reps, ours);
            let y = per_span(batch, reps, theirs);
            a.push(x);
            b.push(y);
            ratios.push(x / y);
        }
        rows.push(Row {
            group: GROUP,
            name: format!("{label}: {crate_name} (the crate path)"),
            value: median(b),
            unit: "µs",
            ratio: None,
        });
        rows.push(Row {
            group: GROUP,
            name: format!("{label}: Lens's writer"),
            value: median(a),
            unit: "µs",
            ratio: Some((median(ratios), "× the crate path's time")),
        });
    }
}
