//! Pushed with `lens push`, loaded by digest from every entry point, pulled once per node, and
//! loaded with the registry down once stored.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use lens::config::{ExporterSpec, SignalConfig, WasmCacheConfig, WasmExporterSpec, WasmPreopen};
use lens::opentelemetry::trace::{Span, Tracer};
use lens::{LensConfig, Telemetry};
use lens_test_support::registry::Registry;

use super::{lens_with, push, sha256_of, text};

/// A rank exporting `spans` spans through the component `path` (a reference) into `out`, its
/// store in `cache`: how setup went, and how many lines the guest wrote.
fn rank(path: &str, cache: &Path, out: &Path, spans: usize) -> Result<usize, lens::LensError> {
    let config = LensConfig {
        service_name: "oci".into(),
        metrics_enabled: false,
        wasm_cache: WasmCacheConfig {
            dir: Some(cache.to_path_buf()),
            ..WasmCacheConfig::default()
        },
        traces: SignalConfig {
            processors: Vec::new(),
            exporters: vec![ExporterSpec::Wasm(WasmExporterSpec {
                name: Some("vendor".into()),
                path: path.into(),
                preopens: vec![WasmPreopen {
                    host: out.to_path_buf(),
                    guest: "/out".into(),
                    read_only: false,
                }],
                settings: [("path".to_string(), "/out/spans.jsonl".to_string())].into(),
                ..Default::default()
            })],
        },
        ..lens_test_support::pipeline::exporting()
    };
    let handle = Telemetry::builder(config)
        .rank(0)
        .world_size(1)
        .env(HashMap::<String, String>::new())
        .install_global(false)
        .install()?;
    let tracer = handle.tracer("t");
    for i in 0..spans {
        tracer.start(format!("step {i}")).end();
    }
    handle.shutdown(Duration::from_secs(10))?;
    Ok(std::fs::read_to_string(out.join("spans.jsonl"))
        .unwrap_or_default()
        .lines()
        .count())
}

#[test]
fn a_pushed_component_loads_by_digest_once_per_node_and_then_with_the_registry_down() {
    let mut registry = Registry::start();
    let pinned = push(&registry, &crate::builtin_jsonl(), "acme/jsonl", "1.0");
    let cache = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    assert_eq!(rank(&pinned, cache.path(), out.path(), 3).unwrap(), 3);
    assert_eq!(registry.blob_downloads("acme/jsonl"), 1);
    // The stored file is the pushed one, byte for byte.
    let digest = pinned.rsplit_once("@sha256:").unwrap().1;
    let stored = cache
        .path()
        .join(format!("oci/sha256-{digest}/component.wasm"));
    assert_eq!(sha256_of(&stored), sha256_of(&crate::builtin_jsonl()));

    // Stored: a second rank needs no registry at all.
    registry.stop();
    let out = tempfile::tempdir().unwrap();
    assert_eq!(rank(&pinned, cache.path(), out.path(), 2).unwrap(), 2);
    let checked = lens_with(cache.path())
        .args(["check", &pinned, "--quick", "--output-lines", "0"])
        .arg("--preopen")
        .arg(format!("{}:/out:rw", out.path().display()))
        .args(["--setting", "path=/out/check.jsonl"])
        .output()
        .unwrap();
    assert!(checked.status.success(), "{}", text(&checked));
    assert!(text(&checked).starts_with(&format!("{pinned}\n")));

    // A digest not stored, with the registry down: the error names the registry.
    let other = tempfile::tempdir().unwrap();
    let err = rank(&pinned, other.path(), out.path(), 1)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!(
            "registry {}: cannot reach it",
            registry.authority()
        )),
        "{err}"
    );
}

#[test]
fn four_ranks_starting_cold_together_download_once() {
    let registry = Registry::start();
    let pinned = push(&registry, &crate::builtin_jsonl(), "acme/four", "1.0");
    let cache = tempfile::tempdir().unwrap();
    let ranks: Vec<_> = (0..4)
        .map(|_| {
            lens_with(cache.path())
                .args(["pull", &pinned])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for rank in ranks {
        let out = rank.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
    }
    assert_eq!(
        registry.blob_downloads("acme/four"),
        1,
        "{}",
        registry.log_text()
    );
}

#[test]
fn a_pinned_digest_wins_over_a_tag_that_moved_and_a_tag_is_followed_only_when_allowed() {
    let registry = Registry::start();
    let first = push(&registry, &crate::builtin_jsonl(), "acme/moving", "stable");
    let recorder = Path::new(lens_test_guests::RECORDER);
    let second = push(&registry, recorder, "acme/moving", "stable");
    assert_ne!(first, second);
    let cache = tempfile::tempdir().unwrap();
    // The first digest still names the first component.
    let pulled = lens_with(cache.path())
        .args(["pull", &first])
        .output()
        .unwrap();
    assert!(pulled.status.success(), "{}", text(&pulled));
    let digest = first.rsplit_once("@sha256:").unwrap().1;
    let stored = cache
        .path()
        .join(format!("oci/sha256-{digest}/component.wasm"));
    assert_eq!(sha256_of(&stored), sha256_of(&crate::builtin_jsonl()));

    // The bare tag: refused, with what it resolves to now and the line to paste.
    let tag = registry.reference("acme/moving", "stable");
    let refused = lens_with(cache.path())
        .args(["pull", &tag])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = text(&refused);
    let second_digest = second.rsplit_once("@sha256:").unwrap().1;
    assert!(
        said.contains(&format!(
            "`{tag}` names no digest: a tag can move. It resolves to sha256:{second_digest} \
             now; pin it: path = \"{second}\""
        )),
        "{said}"
    );
    let followed = lens_with(cache.path())
        .args(["pull", &tag, "--allow-unpinned"])
        .output()
        .unwrap();
    assert!(followed.status.success(), "{}", text(&followed));
    let stored = cache
        .path()
        .join(format!("oci/sha256-{second_digest}/component.wasm"));
    assert_eq!(sha256_of(&stored), sha256_of(recorder));
}
