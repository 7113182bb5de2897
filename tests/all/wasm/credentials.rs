//! Host-held credentials and the egress they travel on: a hostile guest tries every way to learn
//! a key and finds nothing while the key reaches its host, and no other; a credential that
//! cannot be read is a setup error naming it and never its value; addresses a credential must
//! not reach are refused, redirects are not followed, and a response is read only up to its cap.

use std::path::Path;

use lens::config::{CredentialSpec, WasmExporterSpec, WasmPreopen};
use lens::opentelemetry_sdk::Resource;
use lens::wasm::WasmSpanExporter;
use lens_test_support::http::{Answer, IngestServer};
use lens_test_support::log::capture_log;
use lens_test_support::wasm::{HOSTILE, export, spec};

/// A key no file, variable or log of the test process holds by chance.
fn unique_key() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("sk-lens-test-{nanos:x}-{}", std::process::id())
}

fn credential(host: &str, file: &Path) -> CredentialSpec {
    CredentialSpec {
        host: host.into(),
        header: "x-acme-key".into(),
        from_env: None,
        from_file: Some(file.to_path_buf()),
        prefix: String::new(),
    }
}

fn writable(dir: &Path) -> Vec<WasmPreopen> {
    vec![WasmPreopen {
        host: dir.to_path_buf(),
        guest: "/out".into(),
        read_only: false,
    }]
}

fn start(name: &str, s: &WasmExporterSpec) -> Result<WasmSpanExporter, lens::LensError> {
    WasmSpanExporter::from_config(name, s, &Resource::builder_empty().build()).map(|(e, _)| e)
}

#[test]
fn a_hostile_guest_finds_no_host_held_credential_and_only_its_host_receives_it() {
    let capture = capture_log();
    let key = unique_key();
    let secrets = tempfile::tempdir().unwrap();
    let key_file = secrets.path().join("acme");
    std::fs::write(&key_file, format!("{key}\n")).unwrap();
    let vendor = IngestServer::start(Answer {
        required: Some(("x-acme-key".into(), key.clone())),
        ..Answer::default()
    });
    let other = IngestServer::start(Answer::default());
    let (ours, by_name, theirs) = (
        vendor.authority(),
        format!("localhost:{}", vendor.port),
        other.authority(),
    );
    let out = tempfile::tempdir().unwrap();
    let mut s = spec(
        HOSTILE,
        &[
            ("mode", "steal-credential"),
            ("header", "x-acme-key"),
            ("targets", &format!("{ours},{by_name},{theirs}")),
        ],
    );
    s.name = Some("thief".into());
    s.call_timeout_ms = Some(20_000);
    s.allowed_hosts = vec![ours.clone(), by_name.clone(), theirs.clone()];
    s.credentials = vec![credential(&format!("http://{ours}"), &key_file)];
    s.preopens = writable(out.path());
    let e = start("thief", &s).unwrap();
    let report = export(&e, &["a"]).unwrap_err();
    assert!(report.contains("probe steal: done"), "{report}");

    let found = std::fs::read_to_string(out.path().join("found.txt")).unwrap();
    let memory = std::fs::read(out.path().join("memory.bin")).unwrap();
    assert!(!found.contains(&key), "the guest found the key: {found}");
    assert!(memory.len() >= 1 << 20, "a dump of {} bytes", memory.len());
    assert!(
        !memory.windows(key.len()).any(|w| w == key.as_bytes()),
        "the key is in the guest's memory"
    );
    // The probes did run: the guest saw its own request's headers, and the host's
    // credential got the request to its host accepted (the others were not).
    assert!(found.contains("guest-guess"), "{found}");
    let line = |target: &str| {
        found
            .lines()
            .find(|l| l.starts_with(&format!("{target}:")))
            .unwrap_or_else(|| panic!("no line for {target}: {found}"))
            .to_string()
    };
    assert!(line(&ours).contains("status 200"), "{found}");
    assert!(line(&by_name).contains("status 401"), "{found}");
    assert!(line(&theirs).contains("status 200"), "{found}");

    let to_vendor = vendor.received();
    assert_eq!(to_vendor.len(), 2, "{to_vendor:?}");
    for r in &to_vendor {
        let sent = r.header("x-acme-key").unwrap();
        match r.header("host") {
            Some(h) if h == ours => assert_eq!(sent, key, "the credential replaces the guess"),
            Some(h) if h == by_name => assert_eq!(sent, "guest-guess", "another authority"),
            other => panic!("unexpected host {other:?}"),
        }
        assert_eq!(
            r.headers.iter().filter(|(k, _)| k == "x-acme-key").count(),
            1
        );
    }
    let to_other = other.received();
    assert_eq!(to_other.len(), 1, "{to_other:?}");
    assert!(!to_other[0].text().contains(&key), "{:?}", to_other[0]);

    let warned = capture.matching("`thief`");
    let replaced: Vec<_> = warned
        .iter()
        .filter(|l| l.contains("set header `x-acme-key` itself"))
        .collect();
    assert_eq!(replaced.len(), 1, "{warned:?}");
    assert!(
        warned.iter().all(|l| !l.contains(&key)),
        "the key reached the log: {warned:?}"
    );
}

