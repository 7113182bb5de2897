//! The page's other sections: the step-time distribution per rank, throughput over time,
//! exporter health per rank (from `summary.json`), the domain metrics as small charts, the log
//! records. Each stays within its budget in [`super::limits`] and says what it left out.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::analysis::{Analysis, RankView, ms, quantile};
use super::limits::{CHART_BINS, LOG_BUDGET, METRIC_BUDGET, ROW_BUDGET};
use super::model::RunData;

/// Ranks to draw one row each: every rank up to [`ROW_BUDGET`]; past it the flagged ones, then
/// `first` (the slowest, the ones that dropped…), then evenly spaced others.
fn rows<'a>(
    ranks: &'a [RankView],
    first: impl Fn(&RankView) -> bool,
    notes: &mut Vec<String>,
    what: &str,
) -> Vec<&'a RankView> {
    if ranks.len() <= ROW_BUDGET {
        return ranks.iter().collect();
    }
    let mut picked: Vec<&RankView> = ranks
        .iter()
        .filter(|r| r.straggler || r.crashed.is_some() || first(r))
        .take(ROW_BUDGET / 2)
        .collect();
    let step = ranks.len().div_ceil(ROW_BUDGET - picked.len()).max(1);
    for r in ranks.iter().step_by(step) {
        if picked.len() >= ROW_BUDGET {
            break;
        }
        if !picked.iter().any(|p| p.rank == r.rank) {
            picked.push(r);
        }
    }
    picked.sort_by_key(|r| r.rank);
    notes.push(format!(
        "{what}: {} of {} ranks drawn (the flagged ones, then every {step}th)",
        picked.len(),
        ranks.len()
    ));
    picked
}

/// Each rank's step times: quantiles, and whether it is a straggler.
pub fn distribution(a: &Analysis, notes: &mut Vec<String>) -> Value {
    let slow = a.job_median_ms * (1.0 + a.threshold);
    let rows: Vec<Value> = rows(&a.ranks, |r| r.median_ms > slow, notes, "step times")
        .into_iter()
        .filter(|r| !r.step_ms.is_empty())
        .map(|r| {
            let q = |x| quantile(&r.step_ms, x);
            json!({
                "rank": r.rank, "node": r.node, "n": r.step_ms.len(),
                "min": q(0.0), "p5": q(0.05), "p25": q(0.25), "p50": q(0.5), "p75": q(0.75),
                "p95": q(0.95), "max": q(1.0), "straggler": r.straggler,
            })
        })
        .collect();
    json!({
        "job_median_ms": a.job_median_ms,
        "threshold": a.threshold,
        "stragglers": a.ranks.iter().filter(|r| r.straggler).map(|r| r.rank).collect::<Vec<_>>(),
        "rows": rows,
    })
}

fn bins(a: &Analysis) -> (f64, usize) {
    let span = ms(a.t1, a.t0).max(1e-3);
    (span / CHART_BINS as f64, CHART_BINS)
}

/// Steps and spans ended per second over the run (all ranks).
pub fn throughput(run: &RunData, a: &Analysis) -> Value {
    let (width, n) = bins(a);
    let bin = |t: u64| ((ms(t, a.t0) / width) as usize).min(n - 1);
    let mut steps = vec![0u64; n];
    let mut spans = vec![0u64; n];
    for r in &a.ranks {
        for &(_, end) in &r.steps {
            steps[bin(end)] += 1;
        }
    }
    for data in run.ranks.values() {
        for s in &data.spans {
            spans[bin(s.end)] += 1;
        }
    }
    let per_s = |v: Vec<u64>| -> Vec<f64> {
        v.into_iter()
            .map(|c| (c as f64 / (width / 1e3)).round())
            .collect()
    };
    json!({"bin_ms": width, "steps_per_s": per_s(steps), "spans_per_s": per_s(spans)})
}

/// The summary's numbers per rank, in this order (absent ones are null).
const HEALTH: [&str; 11] = [
    "produced",
    "exported",
    "data_points_exported",
    "log_records_exported",
    "dropped",
    "spooled",
    "in_spool",
    "retries",
    "restarts",
    "reloads",
    "latency_p99_us",
];

