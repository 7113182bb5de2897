//! Config files used from another working directory: the relative paths in a file (a `.wasm`
//! component, its pre-opened directories) are relative to the file, under every signal's
//! exporter list, so `lens config validate` and the ranks agree.

use lens::Signal;

use crate::lens;

#[test]
fn relative_paths_resolve_against_the_file_for_every_signal() {
    for signal in Signal::ALL {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("cfg");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(cfg.join("out")).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::copy(crate::builtin_jsonl(), cfg.join("exporter.wasm")).unwrap();
        std::fs::write(
            cfg.join("lens.toml"),
            format!(
                "enabled = true\nexport_strategy = \"all_ranks\"\nexporter = \"none\"\n\
                 logs_enabled = true\n\n[[{signal}.exporters]]\nkind = \"wasm\"\n\
                 path = \"exporter.wasm\"\n\
                 preopens = [{{ host = \"out\", guest = \"/out\", read_only = false }}]\n\
                 settings = {{ path = \"/out/{signal}.jsonl\" }}\n"
            ),
        )
        .unwrap();
        let config = "../cfg/lens.toml";
        let validate = lens()
            .args(["config", "validate", config])
            .current_dir(&elsewhere)
            .output()
            .unwrap();
        assert!(validate.status.success(), "{signal}: {validate:?}");
        let demo = lens()
            .args(["demo", "--config", config, "--ranks", "1", "--steps", "10"])
            .args(["--checkpoint-every", "5", "--step-ms", "0", "--out", "o"])
            .current_dir(&elsewhere)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&demo.stdout);
        assert!(
            demo.status.success(),
            "{signal}: {stdout}\n{}",
            String::from_utf8_lossy(&demo.stderr)
        );
        let written = std::fs::read_to_string(cfg.join(format!("out/{signal}.jsonl")))
            .unwrap_or_else(|e| panic!("{signal}: nothing in cfg/out ({e}): {stdout}"));
        assert!(written.lines().count() > 0, "{signal}: {stdout}");
    }
}

/// `lens config validate FILE` on `text`: its standard output, the file's path shown as `FILE`.
fn validated(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lens.toml");
    std::fs::write(&path, text).unwrap();
    let out = lens()
        .args(["config", "validate"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).replace(path.to_str().unwrap(), "FILE")
}

#[test]
fn validate_says_what_each_signal_exports_with_and_where_that_comes_from() {
    // Traces listed; metrics from the top-level `exporter`; logs off.
    let report = validated(
        "enabled = true\nexporter = \"otlp\"\n\n[[traces.exporters]]\nkind = \"console\"\n",
    );
    assert_eq!(
        report,
        "FILE: valid (strategy single_rank)\n\
         \x20 traces   console\n\
         \x20 metrics  otlp (the file lists none: from `exporter` = \"otlp\")\n\
         \x20 logs     otlp (the file lists none: from `exporter` = \"otlp\"); the signal is off\n"
    );
    // No exporter at all: each signal says so, none is counted as having one.
    let report = validated("enabled = true\nexporter = \"none\"\nmetrics_enabled = false\n");
    assert_eq!(
        report,
        "FILE: valid (strategy single_rank)\n\
         \x20 traces   none (the file lists none: from `exporter` = \"none\")\n\
         \x20 metrics  none (the file lists none: from `exporter` = \"none\"); the signal is off\n\
         \x20 logs     none (the file lists none: from `exporter` = \"none\"); the signal is off\n"
    );
}
