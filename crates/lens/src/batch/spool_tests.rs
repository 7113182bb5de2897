//! The queue with a spool, on numbered items and an exporter switched up and down: what it
//! cannot take waits on disk and comes back once, in every counter exactly once.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};

use super::{BatchExport, BatchQueue, ExporterSnapshot, ExporterStats};
use crate::config::BatchConfig;
use crate::signal::Signal;
use crate::spool::{Spool, SpoolLimits, WhenFull};

/// What the exporter received, and whether it is up; the first export may hang.
#[derive(Clone, Default)]
struct Switch {
    up: Arc<AtomicBool>,
    got: Arc<Mutex<Vec<u32>>>,
    hang_ms: Arc<AtomicU64>,
}

impl Switch {
    fn up() -> Self {
        let s = Self::default();
        s.up.store(true, Ordering::SeqCst);
        s
    }

    /// Every item received, checking none came twice.
    fn once_each(&self) -> BTreeSet<u32> {
        let got = self.got.lock().unwrap();
        let set: BTreeSet<u32> = got.iter().copied().collect();
        assert_eq!(set.len(), got.len(), "an item was delivered twice");
        set
    }
}

impl BatchExport for Switch {
    type Item = u32;

    fn export(&self, batch: Vec<u32>) -> OTelSdkResult {
        let hang = self.hang_ms.swap(0, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(hang));
        if !self.up.load(Ordering::SeqCst) {
            return Err(OTelSdkError::InternalFailure("down".into()));
        }
        self.got.lock().unwrap().extend(batch);
        Ok(())
    }

    fn encode(&self, batch: &[u32]) -> Vec<u8> {
        super::tests::encode_u32s(batch)
    }

    fn decode(&self, record: &[u8]) -> Result<Vec<u32>, String> {
        super::tests::decode_u32s(record)
    }

    fn force_flush(&mut self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&mut self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }

    fn set_resource(&mut self, _resource: &Resource) {}
}

fn config(queue: usize, batch: usize) -> BatchConfig {
    BatchConfig {
        max_queue_size: queue,
        max_export_batch_size: batch,
        scheduled_delay_ms: 20,
        ..BatchConfig::default()
    }
}

fn queue(exporter: &Switch, dir: &std::path::Path, c: BatchConfig) -> BatchQueue<u32> {
    let limits = SpoolLimits::new(1 << 20, WhenFull::DropOldest);
    let spool = Spool::open(dir, Signal::Traces, limits).unwrap();
    let stats = Arc::new(ExporterStats::new("switch"));
    BatchQueue::with_spool(exporter.clone(), c, stats, Signal::Traces, Some(spool))
}

/// Every item in exactly one place.
fn balanced(s: &ExporterSnapshot) {
    assert_eq!(
        s.received + s.spool_found,
        s.exported + s.dropped() + s.in_spool + s.pending(),
        "{s:?}"
    );
    assert_eq!(s.pending(), 0, "{s:?}");
}

#[test]
fn a_down_exporter_s_items_wait_in_the_spool_and_are_replayed_once_when_it_is_back() {
    let dir = tempfile::tempdir().unwrap();
    let exporter = Switch::default();
    let q = queue(&exporter, dir.path(), config(2048, 16));
    for i in 0..100 {
        q.push(i);
    }
    let err = q.force_flush().unwrap_err().to_string();
    assert!(err.contains("100 spans are spooled in"), "{err}");
    let s = q.stats().snapshot();
    assert_eq!((s.spooled, s.in_spool, s.dropped()), (100, 100, 0), "{s:?}");
    balanced(&s);
    exporter.up.store(true, Ordering::SeqCst);
    q.force_flush().unwrap();
    q.shutdown_with_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(exporter.once_each(), (0..100).collect());
    let s = q.stats().snapshot();
    assert_eq!((s.exported, s.replayed, s.in_spool), (100, 100, 0), "{s:?}");
    balanced(&s);
}

