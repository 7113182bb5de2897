//! The Perfetto file of a real demo run against the run's JSON-lines: every span once, in
//! microseconds, nesting preserved on each thread.

use std::collections::BTreeMap;

use serde_json::Value;

#[test]
fn the_trace_events_hold_every_span_of_the_run_once() {
    let out = tempfile::tempdir().unwrap();
    let status = crate::lens()
        .args(["demo", "--ranks", "2", "--steps", "30", "--no-report"])
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let run = crate::cli::run_dir(out.path());
    assert!(!run.join("report.html").exists(), "--no-report");
    let stdout = super::report(&run, &["--perfetto"]);
    assert!(
        stdout.starts_with(&format!("{} (", run.join("trace.json").display())),
        "{stdout}"
    );
    let trace: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("trace.json")).unwrap()).unwrap();
    let t0 = trace["otherData"]["start_unix_nano"].as_u64().unwrap();
    // Every span of the files, by (rank, span id) → (start, end) in nanoseconds.
    let mut spans: BTreeMap<(u64, String), (u64, u64, String)> = BTreeMap::new();
    for rank in 0..2u64 {
        for line in std::fs::read_to_string(run.join(format!("rank-{rank}.jsonl")))
            .unwrap()
            .lines()
        {
            let s: Value = serde_json::from_str(line).unwrap();
            let key = (rank, s["span_id"].as_str().unwrap().to_string());
            let v = (
                s["start_unix_nano"].as_u64().unwrap(),
                s["end_unix_nano"].as_u64().unwrap(),
                s["name"].as_str().unwrap().to_string(),
            );
            assert!(spans.insert(key, v).is_none());
        }
    }
    let events: Vec<&Value> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .collect();
    assert_eq!(events.len(), spans.len(), "every span once");
    // Each event is one span of its rank: same name, start and duration in microseconds.
    let mut unmatched: BTreeMap<(u64, String, i64, i64), usize> = BTreeMap::new();
    for ((rank, _), (start, end, name)) in &spans {
        *unmatched
            .entry((
                *rank,
                name.clone(),
                (start - t0) as i64,
                (end - start) as i64,
            ))
            .or_default() += 1;
    }
    for e in &events {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        let key = (
            e["pid"].as_u64().unwrap(),
            e["name"].as_str().unwrap().to_string(),
            (ts * 1e3).round() as i64,
            (dur * 1e3).round() as i64,
        );
        let n = unmatched
            .get_mut(&key)
            .unwrap_or_else(|| panic!("{e} is no span of the run"));
        *n -= 1;
        if *n == 0 {
            unmatched.remove(&key);
        }
    }
    assert!(unmatched.is_empty());
    lens::testing::assert_trace_events_nest(events.iter().copied());
    let processes: Vec<&Value> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "process_name")
        .collect();
    assert_eq!(processes[0]["args"]["name"], "rank 0 (node 0)");
    assert_eq!(processes[1]["args"]["name"], "rank 1 (node 1)");
}
