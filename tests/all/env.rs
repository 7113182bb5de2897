//! The environment: rank detection from launchers, strict booleans, `LENS_*`/`NEMO_LENS_*` and
//! `OTEL_*` overrides, errors naming the variable, and the resource built from it.

use std::collections::HashMap;

use lens::config::env::{EnvPrefix, parse_bool};
use lens::opentelemetry::{KeyValue, Value};
use lens::{LensConfig, RankInfo, Telemetry};
use lens_test_support::pipeline::{LocalInstall, T, attr, config, no_env};

#[test]
fn rank_detection_from_launcher_environment() {
    let torchrun = [("RANK", "5"), ("WORLD_SIZE", "8"), ("LOCAL_RANK", "1")];
    assert_eq!(
        RankInfo::detect(None, None, &torchrun).unwrap(),
        RankInfo {
            rank: 5,
            world_size: 8,
            local_rank: 1
        }
    );
    let slurm = [
        ("SLURM_PROCID", "9"),
        ("SLURM_NTASKS", "16"),
        ("LOCAL_RANK", "3"),
    ];
    assert_eq!(
        RankInfo::detect(None, None, &slurm).unwrap(),
        RankInfo {
            rank: 9,
            world_size: 16,
            local_rank: 3
        }
    );
    assert_eq!(RankInfo::detect(Some(2), Some(4), &slurm).unwrap().rank, 2);
    assert_eq!(
        RankInfo::detect(None, None, &[("A", "b")]).unwrap(),
        RankInfo {
            rank: 0,
            world_size: 1,
            local_rank: 0
        }
    );
    let bad = RankInfo::detect(None, None, &[("RANK", "x")]).unwrap_err();
    assert_eq!(
        bad.to_string(),
        "invalid environment variable RANK=\"x\": expected a non-negative integer"
    );
    // Accepted with a warning, as NeMo Lens accepts it.
    let outside = RankInfo::detect(None, None, &[("RANK", "8"), ("WORLD_SIZE", "8")]).unwrap();
    assert_eq!(
        outside.check().unwrap_err().to_string(),
        "rank 8 is outside world_size 8"
    );
    // The local rank is LOCAL_RANK only (NeMo Lens does not read SLURM_LOCALID).
    let srun = [("SLURM_PROCID", "9"), ("SLURM_LOCALID", "3")];
    assert_eq!(
        RankInfo::detect(None, Some(16), &srun).unwrap().local_rank,
        0
    );
    assert_eq!(
        lens::rank::local_rank_from_env(&[("LOCAL_RANK", " ٣ ")]).unwrap(),
        3
    );
    assert_eq!(
        lens::rank::local_rank_from_env(&[("LOCAL_RANK", "")])
            .unwrap_err()
            .to_string(),
        "invalid environment variable LOCAL_RANK=\"\": expected an integer"
    );
}

#[test]
fn strict_booleans() {
    for t in ["1", "true", "YES", "On"] {
        assert_eq!(parse_bool(t), Some(true), "{t}");
    }
    for f in ["0", "false", "no", "OFF"] {
        assert_eq!(parse_bool(f), Some(false), "{f}");
    }
    for bad in ["", "2", "y", "enabled"] {
        assert_eq!(parse_bool(bad), None, "{bad}");
    }
}