#[test]
fn what_a_process_leaves_in_its_spool_the_next_one_sends() {
    let dir = tempfile::tempdir().unwrap();
    let down = Switch::default();
    let q = queue(&down, dir.path(), config(2048, 10));
    (0..50).for_each(|i| q.push(i));
    // Shut down while the exporter is down: nothing lost, 50 left on disk.
    assert!(q.shutdown_with_timeout(Duration::from_secs(5)).is_err());
    let s = q.stats().snapshot();
    assert_eq!((s.in_spool, s.dropped()), (50, 0), "{s:?}");
    drop(q);
    let up = Switch::up();
    let next = queue(&up, dir.path(), config(2048, 10));
    (50..60).for_each(|i| next.push(i));
    next.force_flush().unwrap();
    next.shutdown_with_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(up.once_each(), (0..60).collect());
    let s = next.stats().snapshot();
    assert_eq!(
        (s.received, s.spool_found, s.replayed, s.exported),
        (10, 50, 50, 60),
        "{s:?}"
    );
    balanced(&s);
}

#[test]
fn a_hung_export_does_not_overflow_the_queue_the_spiller_takes_it_to_disk() {
    let dir = tempfile::tempdir().unwrap();
    let exporter = Switch::up();
    exporter.hang_ms.store(1_500, Ordering::SeqCst);
    let q = queue(&exporter, dir.path(), config(64, 16));
    // 600 items over ~1.2 s, while the first export hangs: 9 queues' worth.
    for i in 0..600 {
        q.push(i);
        std::thread::sleep(Duration::from_millis(2));
    }
    q.force_flush().unwrap();
    q.shutdown_with_timeout(Duration::from_secs(5)).unwrap();
    let s = q.stats().snapshot();
    assert_eq!(s.dropped_queue_full, 0, "{s:?}");
    assert!(s.spooled > 0 && s.replayed == s.spooled, "{s:?}");
    assert_eq!(exporter.once_each(), (0..600).collect());
    balanced(&s);
}

#[test]
fn a_damaged_record_is_skipped_and_counted_and_the_rest_replayed() {
    let dir = tempfile::tempdir().unwrap();
    {
        let limits = SpoolLimits::new(1 << 20, WhenFull::DropOldest);
        let (mut spool, _) = Spool::open(dir.path(), Signal::Traces, limits).unwrap();
        spool.append(2, &[1, 0, 0, 0, 2, 0, 0, 0]).unwrap();
        // A record whose checksum holds but whose bytes are not items.
        spool.append(3, &[9, 9, 9]).unwrap();
        spool.append(1, &[3, 0, 0, 0]).unwrap();
    }
    let up = Switch::up();
    let q = queue(&up, dir.path(), config(2048, 10));
    q.force_flush().unwrap();
    q.shutdown_with_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(up.once_each(), [1, 2, 3].into());
    let s = q.stats().snapshot();
    assert_eq!(
        (s.spool_found, s.replayed, s.dropped_spool_corrupt),
        (6, 3, 3),
        "{s:?}"
    );
    balanced(&s);
}

#[test]
fn a_shutdown_that_times_out_on_a_hung_export_gives_the_spool_up_and_counts_each_item_once() {
    let dir = tempfile::tempdir().unwrap();
    // Down, and the first export hangs past the shutdown's timeout, then fails.
    let exporter = Switch::default();
    exporter.hang_ms.store(1_500, Ordering::SeqCst);
    let q = queue(&exporter, dir.path(), config(2048, 16));
    (0..40).for_each(|i| q.push(i));
    std::thread::sleep(Duration::from_millis(100)); // the worker is inside the export
    let err = q.shutdown_with_timeout(Duration::from_millis(300));
    assert!(matches!(err, Err(OTelSdkError::Timeout(_))), "{err:?}");
    // Released: a new installation (here, or in another process) opens it at once.
    let limits = SpoolLimits::new(1 << 20, WhenFull::DropOldest);
    let (reopened, _) = Spool::open(dir.path(), Signal::Traces, limits).unwrap();
    // The hung export fails after the shutdown counted its items: they are not spooled too,
    // and nothing is written to the spool that another holder owns now.
    std::thread::sleep(Duration::from_millis(1_800));
    let s = q.stats().snapshot();
    assert_eq!((s.received, s.exported), (40, 0), "{s:?}");
    // The spiller may have taken the queued ones to disk beside the hung export.
    assert_eq!(s.dropped_shutdown + s.spooled, 40, "{s:?}");
    assert_eq!(s.dropped(), s.dropped_shutdown, "{s:?}");
    assert_eq!(s.in_spool, s.spooled, "{s:?}");
    assert_eq!(
        reopened.status().items,
        s.spooled,
        "the spool holds what the stats say, nothing more"
    );
}
