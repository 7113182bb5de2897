//! What reloads a process whose code a user does not control: a watched config file, SIGHUP.

use lens::Telemetry;
use lens_test_support::isolated;
use lens_test_support::pipeline::{T, no_env};

use super::{span_stats, wait_for};

/// A config file exporting spans through the recorder writing `file` into `out`, with
/// `[reload]` set as `reload` says.
fn config_text(out: &std::path::Path, file: &str, reload: &str) -> String {
    format!(
        r#"enabled = true
export_strategy = "all_ranks"
metrics_enabled = false

[batch]
scheduled_delay_ms = 5

[wasm_cache]
dir = "{cache}"

[reload]
{reload}

[[traces.exporters]]
kind = "wasm"
name = "vendor"
path = "{recorder}"
settings = {{ out = "/out/{file}" }}
preopens = [{{ host = "{out}", guest = "/out", read_only = false }}]
"#,
        cache = lens_test_support::pipeline::test_wasm_cache()
            .dir
            .unwrap()
            .display(),
        recorder = lens_test_support::wasm::RECORDER,
        out = out.display(),
    )
}

fn setup(path: &std::path::Path) -> lens::TelemetryHandle {
    let config = lens::LensConfig::from_file(path).unwrap();
    Telemetry::builder(config)
        .config_file(path)
        .env(no_env())
        .install_global(false)
        .install()
        .unwrap()
}

#[test]
fn a_watched_config_file_reloads_when_it_changes_and_survives_a_bad_edit() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let path = out.join("lens.toml");
    let watch = "watch = true\npoll_interval_ms = 50";
    std::fs::write(&path, config_text(out, "a.jsonl", watch)).unwrap();
    let handle = setup(&path);
    // A bad edit is refused (logged), and the running exporter stays.
    std::fs::write(&path, "enabled = maybe").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(span_stats(&handle, "vendor").reloads, 0);
    std::fs::write(&path, config_text(out, "b.jsonl", watch)).unwrap();
    wait_for("the reload", || span_stats(&handle, "vendor").reloads == 1);
    assert!(out.join("b.jsonl").exists());
    handle.shutdown(T).unwrap();
}

#[test]
fn a_config_without_a_file_cannot_be_watched() {
    let mut config = super::traces_config(Vec::new());
    config.reload.watch = true;
    let error = Telemetry::builder(config)
        .env(no_env())
        .install_global(false)
        .install()
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "invalid config <config>: `reload.watch`/`reload.sighup`: no file to reload from; set \
         `[reload] file`, or give the installation its file with TelemetryBuilder::config_file"
    );
}

#[test]
fn sighup_reloads_from_the_config_file() {
    // SIGHUP goes to the whole process: this test has one of its own.
    isolated(|| {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        let path = out.join("lens.toml");
        std::fs::write(&path, config_text(out, "a.jsonl", "sighup = true")).unwrap();
        let handle = setup(&path);
        std::fs::write(&path, config_text(out, "b.jsonl", "sighup = true")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert_eq!(span_stats(&handle, "vendor").reloads, 0, "not watched");
        // SAFETY: raising a signal this process handles.
        assert_eq!(unsafe { libc::raise(libc::SIGHUP) }, 0);
        wait_for("the reload", || span_stats(&handle, "vendor").reloads == 1);
        handle.shutdown(T).unwrap();
    });
}
