//! `lens demo`'s report in Chromium: one lane per rank, each with its steps, the slow rank
//! flagged, the crashed rank marked, the drops equal to `summary.json`.

use std::collections::BTreeMap;

use super::{load, load_with};

/// Steps per rank in the run's own JSON-lines files (what the page must draw).
fn steps_in_files(run: &std::path::Path) -> BTreeMap<u64, u64> {
    let mut out = BTreeMap::new();
    for rank in 0..8u64 {
        let text =
            std::fs::read_to_string(run.join(format!("rank-{rank}.jsonl"))).unwrap_or_default();
        let n = text
            .lines()
            .filter(|l| {
                serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| v["name"] == "step")
            })
            .count();
        out.insert(rank, n as u64);
    }
    out
}

#[test]
fn the_demo_report_shows_every_rank_the_straggler_and_the_crash() {
    let out = tempfile::tempdir().unwrap();
    // 20 ms steps (the slow rank's 40 ms): scheduling noise on a loaded machine stays well
    // under the 10 % that flags a straggler (2 ms steps let it flag another rank).
    let result = crate::lens()
        .args(["demo", "--ranks", "8", "--nodes", "2", "--steps", "60"])
        .args(["--step-ms", "20", "--slow-rank", "3", "--crash-rank", "5"])
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert_eq!(
        result.status.code(),
        Some(1),
        "a crashed rank fails the run: {stdout}"
    );
    let run = crate::cli::run_dir(out.path());
    let page = run.join("report.html");
    assert!(
        stdout.contains(&format!("report: {} (", page.display()))
            && stdout.contains("stragglers: 3; crashed: 5"),
        "{stdout}"
    );
    let dom = load(&page, "demo-8-ranks");
    let lanes = dom.tags("lane-label");
    let ranks: Vec<u64> = lanes.iter().map(|l| l.num("data-rank")).collect();
    assert_eq!(
        ranks,
        (0..8).collect::<Vec<_>>(),
        "one lane per rank, node by node"
    );
    let nodes: Vec<String> = lanes.iter().map(|l| l.attr("data-node").unwrap()).collect();
    assert_eq!(nodes, [["node 0"; 4], ["node 1"; 4]].concat());
    assert_eq!(dom.tags("node-label").len(), 2);
    let in_files = steps_in_files(&run);
    for lane in &lanes {
        let rank = lane.num("data-rank");
        assert_eq!(
            lane.num("data-steps"),
            in_files[&rank],
            "rank {rank}'s step bars"
        );
        if rank != 5 {
            assert_eq!(in_files[&rank], 60);
        }
        assert_eq!(
            lane.attr("data-straggler").unwrap(),
            (rank == 3).to_string(),
            "rank {rank}"
        );
        assert_eq!(
            lane.attr("data-crashed").unwrap(),
            (rank == 5).to_string(),
            "rank {rank}"
        );
    }
    let rows = dom.tags("dist-row");
    let flagged: Vec<u64> = rows
        .iter()
        .filter(|r| r.attr("data-straggler").unwrap() == "true")
        .map(|r| r.num("data-rank"))
        .collect();
    assert_eq!(flagged, [3]);
    // Exporter health: the drops per rank and in all equal summary.json's.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let summaries = summary["ranks"].as_array().unwrap();
    let dropped: u64 = summaries
        .iter()
        .map(|r| r["dropped"].as_u64().unwrap())
        .sum();
    assert_eq!(dom.by_id("health-totals").num("data-dropped"), dropped);
    let rows = dom.rows("data-rank");
    for row in &rows {
        let rank = row.num("data-rank");
        match summaries.iter().find(|s| s["rank"] == rank) {
            Some(s) => assert_eq!(row.attr("data-dropped").unwrap(), s["dropped"].to_string()),
            None => assert_eq!(
                (rank, row.attr("data-crashed").as_deref()),
                (5, Some("true"))
            ),
        }
    }
    assert_eq!(rows.len(), 8);
    // The checkpoints' log records are listed (the demo logs one per checkpoint and rank).
    assert!(dom.html.contains("checkpoint saved at step 50"));
    // The configuration is shown, without the built-in exporter's settings lost.
    assert!(
        dom.html.contains("service_name = \"lens-demo\""),
        "the config section"
    );

    // Real events on the drawn page: hovering rank 3's first step shows its name, rank and
    // attributes; the wheel zooms in around it; the severity filter hides the INFO records.
    let probed = load_with(&page, "#probe-rank=3", "demo-8-ranks-probed");
    let body = probed.body();
    let hover = body.attr("data-probe-hover").unwrap();
    assert!(
        hover.starts_with("step  ")
            && hover.contains("rank 3, at ")
            && hover.contains("\nstep = 1\n"),
        "{hover:?}"
    );
    let zoom: f64 = body.attr("data-probe-zoom").unwrap().parse().unwrap();
    assert!(
        (zoom - 0.8).abs() < 1e-9,
        "one wheel step shows 80 % of the range: {zoom}"
    );
    assert_eq!(
        body.attr("data-probe-logs").as_deref(),
        Some("0"),
        "the demo logs at INFO only"
    );
}
