//! The real `lens` binary: demo runs, config validation, exit codes.

use std::path::Path;
use std::process::Command;

use crate::lens;

/// `lens demo ARGS --out OUT`, ready to run (tests may add environment variables).
fn demo(out: &Path, args: &[&str]) -> Command {
    let mut c = lens();
    c.arg("demo").args(args).arg("--out").arg(out);
    c
}

/// The ranks whose summary has `flag` set.
fn ranks_where(ranks: &[serde_json::Value], flag: &str) -> Vec<u64> {
    ranks
        .iter()
        .filter(|r| r[flag] == true)
        .map(|r| r["rank"].as_u64().unwrap())
        .collect()
}

/// The run folder `lens demo --out OUT` made (the only entry of `out`).
pub(crate) fn run_dir(out: &Path) -> std::path::PathBuf {
    std::fs::read_dir(out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

/// The rank summaries of that run.
pub(crate) fn summary(out: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(run_dir(out).join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(summary["format"], lens::report::SUMMARY_FORMAT);
    summary["ranks"].as_array().unwrap().clone()
}

/// Runs `lens demo` on a config file with `text`; returns its output and the rank summaries.
/// Callers check the exit status; the run folder lives as long as the returned directory.
fn demo_with_config(
    text: &str,
    ranks: &str,
    nodes: &str,
    steps: &str,
) -> (
    std::process::Output,
    Vec<serde_json::Value>,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("lens.toml");
    // The library's defaults are NeMo Lens's (disabled, one exporting rank): the demo's configs
    // enable telemetry on every rank unless they say otherwise.
    let mut full = String::new();
    for (key, value) in [("enabled", "true"), ("export_strategy", "\"all_ranks\"")] {
        if !text.lines().any(|l| l.starts_with(&format!("{key} ="))) {
            full.push_str(&format!("{key} = {value}\n"));
        }
    }
    full.push_str(text);
    std::fs::write(&cfg, full).unwrap();
    let config = cfg.to_str().unwrap();
    let args = [
        "--ranks",
        ranks,
        "--nodes",
        nodes,
        "--steps",
        steps,
        "--step-ms",
        "0",
        "--config",
        config,
    ];
    let result = demo(&dir.path().join("o"), &args).output().unwrap();
    let ranks = summary(&dir.path().join("o"));
    (result, ranks, dir)
}

#[test]
fn demo_with_defaults_writes_one_json_line_per_exported_span() {
    let out = tempfile::tempdir().unwrap();
    let result = demo(
        out.path(),
        &[
            "--ranks",
            "4",
            "--nodes",
            "2",
            "--steps",
            "30",
            "--checkpoint-every",
            "10",
            "--step-ms",
            "0",
        ],
    )
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(
        result.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&result.stderr)
    );
    assert!(
        stdout.contains("produced") && stdout.contains("output in"),
        "{stdout}"
    );
    // One job is one trace: the launcher hands its trace to every rank (TRACEPARENT).
    let trace = stdout
        .lines()
        .find_map(|l| l.split_once("; trace ").map(|(_, t)| t.trim().to_string()))
        .unwrap();
    assert_eq!(trace.len(), 32, "{stdout}");
    let ranks = summary(out.path());
    assert_eq!(ranks.len(), 4);
    let mut launcher_parents = std::collections::HashSet::new();
    for r in &ranks {
        // job + 30 × (step, forward_backward, optimizer) + 3 checkpoints + 6 evaluation
        // samples (every 5 steps)
        assert_eq!(r["produced"], 1 + 30 * 3 + 3 + 6, "{r}");
        assert_eq!(r["exported"], r["produced"], "{r}");
        assert_eq!(r["dropped"], 0);
        let file = r["output"].as_str().unwrap();
        let lines = std::fs::read_to_string(file).unwrap();
        assert_eq!(
            lines.lines().count() as u64,
            r["exported"].as_u64().unwrap()
        );
        let spans: Vec<serde_json::Value> = lines
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(spans.iter().all(|s| s["trace_id"] == trace.as_str()), "{r}");
        let job = spans.iter().find(|s| s["name"] == "job").unwrap();
        launcher_parents.insert(job["parent_span_id"].as_str().unwrap().to_string());
        let names: Vec<String> = spans
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names.iter().filter(|n| *n == "checkpoint").count(), 3);
        assert_eq!(names.last().map(String::as_str), Some("job"));
    }
    assert_eq!(
        launcher_parents.len(),
        1,
        "every rank's root span has the launcher's span as parent: {launcher_parents:?}"
    );
    assert!(!launcher_parents.contains(""), "{launcher_parents:?}");
}

#[test]
fn demo_refuses_a_config_that_leaves_telemetry_disabled() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("off.toml");
    std::fs::write(&cfg, "exporter = \"none\"\n").unwrap();
    let result = demo(
        dir.path(),
        &[
            "--ranks",
            "1",
            "--nodes",
            "1",
            "--config",
            cfg.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    assert_eq!(result.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        stderr.contains(&format!(
            "{}: `enabled` is false (NeMo Lens's default, also when the key is missing)",
            cfg.display()
        )),
        "{stderr}"
    );
}

#[test]
fn demo_with_a_strategy_config_exports_only_from_the_chosen_rank() {
    let (result, ranks, _dir) = demo_with_config(
        "exporter = \"none\"\nexport_strategy = \"single_rank\"\nexport_rank = -1\nmetrics_enabled = false\n",
        "4",
        "1",
        "5",
    );
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    assert_eq!(ranks_where(&ranks, "exporting"), [3]);
    for r in &ranks {
        let expected = if r["rank"] == 3 { 1 + 5 * 3 + 1 } else { 0 };
        assert_eq!(r["produced"], expected, "{r}");
    }
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(stdout.contains("no (strategy)"), "{stdout}");
}

#[test]
fn demo_with_the_sampler_reports_dropped_ranks() {
    // At rate 0.1 ranks 3, 5 and 6 of 0..8 are kept (md5 rule).
    let (result, ranks, _dir) = demo_with_config(
        "exporter = \"none\"\nsampler_enabled = true\nexport_sample_rate = 0.1\nmetrics_enabled = false\n",
        "8",
        "2",
        "3",
    );
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    assert_eq!(ranks_where(&ranks, "sampler_keeps"), [3, 5, 6]);
}

#[test]
fn bad_config_exits_2_with_the_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bad.toml");
    std::fs::write(&cfg, "export_sample_rate = 2.0\n").unwrap();
    for args in [vec!["demo", "--config"], vec!["config", "validate"]] {
        let result = lens().args(&args).arg(&cfg).output().unwrap();
        assert_eq!(result.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert_eq!(
            stderr.trim(),
            format!(
                "error: invalid config {}: `export_sample_rate`: 2 is not between 0 and 1",
                cfg.display()
            )
        );
    }
}

#[test]
fn config_show_applies_environment_overrides() {
    let result = lens()
        .args(["config", "show"])
        .env("LENS_EXPORT_STRATEGY", "first_rank_per_node")
        .env("NEMO_LENS_SAMPLER_ENABLED", "on")
        .output()
        .unwrap();
    assert!(result.status.success());
    let shown: lens::LensConfig = toml::from_str(&String::from_utf8_lossy(&result.stdout)).unwrap();
    assert_eq!(shown.export_strategy, "first_rank_per_node");
    assert!(shown.sampler_enabled);
    let bad = lens()
        .args(["config", "show"])
        .env("LENS_ENABLED", "perhaps")
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn config_show_prints_a_wasm_entrys_effective_defaults() {
    // The defaults the host uses, as the docs and the Python keywords give them.
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("lens.toml");
    std::fs::write(
        &cfg,
        "[log_batch]\nexport_timeout_ms = 7000\n\
         [[logs.exporters]]\nkind = \"wasm\"\npath = \"x.wasm\"\nforward_stdio = false\n",
    )
    .unwrap();
    let result = lens()
        .args(["config", "show", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(result.status.success(), "{result:?}");
    let shown: lens::LensConfig = toml::from_str(&String::from_utf8_lossy(&result.stdout)).unwrap();
    let lens::config::ExporterSpec::Wasm(w) = &shown.logs.exporters[0] else {
        panic!("a wasm entry");
    };
    assert_eq!(w.forward_stdio, Some(false), "what the file says stays");
    assert_eq!(
        w.memory_limit_mib,
        Some(lens::wasm::DEFAULT_MEMORY_LIMIT_MIB)
    );
    assert_eq!(
        w.call_timeout_ms,
        Some(7000),
        "the entry's batch export timeout"
    );
    assert_eq!(w.init_timeout_ms, Some(5000));
    assert_eq!(w.compile_memory_mib, Some(2048));
    assert_eq!(w.compile_timeout_ms, Some(300_000));
    assert_eq!(w.max_file_mib, Some(256));
    let default = lens::wasm::with_defaults(&Default::default(), &Default::default());
    assert_eq!(default.forward_stdio, Some(true));
}

#[test]
fn demo_with_a_guest_that_traps_every_few_batches_completes_and_reports_it() {
    let text = format!(
        "exporter = \"none\"\nmetrics_enabled = false\n[batch]\nmax_export_batch_size = 8\nscheduled_delay_ms = 10\n\
         [[traces.exporters]]\nkind = \"wasm\"\nname = \"flaky\"\npath = \"{}\"\nsettings = {{ mode = \"trap-every\", every = \"3\" }}\n",
        lens_test_guests::HOSTILE
    );
    let (result, ranks, _dir) = demo_with_config(&text, "2", "1", "40");
    let stdout = String::from_utf8_lossy(&result.stdout);
    // The run completes; the failing exporter makes it "finished with failures" (exit 1).
    assert_eq!(result.status.code(), Some(1), "{stdout}");
    for r in &ranks {
        let produced = r["produced"].as_u64().unwrap();
        assert_eq!(produced, 1 + 40 * 3 + 8, "{r}");
        assert_eq!(
            r["exported"].as_u64().unwrap() + r["dropped"].as_u64().unwrap(),
            produced,
            "{r}"
        );
        assert!(r["dropped"].as_u64().unwrap() > 0, "{r}");
        assert!(r["restarts"].as_u64().unwrap() >= 1, "{r}");
    }
    assert!(stdout.contains("restarts"), "{stdout}");
    // Output is not a terminal here: each rank's warnings (the trap, with the guest's panic
    // message) are in its log in the run folder, and the summary says which ranks logged.
    let run_dir = stdout
        .lines()
        .find_map(|l| {
            l.split_once("output in ")?
                .1
                .split_once(';')
                .map(|(d, _)| d)
        })
        .unwrap();
    for rank in 0..2 {
        let log = std::fs::read_to_string(Path::new(run_dir).join(format!("rank-{rank}.log")))
            .unwrap_or_else(|e| panic!("rank-{rank}.log: {e}\n{stdout}"));
        assert!(log.contains("trapped") || log.contains("trap"), "{log}");
        assert!(log.contains("flaky"), "{log}");
    }
    assert!(stdout.contains("ranks that logged: 0 ("), "{stdout}");
}

#[test]
fn a_crashed_rank_shows_in_the_summary_and_the_run_exits_1() {
    let out = tempfile::tempdir().unwrap();
    let result = demo(
        out.path(),
        &[
            "--ranks",
            "3",
            "--nodes",
            "1",
            "--steps",
            "20",
            "--step-ms",
            "0",
            "--crash-rank",
            "1",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(result.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with("1  FAILED: crashed")),
        "{stdout}"
    );
    let ranks = summary(out.path());
    let finished: Vec<u64> = ranks.iter().map(|r| r["rank"].as_u64().unwrap()).collect();
    assert_eq!(finished, [0, 2]);
}

#[test]
fn a_stress_run_at_full_speed_counts_every_span_and_reports_resources() {
    let out = tempfile::tempdir().unwrap();
    let result = demo(
        out.path(),
        &[
            "--ranks",
            "2",
            "--nodes",
            "1",
            "--duration-s",
            "2",
            "--step-ms",
            "0",
        ],
    )
    .output()
    .unwrap();
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    for r in summary(out.path()) {
        let (produced, exported, dropped) = (
            r["produced"].as_u64().unwrap(),
            r["exported"].as_u64().unwrap(),
            r["dropped"].as_u64().unwrap(),
        );
        assert!(produced > 1000, "{r}");
        assert_eq!(
            exported + dropped,
            produced,
            "every span exported or counted: {r}"
        );
        let lines = std::fs::read_to_string(r["output"].as_str().unwrap())
            .unwrap()
            .lines()
            .count() as u64;
        assert_eq!(lines, exported, "{r}");
        assert!(r["spans_per_second"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["cpu_seconds"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["max_rss_mib"].as_f64().unwrap() > 1.0, "{r}");
    }
}

#[test]
fn demo_with_the_default_exporter_writes_nothing_on_non_exporting_ranks() {
    let out = tempfile::tempdir().unwrap();
    let result = demo(
        out.path(),
        &[
            "--ranks",
            "4",
            "--nodes",
            "2",
            "--steps",
            "10",
            "--step-ms",
            "0",
        ],
    )
    .env("LENS_EXPORT_STRATEGY", "first_rank_per_node")
    .output()
    .unwrap();
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let run_dir = std::fs::read_dir(out.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut files: Vec<String> = std::fs::read_dir(&run_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "rank-0.jsonl",
            "rank-0.logs.jsonl",
            "rank-0.metrics.jsonl",
            "rank-2.jsonl",
            "rank-2.logs.jsonl",
            "rank-2.metrics.jsonl"
        ],
        "LOCAL_RANK 0 on each of 2 nodes: spans, metrics and logs of each"
    );
    for r in summary(out.path()) {
        let exporting = r["exporting"] == true;
        assert_eq!(exporting, r["rank"] == 0 || r["rank"] == 2, "{r}");
        assert_eq!(
            r["exported"].as_u64().unwrap(),
            if exporting { 1 + 10 * 3 + 2 } else { 0 },
            "{r}"
        );
    }
}

#[test]
fn a_rank_failing_setup_shows_the_reason_in_the_table() {
    let text = "[[traces.exporters]]\nkind = \"wasm\"\npath = \"missing-exporter.wasm\"\n";
    let (result, ranks, _dir) = demo_with_config(text, "2", "1", "5");
    assert_eq!(result.status.code(), Some(1));
    assert!(ranks.is_empty(), "no rank got as far as a summary");
    let stdout = String::from_utf8_lossy(&result.stdout);
    for rank in ["0", "1"] {
        let row = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{rank}  FAILED")))
            .unwrap_or_else(|| panic!("no row for rank {rank}: {stdout}"));
        assert!(
            row.contains("FAILED: setup failed: wasm exporter `missing-exporter`")
                && row.ends_with("missing-exporter.wasm): file not found"),
            "{row}"
        );
    }
}

#[test]
fn an_exporter_disabled_at_setup_is_named_in_the_table_and_the_rank_trains() {
    let text = format!(
        "exporter = \"none\"\n[[traces.exporters]]\nkind = \"wasm\"\nname = \"picky\"\npath = \"{}\"\nsettings = {{ mode = \"refuse-init\" }}\n",
        lens_test_guests::HOSTILE
    );
    let (result, ranks, _dir) = demo_with_config(&text, "1", "1", "5");
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert_eq!(result.status.code(), Some(0), "{stdout}");
    assert_eq!(ranks.len(), 1);
    assert_eq!(ranks[0]["exported"], 0);
    assert!(ranks[0]["dropped"].as_u64().unwrap() > 0);
    assert!(
        stdout.contains("exporter `picky` disabled at setup: wasm exporter `picky`")
            && stdout.contains("init failed: init: this exporter refuses to start"),
        "{stdout}"
    );
}

/// A value planted in every place a secret can be given.
const PLANTED: &str = "s3cr3t-PLANTED-4242";

#[test]
fn a_planted_secret_is_printed_by_no_command() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let config = dir.path().join("lens.toml");
    std::fs::write(
        &config,
        format!(
            r#"exporter = "none"
[otlp]
headers = {{ authorization = "Bearer {PLANTED}" }}

[[traces.exporters]]
kind = "otlp"
endpoint = "http://user:{PLANTED}@127.0.0.1:9/v1/traces"
protocol = "http/protobuf"
headers = {{ x-api-key = "{PLANTED}" }}
timeout_ms = 200

[[traces.exporters]]
kind = "wasm"
name = "recorder"
path = "{recorder}"
env = {{ VENDOR_API_KEY = "{PLANTED}" }}
settings = {{ api_key = "{PLANTED}", out = "/out/r.jsonl" }}
preopens = [{{ host = "{out}", guest = "/out", read_only = false }}]
"#,
            recorder = lens_test_guests::RECORDER,
            out = out.display()
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let headers = format!("authorization=Bearer {PLANTED}");
    let bad_headers = format!("authorization Bearer {PLANTED}");
    let mut outputs = Vec::new();
    let mut run = |what: &str, mut cmd: Command| {
        let o = cmd.output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        outputs.push((what.to_string(), text));
    };
    let mut show = lens();
    show.args(["config", "show", "--config", config])
        .env("OTEL_EXPORTER_OTLP_HEADERS", &headers);
    run("config show", show);
    let mut validate = lens();
    validate.args(["config", "validate", config]);
    run("config validate", validate);
    let mut bad = lens();
    bad.args(["config", "show"])
        .env("OTEL_EXPORTER_OTLP_HEADERS", &bad_headers);
    run("config show, malformed headers", bad);
    let mut d = demo(
        &dir.path().join("demo"),
        &[
            "--ranks", "1", "--nodes", "1", "--steps", "3", "--config", config,
        ],
    );
    d.env("OTEL_EXPORTER_OTLP_HEADERS", &headers)
        .env("RUST_LOG", "debug");
    run("demo", d);
    let mut check = lens();
    check
        .args(["check", lens_test_guests::RECORDER])
        .args(["--env", &format!("KEY={PLANTED}")])
        .args(["--setting", &format!("api_key={PLANTED}")])
        .args(["--setting", "out=/out/c.jsonl"])
        .args(["--preopen", &format!("{}:/out:rw", out.display())]);
    run("check", check);
    for (what, text) in &outputs {
        assert!(
            !text.contains(PLANTED),
            "{what} printed the secret:\n{text}"
        );
    }
    let shown = &outputs[0].1;
    // [otlp] authorization (the variable's overrides the file's), the URL's password, x-api-key,
    // the env grant, the api_key setting.
    assert_eq!(shown.matches("[REDACTED]").count(), 5, "{shown}");
    assert!(
        outputs[2]
            .1
            .contains("OTEL_EXPORTER_OTLP_HEADERS=\"[REDACTED]\"")
    );
    // Nor does a config's `Debug`.
    let cfg = lens::LensConfig::from_file(config).unwrap();
    assert!(!format!("{cfg:?}").contains(PLANTED));
}

#[test]
fn demo_with_one_rank_runs_on_one_node() {
    // `--nodes` defaults to 2 only where 2 divides `--ranks`.
    for ranks in ["1", "3"] {
        let out = tempfile::tempdir().unwrap();
        let args = ["--ranks", ranks, "--steps", "5", "--step-ms", "0"];
        let result = demo(out.path(), &args).output().unwrap();
        assert!(
            result.status.success(),
            "--ranks {ranks}: {}\n{}",
            String::from_utf8_lossy(&result.stdout),
            String::from_utf8_lossy(&result.stderr)
        );
        assert_eq!(summary(out.path()).len().to_string(), ranks);
    }
    // An explicit count that does not divide is still refused.
    let out = tempfile::tempdir().unwrap();
    let args = ["--ranks", "3", "--nodes", "2", "--steps", "5"];
    let result = demo(out.path(), &args).output().unwrap();
    assert_eq!(result.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&result.stderr)
            .contains("--ranks (3) must be a positive multiple of --nodes (2)"),
        "{result:?}"
    );
}
