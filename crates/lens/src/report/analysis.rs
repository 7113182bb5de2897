//! From a run's records to what every section needs: the time base, each rank's steps, its
//! spans' depths, stragglers and crashes.
//!
//! Rules (docs/report.md):
//! - a **step** is a span named `step` or ending in `step` (`train_step`, `training.step`), or
//!   one with a `dl.iteration` attribute;
//! - a **straggler** is a rank whose median step time is more than the threshold (10 % by
//!   default) above the job's median (the median of every rank's median), with 2 ranks or more;
//! - a rank is **crashed** when `summary.json` says it failed, or names other ranks but not it.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::model::{RankData, RunData};

/// Whether a span is a training step (the rule above).
pub fn is_step(name: &str, attributes: &Map<String, Value>) -> bool {
    let lower = name.to_ascii_lowercase();
    lower == "step"
        || ["_step", ".step", " step", "-step", "/step"]
            .iter()
            .any(|end| lower.ends_with(end))
        || attributes.contains_key(crate::semconv::DL_ITERATION)
}

/// The node of a rank that no record or summary names.
pub const UNKNOWN_NODE: &str = "node ?";

/// Milliseconds since the run's first record, to the microsecond.
pub fn ms(t: u64, t0: u64) -> f64 {
    (t.saturating_sub(t0) as f64 / 1e3).round() / 1e3
}

/// The quantile `q` of sorted values (nearest rank).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// One rank as the page sees it.
#[derive(Debug, Clone)]
pub struct RankView {
    pub rank: u32,
    pub node: String,
    /// Step durations in milliseconds, sorted.
    pub step_ms: Vec<f64>,
    /// Each step's (start, end), in the order they ran.
    pub steps: Vec<(u64, u64)>,
    pub median_ms: f64,
    pub straggler: bool,
    /// Why the rank failed, when it did.
    pub crashed: Option<String>,
    /// The rank's last record (where its crash marker goes).
    pub last: u64,
    /// Each span's depth under its parents on the rank (spans sorted by start).
    pub depth: Vec<u16>,
}

/// What every section needs: the time base and each rank's view.
pub struct Analysis {
    pub t0: u64,
    pub t1: u64,
    pub ranks: Vec<RankView>,
    pub job_median_ms: f64,
    pub threshold: f64,
}

fn depths(data: &RankData) -> Vec<u16> {
    let index: HashMap<u64, usize> = data
        .spans
        .iter()
        .enumerate()
        .map(|(i, s)| (s.span_id, i))
        .collect();
    let mut depth = vec![u16::MAX; data.spans.len()];
    for i in 0..data.spans.len() {
        // Walk up to a known depth (or a root), then fill the path down; a cycle of ids (bad
        // input) ends at the path's length.
        let mut path = vec![i];
        let mut at = i;
        let base = loop {
            let parent = data.spans[at].parent;
            match index.get(&parent) {
                Some(&p) if p != at && path.len() < 256 => {
                    if depth[p] != u16::MAX {
                        break depth[p] + 1;
                    }
                    if path.contains(&p) {
                        break 0;
                    }
                    path.push(p);
                    at = p;
                }
                _ => break 0,
            }
        };
        for (k, &j) in path.iter().rev().enumerate() {
            if depth[j] == u16::MAX {
                depth[j] = base + k as u16;
            }
        }
    }
    depth
}

/// Sorts each rank's spans and logs by time and finds its steps, stragglers and crashes.
pub fn analyse(run: &mut RunData, threshold: f64) -> Analysis {
    let mut t0 = u64::MAX;
    let mut t1 = 0u64;
    for data in run.ranks.values_mut() {
        data.spans
            .sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
        data.logs.sort_by_key(|l| l.time);
        let times = data
            .spans
            .iter()
            .flat_map(|s| [s.start, s.end])
            .chain(data.logs.iter().map(|l| l.time))
            .chain(
                data.metrics
                    .values()
                    .flat_map(|m| m.points.iter().map(|p| p.time)),
            );
        for t in times {
            t0 = t0.min(t);
            t1 = t1.max(t);
        }
    }
    if t0 == u64::MAX {
        t0 = 0;
    }
    let summary_ranks: Option<Vec<u32>> = run
        .summary
        .as_ref()
        .map(|s| s.ranks.keys().copied().collect());
    let mut all: Vec<u32> = run.ranks.keys().copied().collect();
    all.extend(summary_ranks.iter().flatten());
    all.sort_unstable();
    all.dedup();
    let mut ranks: Vec<RankView> = all
        .iter()
        .map(|&rank| {
            let empty = RankData::default();
            let data = run.ranks.get(&rank).unwrap_or(&empty);
            let health = run.health(rank);
            let node = health
                .and_then(|h| h.node)
                .map(|n| format!("node {n}"))
                .or_else(|| data.node.clone())
                .unwrap_or_else(|| UNKNOWN_NODE.into());
            let steps: Vec<(u64, u64)> = data
                .spans
                .iter()
                .filter(|s| s.step)
                .map(|s| (s.start, s.end))
                .collect();
            let mut step_ms: Vec<f64> = steps.iter().map(|(s, e)| (e - s) as f64 / 1e6).collect();
            step_ms.sort_by(f64::total_cmp);
            let crashed = match (health, &summary_ranks) {
                (Some(h), _) => h.failed.clone(),
                (None, Some(listed)) if !listed.is_empty() => {
                    Some("not in summary.json (the rank ended without a summary)".into())
                }
                _ => None,
            };
            let last = data
                .spans
                .iter()
                .map(|s| s.end)
                .chain(data.logs.iter().map(|l| l.time))
                .max()
                .unwrap_or(t1);
            RankView {
                rank,
                node,
                median_ms: quantile(&step_ms, 0.5),
                step_ms,
                steps,
                straggler: false,
                crashed,
                last,
                depth: depths(data),
            }
        })
        .collect();
    let mut medians: Vec<f64> = ranks
        .iter()
        .filter(|r| !r.step_ms.is_empty())
        .map(|r| r.median_ms)
        .collect();
    medians.sort_by(f64::total_cmp);
    let job_median_ms = quantile(&medians, 0.5);
    if medians.len() >= 2 {
        for r in &mut ranks {
            r.straggler = !r.step_ms.is_empty() && r.median_ms > job_median_ms * (1.0 + threshold);
        }
    }
    Analysis {
        t0,
        t1: t1.max(t0),
        ranks,
        job_median_ms,
        threshold,
    }
}
