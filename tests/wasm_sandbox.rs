//! The sandbox: files, environment, sockets and HTTP are denied unless granted, granted ones
//! work, read-only pre-opens refuse writes, and guest output reaches the log prefixed and cut.

use std::collections::BTreeMap;
use std::time::Duration;

use lens::config::EnvGrant;
use lens::opentelemetry_sdk::Resource;
use lens::wasm::WasmSpanExporter;
use lens_test_support::log::capture_log;
use lens_test_support::wasm::{HOSTILE, direct, export, recorder_spec, spec};

#[test]
fn reading_a_host_file_is_denied() {
    let err = export(&direct("read-file", &[]).0, &["a"]).unwrap_err();
    assert!(err.contains("probe read /etc/passwd: Err("), "{err}");
}

#[test]
fn the_host_environment_is_invisible_except_granted_variables() {
    let mut s = spec(HOSTILE, &[("mode", "read-env")]);
    s.env = BTreeMap::from([
        ("DATASET".to_string(), EnvGrant::Value("pretraining".into())),
        (
            "FROM_HOST".to_string(),
            EnvGrant::FromHost {
                from_host: "PATH".into(),
            },
        ),
    ]);
    let (e, _) =
        WasmSpanExporter::from_config("env", &s, &Resource::builder_empty().build()).unwrap();
    let err = export(&e, &["a"]).unwrap_err();
    let path = std::env::var("PATH").unwrap();
    assert!(
        err.ends_with(&format!(
            "probe env: [(\"DATASET\", \"pretraining\"), (\"FROM_HOST\", \"{path}\")]"
        )),
        "{err}"
    );
    s.env = BTreeMap::from([(
        "KEY".to_string(),
        EnvGrant::FromHost {
            from_host: "LENS_SURELY_UNSET_VAR".into(),
        },
    )]);
    let missing =
        WasmSpanExporter::from_config("env", &s, &Resource::builder_empty().build()).unwrap_err();
    assert!(
        missing
            .to_string()
            .ends_with("`env.KEY` takes host variable `LENS_SURELY_UNSET_VAR`, which is not set"),
        "{missing}"
    );
}

#[test]
fn sockets_are_denied() {
    let err = export(&direct("socket", &[]).0, &["a"]).unwrap_err();
    assert!(err.contains("probe socket: Err("), "{err}");
}

#[test]
fn http_to_a_host_not_allowed_is_denied() {
    let err = export(&direct("http", &[]).0, &["a"]).unwrap_err();
    assert!(
        err.contains("probe http error: ErrorCode::HttpRequestDenied"),
        "{err}"
    );
}

#[test]
fn http_to_an_allowed_host_goes_through() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        use std::io::{Read, Write};
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4096];
        let n = conn.read(&mut buf).unwrap();
        let request = String::from_utf8_lossy(&buf[..n]).to_string();
        conn.write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .unwrap();
        request
    });
    let authority = format!("127.0.0.1:{port}");
    let mut s = spec(HOSTILE, &[("mode", "http"), ("authority", &authority)]);
    s.allowed_hosts = vec![authority.clone()];
    let (e, _) =
        WasmSpanExporter::from_config("http-ok", &s, &Resource::builder_empty().build()).unwrap();
    let err = export(&e, &["a"]).unwrap_err();
    assert!(err.ends_with("probe http status 202"), "{err}");
    let request = server.join().unwrap();
    assert!(
        request.starts_with("POST /v1/traces HTTP/1.1")
            || request.starts_with("GET /v1/traces HTTP/1.1"),
        "{request}"
    );
}

#[test]
fn a_read_only_preopen_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = recorder_spec(dir.path(), "typed");
    s.preopens[0].read_only = true;
    let err = WasmSpanExporter::from_config("ro", &s, &Resource::builder_empty().build())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("init failed: init: cannot create /out/batches.jsonl"),
        "{err}"
    );
    assert!(!dir.path().join("batches.jsonl").exists());
}

#[test]
fn guest_stdout_and_stderr_reach_the_log_prefixed_and_truncated() {
    let capture = capture_log();
    let (e, _) = WasmSpanExporter::from_config(
        "print",
        &spec(HOSTILE, &[("mode", "print")]),
        &Resource::builder_empty().build(),
    )
    .unwrap();
    export(&e, &["a"]).unwrap();
    drop(e); // the instance (and its streams) go away: a pending partial line is flushed
    std::thread::sleep(Duration::from_millis(200));
    let logs = capture.matching("`print`");
    assert!(
        logs.contains(&"[wasm exporter `print` rank 0 stdout] hello from the guest".to_string()),
        "{logs:?}"
    );
    let long = logs
        .iter()
        .find(|l| l.contains("stderr] xxx"))
        .expect("the long stderr line");
    assert!(
        long.ends_with(&format!("{}… [4000 more bytes]", "x".repeat(10))),
        "{}",
        &long[long.len() - 40..]
    );
    assert!(long.len() < 1100);
    assert!(
        logs.contains(&"[wasm exporter `print` rank 0 stdout] no newline at the end".to_string()),
        "{logs:?}"
    );
}
