//! The timeline's lanes: one per rank, or aggregated past [`LANE_BUDGET`] (docs/report.md),
//! and the spans each lane draws within [`SPAN_BUDGET`].

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::analysis::{Analysis, RankView, UNKNOWN_NODE, ms};
use super::limits::{
    FAULTS_PER_LANE, FLAGGED_LANES, LANE_BUDGET, PAGE_ATTRIBUTE_BYTES, SPAN_BUDGET,
};
use super::model::{RankData, RunData};

/// The timeline's lanes, the attribute texts their spans point at, and what was aggregated or
/// left out.
pub fn lanes(run: &RunData, a: &Analysis) -> (Vec<Value>, Vec<String>, Vec<String>) {
    let mut notes = Vec::new();
    let flagged = |r: &RankView| r.straggler || r.crashed.is_some();
    let (single, groups): (Vec<&RankView>, Vec<(String, Vec<&RankView>)>) = if a.ranks.len()
        <= LANE_BUDGET
    {
        let mut v: Vec<&RankView> = a.ranks.iter().collect();
        v.sort_by(|x, y| {
            node_key(&x.node)
                .cmp(&node_key(&y.node))
                .then(x.rank.cmp(&y.rank))
        });
        (v, Vec::new())
    } else {
        let single: Vec<&RankView> = a
            .ranks
            .iter()
            .filter(|r| flagged(r))
            .take(FLAGGED_LANES)
            .collect();
        let mut by_node: BTreeMap<(u64, String), Vec<&RankView>> = BTreeMap::new();
        for r in &a.ranks {
            by_node.entry(node_key(&r.node)).or_default().push(r);
        }
        let known = !by_node.keys().any(|(_, n)| n == UNKNOWN_NODE);
        let groups: Vec<(String, Vec<&RankView>)> = if known
            && by_node.len() <= LANE_BUDGET - single.len()
        {
            notes.push(format!(
                "{} ranks: one lane per node ({} nodes), each drawing its ranks' steps as one band (earliest start to latest end of each step); flagged ranks keep their own lane",
                a.ranks.len(),
                by_node.len()
            ));
            by_node.into_iter().map(|((_, n), v)| (n, v)).collect()
        } else {
            let lanes = LANE_BUDGET - single.len();
            let per = a.ranks.len().div_ceil(lanes);
            notes.push(format!(
                "{} ranks on {} nodes: one lane per {per} consecutive ranks, each drawing its ranks' steps as one band (earliest start to latest end of each step); flagged ranks keep their own lane",
                a.ranks.len(),
                by_node.len()
            ));
            a.ranks
                .chunks(per)
                .map(|c| {
                    (
                        format!("ranks {}–{}", c[0].rank, c[c.len() - 1].rank),
                        c.iter().collect(),
                    )
                })
                .collect()
        };
        let left = a
            .ranks
            .iter()
            .filter(|r| flagged(r))
            .count()
            .saturating_sub(single.len());
        if left > 0 {
            notes.push(format!(
                "{left} more flagged ranks are drawn within their group's lane only"
            ));
        }
        (single, groups)
    };
    let mut out = Vec::new();
    let mut budget = span_budget(&single);
    if let Some(depth) = budget.depth {
        notes.push(format!(
            "{} spans in single lanes: spans deeper than level {depth} are not drawn (at most {SPAN_BUDGET} spans)",
            budget.total
        ));
    }
    for r in &single {
        out.push(single_lane(run, a, r, &mut budget));
    }
    for (label, members) in &groups {
        out.push(group_lane(a, label, members));
    }
    if budget.attrs_full {
        notes.push(format!("attributes of spans past {} MiB of them are not in the page (hover shows name and duration)", PAGE_ATTRIBUTE_BYTES >> 20));
    }
    (out, budget.attrs, notes)
}

/// Nodes in their number's order (`node 10` after `node 9`), names after numbers.
fn node_key(node: &str) -> (u64, String) {
    let n = node.trim_start_matches("node ").parse().unwrap_or(u64::MAX);
    (n, node.to_string())
}

struct Budget {
    /// The deepest level drawn, when not every span is.
    depth: Option<u16>,
    total: usize,
    attr_bytes: usize,
    attrs_full: bool,
    /// Attribute texts embedded so far (indices into the page's `attrs`).
    attrs: Vec<String>,
}

