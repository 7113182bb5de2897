//! Section 5: start-up per guest: cold compile, then cached load (median of 5) from a fresh cache,
//! and what checking the artefact against its integrity record costs of that load.

use std::path::Path;
use std::time::Instant;

use crate::{Row, dist, median};

/// Section 5.
pub fn startup(builtin: &Path, dir: &Path, rows: &mut Vec<Row>) {
    let st = "Start-up per guest: cold compile / cached load, ms";
    let engine = lens::wasm::artefact::engine::engine(false).unwrap();
    let cache = lens::wasm::artefact::cache::ArtifactCache::new(dir.join("wasm-cache"), u64::MAX);
    for (name, path) in [
        ("Rust JSON-lines", builtin.to_path_buf()),
        ("C JSON-lines", dist("c-jsonl.wasm")),
        ("Python JSON-lines", dist("python-jsonl.wasm")),
        ("JavaScript JSON-lines", dist("js-jsonl.wasm")),
    ] {
        let ms = |cache| {
            let t = Instant::now();
            lens::wasm::load(&path, Default::default(), engine, cache).unwrap();
            t.elapsed().as_secs_f64() * 1e3
        };
        let cold = ms(None);
        ms(Some(&cache)); // compiles and stores
        let warm = median((0..5).map(|_| ms(Some(&cache))).collect());
        let sha = lens::wasm::load(&path, Default::default(), engine, Some(&cache))
            .unwrap()
            .sha256;
        let artefact = std::fs::read_dir(dir.join("wasm-cache"))
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                let name = p.file_name().unwrap().to_string_lossy();
                name.starts_with(&sha) && name.ends_with(".cwasm")
            })
            .unwrap();
        let check = median(
            (0..5)
                .map(|_| {
                    let t = Instant::now();
                    lens::wasm::artefact::cache::file_digest(&artefact).unwrap();
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect(),
        );
        rows.push(Row {
            group: st,
            name: format!("{name}: cold"),
            value: cold,
            unit: "ms",
            ratio: None,
        });
        rows.push(Row {
            group: st,
            name: format!("{name}: cached"),
            value: warm,
            unit: "ms",
            ratio: Some((cold / warm, "× faster than cold")),
        });
        let mib = std::fs::metadata(&artefact).unwrap().len() as f64 / (1 << 20) as f64;
        rows.push(Row {
            group: st,
            name: format!(
                "{name}: integrity check of the {mib:.1} MiB artefact (in the cached load)"
            ),
            value: check,
            unit: "ms",
            ratio: Some((check / warm, "of the cached load")),
        });
    }
}
