//! An exporter entry's `spool`: where its batches wait on disk while it is down.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::spool::WhenFull;
use crate::spool::{Opened, Spool, SpoolError, SpoolLimits};

/// `spool = { dir = "...", max_mib = 1024, when_full = "drop_oldest" }` on an `otlp` or `wasm`
/// exporter entry: batches the exporter cannot take now (it failed, or its queue is filling
/// while an export hangs) are written there instead of being dropped, and replayed when it
/// recovers, by this process or the next one given the same directory (`docs/spool.md`).
///
/// ```toml
/// [[traces.exporters]]
/// kind = "otlp"
/// spool = { dir = "/scratch/lens-spool/{service}/{rank}/{exporter}", max_mib = 2048 }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SpoolSpec {
    /// The spool's directory, one per rank and exporter: `{service}`, `{rank}`, `{signal}` and
    /// `{exporter}` are replaced (the service name, the rank, `traces`/`metrics`/`logs`, the
    /// exporter's name); relative to the config file. Two entries of one rank never share one
    /// (setup names both). Default: `$LENS_SPOOL_DIR` (or `$XDG_CACHE_HOME/lens/spool`, else
    /// `~/.cache/lens/spool`) `/{service}/rank-{rank}/{signal}/{exporter}`. Example:
    /// `dir = "/scratch/spool/{service}/{rank}/{signal}-{exporter}"`.
    pub dir: Option<PathBuf>,
    /// Disk the spool may use, MiB (1 to 1048576). Default 1024. Example: `max_mib = 2048`.
    pub max_mib: Option<u64>,
    /// What a batch that does not fit does: `drop_oldest` (default: the oldest segments are
    /// removed, the newest data kept) or `drop_newest` (the new batch is dropped). Both count
    /// as `dropped_spool_full`. Example: `when_full = "drop_newest"`.
    pub when_full: WhenFull,
}

/// Default `max_mib`.
pub const DEFAULT_SPOOL_MIB: u64 = 1024;
/// Largest `max_mib`: 1 TiB.
pub const MAX_SPOOL_MIB: u64 = 1 << 20;

impl SpoolSpec {
    /// The disk budget, bytes.
    pub fn max_bytes(&self) -> u64 {
        self.max_mib.unwrap_or(DEFAULT_SPOOL_MIB) << 20
    }

    /// Checks the bounds, as a config file's entries are checked.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(mib) = self.max_mib
            && !(1..=MAX_SPOOL_MIB).contains(&mib)
        {
            return Err(format!(
                "`spool.max_mib` = {mib} is out of range (1 to {MAX_SPOOL_MIB})"
            ));
        }
        if let Some(dir) = &self.dir
            && dir.as_os_str().is_empty()
        {
            return Err("`spool.dir` is empty (leave it out for the default)".into());
        }
        Ok(())
    }

    pub(crate) fn resolve_relative_paths(&mut self, base: &Path) {
        if let Some(dir) = self.dir.as_mut().filter(|d| d.is_relative()) {
            *dir = base.join(&*dir);
        }
    }

    /// The directory of the spool of `exporter` (of `signal`) on `rank` of `service`: `dir`
    /// with its placeholders replaced, or the default under the cache directory. Names are
    /// made path-safe (a service called `a/b` does not reach another directory).
    pub fn resolved_dir(
        &self,
        env: &dyn crate::config::env::EnvSource,
        service: &str,
        rank: u32,
        exporter: &str,
        signal: crate::Signal,
    ) -> PathBuf {
        let (service, exporter) = (path_safe(service), path_safe(exporter));
        match &self.dir {
            Some(dir) => PathBuf::from(
                dir.to_string_lossy()
                    .replace("{service}", &service)
                    .replace("{rank}", &rank.to_string())
                    .replace("{signal}", signal.as_str())
                    .replace("{exporter}", &exporter),
            ),
            None => default_root(env)
                .join(service)
                .join(format!("rank-{rank}"))
                .join(signal.as_str())
                .join(exporter),
        }
    }
}

impl SpoolSpec {
    /// Opens (taking its lock) the spool of `exporter`'s `signal` on `rank` of `service`, in
    /// [`resolved_dir`](Self::resolved_dir), within this spec's bounds.
    pub fn open(
        &self,
        env: &dyn crate::config::env::EnvSource,
        service: &str,
        rank: u32,
        exporter: &str,
        signal: crate::Signal,
    ) -> Result<(Spool, Opened), SpoolError> {
        let dir = self.resolved_dir(env, service, rank, exporter, signal);
        Spool::open(&dir, signal, self.limits())
    }

    /// The bounds this spec sets.
    pub fn limits(&self) -> SpoolLimits {
        SpoolLimits::new(self.max_bytes(), self.when_full)
    }
}

/// `$LENS_SPOOL_DIR`, `$XDG_CACHE_HOME/lens/spool`, `~/.cache/lens/spool`, or `./.lens-spool`
/// without a home.
fn default_root(env: &dyn crate::config::env::EnvSource) -> PathBuf {
    let set = |k: &str| env.get(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    set("LENS_SPOOL_DIR")
        .or_else(|| set("XDG_CACHE_HOME").map(|c| c.join("lens").join("spool")))
        .or_else(|| set("HOME").map(|h| h.join(".cache").join("lens").join("spool")))
        .unwrap_or_else(|| PathBuf::from(".lens-spool"))
}

/// `name` with anything but letters, digits, `-`, `_` and `.` replaced by `_` (and `.`/`..`
/// made `_`).
fn path_safe(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.is_empty() || safe.chars().all(|c| c == '.') {
        "_".into()
    } else {
        safe
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn the_directory_is_per_service_rank_and_exporter_and_never_escapes() {
        let env: HashMap<String, String> = [("HOME".to_string(), "/home/u".to_string())].into();
        let spec = SpoolSpec::default();
        assert_eq!(
            spec.resolved_dir(&env, "llama/7b", 3, "otlp", crate::Signal::Logs),
            PathBuf::from("/home/u/.cache/lens/spool/llama_7b/rank-3/logs/otlp")
        );
        let spec = SpoolSpec {
            dir: Some("/scratch/{service}/{rank}/{signal}-{exporter}".into()),
            ..Default::default()
        };
        assert_eq!(
            spec.resolved_dir(&env, "svc", 0, "..", crate::Signal::Metrics),
            PathBuf::from("/scratch/svc/0/metrics-_")
        );
        assert!(
            SpoolSpec {
                max_mib: Some(0),
                ..Default::default()
            }
            .validate()
            .is_err()
        );
    }
}
