//! Export strategies and the rank-aware sampler: the rank hash against Python's, every
//! built-in strategy for 16 ranks, registered strategies.

use lens::strategy::{decide_export, rank_hash_fraction, rank_is_sampled};
use lens::{LensConfig, LensError, RankAwareSampler, RankInfo};

/// `int(md5(str(rank)).hexdigest(), 16) % 10000 / 10000`, computed by Python for ranks 0..16.
const PYTHON_FRACTIONS: [f64; 16] = [
    0.785, 0.8411, 0.9212, 0.0883, 0.19, 0.0693, 0.0412, 0.5555, 0.3101, 0.8374, 0.1824, 0.265,
    0.8112, 0.4873, 0.6038, 0.7603,
];

#[test]
fn rank_hash_matches_nemo_lens_for_ranks_0_to_15() {
    for (rank, expected) in PYTHON_FRACTIONS.iter().enumerate() {
        assert_eq!(
            rank_hash_fraction(rank as u32).to_bits(),
            expected.to_bits(),
            "rank {rank}"
        );
    }
}

#[test]
fn sampled_decisions_match_python_bit_for_bit() {
    // Python's own decisions for 1000 ranks and several rates, computed live.
    let rates = [0.0, 0.01, 0.1, 0.25, 0.0883, 0.5, 0.9, 1.0];
    let script = format!(
        "import hashlib\nfor rate in {rates:?}:\n    print(''.join('1' if int(hashlib.md5(str(r).encode()).hexdigest(), 16) % 10000 / 10000 < rate else '0' for r in range(1000)))"
    );
    let out = std::process::Command::new("python3")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(lines.len(), rates.len());
    for (rate, line) in rates.iter().zip(lines) {
        let ours: String = (0..1000)
            .map(|r| if rank_is_sampled(r, *rate) { '1' } else { '0' })
            .collect();
        assert_eq!(ours, line, "rate {rate}");
        let sampler: String = (0..1000)
            .map(|r| {
                if RankAwareSampler::new(r, *rate).keeps() {
                    '1'
                } else {
                    '0'
                }
            })
            .collect();
        assert_eq!(sampler, line, "sampler at rate {rate}");
    }
}

fn decide(strategy: &str, rank: u32, world: u32, local: u32, export_rank: i64, rate: f64) -> bool {
    let cfg = LensConfig {
        export_strategy: strategy.into(),
        export_rank,
        export_sample_rate: rate,
        ..Default::default()
    };
    decide_export(
        &RankInfo {
            rank,
            world_size: world,
            local_rank: local,
        },
        &cfg,
    )
    .unwrap()
}

#[test]
fn strategy_table_for_ranks_0_to_15() {
    let exporting = |f: &dyn Fn(u32) -> bool| (0..16).filter(|r| f(*r)).collect::<Vec<u32>>();
    assert_eq!(
        exporting(&|r| decide("all_ranks", r, 16, r % 4, 0, 1.0)).len(),
        16
    );
    assert_eq!(
        exporting(&|r| decide("single_rank", r, 16, r % 4, 0, 1.0)),
        [0]
    );
    assert_eq!(
        exporting(&|r| decide("single_rank", r, 16, r % 4, -1, 1.0)),
        [15]
    );
    assert_eq!(
        exporting(&|r| decide("single_rank", r, 16, r % 4, 5, 1.0)),
        [5]
    );
    assert_eq!(
        exporting(&|r| decide("first_rank_per_node", r, 16, r % 4, 0, 1.0)),
        [0, 4, 8, 12]
    );
    assert_eq!(
        exporting(&|r| decide("sampled", r, 16, 0, 0, 0.25)),
        [3, 4, 5, 6, 10]
    );
    assert_eq!(
        exporting(&|r| decide("sampled", r, 16, 0, 0, 0.3)),
        [3, 4, 5, 6, 10, 11]
    );
    assert_eq!(
        exporting(&|r| decide("sampled", r, 16, 0, 0, 0.0)),
        Vec::<u32>::new()
    );
    assert_eq!(
        exporting(&|r| decide("sampled", r, 16, 0, 0, 1.0)).len(),
        16
    );
}

#[test]
fn custom_strategies_register_by_name_and_builtins_are_protected() {
    lens::register_export_strategy("even_ranks", |r: &RankInfo, _: &LensConfig| {
        r.rank.is_multiple_of(2)
    })
    .unwrap();
    assert!(decide("even_ranks", 2, 4, 0, 0, 1.0));
    assert!(!decide("even_ranks", 3, 4, 0, 0, 1.0));
    let taken = lens::register_export_strategy("sampled", |_: &RankInfo, _: &LensConfig| true);
    assert!(matches!(taken, Err(LensError::StrategyNameTaken(_))));
    let cfg = LensConfig {
        export_strategy: "nope".into(),
        ..Default::default()
    };
    let err = decide_export(
        &RankInfo {
            rank: 0,
            world_size: 1,
            local_rank: 0,
        },
        &cfg,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("unknown export strategy `nope`"),
        "{err}"
    );
    assert!(lens::unregister_export_strategy("even_ranks"));
}

#[test]
fn any_negative_export_rank_is_the_last_and_one_outside_the_world_exports_nowhere() {
    let exporters = |export_rank: i64, world_size: u32| -> Vec<u32> {
        let cfg = LensConfig {
            export_strategy: "single_rank".into(),
            export_rank,
            ..Default::default()
        };
        (0..world_size)
            .filter(|&rank| {
                decide_export(
                    &RankInfo {
                        rank,
                        world_size,
                        local_rank: 0,
                    },
                    &cfg,
                )
                .unwrap()
            })
            .collect()
    };
    assert_eq!(exporters(-1, 8), [7]);
    assert_eq!(exporters(-2, 8), [7]);
    assert_eq!(exporters(i64::MIN, 8), [7]);
    assert_eq!(exporters(3, 8), [3]);
    assert_eq!(exporters(8, 8), Vec::<u32>::new());
    assert_eq!(exporters(i64::MAX, 8), Vec::<u32>::new());
    assert_eq!(exporters(-1, 1), [0]);
}
