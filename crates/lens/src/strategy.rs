//! Export strategies: decide once per process whether this rank exports at all.
//!
//! The built-in decisions are bit-for-bit those of NeMo Lens, so a job mixing Python and Rust
//! ranks exports from the same ranks.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use md5::{Digest, Md5};

use crate::config::LensConfig;
use crate::error::LensError;
use crate::rank::RankInfo;

/// Decides whether a rank exports. Implement it to add a strategy, then
/// [`register_export_strategy`] it under a name the config can use.
pub trait ExportStrategy: Send + Sync {
    /// `true` when `rank` exports under `config`.
    fn should_export(&self, rank: &RankInfo, config: &LensConfig) -> bool;
}

impl<F> ExportStrategy for F
where
    F: Fn(&RankInfo, &LensConfig) -> bool + Send + Sync,
{
    fn should_export(&self, rank: &RankInfo, config: &LensConfig) -> bool {
        self(rank, config)
    }
}

/// Names of the built-in strategies (protected from registration).
pub const BUILTIN_STRATEGIES: [&str; 4] =
    ["all_ranks", "single_rank", "sampled", "first_rank_per_node"];

type Registry = RwLock<BTreeMap<String, Arc<dyn ExportStrategy>>>;

fn registry() -> &'static Registry {
    static REGISTRY: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// Registers a custom strategy under `name` for this process.
pub fn register_export_strategy(
    name: &str,
    strategy: impl ExportStrategy + 'static,
) -> Result<(), LensError> {
    let mut map = registry().write().unwrap_or_else(|p| p.into_inner());
    if BUILTIN_STRATEGIES.contains(&name) || map.contains_key(name) {
        return Err(LensError::StrategyNameTaken(name.to_string()));
    }
    map.insert(name.to_string(), Arc::new(strategy));
    Ok(())
}

/// Removes a registered strategy; returns whether it existed.
pub fn unregister_export_strategy(name: &str) -> bool {
    let mut map = registry().write().unwrap_or_else(|p| p.into_inner());
    map.remove(name).is_some()
}

/// The rank's position in `[0, 1)`: `int(md5(str(rank)).hexdigest(), 16) % 10000 / 10000`,
/// exactly as NeMo Lens computes it.
pub fn rank_hash_fraction(rank: u32) -> f64 {
    let digest = Md5::digest(rank.to_string().as_bytes());
    // The digest as a big-endian 128-bit integer, reduced modulo 10000.
    let value = u128::from_be_bytes(digest.into());
    (value % 10_000) as f64 / 10_000.0
}

/// The `sampled` rule: the rank exports when its hash fraction is below `rate`.
pub fn rank_is_sampled(rank: u32, rate: f64) -> bool {
    rank_hash_fraction(rank) < rate
}

/// The rank `single_rank` exports from, as NeMo Lens resolves it: any negative `export_rank` is
/// the last rank. A rank outside the world is returned as it is, and no rank matches it.
pub fn single_export_rank(config: &LensConfig, world_size: u32) -> i64 {
    if config.export_rank < 0 {
        i64::from(world_size) - 1
    } else {
        config.export_rank
    }
}

/// Runs the configured strategy for `rank`.
pub fn decide_export(rank: &RankInfo, config: &LensConfig) -> Result<bool, LensError> {
    Ok(match config.export_strategy.as_str() {
        "all_ranks" => true,
        "single_rank" => i64::from(rank.rank) == single_export_rank(config, rank.world_size),
        "sampled" => rank_is_sampled(rank.rank, config.export_sample_rate),
        "first_rank_per_node" => rank.local_rank == 0,
        name => {
            let map = registry().read().unwrap_or_else(|p| p.into_inner());
            match map.get(name) {
                Some(strategy) => strategy.should_export(rank, config),
                None => {
                    return Err(LensError::UnknownStrategy {
                        name: name.to_string(),
                        builtin: BUILTIN_STRATEGIES.join(", "),
                        registered: if map.is_empty() {
                            "none".to_string()
                        } else {
                            map.keys().cloned().collect::<Vec<_>>().join(", ")
                        },
                    });
                }
            }
        }
    })
}
