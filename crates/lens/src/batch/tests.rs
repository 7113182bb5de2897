//! The queue's accounting around the processors stage: what they drop ends in
//! `dropped_processor`, a batch whose processors panic fails whole, and the worker carries on.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;

use super::{BatchExport, BatchQueue, ExporterStats, Processed, ProcessorCounts};
use crate::config::BatchConfig;
use crate::signal::Signal;

/// Numbered test items as a spool record: little-endian `u32`s.
pub(super) fn encode_u32s(batch: &[u32]) -> Vec<u8> {
    batch.iter().flat_map(|i| i.to_le_bytes()).collect()
}

/// A record of [`encode_u32s`] read back; one that is not whole items is an error.
pub(super) fn decode_u32s(record: &[u8]) -> Result<Vec<u32>, String> {
    if !record.len().is_multiple_of(4) {
        return Err("not whole items".into());
    }
    Ok(record
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        .collect())
}

/// Drops the odd items; panics on a batch holding 13.
struct OddsOut;

impl BatchExport for OddsOut {
    type Item = u32;

    fn process(&self, batch: Vec<u32>) -> (Vec<u32>, Processed) {
        assert!(!batch.contains(&13), "a processor bug");
        let n = batch.len();
        let kept: Vec<u32> = batch.into_iter().filter(|i| i % 2 == 0).collect();
        let counts = ProcessorCounts {
            dropped: (n - kept.len()) as u64,
            faults: 0,
        };
        let by = vec![(Arc::from("odds-out"), counts)];
        (kept, Processed { by })
    }

    fn export(&self, _batch: Vec<u32>) -> OTelSdkResult {
        Ok(())
    }

    fn encode(&self, batch: &[u32]) -> Vec<u8> {
        encode_u32s(batch)
    }

    fn decode(&self, record: &[u8]) -> Result<Vec<u32>, String> {
        decode_u32s(record)
    }

    fn force_flush(&mut self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&mut self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }

    fn set_resource(&mut self, _resource: &Resource) {}
}

#[test]
fn processor_drops_and_a_panicking_stage_each_end_in_one_counter() {
    let stats = Arc::new(ExporterStats::new("e"));
    let config = BatchConfig {
        max_export_batch_size: 5,
        ..BatchConfig::default()
    };
    let queue = BatchQueue::new(OddsOut, config, stats.clone(), Signal::Traces);
    for i in 0..20 {
        queue.push(i);
    }
    queue.force_flush().unwrap_or_default();
    queue.shutdown_with_timeout(Duration::from_secs(5)).unwrap();
    let s = stats.snapshot();
    assert_eq!(s.received, 20);
    // Batches 0–4, 5–9, 15–19 processed (8 odd items dropped); 10–14 panicked: failed whole.
    assert_eq!(s.dropped_export_failed, 5);
    assert_eq!(s.dropped_processor, 8);
    assert_eq!(s.processors["odds-out"].dropped, 8);
    assert_eq!(s.exported, 7);
    assert_eq!(s.received, s.exported + s.dropped());
}
