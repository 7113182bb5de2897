//! What compiling a component may cost the host: a file whose structure is beyond the host's
//! limits is refused before it compiles, and a compile is bounded in memory and time in its
//! worker, the host keeping none of it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lens::LoadError;
use lens::wasm::artefact::cache::ArtifactCache;
use lens::wasm::artefact::compiler::{CompileBounds, CompileError, WORKER_ARG, use_worker};
use lens::wasm::artefact::engine::engine;
use lens::wasm::{LoadChecks, StructureLimits, load};
use lens_test_support::hostile::{nested_component, run_measured};
use lens_test_support::isolated;

const NESTING_REFUSED: &str = "its structure exceeds a limit of the host: nesting depth of components and modules 17, \
     the limit is 16";

/// Why `path` does not load under `checks` (no cache).
fn refusal(path: &Path, checks: LoadChecks<'_>) -> LoadError {
    match load(path, checks, engine(false).unwrap(), None) {
        Ok(_) => panic!("{} loaded", path.display()),
        Err(e) => e,
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The audit's files: 10,000 levels (100 KB, 2 GB to compile) and 20,000 (238 KB, 8 GB and
/// 50 s). Refused by `lens check` and `lens compile` with the limit named, within a second of
/// CPU and a 256 MiB heap.
#[test]
fn a_deeply_nested_component_is_refused_before_it_compiles() {
    let dir = tempfile::tempdir().unwrap();
    for levels in [10_000, 20_000] {
        let path = write(
            dir.path(),
            &format!("nested-{levels}.wasm"),
            &nested_component(levels),
        );
        for command in ["check", "compile"] {
            let run = run_measured(
                crate::lens()
                    .arg(command)
                    .arg(&path)
                    .env("LENS_WASM_CACHE_DIR", dir.path().join("cache")),
                256,
            );
            let stderr = String::from_utf8_lossy(&run.output.stderr);
            assert_eq!(run.output.status.code(), Some(2), "{command}: {stderr}");
            assert!(stderr.contains(NESTING_REFUSED), "{command}: {stderr}");
            assert!(
                stderr.contains(&format!("nested-{levels}.wasm")),
                "{stderr}"
            );
            assert!(
                run.cpu < Duration::from_secs(1),
                "{command} {levels}: {run:?}"
            );
        }
    }
    // At the limit the structure passes (and the file is refused for what it lacks).
    let at_limit = write(dir.path(), "nested-16.wasm", &nested_component(16));
    let err = refusal(&at_limit, LoadChecks::default());
    assert!(matches!(err, LoadError::MissingExport { .. }), "{err}");
}

/// Checks with the structure limits off, so that compilation itself meets the file.
fn unlimited(compile: CompileBounds) -> LoadChecks<'static> {
    LoadChecks {
        structure: StructureLimits {
            max_nesting: u32::MAX,
            max_units: u64::MAX,
            ..Default::default()
        },
        compile,
        ..Default::default()
    }
}

/// This process's peak resident memory, MiB.
fn peak_rss_mib() -> f64 {
    lens_test_support::hostile::peak_rss() as f64 / (1 << 20) as f64
}

/// Past the structure check, the compile runs in a worker under its bounds: the nested file
/// exhausts a 256 MiB heap there, a Python guest overruns a 1 s deadline, and the host process
/// neither grows nor waits longer than the bound.
#[test]
fn a_compile_is_bounded_in_memory_and_time_in_its_worker() {
    isolated(|| {
        use_worker(env!("CARGO_BIN_EXE_lens"), [WORKER_ARG]);
        let dir = tempfile::tempdir().unwrap();

        let nested = write(dir.path(), "nested.wasm", &nested_component(10_000));
        let bounds = CompileBounds {
            memory_mib: 256,
            timeout: Duration::from_secs(60),
        };
        let started = Instant::now();
        let err = refusal(&nested, unlimited(bounds));
        assert!(
            matches!(
                err,
                LoadError::Compile {
                    source: CompileError::OutOfMemory { memory_mib: 256 }
                }
            ),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "compiling it needed more than 256 MiB (`compile_memory_mib`): refused"
        );
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );

        let python = lens_test_support::dist("python-jsonl.wasm");
        let bounds = CompileBounds {
            memory_mib: 4096,
            timeout: Duration::from_secs(1),
        };
        let started = Instant::now();
        let err = refusal(&python, unlimited(bounds));
        assert_eq!(
            err.to_string(),
            "compiling it took longer than 1s (`compile_timeout_ms`): refused"
        );
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );

        // Ranks waiting on the same cache entry are refused at once after the first compile
        // ran out of time, rather than each running into the deadline in turn.
        let cache = ArtifactCache::new(dir.path().join("cache"), u64::MAX);
        let started = Instant::now();
        std::thread::scope(|scope| {
            let loads: Vec<_> = (0..3)
                .map(|_| {
                    scope.spawn(|| {
                        load(
                            &python,
                            unlimited(bounds),
                            engine(false).unwrap(),
                            Some(&cache),
                        )
                    })
                })
                .collect();
            for l in loads {
                let err = l.join().unwrap().err().expect("refused");
                assert!(err.to_string().contains("took longer than 1s"), "{err}");
            }
        });
        assert_eq!(cache.stats().misses, 1, "one compile");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );

        // Within its bounds the worker's artefact loads here.
        let rust = lens_test_support::dist("rust-jsonl.wasm");
        let loaded = load(&rust, LoadChecks::default(), engine(false).unwrap(), None)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!loaded.interfaces.is_empty());
        assert!(peak_rss_mib() < 300.0, "host peak {} MiB", peak_rss_mib());
    });
}

/// The `lens` command compiles in its own worker (`enable_worker_process`): a config's
/// `compile_memory_mib` too small for the Python guest refuses it, naming the key, and the
/// command itself stays small.
#[test]
fn the_lens_command_compiles_in_a_bounded_worker() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "lens.toml",
        format!(
            "[[traces.exporters]]\nkind = \"wasm\"\npath = {:?}\ncompile_memory_mib = 64\n",
            lens_test_support::dist("python-jsonl.wasm")
        )
        .as_bytes(),
    );
    let run = run_measured(
        crate::lens()
            .arg("compile")
            .arg(&config)
            .env("LENS_WASM_CACHE_DIR", dir.path().join("cache")),
        256,
    );
    let stderr = String::from_utf8_lossy(&run.output.stderr);
    assert_eq!(run.output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("python-jsonl.wasm")
            && stderr.contains("compiling it needed more than 64 MiB (`compile_memory_mib`)"),
        "{stderr}"
    );
}
