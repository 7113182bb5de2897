//! Error snapshots: each `tests/all/config_errors/NAME.toml` must fail with exactly the message in
//! `NAME.expected` (`{file}` stands for the file's path). `LENS_BLESS=1` rewrites the snapshots.

use std::path::Path;

#[test]
fn bad_config_files_produce_their_expected_messages() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all/config_errors");
    let mut checked = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
    {
        let err = lens::LensConfig::from_file(path)
            .expect_err(&format!("{} must be rejected", path.display()));
        let message = err
            .to_string()
            .replace(&path.display().to_string(), "{file}");
        let expected_path = path.with_extension("expected");
        if std::env::var_os("LENS_BLESS").is_some() {
            std::fs::write(&expected_path, format!("{message}\n")).unwrap();
        }
        let expected = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|_| panic!("missing snapshot {}", expected_path.display()));
        assert_eq!(message, expected.trim_end(), "{}", path.display());
        checked += 1;
    }
    assert!(checked >= 12, "only {checked} snapshots found");
}

#[test]
fn a_missing_file_is_named() {
    let err = lens::LensConfig::from_file("/nonexistent/lens.toml").unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid config /nonexistent/lens.toml: cannot read the file: No such file or directory (os error 2)"
    );
}

#[test]
fn a_full_config_round_trips() {
    let text = r#"
service_name = "llama"
export_strategy = "sampled"
export_sample_rate = 0.25
sampler_enabled = true
run_id = "exp-1"

[otlp]
endpoint = "http://127.0.0.1:4317"

[batch]
max_queue_size = 4096

[[traces.exporters]]
kind = "console"

[[traces.exporters]]
kind = "otlp"
protocol = "http/protobuf"
endpoint = "http://127.0.0.1:4318/v1/traces"
batch = { max_export_batch_size = 256 }

[[traces.exporters]]
kind = "wasm"
path = "exporters/vendor.wasm"
allowed_hosts = ["ingest.example.com:443"]
env = { VENDOR_API_KEY = { from_host = "VENDOR_API_KEY" }, DATASET = "pretraining" }
preopens = [{ host = "out", guest = "/out", read_only = false }]
settings = { dataset = "pretraining" }
memory_limit_mib = 128
call_timeout_ms = 2000

[[metrics.exporters]]
kind = "console"
"#;
    let cfg = lens::LensConfig::from_toml_str(text, &lens::config::ConfigSource::Code).unwrap();
    assert_eq!(cfg.trace_exporters().len(), 3);
    assert_eq!(
        cfg.trace_exporters()[1]
            .batch_config(&cfg.batch)
            .max_export_batch_size,
        256
    );
    assert_eq!(
        cfg.trace_exporters()[1]
            .batch_config(&cfg.batch)
            .max_queue_size,
        4096
    );
    let again = lens::LensConfig::from_toml_str(
        &cfg.to_toml_with_secrets(),
        &lens::config::ConfigSource::Code,
    )
    .unwrap();
    assert_eq!(cfg, again);
}
