//! A spool's faults in a real rank process (`lens demo`): a disk that fills up (a 64 KiB
//! tmpfs mounted over the spool in a mount namespace of the rank's own, writes past it failing
//! with `ENOSPC`) costs counted drops and the rank trains on; a rank killed (`SIGKILL`) while it
//! writes leaves a spool whose every record reads back whole.

use std::path::Path;
use std::time::{Duration, Instant};

use lens::Signal;
use lens::spool::{Spool, SpoolLimits, WhenFull};
use lens_test_support::collector::free_port;

/// A config exporting traces over OTLP/HTTP to a port nothing listens on, spooled under
/// `spool` (one directory per rank).
fn config(dir: &Path, spool: &Path) -> std::path::PathBuf {
    let file = dir.join("lens.toml");
    std::fs::write(
        &file,
        format!(
            "enabled = true\nexport_strategy = \"all_ranks\"\nmetrics_enabled = false\n\
             logs_enabled = false\n[batch]\nmax_export_batch_size = 32\nscheduled_delay_ms = 20\n\
             [[traces.exporters]]\nkind = \"otlp\"\nname = \"vendor\"\n\
             protocol = \"http/protobuf\"\nendpoint = \"http://127.0.0.1:{}/v1/traces\"\n\
             timeout_ms = 200\nspool = {{ dir = \"{}/rank-{{rank}}\", max_mib = 64 }}\n",
            free_port(),
            spool.display()
        ),
    )
    .unwrap();
    file
}

#[test]
fn a_full_disk_costs_counted_drops_and_the_rank_trains_on() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    std::fs::create_dir(&spool).unwrap();
    let cfg = config(dir.path(), &spool);
    let out = dir.path().join("o");
    // A small real file system over the spool, in a user and mount namespace of the rank's own
    // (`unshare`, util-linux): nothing to unmount afterwards, no root needed where
    // unprivileged user namespaces are allowed.
    let result = std::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh", "-c"])
        .arg("mount -t tmpfs -o size=64k lens-spool-test \"$1\" && shift && exec \"$@\"")
        .arg("sh")
        .arg(&spool)
        .arg(env!("CARGO_BIN_EXE_lens"))
        .args(["demo", "--ranks", "1", "--steps", "2000", "--step-ms", "0"])
        .arg("--config")
        .arg(&cfg)
        .arg("--out")
        .arg(&out)
        .env_remove("RANK")
        .env_remove("WORLD_SIZE")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&result.stdout);
    let run = crate::cli::run_dir(&out);
    let ranks = crate::cli::summary(&out);
    let r = &ranks[0];
    let n = |k: &str| r[k].as_u64().unwrap_or_else(|| panic!("{k} in {r}"));
    // The rank trained to its end, and every span is in one place.
    assert!(n("produced") > 1_000, "{r}\n{stdout}");
    assert_eq!(
        n("exported") + n("dropped") + n("in_spool"),
        n("produced"),
        "{r}"
    );
    assert!(n("spooled") > 0 && n("dropped") > 0, "{r}");
    let log = std::fs::read_to_string(run.join("rank-0.log")).unwrap();
    assert!(
        log.contains("No space left on device") && log.contains(&spool.display().to_string()),
        "the failing write is named: {log}\n{}",
        String::from_utf8_lossy(&result.stderr)
    );
}

#[test]
fn a_rank_killed_while_it_spools_leaves_only_whole_records() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let cfg = config(dir.path(), &spool);
    let mut launcher = crate::lens()
        .args([
            "demo",
            "--ranks",
            "1",
            "--duration-s",
            "60",
            "--step-ms",
            "0",
        ])
        .arg("--config")
        .arg(&cfg)
        .arg("--out")
        .arg(dir.path().join("o"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let rank_dir = spool.join("rank-0");
    // Once the spool holds a few hundred KiB, the rank (the lock's holder) is killed mid-run.
    let deadline = Instant::now() + Duration::from_secs(40);
    let pid = loop {
        assert!(Instant::now() < deadline, "the rank never spooled");
        let bytes: u64 = std::fs::read_dir(&rank_dir)
            .map(|d| {
                d.filter_map(|e| e.ok()?.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0);
        let pid = std::fs::read_to_string(rank_dir.join("lock")).unwrap_or_default();
        if bytes > 300_000 && !pid.trim().is_empty() {
            break pid.trim().parse::<i32>().unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // SAFETY: sending a signal to a child process's pid.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let _ = launcher.kill();
    let _ = launcher.wait();
    // Its lock went with it; every record left reads back as whole spans.
    let deadline = Instant::now() + Duration::from_secs(10);
    let limits = SpoolLimits::new(64 << 20, WhenFull::DropOldest);
    let (mut left, opened) = loop {
        match Spool::open(&rank_dir, Signal::Traces, limits) {
            Ok(open) => break open,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("{e}"),
        }
    };
    // A torn last record (the kill cut a write) is at most one batch, reported, never read.
    assert!(opened.corrupt_items <= 32, "{opened:?}");
    let held = left.status().items;
    assert!(held > 1_000, "{held}");
    let mut spans = 0;
    while let Some(record) = left.oldest().unwrap() {
        let batch = lens::spool::otlp::decode_spans(&record.payload).unwrap();
        assert_eq!(batch.len() as u64, record.items);
        spans += batch.len() as u64;
        left.ack(&record).unwrap();
    }
    assert_eq!(spans, held);
}
