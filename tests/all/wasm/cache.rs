//! The on-disk compilation cache: a second load maps the compiled component from disk, a
//! changed file is never served a stale artefact, pins are still checked, and a damaged
//! artefact is replaced.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use lens::config::{ExporterSpec, SignalConfig, WasmCacheConfig, WasmExporterSpec};
use lens::wasm::artefact::cache::{ArtifactCache, shared};
use lens::wasm::artefact::engine::engine;
use lens::wasm::{LoadChecks, load};
use lens::{LensConfig, Telemetry};
use lens_test_support::pipeline::{T, exporting, no_env};

fn pinned(sha256: &str) -> LoadChecks<'_> {
    LoadChecks {
        sha256_pin: Some(sha256),
        ..Default::default()
    }
}

fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == ext))
                .collect()
        })
        .unwrap_or_default()
}

/// A copy of the recorder fixture and an empty, unlimited cache, both in a fresh directory.
fn recorder_in_fresh_cache() -> (tempfile::TempDir, ArtifactCache, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let cache = ArtifactCache::new(dir.path().join("c"), u64::MAX);
    let wasm = dir.path().join("exporter.wasm");
    std::fs::copy(lens_test_guests::RECORDER, &wasm).unwrap();
    (dir, cache, wasm)
}

#[test]
fn a_second_setup_is_served_from_the_process_cache() {
    let dir = tempfile::tempdir().unwrap();
    let cache_dir = dir.path().join("cache");
    let config = LensConfig {
        run_id: "cache".into(),
        metrics_enabled: false,
        traces: SignalConfig {
            processors: Vec::new(),
            exporters: vec![ExporterSpec::Wasm(WasmExporterSpec {
                path: PathBuf::from(lens_test_guests::HOSTILE),
                settings: [("mode".to_string(), "panic-on-boom".to_string())].into(),
                ..Default::default()
            })],
        },
        wasm_cache: WasmCacheConfig {
            dir: Some(cache_dir.clone()),
            ..Default::default()
        },
        ..exporting()
    };
    let setup = || {
        let started = Instant::now();
        let handle = Telemetry::builder(config.clone())
            .env(no_env())
            .install_global(false)
            .install()
            .unwrap();
        let took = started.elapsed();
        handle.shutdown(T).unwrap();
        took
    };
    let cold = setup();
    let cache = shared(&config.wasm_cache, &no_env()).expect("the cache is on");
    let first = cache.stats();
    assert_eq!(first.directory, cache_dir);
    assert_eq!((first.hits, first.misses), (0, 1), "{first:?}");
    assert_eq!(files(&cache_dir, "cwasm").len(), 1, "one artefact stored");
    let mode = std::fs::metadata(&cache_dir).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "the cache holds native code: private");

    let warm = setup();
    let second = cache.stats();
    assert_eq!((second.hits, second.misses), (1, 1), "{second:?}");
    eprintln!("hostile guest: cold setup {cold:?}, cached setup {warm:?}");
    // Another setup naming the same directory shares the cache; a disabled one has none.
    assert!(std::ptr::eq(
        shared(&config.wasm_cache, &no_env()).unwrap(),
        cache
    ));
    let off = WasmCacheConfig {
        enabled: false,
        ..config.wasm_cache.clone()
    };
    assert!(shared(&off, &no_env()).is_none());
}

#[test]
fn a_file_rewritten_in_place_is_never_served_the_old_artefact() {
    let (_dir, cache, wasm) = recorder_in_fresh_cache();
    let engine = engine(false).unwrap();
    let recorder = load(&wasm, LoadChecks::default(), engine, Some(&cache)).unwrap();
    assert_eq!(
        load(&wasm, LoadChecks::default(), engine, Some(&cache))
            .unwrap()
            .sha256,
        recorder.sha256
    );
    assert_eq!((cache.stats().hits, cache.stats().misses), (1, 1));

    // Same path, different content: the file's identity changed, so it is read and hashed.
    std::fs::copy(lens_test_guests::HOSTILE, &wasm).unwrap();
    let hostile = load(&wasm, LoadChecks::default(), engine, Some(&cache)).unwrap();
    assert_ne!(hostile.sha256, recorder.sha256);
    let expected = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(std::fs::read(&wasm).unwrap()))
    };
    assert_eq!(hostile.sha256, expected);
    assert_eq!((cache.stats().hits, cache.stats().misses), (1, 2));

    // Back to the first content: its artefact is still there.
    std::fs::copy(lens_test_guests::RECORDER, &wasm).unwrap();
    let again = load(&wasm, LoadChecks::default(), engine, Some(&cache)).unwrap();
    assert_eq!(again.sha256, recorder.sha256);
    assert_eq!((cache.stats().hits, cache.stats().misses), (2, 2));
}

