//! The report's reading, analysis and Perfetto file, on run folders written here (the browser
//! tests, on real demo runs, are in `tests/all/report`).

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use super::*;

/// A Lens JSON-lines span line.
fn span(name: &str, id: u64, parent: u64, start: u64, end: u64) -> String {
    json!({
        "name": name, "trace_id": "0af7651916cd43dd8448eb211c80319c",
        "span_id": format!("{id:016x}"), "parent_span_id": format!("{parent:016x}"),
        "kind": "internal", "start_unix_nano": start, "end_unix_nano": end,
        "duration_ns": end.saturating_sub(start), "status": {"code": "unset"},
        "attributes": {"step": id}, "events": [], "links": [], "scope": "t",
    })
    .to_string()
}

const T0: u64 = 1_765_000_000_000_000_000;

/// `ranks` ranks of `steps` steps (a step of 10 ms with a child of 6 ms); `slow` takes 15 ms.
fn write_run(dir: &Path, ranks: u32, steps: u64, slow: Option<u32>) {
    for rank in 0..ranks {
        let mut f = std::fs::File::create(dir.join(format!("rank-{rank}.jsonl"))).unwrap();
        let step_ns = if Some(rank) == slow {
            15_000_000
        } else {
            10_000_000
        };
        for i in 0..steps {
            let start = T0 + i * 20_000_000;
            let id = (u64::from(rank) << 32) | (i * 2 + 1);
            writeln!(
                f,
                "{}",
                span(
                    "forward_backward",
                    id + 1,
                    id,
                    start + 1_000,
                    start + 6_000_000
                )
            )
            .unwrap();
            writeln!(f, "{}", span("step", id, 0, start, start + step_ns)).unwrap();
        }
    }
}

fn page_data(dir: &Path) -> Value {
    let mut run = read_run(dir, None).unwrap();
    let a = analysis::analyse(&mut run, 0.10);
    page::data(&run, &a, "t")
}

#[test]
fn iso_times_read_as_unix_nanoseconds() {
    use formats::iso_nanos;
    assert_eq!(iso_nanos("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(
        iso_nanos("2026-12-07T20:01:20.123456Z"),
        Some(1_796_673_680_123_456_000)
    );
    assert_eq!(
        iso_nanos("2026-12-07T21:01:20.123456+01:00"),
        Some(1_796_673_680_123_456_000)
    );
    assert_eq!(
        iso_nanos("2000-02-29T00:00:00.5Z"),
        Some(951_782_400_500_000_000)
    );
    for bad in [
        "",
        "2026-13-01T00:00:00Z",
        "2026-12-07",
        "2026-12-07T20:01:20.Z",
        "x026-12-07T20:01:20Z",
    ] {
        assert_eq!(iso_nanos(bad), None, "{bad}");
    }
}

#[test]
fn a_path_names_its_rank() {
    use read::rank_in_path;
    assert_eq!(rank_in_path(Path::new("rank-3.jsonl")), Some(3));
    assert_eq!(rank_in_path(Path::new("rank3/spans.jsonl")), Some(3));
    assert_eq!(
        rank_in_path(Path::new("out/RANK_12.metrics.jsonl")),
        Some(12)
    );
    assert_eq!(rank_in_path(Path::new("spans.jsonl")), None);
    assert_eq!(rank_in_path(Path::new("rank-99999999999.jsonl")), None);
}

#[test]
fn steps_stragglers_and_lanes_follow_the_run() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), 4, 30, Some(2));
    let d = page_data(dir.path());
    assert_eq!(d["meta"]["ranks"], 4);
    assert_eq!(d["meta"]["spans"], 240);
    assert_eq!(d["distribution"]["stragglers"], json!([2]));
    assert_eq!(d["distribution"]["job_median_ms"], 10.0);
    let lanes = d["lanes"].as_array().unwrap();
    assert_eq!(lanes.len(), 4);
    for lane in lanes {
        assert_eq!(lane["steps"], 30);
        assert_eq!(lane["spans"].as_array().unwrap().len(), 60);
        assert_eq!(lane["straggler"], lane["rank"] == 2);
        // The child is drawn one level under its step.
        let depths: Vec<u64> = lane["spans"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s[2].as_u64().unwrap())
            .collect();
        assert_eq!(depths.iter().filter(|&&x| x == 1).count(), 30);
    }
    assert_eq!(d["skipped"], json!([]));
}

