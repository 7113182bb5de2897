//! `lens spool replay DIR --config FILE`: a job that ended during an outage left its spool;
//! the command sends it through the config's exporter once the collector is back (exit 1 and
//! nothing lost while it is not).

use std::time::Duration;

use lens::Telemetry;
use lens::config::{OtlpExporterSpec, OtlpProtocol};
use lens::opentelemetry::trace::{Span, Tracer};
use lens_test_support::collector::Collector;
use lens_test_support::pipeline::{LocalInstall, otlp_spec, spool_in, traces_to};

fn replay(dir: &std::path::Path, config: &std::path::Path) -> (i32, String) {
    let out = crate::lens()
        .args(["spool", "replay"])
        .arg(dir)
        .arg("--config")
        .arg(config)
        .args(["--timeout-s", "3"])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn a_spool_left_by_a_job_is_sent_by_lens_spool_replay_once_the_collector_is_back() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let mut collector = Collector::start_quiet();
    let endpoint = collector.endpoint(OtlpProtocol::HttpProtobuf, lens::Signal::Traces);
    collector.kill();
    // The job: 300 spans while the collector is down.
    let spec = OtlpExporterSpec {
        name: Some("acme".into()),
        timeout_ms: Some(500),
        spool: Some(spool_in(&spool)),
        ..otlp_spec(OtlpProtocol::HttpProtobuf, endpoint.clone())
    };
    let config = traces_to(spec);
    let job = Telemetry::builder(config).rank(0).world_size(1).local();
    let tracer = job.tracer("trainer");
    (0..300).for_each(|_| tracer.start("step").end());
    let _ = job.shutdown(Duration::from_secs(5));
    assert_eq!(job.stats().exporters[0].in_spool, 300);
    drop(job);

    let file = dir.path().join("lens.toml");
    std::fs::write(
        &file,
        format!(
            "enabled = true\nmetrics_enabled = false\n\n[[traces.exporters]]\nkind = \"otlp\"\n\
             name = \"acme\"\nprotocol = \"http/protobuf\"\nendpoint = \"{endpoint}\"\n\
             timeout_ms = 500\nspool = {{ dir = \"somewhere/else\" }}\n"
        ),
    )
    .unwrap();
    // A config without a spooling entry for the spool's signal is bad input, named.
    let bare = dir.path().join("bare.toml");
    std::fs::write(&bare, "enabled = true\n").unwrap();
    let (code, said) = replay(&spool, &bare);
    assert_eq!(code, 2, "{said}");
    assert!(
        said.contains("the config has no traces exporter with a `spool`"),
        "{said}"
    );
    // Still down: nothing is lost, and the command says so.
    let (code, said) = replay(&spool, &file);
    assert_eq!(code, 1, "{said}");
    assert!(
        said.contains("0 spans replayed, 300 still spooled"),
        "{said}"
    );
    collector.restart();
    let (code, said) = replay(&spool, &file);
    assert_eq!(code, 0, "{said}");
    assert!(
        said.trim_end().ends_with(&format!(
            "{}: 300 spans replayed, 0 still spooled",
            spool.display()
        )),
        "{said}"
    );
    let out = collector.wait_for("the replayed spans", |o| Collector::spans_counted(o) >= 300);
    assert_eq!(Collector::spans_counted(&out), 300);
    // Sent: the spool is empty, and a second replay has nothing to do.
    let (code, said) = replay(&spool, &file);
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("0 items replayed, 0 still spooled"), "{said}");
}

#[test]
fn a_metric_spool_left_by_a_job_is_sent_by_lens_spool_replay() {
    use lens::config::{ExporterSpec, SignalConfig};
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let mut collector = Collector::start_quiet();
    let endpoint = collector.endpoint(OtlpProtocol::HttpProtobuf, lens::Signal::Metrics);
    collector.kill();
    let spec = OtlpExporterSpec {
        name: Some("acme".into()),
        timeout_ms: Some(300),
        spool: Some(spool_in(&spool)),
        ..otlp_spec(OtlpProtocol::HttpProtobuf, endpoint.clone())
    };
    let config = lens::LensConfig {
        traces_enabled: false,
        metrics_enabled: true,
        metric_export_interval_ms: 100,
        exporter: "none".into(),
        metrics: SignalConfig {
            exporters: vec![ExporterSpec::Otlp(spec)],
            processors: Vec::new(),
        },
        ..lens_test_support::pipeline::exporting()
    };
    let job = Telemetry::builder(config).rank(0).world_size(1).local();
    let steps = job.meter("trainer").u64_counter("train.steps").build();
    for _ in 0..50 {
        steps.add(1, &[]);
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = job.shutdown(Duration::from_secs(2));
    let left = job.stats().metric_exporters[0].in_spool;
    assert!(left > 0, "{:?}", job.stats().metric_exporters[0]);
    drop(job);

    let file = dir.path().join("lens.toml");
    std::fs::write(
        &file,
        format!(
            "enabled = true\n\n[[metrics.exporters]]\nkind = \"otlp\"\nname = \"acme\"\n\
             protocol = \"http/protobuf\"\nendpoint = \"{endpoint}\"\ntimeout_ms = 300\n\
             spool = {{ dir = \"somewhere/else\" }}\n"
        ),
    )
    .unwrap();
    collector.restart();
    let (code, said) = replay(&spool, &file);
    assert_eq!(code, 0, "{said}");
    assert!(
        said.contains(&format!("{left} data points replayed, 0 still spooled")),
        "{said}"
    );
}
