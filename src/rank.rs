//! Who this process is in the job: rank, world size, local rank, from the launcher's environment.

use crate::config::env::EnvSource;
use crate::error::{LensError, RankError};

/// The identity of one rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankInfo {
    /// Global rank, `0..world_size`.
    pub rank: u32,
    /// Number of ranks in the job.
    pub world_size: u32,
    /// Rank on this node (`LOCAL_RANK`, `SLURM_LOCALID`); missing means 0.
    pub local_rank: u32,
}

const RANK_VARS: [&str; 2] = ["RANK", "SLURM_PROCID"];
const WORLD_VARS: [&str; 2] = ["WORLD_SIZE", "SLURM_NTASKS"];
const LOCAL_VARS: [&str; 2] = ["LOCAL_RANK", "SLURM_LOCALID"];

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

impl RankInfo {
    /// Rank and world size as given, else from `RANK`/`WORLD_SIZE`/`LOCAL_RANK`, then
    /// `SLURM_PROCID`/`SLURM_NTASKS`/`SLURM_LOCALID`, else rank 0 of 1.
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
        let local_rank = first_number(env, &LOCAL_VARS)?.unwrap_or(0);
        let info = Self {
            rank,
            world_size,
            local_rank,
        };
        info.check()?;
        Ok(info)
    }

    /// Errors when the rank is outside the world.
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
