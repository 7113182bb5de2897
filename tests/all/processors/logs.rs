//! Log processors (`[[logs.processors]]`): their edits against native references on records
//! the SDK made (attributes removed and set, event name, body, drops), the answers the host
//! refuses for log records, and the accounting of a rank's log exporters.

use std::collections::HashMap;

use lens::config::{ExporterSpec, OnFault, SignalConfig};
use lens::opentelemetry::Key;
use lens::opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, Severity};
use lens::opentelemetry_sdk::Resource;
use lens::opentelemetry_sdk::logs::SdkLogRecord;
use lens::testing::{LogRecords, record_logs};
use lens::wasm::{GuestOutputCopy, Signal, WasmProcessor};
use lens::{LensConfig, Telemetry};
use lens_test_support::pipeline::{T, exporting};

use super::processor;

fn build(mode: &str, extra: &[(&str, &str)], on_fault: OnFault) -> WasmProcessor {
    let spec = processor(mode, mode, extra, on_fault);
    let resource = Resource::builder_empty().build();
    WasmProcessor::from_config_with_output(
        mode,
        &spec,
        Signal::Logs,
        &resource,
        GuestOutputCopy::None,
    )
    .unwrap()
    .0
}

/// `n` records: every third `DEBUG`, every second holding a `user.email`.
fn records(n: usize) -> LogRecords {
    record_logs(|logger| {
        for i in 0..n {
            let mut r = logger.create_log_record();
            let (text, number) = if i % 3 == 0 {
                ("DEBUG", Severity::Debug)
            } else {
                ("INFO", Severity::Info)
            };
            r.set_severity_text(text);
            r.set_severity_number(number);
            r.set_body(AnyValue::String(format!("record {i}").into()));
            r.add_attribute("i", i as i64);
            if i % 2 == 0 {
                r.add_attribute("user.email", format!("user{i}@example.com"));
            }
            logger.emit(r);
        }
    })
}

fn attributes(r: &SdkLogRecord) -> Vec<(Key, AnyValue)> {
    r.attributes_iter().cloned().collect()
}

/// Checks `out` against the native reference of a redaction of `key`: the attribute removed
/// from each record holding it, which gets `lens.redacted = true`; every other field its own.
fn assert_redacted(out: &LogRecords, batch: &LogRecords, key: &str) {
    assert_eq!(out.len(), batch.len());
    for ((r, scope), (original, original_scope)) in out.iter().zip(batch) {
        assert_eq!(scope, original_scope);
        let mut expected: Vec<(Key, AnyValue)> = attributes(original)
            .into_iter()
            .filter(|(k, _)| k.as_str() != key)
            .collect();
        if expected.len() != attributes(original).len() {
            expected.push((Key::from("lens.redacted"), AnyValue::Boolean(true)));
        }
        assert_eq!(attributes(r), expected);
        assert_eq!(r.body(), original.body());
        assert_eq!(r.severity_text(), original.severity_text());
        assert_eq!(r.severity_number(), original.severity_number());
        assert_eq!(r.timestamp(), original.timestamp());
        assert_eq!(r.observed_timestamp(), original.observed_timestamp());
    }
}

#[test]
fn the_example_redaction_processor_serves_log_records_too() {
    let spec = lens::config::ProcessorSpec::Wasm(lens::config::WasmProcessorSpec {
        component: lens::config::WasmExporterSpec {
            path: lens_test_support::dist("rust-redact.wasm"),
            settings: [("keys".to_string(), "user.email".to_string())].into(),
            ..Default::default()
        },
        ..Default::default()
    });
    let resource = Resource::builder_empty().build();
    let none = GuestOutputCopy::None;
    let (p, _) =
        WasmProcessor::from_config_with_output("redact", &spec, Signal::Logs, &resource, none)
            .unwrap();
    let batch = records(12);
    let (out, counts) = p.process_logs(batch.clone());
    assert_eq!(counts.faults, 0);
    assert_redacted(&out, &batch, "user.email");
}

