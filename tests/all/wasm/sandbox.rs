//! The sandbox: files, environment, sockets and HTTP are denied unless granted, granted ones
//! work, read-only pre-opens refuse writes, and guest output reaches the log prefixed and cut.

use std::collections::BTreeMap;
use std::time::Duration;

use lens::config::EnvGrant;
use lens::opentelemetry_sdk::Resource;
use lens::wasm::{GuestOutputCopy, WasmSpanExporter};
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
fn sockets_are_denied_with_what_to_do_instead() {
    let log = capture_log();
    let (exporter, _) = direct("socket", &[]);
    let err = export(&exporter, &["a"]).unwrap_err();
    // Warned once per instance; each call that ran into a denial says so.
    assert_eq!(export(&exporter, &["b"]).unwrap_err(), err);
    assert!(err.contains("probe socket: Err("), "{err}");
    let said = format!(
        "it was denied a TCP socket (IPv4). {}",
        lens::wasm::USE_HTTP
    );
    assert!(err.ends_with(&format!("; {said}")), "{err}");
    let warnings = log.matching("`hostile-socket` rank 0: denied a TCP socket");
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert!(
        warnings[0].contains("(warned once per instance)"),
        "{warnings:?}"
    );

    let err = export(&direct("udp-and-lookup", &[]).0, &["a"]).unwrap_err();
    assert!(err.contains("probe udp: Err("), "{err}");
    assert!(err.contains("lookup: Err("), "{err}");
    // The first denial of the call is named.
    assert!(
        err.ends_with(&format!(
            "; it was denied a UDP socket (IPv4). {}",
            lens::wasm::USE_HTTP
        )),
        "{err}"
    );
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
    // A line with nothing to escape is shown as it is, backslashes included (a guest's JSON
    // lines stay parseable); only a line with a control character has them doubled.
    assert!(
        logs.contains(&r"[wasm exporter `print` rank 0 stdout] C:\new\table".to_string()),
        "{logs:?}"
    );
}

#[test]
fn a_copy_of_guest_output_is_byte_for_byte_whatever_the_log_shows() {
    let _capture = capture_log();
    let dir = tempfile::tempdir().unwrap();
    let resource = Resource::builder_empty().build();
    for (name, mode) in [("print", "print"), ("escapes", "escapes")] {
        let mut s = spec(HOSTILE, &[("mode", mode)]);
        // The copy does not depend on forwarding.
        s.forward_stdio = Some(false);
        let copy = GuestOutputCopy::dir(dir.path());
        let (e, _) = WasmSpanExporter::from_config_with_output(name, &s, &resource, copy).unwrap();
        let _ = export(&e, &["a"]);
        drop(e);
    }
    std::thread::sleep(Duration::from_millis(200));
    let read = |f: &str| std::fs::read(dir.path().join(f)).unwrap();
    assert_eq!(
        read("print.stdout"),
        b"hello from the guest\nC:\\new\\table\nno newline at the end"
    );
    assert_eq!(read("print.stderr"), [&[b'x'; 5000][..], b"\n"].concat());
    assert_eq!(
        String::from_utf8(read("escapes.stderr")).unwrap(),
        "stderr says \u{1b}[31mred\u{1b}[0m \u{1b}]0;owned\u{7} \r\n[WARN lens] all good\n"
    );
    assert!(
        !dir.path().join("escapes.stdout").exists(),
        "it printed nothing there"
    );
}

#[test]
fn control_characters_in_what_a_guest_says_are_escaped() {
    let capture = capture_log();
    let (e, _) = direct("escapes", &[]);
    let err = export(&e, &["a"]).unwrap_err();
    drop(e);
    std::thread::sleep(Duration::from_millis(200));
    let escaped = "\\u{1b}[31mred\\u{1b}[0m \\u{1b}]0;owned\\u{7} \\r\\n[WARN lens] all good";
    assert!(err.ends_with(&format!("error says {escaped}")), "{err}");
    // On stdout and stderr a newline ends a line: the forged line is logged as the guest's,
    // with its prefix.
    let prefix = "[wasm exporter `hostile-escapes` rank 0 stderr]";
    let stderr = capture.matching_at(Some(log::Level::Warn), prefix);
    assert_eq!(
        stderr,
        [
            format!(
                "{prefix} stderr says \\u{{1b}}[31mred\\u{{1b}}[0m \\u{{1b}}]0;owned\\u{{7}} \\r"
            ),
            format!("{prefix} [WARN lens] all good"),
        ],
        "the guest's stderr is logged at warn, escaped"
    );
    for line in capture.matching("escapes") {
        assert!(
            !line.contains('\u{1b}') && !line.contains('\n') && !line.contains('\r'),
            "{line:?}"
        );
    }
}

#[test]
fn a_huge_line_without_a_newline_reports_its_real_length() {
    let capture = capture_log();
    let mut s = spec(HOSTILE, &[("mode", "huge-stdout"), ("mib", "16")]);
    s.call_timeout_ms = Some(30_000);
    let (e, _) = WasmSpanExporter::from_config(
        "hostile-huge-stdout",
        &s,
        &Resource::builder_empty().build(),
    )
    .unwrap();
    export(&e, &["a"]).unwrap();
    drop(e); // the partial line is emitted when the stream goes away
    std::thread::sleep(Duration::from_millis(200));
    let lines = capture.matching("`hostile-huge-stdout` rank 0 stdout] zzz");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].ends_with(&format!("… [{} more bytes]", 16 * (1 << 20) - 1000)),
        "{}",
        &lines[0][lines[0].len() - 40..]
    );
}

/// The hostile guest in `mode` writing into a fresh directory, with `max_write_mib`.
fn fill(mode: &str, max_write_mib: Option<u64>) -> (String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(HOSTILE, &[("mode", mode)]);
    s.preopens = vec![lens::config::WasmPreopen {
        host: dir.path().to_path_buf(),
        guest: "/out".into(),
        read_only: false,
    }];
    s.max_write_mib = max_write_mib;
    s.call_timeout_ms = Some(30_000);
    let (e, _) =
        WasmSpanExporter::from_config(mode, &s, &Resource::builder_empty().build()).unwrap();
    let err = export(&e, &["a"]).unwrap_err();
    (err, dir)
}

#[test]
fn writes_past_the_budget_fail_as_a_full_disk_would() {
    for (mode, file) in [("disk-fill", "fill"), ("disk-fill-direct", "fill-direct")] {
        let (err, dir) = fill(mode, Some(4));
        let size = std::fs::metadata(dir.path().join(file)).unwrap().len();
        assert_eq!(size, 4 << 20, "{mode}: {err}");
        assert!(
            err.contains(&format!("{} bytes, then:", 4 << 20)),
            "{mode}: {err}"
        );
        // Through `descriptor.write` the guest sees `insufficient-space`; wasi-libc (under
        // Rust's std) reports any failed stream write as EIO.
        let full = if mode == "disk-fill" {
            "I/O error"
        } else {
            "insufficient-space"
        };
        assert!(err.contains(full), "{mode}: {err}");
    }
    // Without a budget the same guest writes all it wants.
    let (err, _dir) = fill("disk-fill", None);
    assert!(
        err.ends_with(&format!("{} bytes, no error", 64 << 20)),
        "{err}"
    );
}
