//! Fixtures for testing exporters, shared by Lens's own tests, its benchmarks and `lens check`
//! (feature `testing`, like the SDK's): the oracle exporter every delivered span is compared
//! with, spans made by a real SDK tracer covering every field and value type, the native
//! JSON-lines file exporter the guests' output is compared with, and the batches a guest
//! receives in each OTLP encoding (for a guest's own tests, or to measure the encoders).
//!
//! ```
//! use lens::opentelemetry::trace::{Span, Tracer};
//! let spans = lens::testing::record_spans(|tracer| {
//!     let mut span = tracer.start("step");
//!     span.set_attributes(lens::testing::every_value_type());
//!     span.end();
//! });
//! assert_eq!(spans[0].attributes.len(), lens::testing::every_value_type().len());
//! ```

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry::trace::{Link, Span, SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Array, KeyValue, StringValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider, SpanData, SpanExporter};

mod signals;

pub use signals::{
    LogRecords, MetricKind, every_log_body, every_metric_kind, many_data_points, many_logs,
    metrics_of, record_logs,
};

use crate::encoding::{otlp_bytes, otlp_json};
use crate::exporter::json::span_json;

/// The `otlp-protobuf` batch a guest receives for `batch` on a rank with `resource`: one
/// `ExportTraceServiceRequest`.
pub fn otlp_protobuf_batch(batch: &[SpanData], resource: &Resource) -> Vec<u8> {
    otlp_bytes::encode(batch, &otlp_bytes::EncodedResource::new(resource))
}

/// The `otlp-json` batch a guest receives for `batch` on a rank with `resource`.
pub fn otlp_json_batch(batch: &[SpanData], resource: &Resource) -> String {
    otlp_json::encode(batch, &otlp_json::JsonResource::new(resource))
}

/// A number field of `/proc/self/status` (`VmRSS`, `VmHWM` in KiB, `Threads`, …); 0 where
/// there is none (not Linux). For the demo's and the benchmarks' resource figures.
pub fn process_status(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The oracle: keeps every span it is given, in order. Clones share the spans. Unlike the SDK's
/// `InMemorySpanExporter` it keeps them across shutdown, so a test can compare after it.
#[derive(Debug, Clone, Default)]
pub struct RecordingSpanExporter(Arc<Mutex<Vec<SpanData>>>);

impl RecordingSpanExporter {
    /// Every span received so far.
    pub fn spans(&self) -> Vec<SpanData> {
        self.lock().clone()
    }

    /// How many spans were received.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none was received.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<SpanData>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl SpanExporter for RecordingSpanExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.lock().extend(batch);
        Ok(())
    }
}

/// The spans `f` ends on a tracer (scope `lens.testing`) of a fresh SDK provider, exported
/// one by one: what production would hand an exporter.
pub fn record_spans(f: impl FnOnce(&SdkTracer)) -> Vec<SpanData> {
    let sink = RecordingSpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(sink.clone())
        .build();
    f(&provider.tracer("lens.testing"));
    sink.spans()
}

/// The spans of [`end_rich_trace`] on a fresh SDK provider, as an exporter receives them.
pub fn rich_trace_spans() -> Vec<SpanData> {
    let sink = RecordingSpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(sink.clone())
        .build();
    end_rich_trace(&provider);
    sink.spans()
}

/// One attribute of every value type, with edge values: non-ASCII text, the empty string,
/// `i64::MIN`/`MAX`, a huge double, and arrays of each type (one with an empty string).
pub fn every_value_type() -> Vec<KeyValue> {
    let strings = vec![StringValue::from("a"), StringValue::from("")];
    vec![
        KeyValue::new("s", "ünïcødé"),
        KeyValue::new("b", true),
        KeyValue::new("i", -42i64),
        KeyValue::new("f", 0.25),
        KeyValue::new("sa", Value::Array(Array::String(strings))),
        KeyValue::new("ba", Value::Array(Array::Bool(vec![false, true]))),
        KeyValue::new("ia", Value::Array(Array::I64(vec![i64::MIN, 0, i64::MAX]))),
        KeyValue::new("fa", Value::Array(Array::F64(vec![-1.5, 1e300]))),
        KeyValue::new("empty", ""),
    ]
}

/// The name of the root span [`end_rich_trace`] ends.
pub const RICH_ROOT: &str = "step ✓ 步骤 🚀";