/// Exporter health per rank, and the job's totals (over every rank, drawn or not).
pub fn health(run: &RunData, a: &Analysis, notes: &mut Vec<String>) -> Value {
    let Some(summary) = &run.summary else {
        return json!({"columns": HEALTH, "rows": [], "totals": null,
            "note": "no summary.json in the run folder: exporter health is unknown (lens demo writes one)"});
    };
    let number = |rank: u32, key: &str| -> Option<u64> {
        summary
            .ranks
            .get(&rank)?
            .summary
            .as_ref()?
            .get(key)?
            .as_u64()
    };
    let mut totals = vec![0u64; HEALTH.len()];
    let mut reasons_total: BTreeMap<String, u64> = BTreeMap::new();
    for (rank, h) in &summary.ranks {
        for (i, key) in HEALTH.iter().enumerate() {
            if *key != "latency_p99_us" {
                totals[i] += number(*rank, key).unwrap_or(0);
            }
        }
        let reasons = h
            .summary
            .as_ref()
            .and_then(|s| s.get("dropped_by_reason")?.as_object().cloned());
        for (k, v) in reasons.into_iter().flatten() {
            *reasons_total.entry(k).or_default() += v.as_u64().unwrap_or(0);
        }
    }
    let dropped = |r: &RankView| number(r.rank, "dropped").unwrap_or(0) > 0;
    let rows: Vec<Value> = rows(&a.ranks, dropped, notes, "exporter health")
        .into_iter()
        .map(|r| {
            let h = summary.ranks.get(&r.rank);
            let s = h.and_then(|h| h.summary.as_ref());
            let status = match (&r.crashed, s.and_then(|s| s.get("error")?.as_str())) {
                (Some(why), _) => format!("crashed: {why}"),
                (None, Some(e)) => format!("error: {e}"),
                (None, None) if s.is_none() => "no summary".into(),
                _ => "ok".into(),
            };
            json!({
                "rank": r.rank,
                "node": r.node,
                "status": status,
                "crashed": r.crashed.is_some(),
                "values": HEALTH.iter().map(|k| number(r.rank, k)).collect::<Vec<_>>(),
                "dropped_by_reason": s.and_then(|s| s.get("dropped_by_reason").cloned()),
                "notes": s.and_then(|s| s.get("notes").cloned()),
            })
        })
        .collect();
    json!({
        "columns": HEALTH,
        "rows": rows,
        "totals": totals,
        "dropped_by_reason": reasons_total,
        "note": null,
    })
}

/// One small chart per metric: per time bin, each rank's last value in the bin, then the
/// median, lowest and highest over the ranks.
pub fn metrics(run: &RunData, a: &Analysis, notes: &mut Vec<String>) -> Value {
    let mut names: BTreeMap<&str, (&str, &str)> = BTreeMap::new();
    for data in run.ranks.values() {
        for (name, s) in &data.metrics {
            names.entry(name).or_insert((&s.unit, &s.kind));
        }
    }
    if names.len() > METRIC_BUDGET {
        let left: Vec<&str> = names.keys().skip(METRIC_BUDGET).copied().collect();
        notes.push(format!(
            "{} metrics: the first {METRIC_BUDGET} by name are charted; not charted: {}",
            names.len(),
            super::formats::cut(&left.join(", "), 600)
        ));
    }
    let (width, n) = bins(a);
    let charts: Vec<Value> = names
        .iter()
        .take(METRIC_BUDGET)
        .map(|(name, (unit, kind))| {
            let mut per_bin: Vec<Vec<f64>> = vec![Vec::new(); n];
            for data in run.ranks.values() {
                let Some(series) = data.metrics.get(*name) else {
                    continue;
                };
                let mut last: Vec<Option<f64>> = vec![None; n];
                for p in &series.points {
                    let b = ((ms(p.time, a.t0) / width) as usize).min(n - 1);
                    last[b] = Some(p.value);
                }
                for (b, v) in last.into_iter().enumerate() {
                    if let Some(v) = v {
                        per_bin[b].push(v);
                    }
                }
            }
            let mut t = Vec::new();
            let (mut lo, mut mid, mut hi) = (Vec::new(), Vec::new(), Vec::new());
            for (b, mut vals) in per_bin.into_iter().enumerate() {
                if vals.is_empty() {
                    continue;
                }
                vals.sort_by(f64::total_cmp);
                t.push((b as f64 + 0.5) * width);
                lo.push(vals[0]);
                mid.push(quantile(&vals, 0.5));
                hi.push(vals[vals.len() - 1]);
            }
            json!({"name": name, "unit": unit, "kind": kind, "t": t, "min": lo, "median": mid, "max": hi})
        })
        .collect();
    Value::Array(charts)
}

/// The severity class of a record: OpenTelemetry's severity number ranges, else its text.
fn severity(number: i64, text: &str) -> &'static str {
    match number {
        1..=4 => "TRACE",
        5..=8 => "DEBUG",
        9..=12 => "INFO",
        13..=16 => "WARN",
        17..=20 => "ERROR",
        21..=24 => "FATAL",
        _ => match text.to_ascii_uppercase().as_str() {
            "TRACE" => "TRACE",
            "DEBUG" => "DEBUG",
            "WARN" | "WARNING" => "WARN",
            "ERROR" => "ERROR",
            "FATAL" | "CRITICAL" => "FATAL",
            _ => "INFO",
        },
    }
}

/// The log records, the first [`LOG_BUDGET`] in time; counts per severity over all of them.
pub fn logs(run: &RunData, a: &Analysis, notes: &mut Vec<String>) -> Value {
    let mut all: Vec<(u32, &super::model::LogRec)> = run
        .ranks
        .iter()
        .flat_map(|(rank, d)| d.logs.iter().map(move |l| (*rank, l)))
        .collect();
    all.sort_by_key(|(rank, l)| (l.time, *rank));
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for (_, l) in &all {
        *counts
            .entry(severity(l.severity_number, &l.severity_text))
            .or_default() += 1;
    }
    if all.len() > LOG_BUDGET {
        notes.push(format!(
            "{} log records: the first {LOG_BUDGET} in time are listed (the counts cover all)",
            all.len()
        ));
    }
    let rows: Vec<Value> = all
        .iter()
        .take(LOG_BUDGET)
        .map(|(rank, l)| {
            json!([
                ms(l.time, a.t0),
                rank,
                severity(l.severity_number, &l.severity_text),
                l.body,
                l.scope
            ])
        })
        .collect();
    json!({"total": all.len(), "counts": counts, "rows": rows})
}
