//! Who this process is in the job: rank, world size, local rank, from the launcher's environment.

use crate::config::env::EnvSource;
use crate::config::python;
use crate::error::{LensError, RankError};

/// The identity of one rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankInfo {
    /// Global rank, normally `0..world_size`.
    pub rank: u32,
    /// Number of ranks in the job.
    pub world_size: u32,
    /// Rank on this node: `LOCAL_RANK` (as NeMo Lens reads it, `SLURM_LOCALID` is not used);
    /// missing means 0.
    pub local_rank: u32,
}

const RANK_VARS: [&str; 2] = ["RANK", "SLURM_PROCID"];
const WORLD_VARS: [&str; 2] = ["WORLD_SIZE", "SLURM_NTASKS"];

fn first_number(env: &dyn EnvSource, names: &[&str]) -> Result<Option<u32>, LensError> {
    for name in names {
        if let Some(v) = env.get(name) {
            return v
                .trim()
                .parse::<u32>()
                .map(Some)
                .map_err(|_| LensError::Env {
                    variable: name.to_string(),
                    value: v,
                    expected: "a non-negative integer".to_string(),
                });
        }
    }
    Ok(None)
}

/// `LOCAL_RANK` read with Python's `int()`, as NeMo Lens's `first_rank_per_node` reads it:
/// unset means 0; a value `int()` rejects is an error naming the variable.
pub fn local_rank_from_env(env: &dyn EnvSource) -> Result<i64, LensError> {
    match env.get("LOCAL_RANK") {
        None => Ok(0),
        Some(v) => python::int(&v).ok_or_else(|| LensError::Env {
            variable: "LOCAL_RANK".to_string(),
            value: v,
            expected: "an integer".to_string(),
        }),
    }
}

impl RankInfo {
    /// Rank and world size as given, else from `RANK`/`WORLD_SIZE`, then
    /// `SLURM_PROCID`/`SLURM_NTASKS`, else rank 0 of 1; the local rank from `LOCAL_RANK`.
    ///
    /// A rank outside the world is accepted with a warning, as NeMo Lens accepts it (no
    /// `single_rank` matches it; `all_ranks` still exports). A `LOCAL_RANK` that is not a
    /// local rank counts as 0 here with a warning; `first_rank_per_node` reads it itself (see
    /// [`local_rank_from_env`]).
    pub fn detect(
        rank: Option<u32>,
        world_size: Option<u32>,
        env: &dyn EnvSource,
    ) -> Result<Self, LensError> {
        let rank = match rank {
            Some(r) => r,
            None => first_number(env, &RANK_VARS)?.unwrap_or(0),
        };
        let world_size = match world_size {
            Some(w) => w,
            None => first_number(env, &WORLD_VARS)?.unwrap_or(1),
        };
        let local_rank = match local_rank_from_env(env).map(u32::try_from) {
            Ok(Ok(local)) => local,
            _ => {
                log::warn!(
                    "LOCAL_RANK={:?} is not a local rank: dl.local_rank is 0",
                    env.get("LOCAL_RANK").unwrap_or_default()
                );
                0
            }
        };
        let info = Self {
            rank,
            world_size,
            local_rank,
        };
        if let Err(e) = info.check() {
            log::warn!("{e}: accepted, as NeMo Lens accepts it");
        }
        Ok(info)
    }

    /// Whether the rank is inside a non-empty world.
    pub fn check(&self) -> Result<(), RankError> {
        if self.world_size == 0 {
            return Err(RankError::EmptyWorld);
        }
        if self.rank >= self.world_size {
            return Err(RankError::OutsideWorld {
                rank: self.rank,
                world_size: self.world_size,
            });
        }
        Ok(())
    }
}
