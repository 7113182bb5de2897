//! `lens check` on a processor of spans, metrics and log records: each suite passes for processors that
//! answer well (edits found on the items as stated) and names the case and the reason for those
//! that do not.

use lens_test_guests::PROCESSOR;

/// `lens check` of the test processor in `mode`: whether it passed, and its stdout.
fn check(mode: &str) -> (bool, String) {
    let out = crate::lens()
        .args(["check", PROCESSOR, "--setting", &format!("mode={mode}")])
        .args([
            "--setting",
            "names=step,check.loss",
            "--setting",
            "keys=phase",
        ])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
    )
}

#[test]
fn well_behaved_processors_pass_their_suite() {
    for mode in ["noop", "rewrite", "filter", "redact"] {
        let (passed, stdout) = check(mode);
        assert!(passed, "{mode}:\n{stdout}");
        for case in [
            "lens:exporter/span-processor@0.4.0 (traces)",
            "ok    empty batch: no edit",
            "ok    events, links and status",
            "ok    10k spans in batches of 512",
            "lens:exporter/metric-processor@0.4.0 (metrics)",
            "ok    every metric kind, delta",
            "ok    1,000 data points in one collection",
            "lens:exporter/log-processor@0.4.0 (logs)",
            "ok    every body type",
            "ok    10k records in batches of 512",
        ] {
            assert!(
                stdout.contains(case),
                "{mode}: missing `{case}` in\n{stdout}"
            );
        }
    }
}

#[test]
fn a_misbehaving_processor_fails_the_case_it_breaks_naming_why() {
    let cases = [
        (
            "out-of-range",
            "FAIL  empty batch: no edit",
            "answered 1 edits to an empty batch",
        ),
        (
            "duplicate",
            "FAIL  one span",
            "the host refuses its answer names item 0 twice",
        ),
        ("set-body", "FAIL  one span", "does not apply to spans"),
        (
            "error",
            "FAIL  one span",
            "the processor cannot process this batch",
        ),
        ("trap", "FAIL  one span", "processor traps on call"),
        (
            "set-status",
            "FAIL  every body type",
            "does not apply to log records",
        ),
        (
            "set-status",
            "FAIL  every metric kind, cumulative",
            "does not apply to metrics",
        ),
    ];
    for (mode, case, why) in cases {
        let (passed, stdout) = check(mode);
        assert!(!passed, "{mode}:\n{stdout}");
        assert!(
            stdout.contains(case),
            "{mode}: missing `{case}` in\n{stdout}"
        );
        assert!(stdout.contains(why), "{mode}: missing `{why}` in\n{stdout}");
    }
}

#[test]
fn the_example_filter_passes_its_span_and_metric_suites() {
    let wasm = lens_test_support::dist("rust-filter.wasm");
    let out = crate::lens()
        .args(["check", &wasm.display().to_string()])
        .args(["--setting", "names=check.loss", "--setting", "keep_every=2"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    for case in [
        "lens:exporter/span-processor@0.4.0 (traces)",
        "lens:exporter/metric-processor@0.4.0 (metrics)",
        "ok    every metric kind, cumulative",
        "ok    every metric kind, delta",
    ] {
        assert!(stdout.contains(case), "missing `{case}` in\n{stdout}");
    }
}
