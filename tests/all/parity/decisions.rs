//! Which ranks export, under every strategy and setting, for world sizes 1…64 (NeMo Lens's own
//! `_should_export`, and Lens's whole setup), and which ranks the rank-aware sampler keeps.

use std::collections::HashMap;

use lens::{LensConfig, RankAwareSampler, Telemetry};
use serde_json::{Value, json};

use super::oracle::ask;

const WORLDS: std::ops::RangeInclusive<u32> = 1..=64;

/// A strategy setting: NeMo Lens's config fields, and the environment (for `LOCAL_RANK`).
struct Case {
    strategy: &'static str,
    export_rank: i64,
    rate: f64,
    env: Vec<(&'static str, &'static str)>,
}

fn cases() -> Vec<Case> {
    let plain = |strategy, export_rank, rate| Case {
        strategy,
        export_rank,
        rate,
        env: Vec::new(),
    };
    let mut out = vec![plain("all_ranks", -1, 1.0), plain("bogus", -1, 1.0)];
    for r in [-1, -2, -100, i64::MIN, 0, 1, 5, 31, 63, 64, 1000] {
        out.push(plain("single_rank", r, 1.0));
    }
    for rate in [0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999, 1.0] {
        out.push(plain("sampled", -1, rate));
    }
    out.push(plain("first_rank_per_node", -1, 1.0));
    for local in [
        "0", "1", " 0 ", "-0", "٠", "+0", "00", "-1", "3", "", "x", "0.0", "1_0", "0_0",
    ] {
        out.push(Case {
            env: vec![("LOCAL_RANK", local)],
            ..plain("first_rank_per_node", -1, 1.0)
        });
    }
    out
}

/// Lens's decision for every rank of `world`, as a bit string (or the error), through the
/// whole setup as an application runs it.
fn lens_bits(case: &Case, world: u32) -> String {
    let env: HashMap<String, String> = case
        .env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut bits = String::new();
    for rank in 0..world {
        let config = LensConfig {
            enabled: true,
            export_strategy: case.strategy.into(),
            export_rank: case.export_rank,
            export_sample_rate: case.rate,
            exporter: "none".into(),
            metrics_enabled: false,
            // Decisions do not depend on the queue: a small one keeps 80k setups cheap.
            batch: lens::config::BatchConfig {
                max_queue_size: 16,
                max_export_batch_size: 16,
                ..Default::default()
            },
            ..Default::default()
        };
        let setup = Telemetry::builder(config)
            .rank(rank)
            .world_size(world)
            .env(env.clone())
            .install_global(false)
            .install();
        match setup {
            Ok(handle) => bits.push(if handle.is_exporting() { '1' } else { '0' }),
            Err(e) => return format!("error: {e}"),
        }
    }
    bits
}

#[test]
fn every_strategy_decides_as_nemo_lens_for_world_sizes_1_to_64() {
    let cases = cases();
    let request = json!({
        "mode": "decisions",
        "worlds": WORLDS.collect::<Vec<_>>(),
        "cases": cases.iter().map(|c| json!({
            "env": c.env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<HashMap<_, _>>(),
            "config": {
                "enabled": true,
                "export_strategy": c.strategy,
                "export_rank": c.export_rank,
                "export_sample_rate": c.rate,
            },
        })).collect::<Vec<_>>(),
        "sampler_rates": SAMPLER_RATES,
        "sampler_ranks": 1024,
    });
    let answer = ask(&request);
    let mut decisions = 0;
    let mut failures = Vec::new();
    for (case, nemo) in cases.iter().zip(answer["strategies"].as_array().unwrap()) {
        for world in WORLDS {
            let expected = nemo[world.to_string()].as_str().unwrap();
            let lens = lens_bits(case, world);
            let agree = if expected.starts_with("error") {
                lens.starts_with("error")
            } else {
                lens == expected
            };
            if !agree {
                failures.push(format!(
                    "{} export_rank={} rate={} env={:?} world {world}:\n  lens {lens}\n  nemo {expected}",
                    case.strategy, case.export_rank, case.rate, case.env
                ));
            }
            decisions += world as usize;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} settings × worlds differ:\n{}",
        failures.len(),
        cases.len() * WORLDS.count(),
        failures.join("\n")
    );
    assert!(decisions > 70_000, "{decisions}");
    check_sampler(&answer["sampler"]);
}

const SAMPLER_RATES: [f64; 10] = [0.0, 1e-4, 0.01, 0.1, 0.25, 0.5, 0.78, 0.79, 0.9999, 1.0];

/// The rank-aware sampler's keep/drop for ranks 0…1023 at each rate.
fn check_sampler(nemo: &Value) {
    for rate in SAMPLER_RATES {
        let key = python_repr(rate);
        let expected = nemo[&key].as_str().unwrap_or_else(|| panic!("no {key}"));
        let lens: String = (0..1024)
            .map(|rank| {
                if RankAwareSampler::new(rank, rate).keeps() {
                    '1'
                } else {
                    '0'
                }
            })
            .collect();
        assert_eq!(lens, expected, "sampler at rate {rate}");
    }
}

/// Python's `repr` of these rates (the same digits as Rust's `Debug` for them).
fn python_repr(rate: f64) -> String {
    format!("{rate:?}")
}
