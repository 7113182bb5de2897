//! The effective configuration from the environment, case by case against
//! `NemoLensConfig.from_env`.

use std::collections::HashMap;

use lens::LensConfig;
use lens::config::env::EnvPrefix;
use serde_json::{Value, json};

use super::oracle::ask;

/// One environment and the prefixes it is read with.
struct Case {
    env: Vec<(String, String)>,
    prefix: &'static str,
    fallback: Option<&'static str>,
}

fn case(env: &[(&str, &str)]) -> Case {
    Case {
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        prefix: "NEMO_LENS",
        fallback: None,
    }
}

const BOOLS: [&str; 5] = [
    "ENABLED",
    "SAMPLER_ENABLED",
    "TRACES_ENABLED",
    "METRICS_ENABLED",
    "LOGS_ENABLED",
];

const BOOL_VALUES: &[&str] = &[
    "1",
    "0",
    "true",
    "FALSE",
    " yes ",
    "On",
    "off\t",
    "",
    "  ",
    "maybe",
    "2",
    "tru",
    "y",
    "\u{1c}on\u{1f}",
    "\u{a0}true\u{3000}",
    "ＯＮ",
    "TRUE\n",
    "İ",
    "no\u{85}",
];

const INT_VALUES: &[&str] = &[
    "3",
    "-1",
    "-7",
    " 12 ",
    "+4",
    "1_0",
    "1__0",
    "_1",
    "٣",
    "0x1",
    "1.0",
    "",
    "abc",
    "-0",
    "007",
    "99999999999999999999",
    "-99999999999999999999",
    "١_٢",
    "\u{2003}5",
    "5e0",
];

const FLOAT_VALUES: &[&str] = &[
    "0.5", ".25", "1", "0", "1e-1", "1E0", "1_0", "nan", "NaN", "inf", "-inf", "-0.0", "1.5",
    "-0.1", "abc", "0x1p-1", "١.٥", "0.٥", " 0.75 ", "5e-324", "0.1_0", "1.", "1e", ".",
    "infinity", "+.5", "0,5", "1e-1_0",
];

const STRING_KEYS: [&str; 5] = [
    "EXPORT_STRATEGY",
    "SPAN_GROUPS",
    "EXPORTER",
    "RUN_ID",
    "USER_ID",
];

const STRING_VALUES: &[&str] = &["x", "  padded\t", "", "   ", "with space", "ünï", "\u{1d}x"];

fn cases() -> Vec<Case> {
    let mut out = vec![case(&[])];
    for key in BOOLS {
        for v in BOOL_VALUES {
            out.push(case(&[(&format!("NEMO_LENS_{key}"), v)]));
        }
    }
    for v in INT_VALUES {
        out.push(case(&[("NEMO_LENS_EXPORT_RANK", v)]));
    }
    for v in FLOAT_VALUES {
        out.push(case(&[("NEMO_LENS_EXPORT_SAMPLE_RATE", v)]));
    }
    for key in STRING_KEYS {
        for v in STRING_VALUES {
            out.push(case(&[(&format!("NEMO_LENS_{key}"), v)]));
        }
    }
    for v in STRING_VALUES {
        out.push(case(&[("OTEL_SERVICE_NAME", v)]));
        out.push(case(&[("WANDB_ENTITY", v), ("WANDB_PROJECT", v)]));
    }
    // A library's prefix, then NeMo Lens's: set, empty, blank, and only in the fallback.
    for (own, fallback) in [
        (Some("all_ranks"), Some("sampled")),
        (Some(""), Some("sampled")),
        (Some("  "), Some("sampled")),
        (None, Some("sampled")),
        (Some("x"), None),
        (None, None),
    ] {
        let mut env = Vec::new();
        if let Some(v) = own {
            env.push(("MEGATRON_OTEL_EXPORT_STRATEGY", v));
            env.push(("MEGATRON_OTEL_ENABLED", "yes"));
        }
        if let Some(v) = fallback {
            env.push(("NEMO_LENS_EXPORT_STRATEGY", v));
            env.push(("NEMO_LENS_ENABLED", "maybe"));
        }
        for fallback_prefix in [Some("NEMO_LENS"), None] {
            let mut c = case(&env);
            c.prefix = "MEGATRON_OTEL";
            c.fallback = fallback_prefix;
            out.push(c);
        }
    }
    out
}