fn span_budget(lanes: &[&RankView]) -> Budget {
    let mut per_depth: BTreeMap<u16, usize> = BTreeMap::new();
    for r in lanes {
        for &d in &r.depth {
            *per_depth.entry(d).or_default() += 1;
        }
    }
    let total: usize = per_depth.values().sum();
    let mut depth = None;
    if total > SPAN_BUDGET {
        let mut sum = 0;
        let mut keep = 0;
        for (&d, &n) in &per_depth {
            if sum + n > SPAN_BUDGET {
                break;
            }
            sum += n;
            keep = d;
        }
        depth = Some(keep);
    }
    Budget {
        depth,
        total,
        attr_bytes: 0,
        attrs_full: false,
        attrs: Vec::new(),
    }
}

fn faults(run: &RunData, a: &Analysis, r: &RankView) -> Vec<Value> {
    let data = run.ranks.get(&r.rank);
    let mut out: Vec<Value> =
        data.into_iter()
            .flat_map(|d| {
                d.faults
                    .iter()
                    .map(|f| json!([ms(f.time.unwrap_or(r.last), a.t0), f.text]))
                    .chain(d.logs.iter().filter(|l| l.severity_number >= 13).map(|l| {
                        json!([ms(l.time, a.t0), format!("{} {}", l.severity_text, l.body)])
                    }))
            })
            .take(FAULTS_PER_LANE)
            .collect();
    if let Some(why) = &r.crashed {
        out.push(json!([ms(r.last, a.t0), format!("crashed: {why}")]));
    }
    out
}

fn single_lane(run: &RunData, a: &Analysis, r: &RankView, budget: &mut Budget) -> Value {
    let empty = RankData::default();
    let data = run.ranks.get(&r.rank).unwrap_or(&empty);
    let mut spans = Vec::new();
    for (s, &d) in data.spans.iter().zip(&r.depth) {
        if budget.depth.is_some_and(|max| d > max) {
            continue;
        }
        let attr = match &s.attrs {
            Some(text) if budget.attr_bytes + text.len() <= PAGE_ATTRIBUTE_BYTES => {
                budget.attr_bytes += text.len();
                budget.attrs.push(text.to_string());
                (budget.attrs.len() - 1) as i64
            }
            Some(_) => {
                budget.attrs_full = true;
                -1
            }
            None => -1,
        };
        spans.push(json!([
            ms(s.start, a.t0),
            ms(s.end, a.t0) - ms(s.start, a.t0),
            d,
            s.name,
            attr,
            s.step as u8
        ]));
    }
    json!({
        "kind": "rank",
        "label": format!("rank {}", r.rank),
        "rank": r.rank,
        "node": r.node,
        "steps": r.steps.len(),
        "median_ms": r.median_ms,
        "straggler": r.straggler,
        "crashed": r.crashed,
        "spans": spans,
        "faults": faults(run, a, r),
    })
}

fn group_lane(a: &Analysis, label: &str, members: &[&RankView]) -> Value {
    let longest = members.iter().map(|r| r.steps.len()).max().unwrap_or(0);
    let mut bands = Vec::with_capacity(longest);
    for i in 0..longest {
        let mut start = u64::MAX;
        let mut end = 0;
        let mut durs: Vec<(f64, u32)> = Vec::new();
        for r in members {
            if let Some(&(s, e)) = r.steps.get(i) {
                start = start.min(s);
                end = end.max(e);
                durs.push(((e - s) as f64 / 1e6, r.rank));
            }
        }
        durs.sort_by(|x, y| x.0.total_cmp(&y.0));
        let median = durs[durs.len() / 2].0;
        let (max, max_rank) = durs[durs.len() - 1];
        bands.push(json!([
            ms(start, a.t0),
            ms(end, a.t0) - ms(start, a.t0),
            median,
            max,
            max_rank,
            durs.len()
        ]));
    }
    let ranks: Vec<u32> = members.iter().map(|r| r.rank).collect();
    let faults: Vec<Value> = members
        .iter()
        .filter_map(|r| {
            r.crashed
                .as_ref()
                .map(|why| json!([ms(r.last, a.t0), format!("rank {} crashed: {why}", r.rank)]))
        })
        .take(FAULTS_PER_LANE)
        .collect();
    json!({
        "kind": "group",
        "label": label,
        "node": members.first().map(|r| r.node.clone()),
        "ranks": ranks,
        "steps": bands.len(),
        "straggler": members.iter().any(|r| r.straggler),
        "crashed": members.iter().filter(|r| r.crashed.is_some()).count(),
        "bands": bands,
        "faults": faults,
    })
}