/// Ends a small trace covering every field an exporter reads, on tracers of `provider`: a root
/// [`RICH_ROOT`] in scope `trainer` with [`every_value_type`], an event `loss-spike` and an
/// error status `nan loss`; and its child `save` in scope `checkpointer` (version `2.1`), of
/// kind producer with an ok status and a link to the root. `save` ends first.
pub fn end_rich_trace<P>(provider: &P)
where
    P: TracerProvider,
    <P::Tracer as Tracer>::Span: Send + Sync + 'static,
{
    let tracer = provider.tracer("trainer");
    let other = provider.tracer_with_scope(
        opentelemetry::InstrumentationScope::builder("checkpointer")
            .with_version("2.1")
            .build(),
    );
    tracer.in_span(RICH_ROOT, |cx| {
        let span = cx.span();
        let parent = span.span_context().clone();
        span.set_attributes(every_value_type());
        span.add_event("loss-spike", vec![KeyValue::new("loss", 9.5)]);
        span.set_status(Status::error("nan loss"));
        let mut save = other
            .span_builder("save")
            .with_kind(SpanKind::Producer)
            .with_links(vec![Link::with_context(parent)])
            .start(&other);
        save.set_status(Status::Ok);
        save.end();
    });
}

/// Span sets covering what an exporter must handle: the cases of `lens check`.
pub mod spans {
    use super::*;

    /// One span without attributes.
    pub fn one() -> Vec<SpanData> {
        record_spans(|t| t.start("one").end())
    }

    /// One span with [`every_value_type`].
    pub fn every_value_type() -> Vec<SpanData> {
        record_spans(|t| {
            let mut s = t.start("values");
            s.set_attributes(super::every_value_type());
            s.end();
        })
    }

    /// Non-ASCII names and keys, and a value with NUL, quotes, a backslash and a newline.
    pub fn unicode() -> Vec<SpanData> {
        record_spans(|t| {
            let mut s = t.start("步骤 ✓ 🚀 ünïcødé");
            s.set_attribute(KeyValue::new("клю́ч", "значе́ние \u{0} \"quotes\" \\ \n"));
            s.end();
        })
    }

    /// A parent with an event and an error status, and a client child linking to it with an
    /// ok status.
    pub fn events_links_status() -> Vec<SpanData> {
        record_spans(|t| {
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

    /// `n` training-step spans with four attributes each.
    pub fn many(n: usize) -> Vec<SpanData> {
        record_spans(|t| {
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
}

/// Appends each span as one JSON line (the console exporter's format) to a file, buffered: the
/// native baseline the JSON-lines guests are compared with, line for line and in speed.
#[derive(Debug)]
pub struct JsonLinesFileExporter {
    path: PathBuf,
    out: Mutex<Option<BufWriter<File>>>,
}

impl JsonLinesFileExporter {
    /// Creates (truncates) `path`.
    pub fn create(path: impl AsRef<Path>) -> std::io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = File::create(&path)?;
        Ok(Self {
            path,
            out: Mutex::new(Some(BufWriter::new(file))),
        })
    }

    /// The file written to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn with_writer(
        &self,
        f: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
    ) -> OTelSdkResult {
        let mut guard = self.out.lock().unwrap_or_else(|p| p.into_inner());
        let w = guard.as_mut().ok_or(OTelSdkError::AlreadyShutdown)?;
        f(w).map_err(|e| OTelSdkError::InternalFailure(format!("{}: {e}", self.path.display())))
    }
}

impl SpanExporter for JsonLinesFileExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.with_writer(|w| {
            for span in &batch {
                serde_json::to_writer(&mut *w, &span_json(span))?;
                w.write_all(b"\n")?;
            }
            w.flush()
        })
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.with_writer(|w| w.flush())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        let result = self.with_writer(|w| w.flush());
        self.out.lock().unwrap_or_else(|p| p.into_inner()).take();
        result
    }
}

/// Asserts that the complete events (`ph: "X"`) of a Chrome trace-event list nest by time on
/// each `(pid, tid)`, as the format requires (`lens report --perfetto`'s tests).
pub fn assert_trace_events_nest<'a>(events: impl IntoIterator<Item = &'a serde_json::Value>) {
    let mut threads: std::collections::BTreeMap<(u64, u64), Vec<(f64, f64)>> = Default::default();
    for e in events.into_iter().filter(|e| e["ph"] == "X") {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        threads
            .entry((e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()))
            .or_default()
            .push((ts, ts + dur));
    }
    for (thread, mut list) in threads {
        list.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let mut open: Vec<f64> = Vec::new();
        for (s, e) in list {
            while open.last().is_some_and(|&end| end <= s) {
                open.pop();
            }
            assert!(
                open.last().is_none_or(|&end| e <= end),
                "{thread:?}: {s}..{e} crosses its enclosing event"
            );
            open.push(e);
        }
    }
}