#[test]
fn environment_overrides_with_fallback_prefix() {
    let env: HashMap<String, String> = [
        ("LENS_EXPORT_STRATEGY", "sampled"),
        ("NEMO_LENS_EXPORT_SAMPLE_RATE", "0.5"),
        ("NEMO_LENS_SAMPLER_ENABLED", "yes"),
        ("NEMO_LENS_METRICS_ENABLED", " OFF\t"), // NeMo Lens's prefix first, stripped
        ("LENS_METRICS_ENABLED", "on"),
        ("NEMO_LENS_TRACES_ENABLED", "  "), // empty after stripping: unset, LENS_ is read
        ("LENS_TRACES_ENABLED", "no"),
        ("OTEL_SERVICE_NAME", "from-otel"),
        ("OTEL_BSP_MAX_QUEUE_SIZE", "4096"),
        ("OTEL_BSP_SCHEDULE_DELAY", "250"),
        ("OTEL_BSP_MAX_CONCURRENT_EXPORTS", "2"),
        ("OTEL_BLRP_SCHEDULE_DELAY", "50"),
        ("OTEL_BLRP_MAX_QUEUE_SIZE", "128"),
        ("OTEL_BLRP_MAX_EXPORT_BATCH_SIZE", "64"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "2000"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=secret,x-team=ml"),
        ("LENS_RUN_ID", "job-7"),
        ("LENS_WASM_CACHE", "off"),
        ("LENS_WASM_CACHE_DIR", "/scratch/cache"),
        ("LENS_WASM_CACHE_MAX_MB", "512"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let mut cfg = LensConfig::default();
    cfg.apply_env(&env).unwrap();
    assert_eq!(cfg.export_strategy, "sampled");
    assert_eq!(cfg.export_sample_rate, 0.5);
    assert!(cfg.sampler_enabled);
    assert!(!cfg.metrics_enabled);
    assert!(!cfg.traces_enabled);
    assert_eq!(cfg.service_name, "from-otel");
    assert_eq!(cfg.batch.max_queue_size, 4096);
    assert_eq!(cfg.batch.scheduled_delay_ms, 250);
    assert_eq!(cfg.batch.max_concurrent_exports, 2);
    // The log signal's batch settings, apart from the spans'.
    assert_eq!(
        (
            cfg.log_batch.scheduled_delay_ms,
            cfg.log_batch.max_queue_size,
            cfg.log_batch.max_export_batch_size,
            cfg.log_batch.max_concurrent_exports
        ),
        (50, 128, 64, 1)
    );
    assert_eq!(cfg.metric_export_interval_ms, 2000);
    assert_eq!(
        cfg.otlp.protocol,
        Some(lens::config::OtlpProtocol::HttpProtobuf)
    );
    assert_eq!(
        cfg.otlp.headers.get("api-key").map(|s| s.expose()),
        Some("secret")
    );
    assert_eq!(cfg.run_id, "job-7");
    assert_eq!(
        cfg.wasm_cache,
        lens::config::WasmCacheConfig {
            enabled: false,
            dir: Some("/scratch/cache".into()),
            max_mb: 512,
        }
    );
}

#[test]
fn environment_errors_name_the_variable() {
    let cases = [
        (
            ("LENS_SAMPLER_ENABLED", "maybe"),
            "invalid environment variable LENS_SAMPLER_ENABLED=\"maybe\": expected one of 1/true/yes/on or 0/false/no/off",
        ),
        (
            ("NEMO_LENS_EXPORT_RANK", "last"),
            "invalid environment variable NEMO_LENS_EXPORT_RANK=\"last\": expected an integer",
        ),
        (
            ("LENS_EXPORT_SAMPLE_RATE", "1.5"),
            "invalid environment variable LENS_EXPORT_SAMPLE_RATE=\"1.5\": expected a number between 0 and 1",
        ),
        (
            ("OTEL_BSP_MAX_QUEUE_SIZE", "big"),
            "invalid environment variable OTEL_BSP_MAX_QUEUE_SIZE=\"big\": expected a positive whole number",
        ),
        (
            ("OTEL_BSP_MAX_CONCURRENT_EXPORTS", "100"),
            "invalid config <config>: `batch`: max_concurrent_exports (100) must be between 1 and 64",
        ),
        (
            ("LENS_WASM_CACHE", "maybe"),
            "invalid environment variable LENS_WASM_CACHE=\"maybe\": expected one of 1/true/yes/on or 0/false/no/off",
        ),
        (
            ("LENS_WASM_CACHE_MAX_MB", "lots"),
            "invalid environment variable LENS_WASM_CACHE_MAX_MB=\"lots\": expected a whole number of MiB, at least 1",
        ),
        (
            ("LENS_WASM_CACHE_MAX_MB", "0"),
            "invalid environment variable LENS_WASM_CACHE_MAX_MB=\"0\": expected a whole number of MiB, at least 1",
        ),
    ];
    for ((k, v), expected) in cases {
        let mut cfg = LensConfig::default();
        let err = cfg.apply_env(&[(k, v)]).unwrap_err();
        assert_eq!(err.to_string(), expected);
    }
}

#[test]
fn resource_has_slurm_kubernetes_caller_and_otel_attributes() {
    let env = [
        ("SLURM_JOB_ID", "777"),
        ("SLURM_JOB_NAME", "llama"),
        ("SLURM_NNODES", "4"),
        ("SLURM_PARTITION", ""), // empty: left out
        ("KUBERNETES_SERVICE_HOST", "10.0.0.1"),
        ("K8S_POD_NAME", "trainer-0"),
        ("K8S_NAMESPACE", "ml"),
        ("HOSTNAME", "not-the-pod-name"),
        ("CUDA_VISIBLE_DEVICES", "0,1,2"),
        ("WANDB_PROJECT", "proj"),
        (
            "OTEL_RESOURCE_ATTRIBUTES",
            "deployment.environment=prod,team=from%20env,dl.rank=99,broken,service.name=x",
        ),
    ];
    let mut cfg = config("none");
    cfg.run_id = String::new();
    cfg.user = "alice".into();
    cfg.apply_env(&env).unwrap();
    let handle = Telemetry::builder(cfg)
        .rank(1)
        .world_size(2)
        .resource_attributes([
            KeyValue::new("team", "from-caller"),
            KeyValue::new("owner", "me"),
            KeyValue::new("host.gpu.count", 99), // detected values win over the caller's
        ])
        .env(env)
        .install_global(false)
        .install()
        .unwrap();
    let r = handle.resource();
    let get = |k: &str| r.get(&lens::opentelemetry::Key::from(k.to_string()));
    assert_eq!(
        handle.run_id(),
        "777",
        "empty run_id falls back to SLURM_JOB_ID"
    );
    assert_eq!(get("nemo.run.id"), Some(Value::from("777")));
    assert_eq!(get("dl.run_id"), None);
    assert_eq!(get("service.instance.id"), Some(Value::from("777-rank1")));
    assert_eq!(get("nemo.user.id"), Some(Value::from("alice")));
    assert_eq!(get("wandb.project"), Some(Value::from("proj")));
    assert_eq!(get("wandb.entity"), None);
    assert_eq!(get("slurm.job.id"), Some(Value::from("777")));
    assert_eq!(get("slurm.job.name"), Some(Value::from("llama")));
    assert_eq!(get("slurm.nnodes"), Some(Value::from("4")));
    assert_eq!(get("slurm.partition"), None);
    assert_eq!(get("k8s.pod.name"), Some(Value::from("trainer-0")));
    assert_eq!(get("k8s.namespace.name"), Some(Value::from("ml")));
    assert_eq!(get("host.gpu.count"), Some(Value::from(3)));
    assert_eq!(get("owner"), Some(Value::from("me")));
    assert_eq!(
        get("team"),
        Some(Value::from("from-caller")),
        "the caller's attributes win over OTEL_RESOURCE_ATTRIBUTES"
    );
    assert_eq!(
        get("dl.rank"),
        Some(Value::from(1)),
        "OTEL_RESOURCE_ATTRIBUTES never renames a rank"
    );
    assert_eq!(get("service.name"), Some(Value::from("nemo")));
    assert_eq!(
        get("deployment.environment"),
        Some(Value::from("prod")),
        "OTEL_RESOURCE_ATTRIBUTES fills what the setup leaves out"
    );
    let _ = attr(r.iter(), "dl.rank").expect("dl.rank");
    handle.shutdown(T).unwrap();

    // Without SLURM, an empty run id becomes 12 random hex digits.
    let handle = Telemetry::builder(config("none"))
        .env(no_env())
        .install_global(false);
    let handle = handle.install().unwrap();
    assert_eq!(handle.run_id(), "run42");
    let mut cfg = config("none");
    cfg.run_id.clear();
    let h = Telemetry::builder(cfg).local();
    assert_eq!(h.run_id().len(), 12);
    assert!(h.run_id().chars().all(|c| c.is_ascii_hexdigit()));
}

#[test]
fn a_library_prefix_is_read_before_nemo_lens_and_lens() {
    let env = [
        ("MEGATRON_OTEL_EXPORT_STRATEGY", " all_ranks "),
        ("NEMO_LENS_EXPORT_STRATEGY", "sampled"),
        ("MEGATRON_OTEL_RUN_ID", ""),
        ("NEMO_LENS_RUN_ID", "from-nemo"),
        ("LENS_RUN_ID", "from-lens"),
        ("LENS_USER_ID", "bob"),
        ("NEMO_LENS_SPAN_GROUPS", "training,data"),
        ("NEMO_LENS_LOGS_ENABLED", "TRUE"),
        ("NEMO_LENS_EXPORT_RANK", " -3 "),
        ("NEMO_LENS_EXPORT_SAMPLE_RATE", "2.5e-1"),
    ];
    let mut cfg = LensConfig::default();
    cfg.apply_env_with_prefix(&env, &EnvPrefix::library("MEGATRON_OTEL"))
        .unwrap();
    assert_eq!(cfg.export_strategy, "all_ranks");
    assert_eq!(cfg.run_id, "from-nemo", "empty counts as unset");
    assert_eq!(cfg.user, "bob");
    assert_eq!(cfg.span_groups, "training,data");
    assert!(cfg.logs_enabled);
    assert_eq!(cfg.export_rank, -3);
    assert_eq!(cfg.export_sample_rate, 0.25);
    // Without the library prefix, NeMo Lens's own.
    let mut cfg = LensConfig::default();
    cfg.apply_env(&env).unwrap();
    assert_eq!(cfg.export_strategy, "sampled");
}

#[test]
fn an_unknown_exporter_fails_only_the_ranks_that_build_it() {
    let env = [("NEMO_LENS_EXPORTER", "zipkin"), ("NEMO_LENS_ENABLED", "1")];
    let mut cfg = LensConfig::default(); // single_rank: the last rank exports
    cfg.apply_env(&env).unwrap();
    let setup = |rank: u32| {
        Telemetry::builder(cfg.clone())
            .rank(rank)
            .world_size(4)
            .env(env)
            .install_global(false)
            .install()
    };
    let quiet = setup(0).unwrap();
    assert!(!quiet.is_exporting());
    let err = setup(3).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid config from environment variable NEMO_LENS_EXPORTER: `exporter`: unknown exporter `zipkin` (expected `otlp`, `console`, `none`, a path ending in `.wasm` or an `oci://` reference)"
    );
    // An injected exporter for each enabled signal: the shorthand is not built, not checked.
    let handle = Telemetry::builder(cfg.clone())
        .rank(3)
        .world_size(4)
        .env(env)
        .span_exporter(lens::testing::RecordingSpanExporter::default())
        .metric_reader(lens::InMemoryMetricReader::new())
        .install_global(false)
        .install()
        .unwrap();
    assert!(handle.is_exporting());
}

#[test]
fn otlp_protocols_are_read_per_signal_and_leniently() {
    use lens::Signal;
    use lens::config::OtlpProtocol::{Grpc, HttpProtobuf};
    use lens::config::env::otlp_protocol;
    let env = [
        ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "HTTP/JSON"),
        ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", ""),
        ("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "carrier-pigeon"),
    ];
    // http/json is sent as HTTP protobuf, as NeMo Lens's Python exporter does.
    assert_eq!(otlp_protocol(&env, None, Signal::Traces), HttpProtobuf);
    // Empty: the general setting, then gRPC.
    assert_eq!(
        otlp_protocol(&env, Some(HttpProtobuf), Signal::Metrics),
        HttpProtobuf
    );
    assert_eq!(otlp_protocol(&env, None, Signal::Metrics), Grpc);
    // Unknown: gRPC, with a warning.
    assert_eq!(otlp_protocol(&env, Some(HttpProtobuf), Signal::Logs), Grpc);
    let mut cfg = LensConfig::default();
    cfg.apply_env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")])
        .unwrap();
    assert_eq!(cfg.otlp.protocol, Some(HttpProtobuf));
}
