//! Bad and large run folders: what the report skips is counted, large runs are aggregated, a
//! secret in the configuration never reaches the page, and the page still draws.

use std::io::Write;

use super::{load, report, span_line, synthetic_run};

#[test]
fn bad_lines_are_counted_and_the_page_still_draws() {
    let dir = tempfile::tempdir().unwrap();
    synthetic_run(dir.path(), 2, 10, None);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.path().join("rank-1.jsonl"))
        .unwrap();
    writeln!(f, "{{\"name\": \"cut").unwrap();
    writeln!(f, "\u{1}\u{2} binary").unwrap();
    writeln!(
        f,
        "{}",
        serde_json::json!({"lens_format": 9, "payload": "a newer line"})
    )
    .unwrap();
    writeln!(f, "{}", span_line("backwards", 99, 0, 2_000, 1_000)).unwrap();
    let huge = "v".repeat(50 << 20);
    writeln!(
        f,
        "{}",
        span_line("huge", 98, 0, 1_000, 2_000).replace("\"i\":98", &format!("\"blob\":\"{huge}\""))
    )
    .unwrap();
    // A value that would close the page's script if it were not escaped.
    writeln!(
        f,
        "{}",
        span_line(
            "</script><script>document.title='owned'</script>",
            97,
            0,
            1_765_000_000_000_000_000,
            1_765_000_000_001_000_000
        )
    )
    .unwrap();
    drop(f);
    let stdout = report(dir.path(), &[]);
    assert!(
        stdout.contains("5 line(s) skipped (listed in the report)"),
        "{stdout}"
    );
    let dom = load(&dir.path().join("report.html"), "bad-lines");
    let counts: Vec<u64> = dom
        .rows("data-count")
        .iter()
        .map(|r| r.num("data-count"))
        .collect();
    // By reason: no format, over 16 MiB, not JSON (2), ends before it starts.
    assert_eq!(counts, [1, 1, 2, 1]);
    assert!(dom.html.contains("a line over 16 MiB"));
    assert!(
        dom.html.contains("<title>Lens report: "),
        "the title is the report's"
    );
    assert_eq!(dom.tags("lane-label").len(), 2);
    let size = std::fs::metadata(dir.path().join("report.html"))
        .unwrap()
        .len();
    assert!(
        size < 1 << 20,
        "the 50 MB value is not in the page: {size} bytes"
    );
}

#[test]
fn a_thousand_ranks_are_drawn_as_aggregate_lanes() {
    let dir = tempfile::tempdir().unwrap();
    synthetic_run(dir.path(), 1000, 20, Some(17));
    let stdout = report(dir.path(), &[]);
    assert!(
        stdout.contains("1000 ranks, 40000 spans; stragglers: 17"),
        "{stdout}"
    );
    let dom = load(&dir.path().join("report.html"), "thousand-ranks");
    let lanes = dom.tags("lane-label");
    assert!(lanes.len() <= 64, "{} lanes", lanes.len());
    assert_eq!(
        lanes[0].num("data-rank"),
        17,
        "the straggler keeps its own lane"
    );
    assert_eq!(lanes[0].attr("data-straggler").as_deref(), Some("true"));
    let mut covered: Vec<u64> = Vec::new();
    for lane in &lanes[1..] {
        assert_eq!(lane.attr("data-kind").as_deref(), Some("group"));
        assert_eq!(lane.num("data-steps"), 20, "a band per step");
        covered.extend(
            lane.attr("data-ranks")
                .unwrap()
                .split(',')
                .map(|r| r.parse::<u64>().unwrap()),
        );
    }
    assert_eq!(covered, (0..1000).collect::<Vec<_>>());
    assert!(
        dom.html.contains("one lane per 16 consecutive ranks"),
        "the page says how it aggregated"
    );
}

#[test]
fn a_secret_in_the_configuration_never_reaches_the_page() {
    let dir = tempfile::tempdir().unwrap();
    synthetic_run(dir.path(), 1, 3, None);
    std::fs::write(
        dir.path().join("config.toml"),
        "enabled = true\nexporter = \"otlp\"\n[otlp]\nendpoint = \"http://127.0.0.1:4318\"\n[otlp.headers]\nauthorization = \"Bearer s3cr3t-token\"\n",
    )
    .unwrap();
    report(dir.path(), &[]);
    let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(!page.contains("s3cr3t"), "the secret is in the page");
    let dom = load(&dir.path().join("report.html"), "redacted-config");
    assert!(dom.html.contains("endpoint = \"http://127.0.0.1:4318\""));
    // Not a Lens config: not shown at all (its secrets cannot be told apart).
    std::fs::write(
        dir.path().join("other.toml"),
        "password = \"hunter2\"\n[weird]\nx = 1\n",
    )
    .unwrap();
    report(
        dir.path(),
        &["--config", dir.path().join("other.toml").to_str().unwrap()],
    );
    let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(!page.contains("hunter2") && page.contains("not shown (not a Lens configuration"));
}

#[test]
fn a_missing_or_empty_folder_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let out = crate::lens().arg("report").arg(&missing).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(&format!(
            "error: cannot read the run folder {}: ",
            missing.display()
        )),
        "{stderr}"
    );
    let out = crate::lens()
        .arg("report")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("nothing to report: 0 JSON-lines file(s)"),
        "{stderr}"
    );
}

#[test]
fn ten_thousand_ranks_draw_without_hanging_the_browser() {
    let dir = tempfile::tempdir().unwrap();
    synthetic_run(dir.path(), 10_000, 2, None);
    report(dir.path(), &[]);
    let dom = load(&dir.path().join("report.html"), "ten-thousand-ranks");
    let lanes = dom.tags("lane-label");
    assert!(lanes.len() <= 64, "{} lanes", lanes.len());
    let covered: usize = lanes
        .iter()
        .map(|l| l.attr("data-ranks").unwrap().split(',').count())
        .sum();
    assert_eq!(covered, 10_000);
    // The page's own drawing time, for the record (the figures are in docs/benchmarks.md).
    eprintln!("drawn in {} ms", dom.body().num("data-drawn-ms"));
}
