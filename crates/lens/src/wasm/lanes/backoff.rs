//! When a lane whose instance keeps faulting may try again.
//!
//! The first fault costs nothing but the batch: the next batch gets a fresh instance. From the
//! second consecutive fault on, the lane backs off for 1 s, 2 s, 4 s, … up to [`MAX_BACKOFF`],
//! failing batches fast (counted as dropped) instead of rebuilding an instance for each. A fault
//! is consecutive unless the lane ran [`HEALTHY_PERIOD`] without one since it was last allowed to
//! run (the end of its backoff, or its last fault when it was not backing off): waiting out a
//! long backoff is not health. The same schedule as Redpanda's transforms.
//!
//! Time is passed in, so the schedule is tested without sleeping.

use std::time::{Duration, Instant};

/// A lane that runs this long without a fault starts counting afresh.
pub const HEALTHY_PERIOD: Duration = Duration::from_secs(10);
/// The first backoff (after the second consecutive fault).
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// Longest backoff after repeated faults.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The fault history of one lane.
#[derive(Debug, Clone, Default)]
pub(crate) struct Backoff {
    consecutive: u32,
    /// When the lane was last allowed to run after a fault: the fault itself, or the end of the
    /// backoff it started.
    resumed: Option<Instant>,
    until: Option<Instant>,
}

impl Backoff {
    /// Records a fault at `now`; returns the backoff it starts, if any.
    pub(crate) fn fault(&mut self, now: Instant) -> Option<Duration> {
        if self
            .resumed
            .is_none_or(|t| now.saturating_duration_since(t) > HEALTHY_PERIOD)
        {
            self.consecutive = 0;
        }
        self.consecutive += 1;
        let wait = (self.consecutive >= 2).then(|| {
            let doublings = (self.consecutive - 2).min(16);
            (FIRST_BACKOFF * (1u32 << doublings)).min(MAX_BACKOFF)
        });
        self.until = wait.map(|w| now + w);
        self.resumed = Some(self.until.unwrap_or(now));
        wait
    }

    /// How much longer the lane backs off at `now` (`None`: it may run).
    pub(crate) fn remaining(&self, now: Instant) -> Option<Duration> {
        self.until
            .filter(|until| *until > now)
            .map(|until| until - now)
    }

    /// Consecutive faults so far.
    pub(crate) fn consecutive(&self) -> u32 {
        self.consecutive
    }

    /// Ends a backoff early (at shutdown, which must reach the guest).
    pub(crate) fn lift(&mut self) {
        self.until = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gaps between attempts of a guest that faults on every call it is allowed, retried
    /// as soon as the backoff allows (the first retry comes with the next batch, here at once).
    fn gaps(faults: usize) -> Vec<Duration> {
        let start = Instant::now();
        let mut now = start;
        let mut b = Backoff::default();
        let mut last = None;
        let mut out = Vec::new();
        for _ in 0..faults {
            if let Some(wait) = b.remaining(now) {
                now += wait;
            }
            if let Some(prev) = last {
                out.push(now - prev);
            }
            last = Some(now);
            b.fault(now);
        }
        out
    }

    #[test]
    fn repeated_faults_back_off_up_to_the_cap_and_stay_there() {
        let s = Duration::from_secs;
        assert_eq!(
            gaps(10),
            [s(0), s(1), s(2), s(4), s(8), s(16), s(30), s(30), s(30)]
        );
    }

    #[test]
    fn a_fault_after_a_long_backoff_is_still_consecutive() {
        let mut b = Backoff::default();
        let t0 = Instant::now();
        for _ in 0..6 {
            b.fault(t0);
        }
        // A 16 s backoff is running; a fault 2 s after it ends still counts.
        let later = t0 + Duration::from_secs(18);
        assert_eq!(b.fault(later), Some(MAX_BACKOFF));
        assert_eq!(b.consecutive(), 7);
    }

    #[test]
    fn ten_healthy_seconds_start_the_count_afresh() {
        let mut b = Backoff::default();
        let t0 = Instant::now();
        assert_eq!(b.fault(t0), None);
        assert_eq!(b.fault(t0), Some(FIRST_BACKOFF));
        assert_eq!(b.remaining(t0), Some(FIRST_BACKOFF));
        assert_eq!(b.remaining(t0 + FIRST_BACKOFF), None);
        // Healthy for more than 10 s after the backoff ended: the next fault is a first one.
        let healthy = t0 + FIRST_BACKOFF + HEALTHY_PERIOD + Duration::from_millis(1);
        assert_eq!(b.fault(healthy), None);
        assert_eq!(b.consecutive(), 1);
        // Within 10 s of the backoff's end instead: consecutive.
        let mut c = Backoff::default();
        c.fault(t0);
        c.fault(t0);
        assert_eq!(
            c.fault(t0 + FIRST_BACKOFF + HEALTHY_PERIOD),
            Some(FIRST_BACKOFF * 2)
        );
    }

    #[test]
    fn shutdown_lifts_a_backoff() {
        let mut b = Backoff::default();
        let t0 = Instant::now();
        b.fault(t0);
        b.fault(t0);
        assert!(b.remaining(t0).is_some());
        b.lift();
        assert_eq!(b.remaining(t0), None);
    }
}