#[test]
fn a_sha256_pin_is_checked_on_a_cache_hit_too() {
    let (_dir, cache, wasm) = recorder_in_fresh_cache();
    let engine = engine(false).unwrap();
    let sha = load(&wasm, LoadChecks::default(), engine, Some(&cache))
        .unwrap()
        .sha256;
    let pin = "0".repeat(64);
    let err = load(&wasm, pinned(&pin), engine, Some(&cache))
        .err()
        .expect("a wrong pin refuses the file");
    assert!(
        matches!(&err, lens::LoadError::PinMismatch { actual, pinned } if *actual == sha && *pinned == pin),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!("sha256 is {sha}, but the config pins {pin}: refusing to load it")
    );
    assert!(load(&wasm, pinned(&sha.to_uppercase()), engine, Some(&cache)).is_ok());
}

#[test]
fn a_damaged_artefact_is_discarded_and_compiled_again() {
    let (_dir, cache, wasm) = recorder_in_fresh_cache();
    let engine = engine(false).unwrap();
    load(&wasm, LoadChecks::default(), engine, Some(&cache)).unwrap();
    let artefact = files(&cache.stats().directory, "cwasm").pop().unwrap();
    std::fs::write(&artefact, b"not a compiled component").unwrap();
    let loaded = load(&wasm, LoadChecks::default(), engine, Some(&cache)).unwrap();
    assert!(loaded.imports.iter().any(|i| i.starts_with("wasi:")));
    assert_eq!((cache.stats().hits, cache.stats().misses), (0, 2));
    assert!(
        std::fs::metadata(&artefact).unwrap().len() > 1000,
        "rewritten"
    );
    load(&wasm, LoadChecks::default(), engine, Some(&cache)).unwrap();
    assert_eq!(cache.stats().hits, 1);
}

#[test]
fn the_cache_is_pruned_to_its_size_limit_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    let cache_dir = dir.path().join("c");
    // A limit below one artefact: each new one evicts those before it, never itself.
    let cache = ArtifactCache::new(&cache_dir, 1);
    let engine = engine(false).unwrap();
    let mut last = String::new();
    for (i, fixture) in [lens_test_guests::RECORDER, lens_test_guests::HOSTILE]
        .iter()
        .enumerate()
    {
        let wasm = dir.path().join(format!("e{i}.wasm"));
        std::fs::copy(fixture, &wasm).unwrap();
        last = load(&wasm, LoadChecks::default(), engine, Some(&cache))
            .unwrap()
            .sha256;
        assert_eq!(files(&cache_dir, "cwasm").len(), 1);
    }
    let kept = files(&cache_dir, "cwasm").pop().unwrap();
    let kept = kept.file_name().unwrap().to_string_lossy().into_owned();
    assert!(kept.starts_with(&last), "{kept} is the newest artefact");
}

#[test]
fn threads_loading_the_same_new_file_at_once_compile_it_once() {
    let (_dir, cache, wasm) = recorder_in_fresh_cache();
    let engine = engine(false).unwrap();
    std::thread::scope(|s| {
        let loads: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    load(&wasm, LoadChecks::default(), engine, Some(&cache)).map(|l| l.sha256)
                })
            })
            .collect();
        let shas: Vec<String> = loads
            .into_iter()
            .map(|h| h.join().unwrap().unwrap())
            .collect();
        assert!(shas.windows(2).all(|w| w[0] == w[1]), "{shas:?}");
    });
    // One compiled; the three others waited for it and mapped its artefact.
    assert_eq!((cache.stats().misses, cache.stats().hits), (1, 3));
    let cache_dir = cache.stats().directory;
    let artefacts = files(&cache_dir, "cwasm");
    assert_eq!(artefacts.len(), 1, "{artefacts:?}");
    let leftovers: Vec<_> = std::fs::read_dir(&cache_dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    // What is on disk is a whole artefact: the next load maps it.
    let hits = cache.stats().hits;
    load(&wasm, LoadChecks::default(), engine, Some(&cache)).unwrap();
    assert_eq!(cache.stats().hits, hits + 1);
}

#[test]
fn a_directory_others_may_write_is_not_used() {
    let capture = lens_test_support::log::capture_log();
    let (dir, cache, wasm) = recorder_in_fresh_cache();
    let loose = dir.path().join("c");
    std::fs::create_dir(&loose).unwrap();
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o777)).unwrap();
    let engine = engine(false).unwrap();
    for _ in 0..2 {
        load(&wasm, LoadChecks::default(), engine, Some(&cache)).unwrap();
    }
    let stats = cache.stats();
    assert_eq!((stats.hits, stats.misses), (0, 2), "{stats:?}");
    assert!(files(&loose, "cwasm").is_empty(), "nothing written there");
    let warnings = capture.matching(&format!("not using {}", loose.display()));
    assert_eq!(warnings.len(), 1, "said once: {warnings:?}");
    assert!(
        warnings[0].contains("everyone may write it (mode 777)")
            && warnings[0].contains("chmod go-w"),
        "{}",
        warnings[0]
    );
}