#[test]
fn a_credential_that_cannot_be_read_fails_setup_naming_it_never_its_value() {
    let server = IngestServer::start(Answer::default());
    let mut s = spec(HOSTILE, &[("mode", "noop")]);
    s.allowed_hosts = vec![server.authority()];
    let host = format!("http://{}", server.authority());
    s.credentials = vec![CredentialSpec {
        from_env: Some("LENS_SURELY_UNSET_CREDENTIAL".into()),
        from_file: None,
        ..credential(&host, Path::new("-"))
    }];
    let err = start("vendor", &s).unwrap_err().to_string();
    assert!(
        err.starts_with("wasm exporter `vendor` (")
            && err.ends_with(&format!(
                "credential `x-acme-key` for {host} (from env LENS_SURELY_UNSET_CREDENTIAL) \
                 takes host variable `LENS_SURELY_UNSET_CREDENTIAL`, which is not set"
            )),
        "{err}"
    );
    s.credentials = vec![credential(&host, Path::new("/nonexistent/acme"))];
    let err = start("vendor", &s).unwrap_err().to_string();
    assert!(
        err.contains("credential `x-acme-key` for ")
            && err.contains("cannot read /nonexistent/acme"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("key");
    std::fs::write(&file, "line one\nsk-live-SECRET\n").unwrap();
    s.credentials = vec![credential(&host, &file)];
    let err = start("vendor", &s).unwrap_err().to_string();
    assert!(
        err.contains("its value holds a character a header cannot carry"),
        "{err}"
    );
    assert!(!err.contains("SECRET"), "{err}");
}

#[test]
fn private_link_local_and_metadata_addresses_are_refused_unless_allowed() {
    let capture = capture_log();
    // Literal addresses: refused before any connection is tried (no packet leaves).
    for (authority, class) in [
        ("169.254.169.254:80", "cloud metadata"),
        ("10.255.255.1:9", "private"),
        ("[fe80::1]:9", "link-local"),
    ] {
        let mut s = spec(HOSTILE, &[("mode", "http"), ("authority", authority)]);
        s.allowed_hosts = vec![authority.into()];
        let e = start(&format!("egress-{class}"), &s).unwrap();
        let err = export(&e, &["a"]).unwrap_err();
        assert!(
            err.contains("ErrorCode::DestinationIpProhibited"),
            "{authority}: {err}"
        );
        let logged = capture.matching(&format!("`egress-{class}`"));
        assert!(
            logged
                .iter()
                .any(|l| l.contains(&format!("a {class} address"))),
            "{logged:?}"
        );
    }
    // A name resolving to loopback is reachable.
    let server = IngestServer::start(Answer {
        status: 202,
        ..Answer::default()
    });
    let authority = format!("localhost:{}", server.port);
    let mut s = spec(HOSTILE, &[("mode", "http"), ("authority", &authority)]);
    s.allowed_hosts = vec![authority.clone()];
    let err = export(&start("loopback", &s).unwrap(), &["a"]).unwrap_err();
    assert!(err.ends_with("probe http status 202"), "{err}");
}

#[test]
fn a_redirect_is_not_followed_and_a_response_is_read_only_up_to_its_cap() {
    let elsewhere = IngestServer::start(Answer::default());
    let redirecting = IngestServer::start(Answer {
        status: 307,
        headers: vec![(
            "location".into(),
            format!("http://{}/stolen", elsewhere.authority()),
        )],
        ..Answer::default()
    });
    let huge = IngestServer::start(Answer {
        body: vec![b'z'; 3 << 20],
        ..Answer::default()
    });
    let out = tempfile::tempdir().unwrap();
    let targets = format!("{},{}", redirecting.authority(), huge.authority());
    let mut s = spec(
        HOSTILE,
        &[("mode", "steal-credential"), ("targets", &targets)],
    );
    s.call_timeout_ms = Some(20_000);
    s.allowed_hosts = vec![
        redirecting.authority(),
        huge.authority(),
        elsewhere.authority(),
    ];
    s.max_response_mib = Some(1);
    s.preopens = writable(out.path());
    export(&start("capped", &s).unwrap(), &["a"]).unwrap_err();
    let found = std::fs::read_to_string(out.path().join("found.txt")).unwrap();
    let redirected = found
        .lines()
        .find(|l| l.starts_with(&redirecting.authority()))
        .unwrap();
    assert!(redirected.contains("status 307"), "{found}");
    assert!(elsewhere.received().is_empty(), "the redirect was followed");
    let capped = found
        .lines()
        .find(|l| l.starts_with(&huge.authority()))
        .unwrap();
    assert!(
        capped.contains("then failed: HTTP response body size exceeds limit: 1048576 bytes"),
        "{capped}"
    );
    let read: usize = capped
        .split("body ")
        .nth(1)
        .and_then(|b| b.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        read <= 1 << 20,
        "read {read} bytes past a 1 MiB cap: {capped}"
    );
}

#[test]
fn a_reload_reads_the_credential_again() {
    let server = IngestServer::start(Answer::default());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("key");
    std::fs::write(&file, "first-key").unwrap();
    let authority = server.authority();
    let mut s = spec(HOSTILE, &[("mode", "http"), ("authority", &authority)]);
    s.allowed_hosts = vec![authority.clone()];
    s.credentials = vec![credential(&format!("http://{authority}"), &file)];
    let e = start("rotated", &s).unwrap();
    export(&e, &["a"]).unwrap_err();
    std::fs::write(&file, "second-key\n").unwrap();
    e.reload(&s).unwrap();
    export(&e, &["b"]).unwrap_err();
    let keys: Vec<String> = server
        .received()
        .iter()
        .map(|r| r.header("x-acme-key").unwrap_or_default().to_string())
        .collect();
    assert_eq!(keys, ["first-key", "second-key"]);
}
