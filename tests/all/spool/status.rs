//! `lens spool status DIR`: what a spool left by a job holds, read while another process holds
//! it, with damage reported by file and a spool of another format refused naming the segment.

use lens::Signal;
use lens::spool::{Spool, SpoolLimits, WhenFull};

fn status(dir: &std::path::Path, json: bool) -> (bool, String) {
    let mut cmd = crate::lens();
    cmd.args(["spool", "status"]).arg(dir);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn status_reports_a_held_spool_its_batches_items_and_damage() {
    let dir = tempfile::tempdir().unwrap();
    let spool_dir = dir.path().join("trainer-rank0-acme");
    let (mut spool, _) = Spool::open(
        &spool_dir,
        Signal::Traces,
        SpoolLimits::new(1 << 20, WhenFull::DropOldest),
    )
    .unwrap();
    for i in 0..4u8 {
        spool.append(512, &[i; 300]).unwrap();
    }
    let bytes = spool.status().bytes;
    // Held by this process: read all the same.
    let (ok, said) = status(&spool_dir, false);
    assert!(ok, "{said}");
    assert_eq!(
        said.trim_end(),
        format!(
            "{}: 4 batch(es), 2048 spans waiting to be replayed, in 1 segment(s), {bytes} bytes (traces)",
            spool_dir.display()
        )
    );
    drop(spool);

    // One payload byte flipped: that batch is reported damaged, naming the segment.
    let segment = std::fs::read_dir(&spool_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "spool"))
        .unwrap();
    let mut raw = std::fs::read(&segment).unwrap();
    let last = raw.len() - 1;
    raw[last] ^= 1;
    std::fs::write(&segment, &raw).unwrap();
    let (ok, said) = status(&spool_dir, true);
    assert!(ok, "{said}");
    let doc: serde_json::Value = serde_json::from_str(said.trim()).unwrap();
    assert_eq!(doc["signal"], "traces");
    assert_eq!(doc["batches"], 3);
    assert_eq!(doc["items"], 1536);
    assert_eq!(doc["corrupt_items"], 512);
    assert!(
        doc["warnings"][0]
            .as_str()
            .unwrap()
            .starts_with(&segment.display().to_string()),
        "{doc}"
    );

    // A segment of a newer format: refused, named, never misread.
    raw[8] = 9;
    std::fs::write(&segment, &raw).unwrap();
    let (ok, said) = status(&spool_dir, false);
    assert!(!ok);
    assert_eq!(
        said.trim_end(),
        format!(
            "error: spool segment {}: it was written by a newer Lens (spool format 9; this Lens \
             reads format 1): replay it with that Lens, or move it away",
            segment.display()
        )
    );
    let (ok, said) = status(&dir.path().join("absent"), false);
    assert!(!ok);
    assert!(
        said.contains("absent: not found or not a directory"),
        "{said}"
    );
}
