use std::path::{Path, PathBuf};

use super::*;

fn limits(max_bytes: u64) -> SpoolLimits {
    SpoolLimits {
        max_bytes,
        segment_bytes: 1024,
        when_full: WhenFull::DropOldest,
    }
}

fn open(dir: &Path, max_bytes: u64) -> (Spool, Opened) {
    Spool::open(dir, Signal::Traces, limits(max_bytes)).unwrap()
}

/// Every record left, oldest first, each acknowledged: (items, payload).
fn drain(spool: &mut Spool) -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some(r) = spool.oldest().unwrap() {
        spool.ack(&r).unwrap();
        out.push((r.items, r.payload));
    }
    out
}

fn payload(i: u8) -> Vec<u8> {
    vec![i; 100]
}

fn segments(dir: &Path) -> Vec<std::path::PathBuf> {
    segment_files(dir)
        .unwrap()
        .into_iter()
        .map(|(_, p)| p)
        .collect()
}

#[test]
fn records_come_back_oldest_first_across_processes_and_are_replayed_once() {
    let dir = tempfile::tempdir().unwrap();
    let spool_dir = dir.path().join("spool");
    {
        let (mut spool, opened) = open(&spool_dir, 1 << 20);
        assert_eq!(opened, Opened::default());
        for i in 0..30 {
            let got = spool.append(u64::from(i) + 1, &payload(i)).unwrap();
            assert_eq!(got, Appended::Spooled { evicted: 0 });
        }
        // Replay the first five; the process then goes away (killed: nothing flushed).
        for _ in 0..5 {
            let r = spool.oldest().unwrap().unwrap();
            spool.ack(&r).unwrap();
        }
        let status = spool.status();
        assert_eq!(status.records, 25);
        assert_eq!(status.items, (6..=30).sum::<u64>());
        assert!(status.segments > 1, "{status:?}: 1 KiB segments roll over");
    }
    let (mut spool, opened) = open(&spool_dir, 1 << 20);
    assert_eq!(opened, Opened::default());
    let left = drain(&mut spool);
    assert_eq!(
        left,
        (5..30)
            .map(|i| (u64::from(i) + 1, payload(i)))
            .collect::<Vec<_>>()
    );
    // Replayed segments are removed; an empty spool holds none (but the one being written).
    assert_eq!(spool.status().records, 0);
    assert!(segments(&spool_dir).len() <= 1);
    drop(spool);
    let (mut spool, _) = open(&spool_dir, 1 << 20);
    assert!(drain(&mut spool).is_empty(), "nothing replayed twice");
}

#[test]
fn a_second_process_is_refused_naming_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let (_held, _) = open(dir.path(), 1 << 20);
    match Spool::open(dir.path(), Signal::Traces, limits(1 << 20)) {
        Err(SpoolError::Busy { holder, .. }) => {
            assert_eq!(holder, format!("pid {}", std::process::id()));
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("opened twice"),
    }
}

#[test]
fn full_drops_the_oldest_or_the_newest_as_configured_and_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    // Room for about 9 records of 120 bytes (with segment headers).
    let (mut spool, _) = open(&dir.path().join("oldest"), 1200);
    let mut evicted = 0;
    for i in 0..30 {
        match spool.append(1, &payload(i)).unwrap() {
            Appended::Spooled { evicted: n } => evicted += n,
            Appended::Full => panic!("drop_oldest refused"),
        }
        assert!(spool.status().bytes <= 1200, "{:?}", spool.status());
    }
    let left = drain(&mut spool);
    assert_eq!(
        left.len() as u64 + evicted,
        30,
        "every item spooled or evicted"
    );
    assert_eq!(left.last().unwrap().1, payload(29), "the newest kept");

    let mut newest = limits(1200);
    newest.when_full = WhenFull::DropNewest;
    let (mut spool, _) = Spool::open(&dir.path().join("newest"), Signal::Traces, newest).unwrap();
    let refused = (0..30)
        .filter(|i| spool.append(1, &payload(*i)).unwrap() == Appended::Full)
        .count();
    let left = drain(&mut spool);
    assert_eq!(left.len() + refused, 30);
    assert_eq!(left[0].1, payload(0), "the oldest kept");
    // A batch larger than the whole spool is refused in either mode.
    assert_eq!(spool.append(1, &vec![0; 5000]).unwrap(), Appended::Full);
}

/// A spool of ten one-item records in one segment (segments large enough).
fn ten_records(dir: &Path) -> std::path::PathBuf {
    let mut l = limits(1 << 20);
    l.segment_bytes = 1 << 20;
    let (mut spool, _) = Spool::open(dir, Signal::Traces, l).unwrap();
    for i in 0..10 {
        spool.append(1, &payload(i)).unwrap();
    }
    drop(spool);
    segments(dir).pop().unwrap()
}

const RECORD: usize = segment::RECORD_HEADER_BYTES + 100;

/// Ten records with the byte at `offset` of their segment flipped by `mask`, reopened: the
/// segment, what opening said, and the payloads replayed.
fn flipped(offset: usize, mask: u8) -> (tempfile::TempDir, PathBuf, Opened, Vec<Vec<u8>>) {
    let dir = tempfile::tempdir().unwrap();
    let file = ten_records(dir.path());
    let mut bytes = fs::read(&file).unwrap();
    bytes[offset] ^= mask;
    fs::write(&file, &bytes).unwrap();
    let (mut spool, opened) = open(dir.path(), 1 << 20);
    let left = drain(&mut spool).into_iter().map(|(_, p)| p).collect();
    (dir, file, opened, left)
}

