//! The sandbox's bounds on what one instance allocates and what the host reads: every memory and
//! table of an instance counted against one cap (and their number capped), the reported peak
//! being that total, a start function bounded by the deadline, and `.wasm` paths that are not
//! regular files, or too large, refused before they are read.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lens::config::WasmExporterSpec;
use lens::opentelemetry_sdk::Resource;
use lens::wasm::WasmSpanExporter;
use lens::{FaultKind, LensError, WasmSetupError};
use lens_test_guests::{
    BIG_TABLES, LOOPING_START, MANY_INSTANCES, MANY_MEMORIES, MULTI_MEMORY, TWO_MEMORIES,
    WAT_EXPORTER,
};
use lens_test_support::wasm::{export, spec};

/// An entry for `path` with a 64 MiB cap, failing setup on any error.
fn capped(path: &str) -> WasmExporterSpec {
    let mut s = spec(path, &[]);
    s.memory_limit_mib = Some(64);
    s.on_setup_failure = Some(lens::config::SetupFailurePolicy::Fail);
    s
}

fn setup_error(spec: &WasmExporterSpec) -> WasmSetupError {
    match WasmSpanExporter::from_config("limits", spec, &Resource::builder_empty().build()) {
        Err(LensError::WasmLoad { source, .. }) => source,
        Err(other) => panic!("unexpected error: {other}"),
        Ok(_) => panic!("{} was set up", spec.path.display()),
    }
}

#[test]
fn the_wat_exporter_loads_and_exports() {
    let (e, stats) = WasmSpanExporter::from_config(
        "wat",
        &capped(WAT_EXPORTER),
        &Resource::builder_empty().build(),
    )
    .unwrap();
    export(&e, &["a", "b"]).unwrap();
    assert_eq!(e.encoding(), Some("otlp-protobuf"));
    assert!(stats.snapshot().traps.is_empty());
}

#[test]
fn many_memories_count_against_one_cap_per_instance() {
    // Each of the 20 memories is under the 64 MiB cap; together they are 1.2 GB.
    match setup_error(&capped(MANY_MEMORIES)) {
        WasmSetupError::Start { kind, detail } => {
            assert_eq!(kind, FaultKind::MemoryLimit, "{detail}");
            assert!(detail.contains("memories and tables in all"), "{detail}");
        }
        other => panic!("unexpected error: {other}"),
    }
}

#[test]
fn a_module_with_several_memories_is_refused_at_load() {
    match setup_error(&capped(MULTI_MEMORY)) {
        WasmSetupError::Load(e) => {
            let e = e.to_string();
            assert!(e.starts_with("invalid component: "), "{e}");
            assert!(e.contains("multiple memories"), "{e}");
        }
        other => panic!("unexpected error: {other}"),
    }
}

#[test]
fn tables_count_against_the_same_cap() {
    match setup_error(&capped(BIG_TABLES)) {
        WasmSetupError::Start { kind, detail } => {
            assert_eq!(kind, FaultKind::MemoryLimit, "{detail}")
        }
        other => panic!("unexpected error: {other}"),
    }
}

#[test]
fn core_instances_of_one_instance_are_counted() {
    match setup_error(&capped(MANY_INSTANCES)) {
        WasmSetupError::Start { detail, .. } => {
            assert!(detail.contains("instance"), "{detail}")
        }
        other => panic!("unexpected error: {other}"),
    }
}

#[test]
fn a_start_function_that_never_returns_hits_the_instantiation_deadline() {
    let mut s = capped(LOOPING_START);
    s.call_timeout_ms = Some(300);
    match setup_error(&s) {
        WasmSetupError::Start { kind, detail } => {
            assert_eq!(kind, FaultKind::Deadline, "{detail}");
        }
        other => panic!("unexpected error: {other}"),
    }
}

#[test]
fn the_reported_peak_is_every_memory_and_table_together() {
    for (path, bytes) in [
        // One 64 KiB page of memory, no table.
        (WAT_EXPORTER, 65_536),
        // That page and another instance's 16 MiB.
        (TWO_MEMORIES, 65_536 + (16 << 20)),
    ] {
        let (e, stats) = WasmSpanExporter::from_config(
            "peak",
            &capped(path),
            &Resource::builder_empty().build(),
        )
        .unwrap();
        export(&e, &["a"]).unwrap();
        assert_eq!(stats.snapshot().peak_memory_bytes, bytes, "{path}");
    }
}

/// Runs `f` on a thread and fails the test if it has not returned within 30 s (a read that
/// blocks forever would otherwise hang the test run).
fn within_30s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("loading blocked: the file was read")
}

fn load_error_at(path: &Path, max_file_mib: Option<u64>) -> String {
    let mut s = spec(path.to_str().unwrap(), &[]);
    s.max_file_mib = max_file_mib;
    match setup_error(&s) {
        WasmSetupError::Load(e) => e.to_string(),
        other => panic!("unexpected error: {other}"),
    }
}

#[test]
fn a_fifo_is_refused_without_being_opened() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("exporter.wasm");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let err = within_30s(move || load_error_at(&fifo, None));
    assert_eq!(err, "is a FIFO, not a regular file: refusing to read it");
}

#[test]
fn a_device_is_refused() {
    let err = within_30s(|| load_error_at(Path::new("/dev/zero"), None));
    assert_eq!(
        err,
        "is a character device, not a regular file: refusing to read it"
    );
}

#[test]
fn a_file_over_the_size_limit_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let huge: PathBuf = dir.path().join("huge.wasm");
    // 1 GiB, sparse: reading it would take seconds and a gigabyte of memory.
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let err = within_30s(move || load_error_at(&huge, None));
    assert_eq!(
        err,
        "is 1073741824 bytes, more than the limit of 268435456 bytes (`max_file_mib`): refusing to read it"
    );
    // The limit is the exporter's own (the Python example is ~18 MB).
    let python = lens_test_support::dist("python-jsonl.wasm");
    let err = load_error_at(&python, Some(1));
    assert!(
        err.contains("more than the limit of 1048576 bytes"),
        "{err}"
    );
}
