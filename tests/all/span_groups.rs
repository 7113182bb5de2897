//! Span groups: a span of a disabled group is never created; an exporting rank records the
//! config's groups, a quiet one none; a bad spec fails setup on an exporting rank only, naming
//! its variable; a global installation sets the process's groups.

use lens::opentelemetry::KeyValue;
use lens::opentelemetry::trace::{Span as _, TraceContextExt as _};
use lens::opentelemetry_sdk::trace::InMemorySpanExporter;
use lens::trace::groups::group;
use lens::trace::{SpanGroups, is_span_group_enabled};
use lens::{LensConfig, Telemetry};
use lens_test_support::pipeline::{LocalInstall, T, exporting};

fn install(span_groups: &str, memory: &InMemorySpanExporter) -> lens::TelemetryHandle {
    Telemetry::builder(LensConfig {
        span_groups: span_groups.into(),
        exporter: "none".into(),
        ..exporting()
    })
    .rank(0)
    .world_size(1)
    .span_exporter(memory.clone())
    .local()
}

fn names(memory: &InMemorySpanExporter) -> Vec<String> {
    let mut n: Vec<String> = memory
        .get_finished_spans()
        .unwrap()
        .iter()
        .map(|s| s.name.to_string())
        .collect();
    n.sort();
    n
}

#[test]
fn only_spans_of_enabled_groups_are_created() {
    for (spec, expected) in [
        ("default", vec!["job", "save"]),
        ("per_step", vec!["fb", "job", "save", "step"]),
        ("job", vec!["job"]),
        ("", vec![]),
    ] {
        let memory = InMemorySpanExporter::default();
        let handle = install(spec, &memory);
        let tracer = handle.tracer("trainer");
        tracer.in_group_span(group::JOB, "job", |job| {
            tracer.in_group_span(group::STEP, "step", |step| {
                if let Some(cx) = step {
                    cx.span().set_attribute(KeyValue::new("step", 1));
                }
                let fb = tracer.group_span(group::FORWARD_BACKWARD, "fb");
                assert_eq!(
                    fb.is_some(),
                    tracer.is_span_group_enabled("forward_backward")
                );
                if let Some(mut fb) = fb {
                    fb.end();
                }
            });
            tracer.in_group_span(group::CHECKPOINT, "save", |_| {});
            assert_eq!(job.is_some(), !spec.is_empty());
        });
        handle.force_flush(T).unwrap();
        assert_eq!(names(&memory), expected, "span_groups = {spec:?}");
        assert_eq!(
            handle.tracer_provider().span_groups(),
            &SpanGroups::resolve(spec).unwrap()
        );
        handle.shutdown(T).unwrap();
    }
}

#[test]
fn a_quiet_rank_records_no_group_and_does_not_check_the_spec() {
    let handle = Telemetry::builder(LensConfig {
        span_groups: "bogus".into(),
        export_strategy: "single_rank".into(),
        ..exporting()
    })
    .rank(0)
    .world_size(4)
    .local();
    assert!(!handle.is_exporting());
    assert_eq!(handle.tracer_provider().span_groups(), &SpanGroups::none());
    assert!(!handle.tracer("t").is_span_group_enabled(group::JOB));
}

#[test]
fn a_bad_spec_fails_an_exporting_rank_naming_its_variable() {
    let env: std::collections::HashMap<String, String> = [(
        "NEMO_LENS_SPAN_GROUPS".to_string(),
        "default,warmup".to_string(),
    )]
    .into();
    let mut config = LensConfig {
        exporter: "none".into(),
        ..exporting()
    };
    config.apply_env(&env).unwrap();
    let err = Telemetry::builder(config)
        .rank(0)
        .world_size(1)
        .env(env)
        .install_global(false)
        .install()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid config from environment variable NEMO_LENS_SPAN_GROUPS: `span_groups`: Unknown \
         span group or preset: 'warmup'. Valid options: ['all', 'checkpoint', 'default', \
         'evaluate', 'forward_backward', 'job', 'load_checkpoint', 'model_init', 'optimizer', \
         'per_step', 'step']"
    );
}

#[test]
fn a_global_installation_sets_the_process_groups() {
    // Process-wide state: its own process.
    lens_test_support::isolated(|| {
        assert!(
            !is_span_group_enabled(group::JOB),
            "nothing before any setup"
        );
        let handle = Telemetry::builder(LensConfig {
            span_groups: "per_step".into(),
            exporter: "none".into(),
            ..exporting()
        })
        .rank(0)
        .world_size(1)
        .env(std::collections::HashMap::<String, String>::new())
        .install()
        .unwrap();
        assert!(is_span_group_enabled(group::OPTIMIZER));
        assert!(!is_span_group_enabled("warmup"));
        handle.shutdown(T).unwrap();
    });
}
