//! `lens check`: every example guest passes; broken guests fail with clear messages.

use lens_test_support::collector::Collector;
use lens_test_support::dist;

fn check(args: &[&str]) -> (i32, String, String) {
    let out = crate::lens().arg("check").args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_builtin_jsonl_exporter_passes_writing_to_a_preopened_dir() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = crate::builtin_jsonl();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let preopen = format!("{}:/out:rw", out.display());
    let (code, stdout, stderr) = check(&[
        wasm.to_str().unwrap(),
        "--preopen",
        &preopen,
        "--setting",
        "path=/out/spans.jsonl",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    for expected in [
        "    encoding      typed",
        "  lens:exporter/span-exporter@0.4.0 (traces)",
        "  lens:exporter/metric-exporter@0.4.0 (metrics)",
        "  lens:exporter/log-exporter@0.4.0 (logs)",
        "      ok    empty batch",
        "      ok    10k spans in batches of 512",
        "      ok    exponential histogram",
        "      ok    body: map",
        "      ok    shutdown, then an export fails cleanly",
        "PASS",
    ] {
        assert!(
            stdout.contains(expected),
            "missing `{expected}` in:\n{stdout}"
        );
    }
    assert!(
        stdout.contains("    files        wasi:filesystem/"),
        "{stdout}"
    );
    assert!(!stdout.contains("not served from the cache"), "{stdout}");
    assert!(
        stdout.contains(" ms\n  cached load"),
        "a cold compile timed: {stdout}"
    );
    // The component is cached now: `--quick` does not compile it again.
    let (code, quick, stderr) = check(&[
        wasm.to_str().unwrap(),
        "--preopen",
        &preopen,
        "--setting",
        "path=/out/quick.jsonl",
        "--quick",
    ]);
    assert_eq!(code, 0, "{quick}\n{stderr}");
    assert!(
        quick.contains("  cold compile  skipped (--quick: the cache holds it)\n"),
        "{quick}"
    );
    // Each interface's instance appends to the same file: one line per span, data point and
    // log record.
    assert_eq!(lines_by_signal(&out.join("spans.jsonl")), ALL_SIGNALS);
}

fn recorder_passes_in(setting: &str, reported: &str) {
    let dir = tempfile::tempdir().unwrap();
    let preopen = format!("{}:/out:rw", dir.path().display());
    let (code, stdout, _) = check(&[
        lens_test_guests::RECORDER,
        "--preopen",
        &preopen,
        "--setting",
        "out=/out/r.jsonl",
        "--setting",
        &format!("encoding={setting}"),
    ]);
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.contains(&format!("  encoding      {reported}\n")),
        "{stdout}"
    );
}

#[test]
fn the_recorder_passes_in_the_otlp_encoding() {
    recorder_passes_in("otlp", "otlp-protobuf");
}

#[test]
fn the_recorder_passes_in_the_otlp_json_encoding() {
    recorder_passes_in("otlp-json", "otlp-json");
}

#[test]
fn a_guest_returning_errors_fails_with_the_list_of_failures() {
    let (code, stdout, _) = check(&[lens_test_guests::HOSTILE, "--setting", "mode=huge-error"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("    FAIL  empty batch: Operation failed: wasm exporter `check`: EEEE"),
        "{stdout}"
    );
    assert!(stdout.contains("more bytes]"), "{stdout}");
    assert!(stdout.contains("    FAIL  shutdown, then an export fails cleanly: the guest accepted an export after shutdown") || stdout.contains("    ok    shutdown, then an export fails cleanly"), "{stdout}");
    assert!(stdout.trim_end().ends_with("checks failed"), "{stdout}");
}

#[test]
fn a_looping_guest_fails_on_its_deadline() {
    let (code, stdout, _) = check(&[
        lens_test_guests::HOSTILE,
        "--setting",
        "mode=loop",
        "--call-timeout-ms",
        "200",
    ]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("    FAIL  one span: Operation failed: wasm exporter `check`: deadline"),
        "{stdout}"
    );
}

#[test]
fn a_guest_accepting_exports_after_shutdown_is_caught() {
    // `panic-on-boom` answers Ok to everything, also after shutdown.
    let (code, stdout, _) = check(&[lens_test_guests::HOSTILE, "--setting", "mode=panic-on-boom"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("    FAIL  shutdown, then an export fails cleanly: the guest accepted an export after shutdown"),
        "{stdout}"
    );
    assert!(stdout.contains("FAIL: 1 of 9 checks failed"), "{stdout}");
}

#[test]
fn a_file_that_does_not_load_exits_2() {
    let (code, _, stderr) = check(&["/nonexistent/exporter.wasm"]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr.trim(),
        "error: wasm exporter `check` (/nonexistent/exporter.wasm): file not found"
    );
}

/// `lens check` on an example writing JSON lines into a pre-opened directory.
fn passes_with_a_file(wasm: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let preopen = format!("{}:/out:rw", dir.path().display());
    let (code, stdout, stderr) = check(&[
        wasm,
        "--preopen",
        &preopen,
        "--setting",
        "path=/out/spans.jsonl",
        "--call-timeout-ms",
        "30000",
        "--quick",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.trim_end().ends_with("PASS"), "{stdout}");
    let expected = if stdout.contains("metric-exporter") {
        ALL_SIGNALS
    } else {
        [SPANS, 0, 0]
    };
    assert_eq!(
        lines_by_signal(&dir.path().join("spans.jsonl")),
        expected,
        "{wasm}"
    );
    stdout
}

/// The NeMo Lens page's `MyBackendExporter` on the Python SDK: one `send` (line) per span.
#[test]
fn the_python_seed_example_passes() {
    let dir = tempfile::tempdir().unwrap();
    let preopen = format!("{}:/out:rw", dir.path().display());
    let wasm = dist("python-seed.wasm");
    let (code, stdout, stderr) = check(&[
        wasm.to_str().unwrap(),
        "--preopen",
        &preopen,
        "--setting",
        "path=/out/sent.jsonl",
        "--call-timeout-ms",
        "30000",
        "--quick",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.trim_end().ends_with("PASS"), "{stdout}");
    assert!(!stdout.contains("metric-exporter"), "{stdout}");
    let sent = std::fs::read_to_string(dir.path().join("sent.jsonl")).unwrap();
    assert_eq!(sent.lines().count(), SPANS);
}

/// Lines the conformance suites make a JSON-lines guest write: one empty batch, 1 + 1 + 1 + 2
/// spans, 10,240 spans.
const SPANS: usize = 1 + 1 + 1 + 2 + 10_240;
/// Spans; data points (sums 2 × 2, then gauge, histogram and exponential histogram 2 each,
/// the same 10 together, 1,000 points); log records (one per body type, the 8 together,
/// 10,240 records).
const ALL_SIGNALS: [usize; 3] = [SPANS, 10 + 10 + 1_000, 8 + 8 + 10_240];

/// The lines of a JSON-lines guest's file that are spans, metric data points and log records.
fn lines_by_signal(path: &std::path::Path) -> [usize; 3] {
    let mut counts = [0; 3];
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let i = if v.get("duration_ns").is_some() {
            0
        } else if v.get("observed_unix_nano").is_some() {
            2
        } else {
            assert!(v.get("unit").is_some(), "not a metric line: {line}");
            1
        };
        counts[i] += 1;
    }
    counts
}

#[test]
fn the_c_example_passes() {
    passes_with_a_file(dist("c-jsonl.wasm").to_str().unwrap());
}

#[test]
fn the_python_example_passes() {
    let stdout = passes_with_a_file(dist("python-jsonl.wasm").to_str().unwrap());
    assert!(stdout.contains("  encoding      otlp-json\n"), "{stdout}");
    assert!(
        stdout.contains("    files        wasi:filesystem/"),
        "{stdout}"
    );
}

#[test]
fn the_javascript_example_passes() {
    let (code, stdout, stderr) = check(&[
        dist("js-jsonl.wasm").to_str().unwrap(),
        "--call-timeout-ms",
        "30000",
        "--quick",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("  encoding      otlp-json\n"), "{stdout}");
    assert!(
        !stdout.contains("    http "),
        "built with -d http: {stdout}"
    );
}

#[test]
fn the_rust_vendor_example_passes_against_a_real_collector() {
    let collector = Collector::start_quiet();
    let authority = format!("127.0.0.1:{}", collector.http_port);
    // No path: each signal's exporter posts to its own OTLP path (`/v1/traces`, …).
    let endpoint = format!("endpoint=http://{authority}");
    let (code, stdout, stderr) = check(&[
        env!("LENS_EXAMPLE_VENDOR_HTTP_WASM"),
        "--setting",
        &endpoint,
        "--allow-host",
        &authority,
        "--credential",
        &format!("x-api-key@http://{authority}=env:HOME"),
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("  encoding      otlp-protobuf"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "    `x-api-key` for http://{authority} (from env HOME)"
        )),
        "{stdout}"
    );
    assert!(stdout.contains("    http         wasi:http/"), "{stdout}");
    for interface in ["span-exporter", "metric-exporter", "log-exporter"] {
        assert!(
            stdout.contains(&format!("lens:exporter/{interface}@0.4.0 (")),
            "{stdout}"
        );
    }
}

/// The recorder, its traces suite answered `retryable` twice (`traces:retryable=2`, a setting
/// of one signal), checked with `extra` arguments.
fn check_retryable_traces(extra: &[&str]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let preopen = format!("{}:/out:rw", dir.path().display());
    let mut args = vec![
        lens_test_guests::RECORDER,
        "--quick",
        "--preopen",
        &preopen,
        "--setting",
        "out=/out/r.jsonl",
        "--setting",
        "traces:retryable=2",
    ];
    args.extend(extra);
    let (code, stdout, _) = check(&args);
    (code, stdout)
}

#[test]
fn a_retryable_answer_ends_its_case_unless_retry_is_given_and_settings_may_be_per_signal() {
    let (code, stdout) = check_retryable_traces(&[]);
    assert_eq!(code, 1, "{stdout}");
    let retryable: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("not retried"))
        .collect();
    assert_eq!(
        retryable,
        [
            "      FAIL  empty batch: answered `retryable`: unavailable (2 more); not retried \
             (`lens check --retry` retries as a rank does, within the export timeout)",
            "      FAIL  one span: answered `retryable`: unavailable (1 more); not retried \
             (`lens check --retry` retries as a rank does, within the export timeout)",
        ],
        "{stdout}"
    );
    // Only the traces suite had the setting: metrics and logs pass. (The shutdown case's fresh
    // instance answers `retryable` too, which a guest must not after shutdown.)
    let after_shutdown = "      FAIL  shutdown, then an export fails cleanly: answered `retryable` \
                          after shutdown: it must be `rejected`";
    assert!(stdout.contains(after_shutdown), "{stdout}");
    assert!(stdout.contains("FAIL: 3 of "), "{stdout}");
    // The failing suite says which plain settings it shared with the others (a multi-signal
    // component with one `endpoint` fails the other signals' suites for it); the passing ones
    // say nothing.
    let notes: Vec<&str> = stdout.lines().filter(|l| l.contains("note ")).collect();
    assert_eq!(
        notes,
        [
            "    note          this suite got the plain settings `out`, as every signal's suite \
          does; if one of them differs per signal (an endpoint), give traces its own: \
          `--setting traces:KEY=VALUE`"
        ],
        "{stdout}"
    );

    let (code, stdout) = check_retryable_traces(&["--retry"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("FAIL: 1 of ") && stdout.contains(after_shutdown),
        "retried as a rank does: {stdout}"
    );
}
