//! `lens demo --reload-after-s N --reload-config FILE`: every rank swaps its exporter while it
//! trains, and the summary says which component each ended on.

use lens_test_support::dist;

use super::sha256;

/// A demo config whose span entry `vendor` runs `component` writing `rank-N.<tag>.jsonl`.
fn config(out: &std::path::Path, component: &str, tag: &str) -> String {
    config_with(out, component, tag, "")
}

/// [`config`], with `top` at its top (`[reload]` settings).
fn config_with(out: &std::path::Path, component: &str, tag: &str, top: &str) -> String {
    format!(
        r#"enabled = true
export_strategy = "all_ranks"
metrics_enabled = false
{top}

[[traces.exporters]]
kind = "wasm"
name = "vendor"
path = "{}"
settings = {{ path = "/out/rank-{{dl.rank}}.{tag}.jsonl" }}
preopens = [{{ host = "{}", guest = "/out", read_only = false }}]
"#,
        dist(component).display(),
        out.display()
    )
}

/// The rank summaries of the one run under `out/o`, each checked: it ended on `c-jsonl.wasm`
/// after one reload, and every span it produced is in `rank-N.a.jsonl` or `rank-N.b.jsonl`,
/// once (both files used).
fn check_ranks(out: &std::path::Path) -> Vec<serde_json::Value> {
    let short = &sha256(&dist("c-jsonl.wasm"))[..12];
    let ranks = crate::cli::summary(&out.join("o"));
    assert_eq!(ranks.len(), 2);
    for r in &ranks {
        assert_eq!(
            r["components"],
            serde_json::json!([format!("traces `vendor`: {short} (1 reload)")]),
            "{r}"
        );
        let rank = r["rank"].as_u64().unwrap();
        let count = |tag: &str| {
            std::fs::read_to_string(out.join(format!("rank-{rank}.{tag}.jsonl")))
                .unwrap()
                .lines()
                .count() as u64
        };
        let (a, b) = (count("a"), count("b"));
        assert!(a > 0 && b > 0, "rank {rank}: {a} then {b}");
        assert_eq!(a + b, r["exported"].as_u64().unwrap());
        assert_eq!(r["exported"], r["produced"]);
    }
    ranks
}

/// Two demo ranks in `out` for 2 s on `a.toml`, reloading `b.toml` after 0.5 s (run folder
/// `out/o`); their output, once they succeeded.
fn demo_reloading(out: &std::path::Path) -> String {
    let run = crate::lens()
        .current_dir(out)
        .args([
            "demo",
            "--ranks",
            "2",
            "--duration-s",
            "2",
            "--step-ms",
            "1",
        ])
        .args(["--config", "a.toml", "--reload-after-s", "0.5"])
        .args(["--reload-config", "b.toml", "--out", "o"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stdout}\n{stderr}");
    stdout
}

#[test]
fn every_rank_of_the_demo_reloads_and_the_summary_shows_its_component() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    std::fs::write(out.join("a.toml"), config(out, "rust-jsonl.wasm", "a")).unwrap();
    std::fs::write(out.join("b.toml"), config(out, "c-jsonl.wasm", "b")).unwrap();
    let stdout = demo_reloading(out);
    let short = &sha256(&dist("c-jsonl.wasm"))[..12];
    for r in check_ranks(out) {
        let notes = r["notes"].to_string();
        assert!(
            notes.contains("reload at 0.5s from b.toml")
                && notes.contains(&format!("traces `vendor` swapped to {short}")),
            "{notes}"
        );
    }
    let ended = format!("ended on: traces `vendor`: {short} (1 reload)");
    assert_eq!(stdout.matches(&ended).count(), 2, "{stdout}");
}

#[test]
fn a_demo_rank_watching_its_config_file_reloads_when_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let watch = "[reload]\nwatch = true\npoll_interval_ms = 50\n";
    let file = out.join("lens.toml");
    std::fs::write(&file, config_with(out, "rust-jsonl.wasm", "a", watch)).unwrap();
    let mut demo = crate::lens()
        .current_dir(out)
        .args([
            "demo",
            "--ranks",
            "2",
            "--duration-s",
            "3",
            "--step-ms",
            "1",
        ])
        .args(["--config", "lens.toml", "--out", "o"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once each rank exported its first batch, the file changes under them.
    let exported = |rank: u32| {
        std::fs::metadata(out.join(format!("rank-{rank}.a.jsonl"))).is_ok_and(|m| m.len() > 0)
    };
    crate::reload::wait_for("the ranks' first spans", || exported(0) && exported(1));
    std::fs::write(&file, config_with(out, "c-jsonl.wasm", "b", watch)).unwrap();
    assert!(demo.wait().unwrap().success());
    check_ranks(out);
}

#[test]
fn a_demo_reload_adds_a_processor_and_each_rank_s_spans_go_through_one_chain_or_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let a = config(out, "rust-jsonl.wasm", "a");
    std::fs::write(out.join("a.toml"), &a).unwrap();
    // The same exporter, and a processor dropping the optimizer's spans.
    let b = format!(
        "{a}\n[[traces.processors]]\nkind = \"wasm\"\nname = \"no-optimizer\"\npath = \"{}\"\n\
         settings = {{ mode = \"filter\", names = \"optimizer\" }}\non_fault = \"drop\"\n",
        lens_test_guests::PROCESSOR
    );
    std::fs::write(out.join("b.toml"), b).unwrap();
    demo_reloading(out);
    let ranks = crate::cli::summary(&out.join("o"));
    assert_eq!(ranks.len(), 2);
    for r in &ranks {
        let notes = r["notes"].to_string();
        assert!(notes.contains("[[traces.processors]] rechained"), "{notes}");
        let n = |k: &str| r[k].as_u64().unwrap_or_else(|| panic!("{k} in {r}"));
        let dropped = r["dropped_by_reason"]["processor"].as_u64().unwrap_or(0);
        assert!(
            dropped > 0,
            "the new chain dropped the optimizer's spans: {r}"
        );
        assert_eq!(n("exported") + dropped, n("produced"), "{r}");
        assert_eq!(n("dropped"), dropped, "{r}");
        // The rank's file: optimizer spans before the reload only.
        let rank = n("rank");
        let names: Vec<String> = std::fs::read_to_string(out.join(format!("rank-{rank}.a.jsonl")))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["name"].to_string())
            .collect();
        assert_eq!(names.len() as u64, n("exported"));
        let last_optimizer = names.iter().rposition(|n| n.contains("optimizer")).unwrap();
        let first_gap = names.len() - last_optimizer;
        assert!(
            first_gap > 10,
            "spans after the last optimizer span: {first_gap}"
        );
    }
}
