//! The example processors (`guest-examples/rust-redact`, `rust-filter`) end to end through
//! `lens demo`: two ranks, two exporters, a filter for one of them and a redaction for both;
//! every exported span in its file, no prompt in any, the filtered spans only where the filter
//! does not apply, and the summary's notes.

use lens_test_support::dist;

fn config(out: &std::path::Path) -> String {
    let exporter = |name: &str| {
        format!(
            r#"
[[traces.exporters]]
kind = "wasm"
name = "{name}"
path = "{}"
settings = {{ path = "/out/rank-{{dl.rank}}.{name}.jsonl" }}
preopens = [{{ host = "{}", guest = "/out", read_only = false }}]
"#,
            dist("rust-jsonl.wasm").display(),
            out.display()
        )
    };
    format!(
        r#"enabled = true
export_strategy = "all_ranks"
metrics_enabled = false
{}{}
[[traces.processors]]
kind = "wasm"
name = "quiet"
path = "{}"
settings = {{ names = "optimizer" }}
exporters = ["vendor"]

[[traces.processors]]
kind = "wasm"
name = "redact"
path = "{}"
on_fault = "drop"
"#,
        exporter("vendor"),
        exporter("local"),
        dist("rust-filter.wasm").display(),
        dist("rust-redact.wasm").display(),
    )
}

/// The spans of one file: (name, attributes as JSON text).
fn spans(path: &std::path::Path) -> Vec<(String, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["name"].as_str().unwrap().to_string(),
                v["attributes"].to_string(),
            )
        })
        .collect()
}

/// `lens demo` on 2 ranks with `config` written in `out`, and `args`: its stdout (it passed).
fn demo(out: &std::path::Path, config: &str, args: &[&str]) -> String {
    std::fs::write(out.join("lens.toml"), config).unwrap();
    let run = crate::lens()
        .current_dir(out)
        .args(["demo", "--ranks", "2"])
        .args(args)
        .args(["--config", "lens.toml", "--out", "o"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stdout}\n{stderr}");
    stdout
}

#[test]
fn the_example_processors_filter_and_redact_every_rank_of_the_demo() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let stdout = demo(out, &config(out), &["--steps", "40", "--step-ms", "1"]);
    for rank in 0..2 {
        let vendor = spans(&out.join(format!("rank-{rank}.vendor.jsonl")));
        let local = spans(&out.join(format!("rank-{rank}.local.jsonl")));
        let named =
            |list: &[(String, String)], name: &str| list.iter().filter(|(n, _)| n == name).count();
        // 40 steps: a step, forward_backward and optimizer span each, 8 evaluation samples.
        assert_eq!(named(&local, "optimizer"), 40, "rank {rank}");
        assert_eq!(named(&vendor, "optimizer"), 0, "rank {rank}");
        assert_eq!(local.len(), vendor.len() + 40, "rank {rank}");
        for list in [&vendor, &local] {
            assert_eq!(named(list, "gen_ai.chat"), 8, "rank {rank}");
            for (name, attributes) in list.iter() {
                assert!(
                    !attributes.contains("gen_ai.prompt"),
                    "{name}: {attributes}"
                );
                assert!(
                    !attributes.contains("gen_ai.completion"),
                    "{name}: {attributes}"
                );
                let redacted = attributes.contains("lens.redacted");
                assert_eq!(redacted, name == "gen_ai.chat", "{name}: {attributes}");
            }
        }
    }
    assert_eq!(stdout.matches("processor `quiet`: ").count(), 2, "{stdout}");
    assert!(stdout.contains("40 dropped, 0 met a fault"), "{stdout}");
}

#[test]
fn a_metric_processor_drops_a_hot_metric_from_every_rank_s_collections() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let config = format!(
        r#"enabled = true
export_strategy = "all_ranks"
traces_enabled = false
metric_export_interval_ms = 50

[[metrics.exporters]]
kind = "wasm"
name = "points"
path = "{}"
settings = {{ path = "/out/rank-{{dl.rank}}.metrics.jsonl" }}
preopens = [{{ host = "{}", guest = "/out", read_only = false }}]

[[metrics.processors]]
kind = "wasm"
name = "hot"
path = "{}"
settings = {{ names = "train.tokens_per_second" }}
"#,
        dist("rust-jsonl.wasm").display(),
        out.display(),
        dist("rust-filter.wasm").display(),
    );
    let stdout = demo(out, &config, &["--steps", "20", "--step-ms", "5"]);
    for rank in 0..2 {
        let text = std::fs::read_to_string(out.join(format!("rank-{rank}.metrics.jsonl"))).unwrap();
        let names: std::collections::BTreeSet<String> = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["name"].to_string())
            .collect();
        assert!(
            names.contains("\"train.step_time\""),
            "rank {rank}: {names:?}"
        );
        assert!(
            !names.contains("\"train.tokens_per_second\""),
            "rank {rank}: {names:?}"
        );
    }
    assert_eq!(stdout.matches("processor `hot`: ").count(), 2, "{stdout}");
    assert!(stdout.contains("data points seen"), "{stdout}");
}