#[test]
fn a_flipped_payload_byte_skips_that_record_only_counted_and_named() {
    let (_dir, file, opened, left) = flipped(HEADER_BYTES + 3 * RECORD + 50, 0x40);
    assert_eq!(opened.corrupt_items, 1);
    assert_eq!(opened.warnings.len(), 1);
    assert!(
        opened.warnings[0].contains(&file.display().to_string()),
        "{:?}",
        opened.warnings
    );
    assert_eq!(
        left,
        [0, 1, 2, 4, 5, 6, 7, 8, 9].map(payload).to_vec(),
        "the rest replayed, in order"
    );
}

#[test]
fn a_damaged_record_header_is_skipped_by_finding_the_next_record() {
    // The length field of the fifth record: its extent is unknown, the sixth is found.
    let (_dir, _, opened, left) = flipped(HEADER_BYTES + 4 * RECORD + 5, 0xff);
    assert_eq!(opened.corrupt_items, 0, "its items cannot be known");
    assert!(
        opened.warnings[0].contains(&format!("{RECORD} unreadable byte(s)")),
        "{:?}",
        opened.warnings
    );
    assert_eq!(left, [0, 1, 2, 3, 5, 6, 7, 8, 9].map(payload).to_vec());
}

#[test]
fn a_cut_tail_as_kill_9_leaves_it_is_never_half_read() {
    let dir = tempfile::tempdir().unwrap();
    let file = ten_records(dir.path());
    let bytes = fs::read(&file).unwrap();
    for cut in [1, 7, segment::RECORD_HEADER_BYTES, RECORD - 1] {
        let d = tempfile::tempdir().unwrap();
        let copy = d.path().join(file.file_name().unwrap());
        fs::write(&copy, &bytes[..bytes.len() - cut]).unwrap();
        let (mut spool, opened) = open(d.path(), 1 << 20);
        let left: Vec<Vec<u8>> = drain(&mut spool).into_iter().map(|(_, p)| p).collect();
        assert_eq!(left, (0..9).map(payload).collect::<Vec<_>>(), "cut {cut}");
        // The torn record's header survived when at most its payload was cut.
        let header_kept = cut <= 100;
        assert_eq!(opened.corrupt_items, u64::from(header_kept), "cut {cut}");
        assert_eq!(opened.warnings.len(), 1, "cut {cut}");
    }
}

/// Why opening `dir` for `signal` fails.
fn refusal(dir: &Path, signal: Signal) -> String {
    match Spool::open(dir, signal, limits(1 << 20)) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("{} opened", dir.display()),
    }
}

#[test]
fn a_segment_of_another_format_version_or_signal_is_refused_not_misread() {
    let dir = tempfile::tempdir().unwrap();
    let file = ten_records(dir.path());
    let mut bytes = fs::read(&file).unwrap();
    bytes[8] = 2;
    fs::write(&file, &bytes).unwrap();
    assert_eq!(
        refusal(dir.path(), Signal::Traces),
        format!(
            "spool segment {}: it was written by a newer Lens (spool format 2; this Lens reads \
             format 1): replay it with that Lens, or move it away",
            file.display()
        )
    );
    bytes[8] = 1;
    fs::write(&file, &bytes).unwrap();
    let err = refusal(dir.path(), Signal::Logs);
    assert!(err.ends_with("it holds traces batches, not logs"), "{err}");
    fs::write(&file, b"not a spool at all").unwrap();
    let err = refusal(dir.path(), Signal::Traces);
    assert!(err.contains("not a Lens spool segment"), "{err}");
}

#[test]
fn a_directory_that_is_a_symlink_a_file_or_someone_elses_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    fs::create_dir(&real).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert_eq!(
        refusal(&link, Signal::Traces),
        format!(
            "spool directory {}: is a symlink (to {}): a spool must be a directory of its own, \
             not a link to one",
            link.display(),
            real.display()
        )
    );
    let file = dir.path().join("file");
    fs::write(&file, b"x").unwrap();
    let err = refusal(&file, Signal::Traces);
    assert!(err.ends_with("is not a directory"), "{err}");
    let under_file = file.join("spool");
    let err = refusal(&under_file, Signal::Traces);
    assert!(err.contains("cannot be read (Not a directory"), "{err}");
    // Created private.
    use std::os::unix::fs::PermissionsExt;
    let fresh = dir.path().join("fresh");
    let _ = open(&fresh, 1 << 20);
    assert_eq!(
        fs::metadata(&fresh).unwrap().permissions().mode() & 0o777,
        0o700
    );
}

#[test]
fn inspect_reads_what_a_spool_holds_without_its_lock() {
    let dir = tempfile::tempdir().unwrap();
    let (mut spool, _) = open(dir.path(), 1 << 20);
    for i in 0..12 {
        spool.append(3, &payload(i)).unwrap();
    }
    let r = spool.oldest().unwrap().unwrap();
    spool.ack(&r).unwrap();
    let (signal, status, opened) = Spool::inspect(dir.path()).unwrap();
    assert_eq!(signal, Some(Signal::Traces));
    assert_eq!(status.records, 11);
    assert_eq!(status.items, 33);
    assert_eq!(status.bytes, spool.status().bytes);
    assert!(opened.warnings.is_empty());
}