#[test]
fn redaction_and_a_severity_filter_match_native_references() {
    let batch = records(12);
    let (out, counts) =
        build("redact", &[("keys", "user.email")], OnFault::Drop).process_logs(batch.clone());
    assert_eq!((counts.dropped, counts.faults), (0, 0));
    assert_redacted(&out, &batch, "user.email");
    let (out, counts) =
        build("filter", &[("names", "DEBUG")], OnFault::Pass).process_logs(batch.clone());
    assert_eq!((counts.dropped, counts.faults), (4, 0));
    let expected: LogRecords = batch
        .into_iter()
        .filter(|(r, _)| r.severity_text() != Some("DEBUG"))
        .collect();
    assert_eq!(out, expected);
}

#[test]
fn event_names_bodies_and_attributes_are_rewritten_as_stated() {
    let batch = records(4);
    let (out, _) = build("rewrite", &[], OnFault::Pass).process_logs(batch.clone());
    for (i, ((r, _), (original, _))) in out.iter().zip(&batch).enumerate() {
        assert_eq!(r.event_name(), Some("lens.event"));
        let body = if i % 2 == 1 {
            AnyValue::String("[redacted]".into())
        } else {
            original.body().unwrap().clone()
        };
        assert_eq!(r.body(), Some(&body));
        let index = attributes(r)
            .into_iter()
            .find(|(k, _)| k.as_str() == "index");
        assert_eq!(index, Some((Key::from("index"), AnyValue::Int(i as i64))));
    }
}

#[test]
fn a_log_processor_that_faults_passes_the_batch_on_or_drops_it() {
    for mode in ["set-status", "out-of-range", "trap", "error"] {
        for (on_fault, left) in [(OnFault::Pass, 6), (OnFault::Drop, 0)] {
            let p = build(mode, &[], on_fault);
            let batch = records(6);
            let (out, counts) = p.process_logs(batch.clone());
            assert_eq!((out.len(), counts.faults), (left, 6), "{mode}");
            if left == 6 {
                assert_eq!(out, batch, "{mode}: passed on unprocessed");
            }
            let stats = p.stats().snapshot();
            assert_eq!(stats.received, stats.exported + stats.dropped(), "{mode}");
        }
    }
}

#[test]
fn a_rank_s_log_exporters_count_what_the_processors_dropped() {
    let config = LensConfig {
        run_id: "log-processors".into(),
        logs_enabled: true,
        metrics_enabled: false,
        logs: SignalConfig {
            exporters: vec![
                ExporterSpec::None(lens::config::NoneExporterSpec {
                    name: Some("vendor".into()),
                }),
                ExporterSpec::None(lens::config::NoneExporterSpec {
                    name: Some("local".into()),
                }),
            ],
            processors: vec![{
                let mut p = processor("quiet", "filter", &[("names", "DEBUG")], OnFault::Pass);
                let lens::config::ProcessorSpec::Wasm(w) = &mut p else {
                    unreachable!()
                };
                w.exporters = vec!["vendor".into()];
                p
            }],
        },
        ..exporting()
    };
    let handle = Telemetry::builder(config)
        .env(HashMap::<String, String>::new())
        .install_global(false)
        .install()
        .unwrap();
    super::log_every_third_debug(&handle, 30);
    handle.force_flush(T).unwrap();
    let stats = handle.stats();
    let vendor = stats.log_exporter("vendor").unwrap();
    let local = stats.log_exporter("local").unwrap();
    assert_eq!(
        (vendor.received, vendor.exported, vendor.dropped_processor),
        (30, 20, 10)
    );
    assert_eq!(vendor.processors["quiet"].dropped, 10);
    assert_eq!(
        (local.received, local.exported, local.dropped_processor),
        (30, 30, 0)
    );
    let quiet = stats.log_processor("quiet").unwrap();
    assert_eq!((quiet.received, quiet.dropped_processor), (30, 10));
    handle.shutdown(T).unwrap();
}