/// The fields NeMo Lens's dataclass has, from a Lens config.
fn lens_fields(c: &LensConfig) -> Value {
    json!({
        "enabled": c.enabled,
        "service_name": c.service_name,
        "export_strategy": c.export_strategy,
        "export_rank": c.export_rank,
        "export_sample_rate": c.export_sample_rate,
        "sampler_enabled": c.sampler_enabled,
        "traces_enabled": c.traces_enabled,
        "metrics_enabled": c.metrics_enabled,
        "logs_enabled": c.logs_enabled,
        "span_groups": c.span_groups,
        "exporter": c.exporter,
        "run_id": c.run_id,
        "user": c.user,
        "wandb_entity": c.wandb_entity,
        "wandb_project": c.wandb_project,
    })
}

/// Python's integers have no bound; Lens's saturate at `i64`'s.
fn saturated(mut fields: Value) -> Value {
    let rank = &mut fields["export_rank"];
    if rank.as_i64().is_none() {
        let negative = rank.as_f64().is_some_and(|f| f < 0.0) || rank.to_string().starts_with('-');
        *rank = json!(if negative { i64::MIN } else { i64::MAX });
    }
    fields
}

#[test]
fn the_effective_config_from_the_environment_is_nemo_lens_s() {
    let cases = cases();
    let request = json!({
        "mode": "config",
        "cases": cases.iter().map(|c| json!({
            "env": c.env.iter().cloned().collect::<HashMap<_, _>>(),
            "prefix": c.prefix,
            "fallback": c.fallback,
        })).collect::<Vec<_>>(),
    });
    let answers = ask(&request);
    let answers = answers.as_array().unwrap();
    assert_eq!(answers.len(), cases.len());
    let mut failures = Vec::new();
    for (c, nemo) in cases.iter().zip(answers) {
        let env: HashMap<String, String> = c.env.iter().cloned().collect();
        let prefix = EnvPrefix {
            prefix: c.prefix.to_string(),
            fallback: c.fallback.map(str::to_string),
        };
        let mut config = LensConfig::default();
        let lens = config.apply_env_with_prefix(&env, &prefix).map(|()| config);
        match (&lens, nemo.get("config")) {
            (Ok(config), Some(expected)) => {
                if lens_fields(config) != saturated(expected.clone()) {
                    failures.push(format!(
                        "{:?} ({}/{:?}):\n  lens {}\n  nemo {expected}",
                        c.env,
                        c.prefix,
                        c.fallback,
                        lens_fields(config)
                    ));
                }
            }
            (Err(e), None) => {
                // Both refuse it; Lens names the variable that holds the value.
                let named = c
                    .env
                    .iter()
                    .any(|(k, _)| e.to_string().contains(k.as_str()));
                if !named {
                    failures.push(format!("{:?}: Lens's error names no variable: {e}", c.env));
                }
            }
            (Ok(config), None) => failures.push(format!(
                "{:?}: Lens accepts ({}), NeMo Lens refuses: {}",
                c.env,
                lens_fields(config),
                nemo["error"]
            )),
            (Err(e), Some(expected)) => failures.push(format!(
                "{:?}: Lens refuses ({e}), NeMo Lens accepts: {expected}",
                c.env
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert!(cases.len() > 150, "only {} cases", cases.len());
}

#[test]
fn the_otlp_transport_per_signal_is_nemo_lens_s() {
    use lens::config::OtlpProtocol;
    use lens::config::env::otlp_protocol;
    let values = [
        None,
        Some("grpc"),
        Some("http/protobuf"),
        Some("HTTP/JSON"),
        Some(" http/json "),
        Some(""),
        Some("  "),
        Some("thrift"),
    ];
    let mut cases: Vec<HashMap<String, String>> = Vec::new();
    for general in values {
        for traces in values {
            for metrics in [None, Some("http/protobuf"), Some("")] {
                let mut env = HashMap::new();
                for (name, v) in [
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", general),
                    ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", traces),
                    ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", metrics),
                    ("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", traces),
                ] {
                    if let Some(v) = v {
                        env.insert(name.to_string(), v.to_string());
                    }
                }
                cases.push(env);
            }
        }
    }
    let answers = ask(&json!({"mode": "protocols", "cases": cases}));
    let mut failures = Vec::new();
    for (env, nemo) in cases.iter().zip(answers.as_array().unwrap()) {
        let mut config = LensConfig::default();
        config.apply_env(env).unwrap();
        for signal in lens::Signal::ALL {
            let lens = match otlp_protocol(env, config.otlp.protocol, signal) {
                OtlpProtocol::Grpc => "grpc",
                OtlpProtocol::HttpProtobuf => "http",
                other => panic!("not a protocol NeMo Lens picks: {other:?}"),
            };
            if nemo[signal.as_str()] != lens {
                failures.push(format!(
                    "{env:?} {signal}: lens {lens} nemo {}",
                    nemo[signal.as_str()]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(cases.len(), 192);
}