#[test]
fn bad_lines_are_counted_by_reason_and_the_rest_is_drawn() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), 1, 5, None);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.path().join("rank-0.jsonl"))
        .unwrap();
    writeln!(f, "not json at all").unwrap();
    writeln!(
        f,
        "{}",
        json!({"format": "lens-span/9", "what": "a newer line"})
    )
    .unwrap();
    writeln!(f, "{}", span("backwards", 77, 0, T0 + 10, T0 + 5)).unwrap();
    // A 17 MiB attribute value: the line is over the bound, read past, not held.
    let big = "x".repeat(17 << 20);
    writeln!(f, "{}", json!({"name": "huge", "span_id": "00000000000000ff", "start_unix_nano": T0, "end_unix_nano": T0 + 1, "attributes": {"blob": big}})).unwrap();
    // A cut last line (a rank killed mid-write).
    let whole = span("step", 99, 0, T0, T0 + 1);
    write!(f, "{}", &whole[..whole.len() / 2]).unwrap();
    drop(f);
    let d = page_data(dir.path());
    let reasons: Vec<(String, u64)> = d["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["reason"].as_str().unwrap().to_string(),
                s["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        vec![
            (
                "a line of no format Lens reads (a newer format, or another tool's)".to_string(),
                1
            ),
            ("a line over 16 MiB".to_string(), 1),
            ("a line that is not JSON (or cut short)".to_string(), 2),
            ("a span that ends before it starts".to_string(), 1),
        ]
    );
    assert_eq!(d["meta"]["spans"], 10);
    assert_eq!(d["skipped"][0]["first_file"], "rank-0.jsonl");
}

#[test]
fn python_console_lines_are_read_too() {
    let dir = tempfile::tempdir().unwrap();
    let line = json!({
        "name": "train_step", "context": {"trace_id": "0x0af7651916cd43dd8448eb211c80319c", "span_id": "0x00f067aa0ba902b7", "trace_state": "[]"},
        "kind": "SpanKind.INTERNAL", "parent_id": null,
        "start_time": "2026-12-07T20:01:20.000000Z", "end_time": "2026-12-07T20:01:20.250000Z",
        "status": {"status_code": "UNSET"}, "attributes": {"dl.iteration": 1},
        "events": [], "links": [], "resource": {"attributes": {"dl.rank": 5, "host.name": "gpu-node-1"}, "schema_url": ""},
    });
    let log = json!({"body": "loss spiked", "severity_number": 13, "severity_text": "WARN", "attributes": {}, "timestamp": "2026-12-07T20:01:20.100000Z",
        "resource": {"attributes": {"dl.rank": 5}, "schema_url": ""}});
    std::fs::write(dir.path().join("console.jsonl"), format!("{line}\n{log}\n")).unwrap();
    let d = page_data(dir.path());
    let lane = &d["lanes"][0];
    assert_eq!(lane["rank"], 5);
    assert_eq!(lane["node"], "gpu-node-1");
    assert_eq!(lane["steps"], 1);
    assert_eq!(d["logs"]["rows"][0][2], "WARN");
    assert_eq!(lane["faults"][0][1], "WARN loss spiked");
}

#[test]
fn a_folder_with_nothing_to_report_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rank-0.jsonl"), "garbage\n").unwrap();
    let e = write_report(dir.path(), &ReportOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("nothing to report: 1 JSON-lines file(s)") && e.contains("(1 line(s) skipped)"),
        "{e}"
    );
    let missing = dir.path().join("absent");
    let e = write_report(&missing, &ReportOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!("cannot read the run folder {}", missing.display())),
        "{e}"
    );
    let e = write_report(
        dir.path(),
        &ReportOptions::default().with_straggler_threshold(f64::NAN),
    )
    .unwrap_err();
    assert!(matches!(e, ReportError::Threshold(_)));
}

#[test]
fn a_summary_of_a_newer_format_is_skipped_and_said() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), 2, 3, None);
    std::fs::write(
        dir.path().join("summary.json"),
        r#"{"format": "lens-run-summary/2", "ranks": []}"#,
    )
    .unwrap();
    let d = page_data(dir.path());
    assert_eq!(
        d["skipped"][0]["reason"],
        "a summary of format `lens-run-summary/2` (this Lens reads `lens-run-summary/1`)"
    );
    assert!(
        d["health"]["note"]
            .as_str()
            .unwrap()
            .contains("no summary.json")
    );
}