#[test]
fn the_example_filters_drop_log_records_by_event_name() {
    let batch = record_logs(|logger| {
        for (i, name) in ["step", "noise", "step", "noise.detail"]
            .into_iter()
            .enumerate()
        {
            let mut r = logger.create_log_record();
            r.set_event_name(name);
            r.add_attribute("i", i as i64);
            logger.emit(r);
        }
    });
    let expected: LogRecords = batch
        .iter()
        .filter(|(r, _)| r.event_name() == Some("step"))
        .cloned()
        .collect();
    for file in ["rust-filter.wasm", "js-filter.wasm"] {
        let spec = lens::config::ProcessorSpec::Wasm(lens::config::WasmProcessorSpec {
            component: lens::config::WasmExporterSpec {
                path: lens_test_support::dist(file),
                settings: [("names", "noise"), ("prefixes", "noise.")]
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .into(),
                ..Default::default()
            },
            ..Default::default()
        });
        let resource = Resource::builder_empty().build();
        let none = GuestOutputCopy::None;
        let (p, _) =
            WasmProcessor::from_config_with_output(file, &spec, Signal::Logs, &resource, none)
                .unwrap();
        let (out, counts) = p.process_logs(batch.clone());
        assert_eq!((counts.dropped, counts.faults), (2, 0), "{file}");
        assert_eq!(out, expected, "{file}");
    }
}

#[test]
fn processors_in_a_row_say_which_records_are_left() {
    let batch = records(12);
    let processors = [
        std::sync::Arc::new(build("filter", &[("names", "DEBUG")], OnFault::Pass)),
        std::sync::Arc::new(build("redact", &[("keys", "user.email")], OnFault::Pass)),
    ];
    let (out, done) = lens::wasm::processors::run_log_processors(&processors, batch.clone());
    // Every third record is a DEBUG one.
    let expected: Vec<usize> = (0..12).filter(|i| i % 3 != 0).collect();
    assert_eq!(done.kept, expected);
    assert_eq!(out.len(), expected.len());
    for (&i, (r, _)) in expected.iter().zip(&out) {
        assert_eq!(r.body(), batch[i].0.body(), "record {i}");
    }
}

#[test]
fn a_reload_removes_and_adds_log_processors_with_exact_counts() {
    let none = |name: &str| {
        ExporterSpec::None(lens::config::NoneExporterSpec {
            name: Some(name.into()),
        })
    };
    let quiet = || processor("quiet", "filter", &[("names", "DEBUG")], OnFault::Pass);
    let config = |processors| LensConfig {
        metrics_enabled: false,
        traces_enabled: false,
        logs_enabled: true,
        logs: SignalConfig {
            exporters: vec![none("vendor"), none("local")],
            processors,
        },
        ..exporting()
    };
    let only_vendor = {
        let mut p = quiet();
        let lens::config::ProcessorSpec::Wasm(w) = &mut p else {
            unreachable!()
        };
        w.exporters = vec!["vendor".into()];
        p
    };
    use lens_test_support::pipeline::LocalInstall;
    let handle = Telemetry::builder(config(vec![only_vendor])).local();
    super::log_every_third_debug(&handle, 30);
    handle.force_flush(T).unwrap();
    // Removed: every record reaches both.
    let report = handle.reload_exporters(&config(vec![])).unwrap();
    assert_eq!(report.processors, [Signal::Logs], "{report:?}");
    super::log_every_third_debug(&handle, 30);
    handle.force_flush(T).unwrap();
    // Added for both.
    handle.reload_exporters(&config(vec![quiet()])).unwrap();
    super::log_every_third_debug(&handle, 30);
    handle.shutdown(T).unwrap();
    let stats = handle.stats();
    let count = |name: &str| {
        let e = stats.log_exporter(name).unwrap();
        (e.received, e.exported, e.dropped_processor)
    };
    assert_eq!(count("vendor"), (90, 70, 20));
    assert_eq!(count("local"), (90, 80, 10));
    // Counted on under its name: 30 records, then 30 for each exporter.
    let quiet = stats.log_processor("quiet").unwrap();
    assert_eq!(
        (quiet.received, quiet.dropped_processor),
        (90, 30),
        "{quiet:?}"
    );
}
