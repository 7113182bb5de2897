//! Section 1: the application thread's cost per span, against the raw SDK in the same run.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use lens::TelemetryHandle;
use lens::exporter::NoopSpanExporter;
use lens::opentelemetry::trace::{Tracer, TracerProvider};
use lens::opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use lens::trace::LensTracer;
use lens::trace::groups::group;

use crate::{Opts, Row, jsonl_spec, lens_rank, median, ns_per_span, one_span, wasm_config};

const GROUP: &str = "Application thread, ns per span (start, 4 attributes, end)";

/// A subject's name, one span on its tracer (every subject behind the same indirection), and
/// what drains its backlog after a measurement.
type Run<'a> = (&'static str, Box<dyn Fn(i64) + 'a>, Box<dyn Fn() + 'a>);

/// One span on `tracer`, boxed.
fn on<'a, T: Tracer + 'a>(tracer: T) -> Box<dyn Fn(i64) + 'a> {
    Box::new(move |i| one_span(&tracer, i))
}

/// One span of a span group on `tracer` (created, with its attributes, only when the group is
/// enabled), boxed.
fn in_group<'a>(tracer: LensTracer, group: &'static str) -> Box<dyn Fn(i64) + 'a> {
    Box::new(move |i| {
        tracer.in_group_span(group, "step", |cx| {
            if cx.is_some() {
                one_span(&tracer, i)
            }
        })
    })
}

/// The installations measured: the raw SDK baselines and Lens ranks of every kind.
struct Subjects {
    raw_noop: SdkTracerProvider,
    raw_off: SdkTracerProvider,
    with_wasm: TelemetryHandle,
    no_tracking: TelemetryHandle,
    sampled_out: TelemetryHandle,
    not_exporting: TelemetryHandle,
}

impl Subjects {
    fn new(builtin: &Path, dir: &Path) -> Self {
        let wasm = || wasm_config(jsonl_spec(builtin.to_path_buf(), dir));
        let mut sampled_out = wasm();
        sampled_out.sampler_enabled = true;
        sampled_out.export_sample_rate = 0.5; // rank 0 hashes to 0.785: dropped
        let sampled_out = lens_rank(sampled_out, 0, 8);
        assert!(!sampled_out.sampler_keeps());
        let mut not_exporting = wasm();
        not_exporting.export_strategy = "single_rank".into();
        not_exporting.export_rank = 0;
        let not_exporting = lens_rank(not_exporting, 1, 8);
        assert!(!not_exporting.is_exporting());
        let mut no_tracking = wasm();
        no_tracking.close_open_spans_on_shutdown = false;
        Self {
            raw_noop: SdkTracerProvider::builder()
                .with_batch_exporter(NoopSpanExporter)
                .build(),
            raw_off: SdkTracerProvider::builder()
                .with_sampler(Sampler::AlwaysOff)
                .build(),
            with_wasm: lens_rank(wasm(), 0, 1),
            no_tracking: lens_rank(no_tracking, 0, 1),
            sampled_out,
            not_exporting,
        }
    }

    /// Per subject, its tracer and what drains its backlog after a measurement.
    fn runs(&self) -> Vec<Run<'_>> {
        let flush = |h: &'static str, handle: &TelemetryHandle| {
            let tracer = handle.tracer("bench");
            let handle = handle.clone();
            let settle: Box<dyn Fn()> = Box::new(move || {
                let _ = handle.force_flush(Duration::from_secs(60));
            });
            (h, on(tracer), settle)
        };
        vec![
            (
                "raw_noop",
                on(self.raw_noop.tracer("bench")),
                Box::new(|| {
                    let _ = self.raw_noop.force_flush();
                }),
            ),
            flush("wasm", &self.with_wasm),
            flush("untracked", &self.no_tracking),
            ("raw_off", on(self.raw_off.tracer("bench")), Box::new(|| ())),
            (
                "sampled",
                on(self.sampled_out.tracer("bench")),
                Box::new(|| ()),
            ),
            (
                "off",
                on(self.not_exporting.tracer("bench")),
                Box::new(|| ()),
            ),
            // `step` is not in the default groups: nothing is created.
            (
                "group_off",
                in_group(self.with_wasm.tracer("bench"), group::STEP),
                Box::new(|| ()),
            ),
        ]
    }
}

/// Measures every subject `runs` times, interleaved; returns the spans the wasm rank's queue
/// dropped.
pub fn app_thread(opts: &Opts, builtin: &Path, dir: &Path, rows: &mut Vec<Row>) -> u64 {
    let n = if opts.quick { 20_000 } else { 200_000 };
    let subjects = Subjects::new(builtin, dir);
    let mut samples: HashMap<&str, Vec<f64>> = HashMap::new();
    let runs = subjects.runs();
    for _ in 0..9 {
        for (key, span, settle) in &runs {
            samples.entry(key).or_default().push(ns_per_span(n, span));
            // Whatever the exporter still has queued is drained outside the clock, so that it
            // does not compete for the 2 cores with the next measurement.
            settle();
        }
    }
    drop(runs);
    let m = |k: &str| median(samples[k].clone());
    let row = |name: &str, key: &str, base: Option<(&str, &'static str)>| Row {
        group: GROUP,
        name: name.into(),
        value: m(key),
        unit: "ns",
        ratio: base.map(|(b, what)| (m(key) / m(b), what)),
    };
    let vs_noop = Some(("raw_noop", "× raw SDK + no-op"));
    let vs_off = Some(("raw_off", "× raw AlwaysOff"));
    rows.extend([
        row("raw SDK + no-op exporter (baseline)", "raw_noop", None),
        row(
            "Lens rank with the wasm JSON-lines exporter",
            "wasm",
            vs_noop,
        ),
        row(
            "the same, without tracking open spans (`close_open_spans_on_shutdown = false`)",
            "untracked",
            vs_noop,
        ),
        row("raw SDK AlwaysOff (baseline)", "raw_off", None),
        row(
            "Lens rank dropped by the rank-aware sampler",
            "sampled",
            vs_off,
        ),
        row("Lens non-exporting rank (no-op providers)", "off", vs_off),
        row(
            "Lens exporting rank, a span of a disabled span group (`in_group_span`)",
            "group_off",
            vs_off,
        ),
    ]);
    let dropped = subjects.with_wasm.stats().exporters[0].dropped_queue_full;
    for h in [
        &subjects.with_wasm,
        &subjects.no_tracking,
        &subjects.sampled_out,
        &subjects.not_exporting,
    ] {
        let _ = h.shutdown(Duration::from_secs(60));
    }
    let _ = subjects.raw_noop.shutdown();
    dropped
}