#[test]
fn a_crashed_rank_and_the_drops_come_from_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), 3, 4, None);
    let summary = json!({"format": SUMMARY_FORMAT, "run_id": "demo-1", "world_size": 3, "nodes": 1,
        "ranks": [{"rank": 0, "node": 0, "exported": 8, "dropped": 2, "dropped_by_reason": {"queue_full": 2}},
                  {"rank": 1, "node": 0, "exported": 8, "dropped": 0}],
        "failed": [{"rank": 2, "node": 0, "error": "crashed (signal: 6, SIGABRT)"}]});
    std::fs::write(dir.path().join("summary.json"), summary.to_string()).unwrap();
    let d = page_data(dir.path());
    assert_eq!(d["meta"]["crashed"], json!([2]));
    assert_eq!(d["meta"]["run_id"], "demo-1");
    let dropped = d["health"]["columns"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c == "dropped")
        .unwrap();
    assert_eq!(d["health"]["totals"][dropped], 2);
    assert_eq!(d["health"]["dropped_by_reason"], json!({"queue_full": 2}));
    let lane = d["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["rank"] == 2)
        .unwrap();
    let last = lane["faults"].as_array().unwrap().last().unwrap();
    assert_eq!(last[1], "crashed: crashed (signal: 6, SIGABRT)");
    // At the rank's last record: its last step's end.
    assert_eq!(last[0], 70.0);
}

#[test]
fn ten_thousand_ranks_aggregate_into_a_bounded_page() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), 10_000, 2, Some(7));
    let report = write_report(dir.path(), &ReportOptions::default()).unwrap();
    assert_eq!((report.ranks, report.spans), (10_000, 40_000));
    assert_eq!(report.stragglers, vec![7]);
    let d = page_data(dir.path());
    let lanes = d["lanes"].as_array().unwrap();
    assert!(lanes.len() <= limits::LANE_BUDGET, "{}", lanes.len());
    assert_eq!(
        lanes[0]["rank"], 7,
        "the straggler keeps its own lane first"
    );
    let covered: usize = lanes
        .iter()
        .filter(|l| l["kind"] == "group")
        .map(|l| l["ranks"].as_array().unwrap().len())
        .sum();
    assert_eq!(covered, 10_000, "every rank is in one group lane");
    assert!(d["distribution"]["rows"].as_array().unwrap().len() <= limits::ROW_BUDGET);
    assert!(report.bytes < 4 << 20, "{} bytes", report.bytes);
}

/// The trace-event file of a run: every span once, each thread's events nested by time.
#[test]
fn the_perfetto_file_has_every_span_once_nested_per_thread() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), 2, 6, None);
    // A span overlapping a step without nesting in it (an export beside the step).
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.path().join("rank-1.jsonl"))
        .unwrap();
    writeln!(
        f,
        "{}",
        span("export", 4242, 0, T0 + 5_000_000, T0 + 25_000_000)
    )
    .unwrap();
    drop(f);
    let report = write_perfetto(dir.path(), &ReportOptions::default()).unwrap();
    let trace: Value =
        serde_json::from_str(&std::fs::read_to_string(&report.path).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let spans: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(spans.len(), 2 * 12 + 1);
    let names: Vec<&Value> = events
        .iter()
        .filter(|e| e["name"] == "process_name")
        .collect();
    assert_eq!(names[1]["args"]["name"], "rank 1 (node ?)");
    // The first step of rank 0: 10 ms from the run's start, in microseconds.
    let first = spans
        .iter()
        .find(|e| e["pid"] == 0 && e["name"] == "step")
        .unwrap();
    assert_eq!(
        (first["ts"].as_f64(), first["dur"].as_f64()),
        (Some(0.0), Some(10_000.0))
    );
    crate::testing::assert_trace_events_nest(spans.iter().copied());
    assert!(spans.iter().any(|e| e["name"] == "export" && e["tid"] == 1));
}

/// One reading for both files writes what the two commands write, byte for byte.
#[test]
fn the_page_and_the_trace_from_one_reading_are_those_of_two() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), 3, 5, Some(1));
    let (page, trace) =
        super::write_report_and_perfetto(dir.path(), &ReportOptions::default()).unwrap();
    let (page_bytes, trace_bytes) = (
        std::fs::read(&page.path).unwrap(),
        std::fs::read(&trace.path).unwrap(),
    );
    assert_eq!(page.path, dir.path().join("report.html"));
    assert_eq!(trace.path, dir.path().join("trace.json"));
    assert_eq!((page.stragglers.clone(), page.spans), (vec![1], 3 * 10));
    let again = write_report(dir.path(), &ReportOptions::default()).unwrap();
    assert_eq!(std::fs::read(&again.path).unwrap(), page_bytes);
    let again = write_perfetto(dir.path(), &ReportOptions::default()).unwrap();
    assert_eq!(std::fs::read(&again.path).unwrap(), trace_bytes);
}