#[test]
fn an_artefact_others_may_write_is_compiled_again() {
    let (_dir, cache, wasm) = recorder_in_fresh_cache();
    let engine = engine(false).unwrap();
    load(&wasm, LoadChecks::default(), engine, Some(&cache)).unwrap();
    let artefact = files(&cache.stats().directory, "cwasm").pop().unwrap();
    let mode = std::fs::metadata(&artefact).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "artefacts are written private");
    std::fs::set_permissions(&artefact, std::fs::Permissions::from_mode(0o666)).unwrap();
    load(&wasm, LoadChecks::default(), engine, Some(&cache)).unwrap();
    let stats = cache.stats();
    assert_eq!((stats.hits, stats.misses), (0, 2), "{stats:?}");
    // Compiled again, and stored private again.
    let mode = std::fs::metadata(&artefact).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    load(&wasm, LoadChecks::default(), engine, Some(&cache)).unwrap();
    assert_eq!(cache.stats().hits, 1);
}

/// `lens check --quick` of the recorder at `wasm`, writing to `out`, through the cache at `cache`.
fn check_recorder(wasm: &Path, out: &Path, cache: &Path) -> std::process::Command {
    std::fs::create_dir_all(out).unwrap();
    let mut command = crate::lens();
    command
        .args(["check", "--quick"])
        .arg(wasm)
        .arg("--preopen")
        .arg(format!("{}:/out:rw", out.display()))
        .args(["--setting", "out=/out/batches.jsonl"])
        .env("LENS_WASM_CACHE_DIR", cache)
        .env_remove("RUST_LOG");
    command
}

/// Ranks of a node starting at once with a cold cache: the first compiles under the entry's
/// lock, the others wait and map its artefact (`lens check --quick` says which it did).
#[test]
fn processes_loading_the_same_new_file_at_once_compile_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("exporter.wasm");
    std::fs::copy(lens_test_guests::RECORDER, &wasm).unwrap();
    let cache = dir.path().join("cache");
    let children: Vec<_> = (0..4)
        .map(|i| {
            check_recorder(&wasm, &dir.path().join(format!("out-{i}")), &cache)
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<String> = children
        .into_iter()
        .map(|c| String::from_utf8(c.wait_with_output().unwrap().stdout).unwrap())
        .collect();
    let compiled = outputs
        .iter()
        .filter(|o| o.contains(" ms\n  cached load"))
        .count();
    let waited = outputs
        .iter()
        .filter(|o| o.contains("cold compile  skipped"))
        .count();
    assert_eq!((compiled, waited), (1, 3), "{outputs:#?}");
    assert_eq!(files(&cache, "cwasm").len(), 1);
}

/// Flips `n` bytes in the middle of `path` (the code section of an artefact), keeping its size.
fn tamper(path: &Path, n: usize) -> Vec<u8> {
    let original = std::fs::read(path).unwrap();
    let mut bytes = original.clone();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + n] {
        *b ^= 0x5a;
    }
    std::fs::write(path, &bytes).unwrap();
    original
}

#[test]
fn a_tampered_artefact_is_never_mapped_and_is_replaced() {
    let (_dir, cache, wasm) = recorder_in_fresh_cache();
    let engine = engine(false).unwrap();
    load(&wasm, LoadChecks::default(), engine, Some(&cache)).unwrap();
    let artefact = files(&cache.stats().directory, "cwasm").pop().unwrap();
    for n in [1, 16, 4096] {
        let original = tamper(&artefact, n);
        let misses = cache.stats().misses;
        load(&wasm, LoadChecks::default(), engine, Some(&cache)).unwrap();
        // Not mapped (no hit): compiled again, and the artefact rewritten as it was.
        assert_eq!(cache.stats().misses, misses + 1, "{n} bytes");
        assert!(std::fs::read(&artefact).unwrap() == original, "{n} bytes");
        let hits = cache.stats().hits;
        load(&wasm, LoadChecks::default(), engine, Some(&cache)).unwrap();
        assert_eq!(cache.stats().hits, hits + 1);
    }
    // An artefact without its record (written by an older Lens, or the record removed) is
    // compiled again too, and recorded.
    let index = cache.stats().directory.join("index");
    for record in files(&index, "integrity") {
        std::fs::remove_file(record).unwrap();
    }
    let misses = cache.stats().misses;
    load(&wasm, LoadChecks::default(), engine, Some(&cache)).unwrap();
    assert_eq!(cache.stats().misses, misses + 1);
    assert_eq!(files(&index, "integrity").len(), 1);
}

/// The audit's case: a same-size flip in an artefact made `lens check` die with SIGSEGV. Now the
/// command passes, says once which file was altered, and the next run maps the new artefact.
#[test]
fn lens_check_reports_a_tampered_artefact_once_and_passes() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let wasm = Path::new(lens_test_guests::RECORDER);
    let check = || {
        check_recorder(wasm, &dir.path().join("out"), &cache)
            .output()
            .unwrap()
    };
    let first = check();
    assert!(first.status.success(), "{first:?}");
    let artefact = files(&cache, "cwasm").pop().unwrap();
    tamper(&artefact, 16);
    let out = check();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let warning = format!("{} was altered after it was written", artefact.display());
    assert_eq!(stderr.matches(&warning).count(), 1, "{stderr}");
    let again = check();
    assert!(again.status.success());
    assert!(
        !String::from_utf8_lossy(&again.stderr).contains("altered"),
        "replaced"
    );
}
