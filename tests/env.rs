//! The environment: rank detection from launchers, strict booleans, `LENS_*`/`NEMO_LENS_*` and
//! `OTEL_*` overrides, errors naming the variable, and the resource built from it.

use std::collections::HashMap;

use lens::config::env::parse_bool;
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
        ("SLURM_LOCALID", "3"),
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
    let outside = RankInfo::detect(None, None, &[("RANK", "8"), ("WORLD_SIZE", "8")]).unwrap_err();
    assert_eq!(
        outside.to_string(),
        "invalid rank: rank 8 is outside world_size 8"
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
        ("LENS_METRICS_ENABLED", "off"),
        ("NEMO_LENS_METRICS_ENABLED", "on"), // LENS_ wins
        ("OTEL_SERVICE_NAME", "from-otel"),
        ("OTEL_BSP_MAX_QUEUE_SIZE", "4096"),
        ("OTEL_BSP_SCHEDULE_DELAY", "250"),
        ("OTEL_BSP_MAX_CONCURRENT_EXPORTS", "2"),
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
    assert_eq!(cfg.service_name, "from-otel");
    assert_eq!(cfg.batch.max_queue_size, 4096);
    assert_eq!(cfg.batch.scheduled_delay_ms, 250);
    assert_eq!(cfg.batch.max_concurrent_exports, 2);
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
            "invalid environment variable NEMO_LENS_EXPORT_RANK=\"last\": expected an integer rank (-1 = last)",
        ),
        (
            ("LENS_EXPORT_SAMPLE_RATE", "1.5"),
            "invalid config <config>: `export_sample_rate`: 1.5 is not between 0 and 1",
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
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon"),
            "invalid environment variable OTEL_EXPORTER_OTLP_PROTOCOL=\"carrier-pigeon\": expected unknown OTLP protocol `carrier-pigeon` (expected `grpc` or `http/protobuf`)",
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
        (
            ("LENS_EXPORTER", "zipkin"),
            "invalid environment variable LENS_EXPORTER=\"zipkin\": expected unknown exporter `zipkin` (expected `otlp`, `console`, `none` or a path ending in `.wasm`)",
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
        ("KUBERNETES_SERVICE_HOST", "10.0.0.1"),
        ("POD_NAME", "trainer-0"),
        ("POD_NAMESPACE", "ml"),
        (
            "OTEL_RESOURCE_ATTRIBUTES",
            "deployment.environment=prod,team=from%20env",
        ),
    ];
    let mut cfg = config("none");
    cfg.run_id = String::new();
    let handle = Telemetry::builder(cfg)
        .rank(1)
        .world_size(2)
        .resource_attributes([
            KeyValue::new("team", "from-caller"),
            KeyValue::new("owner", "me"),
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
    assert_eq!(get("dl.run_id"), Some(Value::from("777")));
    assert_eq!(get("service.instance.id"), Some(Value::from("777-rank1")));
    assert_eq!(get("slurm.job.id"), Some(Value::from("777")));
    assert_eq!(get("slurm.job.name"), Some(Value::from("llama")));
    assert_eq!(get("k8s.pod.name"), Some(Value::from("trainer-0")));
    assert_eq!(get("k8s.namespace.name"), Some(Value::from("ml")));
    assert_eq!(get("owner"), Some(Value::from("me")));
    assert_eq!(
        get("team"),
        Some(Value::from("from env")),
        "OTEL_RESOURCE_ATTRIBUTES comes last"
    );
    assert_eq!(get("deployment.environment"), Some(Value::from("prod")));
    let _ = attr(r.iter(), "dl.rank").expect("dl.rank");
    handle.shutdown(T).unwrap();

    // Without SLURM, an empty run id becomes a random 8-hex-digit id.
    let handle = Telemetry::builder(config("none"))
        .env(no_env())
        .install_global(false);
    let handle = handle.install().unwrap();
    assert_eq!(handle.run_id(), "run42");
    let mut cfg = config("none");
    cfg.run_id.clear();
    let h = Telemetry::builder(cfg).local();
    assert_eq!(h.run_id().len(), 8);
    assert!(h.run_id().chars().all(|c| c.is_ascii_hexdigit()));
}
