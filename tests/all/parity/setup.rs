//! Whole setups against NeMo Lens's `setup_telemetry`: whether the rank exports, the full
//! resource, what is recorded under the standard `OTEL_*` variables, the exporter check, and
//! the one-setup rule. Each NeMo Lens setup runs in a fresh process (OpenTelemetry's globals can
//! be set once).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use lens::opentelemetry::trace::{Tracer, TracerProvider as _};
use lens::opentelemetry::{KeyValue, Value as OtelValue};
use lens::opentelemetry_sdk::trace::InMemorySpanExporter;
use lens::{InMemoryMetricReader, LensConfig, Telemetry};
use serde_json::{Value, json};

use super::oracle::ask;

/// Resource keys whose values cannot agree (see the crate doc); their types are compared.
const VALUE_DIFFERS: [&str; 3] = [
    "process.pid",
    "telemetry.sdk.language",
    "telemetry.sdk.version",
];
/// Lens's documented extras.
const LENS_EXTRAS: [&str; 2] = ["dl.local_rank", "lens.version"];

/// One setup: NeMo Lens's config fields, the environment, the rank, the caller's attributes.
#[derive(Clone)]
struct Setup {
    config: Value,
    env: Vec<(&'static str, String)>,
    rank: u32,
    world_size: u32,
    caller: Value,
    /// Exporters injected (else the config's `exporter` is built).
    inject: bool,
}

fn setup(config: Value, env: &[(&'static str, &str)]) -> Setup {
    Setup {
        config,
        env: env.iter().map(|(k, v)| (*k, v.to_string())).collect(),
        rank: 3,
        world_size: 8,
        caller: json!({}),
        inject: true,
    }
}

fn enabled() -> Value {
    json!({"enabled": true, "export_strategy": "all_ranks", "run_id": "run-1"})
}

/// Lens's config from NeMo Lens's fields.
fn lens_config(fields: &Value) -> LensConfig {
    let mut c = LensConfig::default();
    for (k, v) in fields.as_object().unwrap() {
        match k.as_str() {
            "enabled" => c.enabled = v.as_bool().unwrap(),
            "export_strategy" => c.export_strategy = v.as_str().unwrap().into(),
            "export_rank" => c.export_rank = v.as_i64().unwrap(),
            "export_sample_rate" => c.export_sample_rate = v.as_f64().unwrap(),
            "sampler_enabled" => c.sampler_enabled = v.as_bool().unwrap(),
            "traces_enabled" => c.traces_enabled = v.as_bool().unwrap(),
            "metrics_enabled" => c.metrics_enabled = v.as_bool().unwrap(),
            "exporter" => c.exporter = v.as_str().unwrap().into(),
            "run_id" => c.run_id = v.as_str().unwrap().into(),
            "user" => c.user = v.as_str().unwrap().into(),
            "wandb_entity" => c.wandb_entity = v.as_str().unwrap().into(),
            "wandb_project" => c.wandb_project = v.as_str().unwrap().into(),
            "service_name" => c.service_name = v.as_str().unwrap().into(),
            other => panic!("no such field {other}"),
        }
    }
    c
}

fn caller_attributes(caller: &Value) -> Vec<KeyValue> {
    caller
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => KeyValue::new(k.clone(), s.clone()),
            Value::Bool(b) => KeyValue::new(k.clone(), *b),
            Value::Number(n) if n.is_i64() => KeyValue::new(k.clone(), n.as_i64().unwrap()),
            Value::Number(n) => KeyValue::new(k.clone(), n.as_f64().unwrap()),
            other => panic!("unsupported caller attribute {other}"),
        })
        .collect()
}

/// An attribute as the oracle writes it: `[python type, value]`.
fn typed(v: &OtelValue) -> Value {
    match v {
        OtelValue::String(s) => json!(["str", s.as_str()]),
        OtelValue::I64(i) => json!(["int", i]),
        OtelValue::F64(f) => json!(["float", f]),
        OtelValue::Bool(b) => json!(["bool", b]),
        other => json!(["array", other.to_string()]),
    }
}

/// What Lens does with `s`, in the oracle's shape.
fn lens_outcome(s: &Setup) -> Value {
    let env: HashMap<String, String> = s
        .env
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let spans = InMemorySpanExporter::default();
    let mut builder = Telemetry::builder(lens_config(&s.config))
        .rank(s.rank)
        .world_size(s.world_size)
        .resource_attributes(caller_attributes(&s.caller))
        .env(env)
        .install_global(false);
    if s.inject {
        builder = builder
            .span_exporter(spans.clone())
            .metric_reader(InMemoryMetricReader::new());
    }
    let handle = match builder.install() {
        Ok(h) => h,
        Err(e) => return json!({ "error": e.to_string() }),
    };
    let tracer = handle.tracer_provider().tracer("parity");
    for name in ["a", "b", "c"] {
        tracer.in_span(name, |_| {});
    }
    handle.force_flush(Duration::from_secs(10)).unwrap();
    let resource: BTreeMap<String, Value> = handle
        .resource()
        .iter()
        .map(|(k, v)| (k.to_string(), typed(v)))
        .collect();
    json!({
        "is_exporting": handle.is_exporting(),
        "run_id": handle.run_id(),
        "spans": spans.get_finished_spans().unwrap().len(),
        "resource": resource,
    })
}

/// The differences between Lens's outcome and NeMo Lens's, if any.
fn compare(s: &Setup, random_run_id: bool) -> Option<String> {
    let nemo = ask(&json!({
        "mode": "setup",
        "case": {
            "env": s.env.iter().map(|(k, v)| (k.to_string(), v.clone())).collect::<HashMap<_, _>>(),
            "config": s.config,
            "rank": s.rank,
            "world_size": s.world_size,
            "resource_attributes": s.caller,
            "inject": s.inject,
        },
    }));
    let lens = lens_outcome(s);
    let mut diffs = Vec::new();
    match (nemo.get("error"), lens.get("error")) {
        (Some(_), Some(_)) => return None,
        (Some(n), None) => diffs.push(format!("NeMo Lens fails ({n}), Lens sets up")),
        (None, Some(l)) => diffs.push(format!("Lens fails ({l}), NeMo Lens sets up")),
        (None, None) => {}
    }
    if !diffs.is_empty() {
        return Some(diffs.join("; "));
    }
    if nemo["is_exporting"] != lens["is_exporting"] {
        diffs.push(format!(
            "is_exporting: lens {} nemo {}",
            lens["is_exporting"], nemo["is_exporting"]
        ));
    }
    // NeMo Lens's no-op providers have no spans nor resource to read.
    if let Some(spans) = nemo.get("spans") {
        if spans != &lens["spans"] {
            diffs.push(format!("spans: lens {} nemo {spans}", lens["spans"]));
        }
        diffs.extend(resource_diffs(
            &lens["resource"],
            &nemo["resource"],
            random_run_id,
        ));
    }
    if random_run_id {
        for id in [&lens["run_id"], &nemo["run_id"]] {
            let id = id.as_str().unwrap();
            if id.len() != 12 || !id.chars().all(|c| c.is_ascii_hexdigit()) {
                diffs.push(format!("run id {id:?} is not 12 hex digits"));
            }
        }
    } else if nemo["run_id"] != lens["run_id"] {
        diffs.push(format!(
            "run id: lens {} nemo {}",
            lens["run_id"], nemo["run_id"]
        ));
    }
    (!diffs.is_empty()).then(|| diffs.join("\n    "))
}

fn resource_diffs(lens: &Value, nemo: &Value, random_run_id: bool) -> Vec<String> {
    let lens = lens.as_object().unwrap();
    let nemo = nemo.as_object().unwrap();
    let mut diffs = Vec::new();
    let random = ["nemo.run.id", "service.instance.id"];
    for (k, n) in nemo {
        let Some(l) = lens.get(k) else {
            diffs.push(format!("{k}: missing in Lens (NeMo Lens: {n})"));
            continue;
        };
        let values_differ =
            VALUE_DIFFERS.contains(&k.as_str()) || (random_run_id && random.contains(&k.as_str()));
        let same = if values_differ { l[0] == n[0] } else { l == n };
        if !same {
            diffs.push(format!("{k}: lens {l} nemo {n}"));
        }
    }
    for k in lens.keys() {
        if !nemo.contains_key(k) && !LENS_EXTRAS.contains(&k.as_str()) {
            diffs.push(format!("{k}: only in Lens ({})", lens[k]));
        }
    }
    diffs
}

/// Runs every setup against the oracle (two at a time: each is a Python process).
fn check(setups: Vec<(&str, Setup, bool)>) {
    let failures: Vec<String> = std::thread::scope(|scope| {
        let chunks: Vec<_> = setups.chunks(setups.len().div_ceil(2)).collect();
        let workers: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|(name, s, random)| {
                            compare(s, *random).map(|d| format!("{name}:\n    {d}"))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_resource_is_nemo_lens_s() {
    let everything = [
        ("SLURM_JOB_ID", "777"),
        ("SLURM_JOB_NAME", "llama"),
        ("SLURM_NODELIST", "node[1-4]"),
        ("SLURM_NNODES", "4"),
        ("SLURM_NTASKS", "32"),
        ("SLURM_PARTITION", ""),
        ("SLURM_CLUSTER_NAME", "eos"),
        ("KUBERNETES_SERVICE_HOST", "10.0.0.1"),
        ("K8S_NAMESPACE", "ml"),
        ("K8S_POD_UID", "uid-1"),
        ("K8S_NODE_NAME", "gpu-7"),
        ("K8S_CONTAINER_NAME", "trainer"),
        ("K8S_JOB_NAME", "pretrain"),
        ("HOSTNAME", "pod-from-hostname"),
        ("CUDA_VISIBLE_DEVICES", "0,1,2,3"),
        ("DEPLOYMENT_ENV", "prod"),
        ("ENVIRONMENT", "ignored"),
        ("WANDB_ENTITY", "from-env-ignored-by-setup"),
        (
            "OTEL_RESOURCE_ATTRIBUTES",
            "a=1,b,=x,c= %41%20b ,d=%zz,dl.rank=99,service.name=zzz,k=v=w, team = env ,host.gpu.count=9",
        ),
        ("OTEL_SERVICE_NAME", "otel-name"),
    ];
    let mut full = setup(
        json!({"enabled": true, "export_strategy": "all_ranks", "run_id": "",
               "user": "alice", "wandb_entity": "ent", "wandb_project": "proj"}),
        &everything,
    );
    full.caller = json!({
        "": "empty key", "team": "caller", "dl.rank": 42, "slurm.job.id": "caller-loses",
        "host.gpu.count": 1, "nemo.run.id": "caller-run", "ratio": 0.5, "flag": true,
    });
    let mut plain = setup(enabled(), &[]);
    plain.rank = 0;
    plain.world_size = 1;
    let mut setups = vec![
        ("everything", full, false),
        ("plain", plain, false),
        (
            "no run id, no SLURM",
            setup(
                json!({"enabled": true, "export_strategy": "all_ranks"}),
                &[],
            ),
            true,
        ),
        (
            "ENVIRONMENT alone",
            setup(enabled(), &[("ENVIRONMENT", "staging")]),
            false,
        ),
        (
            "empty DEPLOYMENT_ENV hides ENVIRONMENT",
            setup(
                enabled(),
                &[("DEPLOYMENT_ENV", ""), ("ENVIRONMENT", "staging")],
            ),
            false,
        ),
        (
            "no GPUs visible",
            setup(enabled(), &[("CUDA_VISIBLE_DEVICES", "")]),
            false,
        ),
        (
            "blank CUDA_VISIBLE_DEVICES",
            setup(enabled(), &[("CUDA_VISIBLE_DEVICES", "  ")]),
            false,
        ),
        (
            "odd CUDA_VISIBLE_DEVICES",
            setup(enabled(), &[("CUDA_VISIBLE_DEVICES", "0,,GPU-abc")]),
            false,
        ),
        (
            "empty SLURM_JOB_ID",
            setup(enabled(), &[("SLURM_JOB_ID", ""), ("SLURM_JOB_NAME", "x")]),
            false,
        ),
        (
            "k8s pod name from HOSTNAME",
            setup(
                enabled(),
                &[("KUBERNETES_SERVICE_HOST", "h"), ("HOSTNAME", "pod-7")],
            ),
            false,
        ),
        (
            "empty KUBERNETES_SERVICE_HOST",
            setup(
                enabled(),
                &[("KUBERNETES_SERVICE_HOST", ""), ("K8S_NAMESPACE", "ml")],
            ),
            false,
        ),
        (
            "OTEL_RESOURCE_ATTRIBUTES only separators",
            setup(enabled(), &[("OTEL_RESOURCE_ATTRIBUTES", ",,, ,=")]),
            false,
        ),
    ];
    let mut sample = setup(enabled(), &[]);
    sample.config["sampler_enabled"] = json!(true);
    sample.config["export_sample_rate"] = json!(0.5);
    sample.rank = 3; // kept at 0.5
    setups.push(("rank-aware sampler on", sample, false));
    check(setups);
}

#[test]
fn standard_otel_variables_act_as_in_nemo_lens() {
    let mut setups = Vec::new();
    for disabled in ["true", "TRUE", " true ", "1", "false", "yes"] {
        setups.push((
            "OTEL_SDK_DISABLED",
            setup(enabled(), &[("OTEL_SDK_DISABLED", disabled)]),
            false,
        ));
    }
    for (sampler, arg) in [
        ("always_off", None),
        ("ALWAYS_OFF", None),
        (" always_off", None),
        ("always_on", None),
        ("traceidratio", Some("0")),
        ("traceidratio", Some("1")),
        ("traceidratio", Some("abc")),
        ("traceidratio", Some("2")),
        ("traceidratio", Some("-1")),
        ("parentbased_always_off", None),
        ("parentbased_traceidratio", Some("0")),
        ("parentbased_traceidratio", None),
        ("bogus", None),
        ("", None),
    ] {
        let mut env = vec![("OTEL_TRACES_SAMPLER", sampler)];
        if let Some(a) = arg {
            env.push(("OTEL_TRACES_SAMPLER_ARG", a));
        }
        setups.push(("OTEL_TRACES_SAMPLER", setup(enabled(), &env), false));
        // With the rank-aware sampler on, it decides instead.
        let mut ranked = setup(enabled(), &env);
        ranked.config["sampler_enabled"] = json!(true);
        setups.push((
            "OTEL_TRACES_SAMPLER under the rank-aware sampler",
            ranked,
            false,
        ));
    }
    check(setups);
}

#[test]
fn disabled_non_exporting_and_unknown_exporters_act_as_in_nemo_lens() {
    let mut setups = Vec::new();
    let mut off = setup(
        json!({"enabled": false, "export_strategy": "all_ranks"}),
        &[],
    );
    setups.push(("disabled", off.clone(), true));
    off.config["export_strategy"] = json!("bogus");
    setups.push(("disabled with an unknown strategy", off, true));
    for (rank, strategy) in [(7, "single_rank"), (3, "single_rank"), (3, "all_ranks")] {
        let mut s = setup(
            json!({"enabled": true, "export_strategy": strategy, "exporter": "zipkin", "run_id": "r"}),
            &[],
        );
        s.rank = rank;
        s.inject = false;
        setups.push(("unknown exporter", s, false));
    }
    let mut no_traces = setup(
        json!({"enabled": true, "export_strategy": "all_ranks",
        "exporter": "zipkin", "traces_enabled": false, "metrics_enabled": false, "run_id": "r"}),
        &[],
    );
    no_traces.inject = false;
    setups.push(("unknown exporter, no signal", no_traces, false));
    check(setups);
}

#[test]
fn the_one_setup_rule_is_nemo_lens_s() {
    // Process-wide state: its own process.
    lens_test_support::isolated(|| {
        // (enabled, allow re-init): the same calls, in order, in one process each side.
        let calls = [
            (true, false),
            (false, false),
            (true, false),
            (true, true),
            (false, false),
            (true, false),
        ];
        let nemo = ask(&json!({
            "mode": "sequence",
            "env": {},
            "calls": calls.iter().map(|(enabled, reinit)| json!({
                "config": {"enabled": enabled, "export_strategy": "all_ranks", "run_id": "r"},
                "allow_reinit": reinit,
            })).collect::<Vec<_>>(),
        }));
        let mut handles = Vec::new();
        let lens: Vec<String> = calls
            .iter()
            .map(|&(enabled, allow_reinit)| {
                let config = LensConfig {
                    enabled,
                    allow_reinit,
                    export_strategy: "all_ranks".into(),
                    run_id: "r".into(),
                    ..Default::default()
                };
                match Telemetry::builder(config)
                    .span_exporter(InMemorySpanExporter::default())
                    .metric_reader(InMemoryMetricReader::new())
                    .env(HashMap::<String, String>::new())
                    .install()
                {
                    Ok(h) => {
                        // A shutdown does not make the process set-up-able again (NeMo Lens's
                        // `_INITIALIZED` never resets).
                        h.shutdown(Duration::from_secs(5)).unwrap();
                        handles.push(h);
                        "ok".to_string()
                    }
                    Err(e) => format!("error: {e}"),
                }
            })
            .collect();
        let outcome = |v: &str| v.split(':').next().unwrap().to_string();
        let nemo: Vec<String> = nemo
            .as_array()
            .unwrap()
            .iter()
            .map(|v| outcome(v.as_str().unwrap()))
            .collect();
        let lens: Vec<String> = lens.iter().map(|v| outcome(v)).collect();
        assert_eq!(lens, nemo);
        assert_eq!(nemo, ["ok", "ok", "error", "ok", "ok", "error"]);
    });
}

/// `OTEL_METRIC_EXPORT_INTERVAL` is read with `int()` where NeMo Lens builds its metric reader
/// (an exporting rank, metrics on, no injected reader): a value that is not a positive integer
/// fails that setup, and only that one.
#[test]
fn the_metric_export_interval_is_checked_where_nemo_lens_reads_it() {
    let mut setups = Vec::new();
    for value in ["0", "-5", "abc", "", "1.5", " 250 ", "1_000", "60000"] {
        let env = [
            ("OTEL_METRIC_EXPORT_INTERVAL", value),
            // Lens exports its collection at shutdown: to no collector, briefly.
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "100"),
        ];
        for (metrics, inject, rank) in [
            (true, false, 3),
            (false, false, 3),
            (true, true, 3),
            (true, false, 7),
        ] {
            let mut s = setup(
                json!({"enabled": true, "export_strategy": "single_rank", "export_rank": 3,
                       "traces_enabled": false, "metrics_enabled": metrics, "run_id": "r"}),
                &env,
            );
            s.inject = inject;
            s.rank = rank;
            setups.push(("OTEL_METRIC_EXPORT_INTERVAL", s, false));
        }
    }
    check(setups);
}
