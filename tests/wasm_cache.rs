//! The on-disk compilation cache: a second load of the same component is served from disk.
//! (Its own test binary: the engine and its cache are process-wide.)

use std::path::PathBuf;
use std::time::{Duration, Instant};

use lens::config::WasmExporterSpec;
use lens::opentelemetry_sdk::Resource;
use lens::wasm::WasmSpanExporter;
use lens::wasm::engine::cache_stats;

#[test]
fn a_second_load_is_a_cache_hit() {
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: set before any engine exists, in a test binary with this single test.
    unsafe { std::env::set_var("LENS_WASM_CACHE_DIR", dir.path()) };
    let spec = WasmExporterSpec {
        path: PathBuf::from(lens_test_guests::HOSTILE),
        settings: [("mode".to_string(), "panic-on-boom".to_string())].into(),
        ..Default::default()
    };
    let resource = Resource::builder_empty().build();
    let cold = Instant::now();
    WasmSpanExporter::from_config("cold", &spec, &resource).unwrap();
    let cold = cold.elapsed();
    let first = cache_stats().expect("the cache is on");
    assert_eq!(
        first.directory,
        dir.path()
            .canonicalize()
            .unwrap_or(dir.path().to_path_buf())
    );
    assert_eq!((first.hits, first.misses), (0, 1), "{first:?}");
    // The cache is written in the background.
    let deadline = Instant::now() + Duration::from_secs(20);
    while walk(dir.path()) == 0 {
        assert!(
            Instant::now() < deadline,
            "nothing was written to the cache"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let warm = Instant::now();
    WasmSpanExporter::from_config("warm", &spec, &resource).unwrap();
    let warm = warm.elapsed();
    let second = cache_stats().unwrap();
    assert_eq!((second.hits, second.misses), (1, 1), "{second:?}");
    eprintln!("hostile guest: cold setup {cold:?}, cached setup {warm:?}");
}

fn walk(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| {
                    if e.path().is_dir() {
                        walk(&e.path())
                    } else {
                        1
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}
