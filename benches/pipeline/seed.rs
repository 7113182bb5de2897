//! Section 4: the seed's stack against a Python guest under Lens, end to end (N spans into a file).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::{Opts, Row, dist, jsonl_spec, lens_rank, one_span, wasm_config};

/// Section 4.
pub fn seed_stack(opts: &Opts, dir: &Path, rows: &mut Vec<Row>) {
    let quick = opts.quick;
    let n_py = if quick { 5_000 } else { 50_000 };
    let py_out = dir.join("python-sdk.jsonl");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/python_sdk_baseline.py");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg(n_py.to_string())
        .arg(&py_out)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} (pip install -r benches/requirements.txt)",
        String::from_utf8_lossy(&out.stderr)
    );
    let py: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let py_rate = py["spans_per_second"].as_f64().unwrap();
    let e2e = "End to end: N spans from the application into a JSON-lines file, spans per second";
    rows.push(Row {
        group: e2e,
        name: "Python SDK + BatchSpanProcessor + Python exporter (the seed)".into(),
        value: py_rate,
        unit: "spans/s",
        ratio: None,
    });
    for lanes in [1, 2] {
        let out_dir = dir.join(format!("python-guest-{lanes}"));
        std::fs::create_dir_all(&out_dir).unwrap();
        let mut spec = jsonl_spec(dist("python-jsonl.wasm"), &out_dir);
        spec.settings.insert(
            "path".into(),
            format!("/out/spans-{}.jsonl", lens::wasm::INSTANCE_PLACEHOLDER),
        );
        let mut cfg = wasm_config(spec);
        cfg.batch.max_queue_size = n_py;
        cfg.batch.max_concurrent_exports = lanes;
        let handle = lens_rank(cfg, 0, 1);
        let tracer = handle.tracer("bench");
        let started = Instant::now();
        for i in 0..n_py as i64 {
            one_span(&tracer, i);
        }
        handle.force_flush(Duration::from_secs(600)).unwrap();
        let rate = n_py as f64 / started.elapsed().as_secs_f64();
        let _ = handle.shutdown(Duration::from_secs(60));
        // Every span made it, once: the instances' files hold n_py lines together.
        let lines: usize = (0..lanes)
            .map(|k| {
                let text = std::fs::read_to_string(out_dir.join(format!("spans-{k}.jsonl")));
                text.unwrap().lines().count()
            })
            .sum();
        assert_eq!(
            lines, n_py,
            "lines written by {lanes} Python guest instance(s)"
        );
        rows.push(Row {
            group: e2e,
            name: if lanes == 1 {
                "Lens + Python guest".into()
            } else {
                format!(
                    "Lens + Python guest, {lanes} concurrent exports (`max_concurrent_exports`)"
                )
            },
            value: rate,
            unit: "spans/s",
            ratio: Some((rate / py_rate, "× the seed")),
        });
    }
}
