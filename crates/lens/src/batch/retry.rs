//! When a batch is sent again: one a wasm guest called `retryable`, or an OTLP request Lens
//! sends itself (metrics edited by processors: `exporter::otlp::request`).
//!
//! The host owns the schedule, so that no guest sleeps or spins on its own: exponential
//! backoff from [`FIRST_RETRY`] doubling to [`MAX_RETRY_DELAY`], each wait jittered down to
//! half its length so that many ranks whose backend went away do not come back in step; a
//! guest's `delay-ms` hint (a `Retry-After`) may lengthen the computed wait, never shorten it
//! (a guest answering `retryable` with a delay of 0 would otherwise spin, holding its caller).
//! Every attempt must start before the batch's export deadline: a wait that would end past it
//! gives up, and the batch is dropped as "export failed after N attempts". The same bounds as
//! opentelemetry-otlp exporters' retry policy (`exporter::otlp`).
//!
//! Time and randomness are passed in, so the schedule is tested without sleeping.

use std::time::{Duration, Instant};

/// The wait before the first retry (before jitter).
pub const FIRST_RETRY: Duration = Duration::from_millis(100);
/// The longest computed wait between attempts (a guest's hint may ask for more).
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(5);

/// The retries of one batch.
#[derive(Debug, Clone)]
pub(crate) struct RetrySchedule {
    deadline: Instant,
    attempts: u32,
}

impl RetrySchedule {
    /// A batch whose first attempt starts at `now` and whose export deadline is `budget` later.
    pub(crate) fn new(now: Instant, budget: Duration) -> Self {
        Self {
            deadline: now + budget,
            attempts: 1,
        }
    }

    /// Attempts made so far (the first included).
    pub(crate) fn attempts(&self) -> u32 {
        self.attempts
    }

    /// After a retryable failure at `now`: how long to wait before the next attempt, or `None`
    /// when that attempt would start past the deadline. `hint` is the guest's `delay-ms`;
    /// `jitter` is uniform in `[0, 1)`.
    pub(crate) fn next(
        &mut self,
        now: Instant,
        hint: Option<Duration>,
        jitter: f64,
    ) -> Option<Duration> {
        let doublings = (self.attempts - 1).min(16);
        let full = (FIRST_RETRY * (1u32 << doublings)).min(MAX_RETRY_DELAY);
        let computed = full.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0));
        let wait = hint.map_or(computed, |h| h.max(computed));
        if now + wait >= self.deadline {
            return None;
        }
        self.attempts += 1;
        Some(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn computed_waits_double_from_the_first_and_stop_at_the_cap() {
        let start = Instant::now();
        let mut s = RetrySchedule::new(start, Duration::from_secs(3600));
        let waits: Vec<Duration> = (0..9).map(|_| s.next(start, None, 1.0).unwrap()).collect();
        assert_eq!(
            waits,
            [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000].map(ms)
        );
        assert_eq!(s.attempts(), 10);
    }

    #[test]
    fn jitter_shortens_a_wait_to_no_less_than_half() {
        let start = Instant::now();
        let mut s = RetrySchedule::new(start, Duration::from_secs(60));
        assert_eq!(s.next(start, None, 0.0), Some(ms(50)));
        assert_eq!(s.next(start, None, 0.5), Some(ms(150)));
    }

    #[test]
    fn a_hint_lengthens_the_wait_but_not_the_deadline() {
        let start = Instant::now();
        let mut s = RetrySchedule::new(start, ms(1000));
        assert_eq!(s.next(start, Some(ms(700)), 0.0), Some(ms(700)));
        // 700 ms later a 400 ms wait would end past the deadline.
        assert_eq!(s.next(start + ms(700), Some(ms(400)), 0.0), None);
        assert_eq!(s.attempts(), 2);
    }

    #[test]
    fn a_hint_never_shortens_the_host_s_schedule() {
        let start = Instant::now();
        let mut s = RetrySchedule::new(start, Duration::from_secs(60));
        // `delay-ms = 0`, again and again: the host's backoff still doubles.
        let waits: Vec<Duration> = (0..4)
            .map(|_| s.next(start, Some(Duration::ZERO), 1.0).unwrap())
            .collect();
        assert_eq!(waits, [100, 200, 400, 800].map(ms));
        assert_eq!(s.next(start, Some(ms(10)), 0.0), Some(ms(800))); // 1600 jittered to half
    }

    #[test]
    fn no_retry_starts_at_or_after_the_deadline() {
        let start = Instant::now();
        let mut s = RetrySchedule::new(start, ms(250));
        assert_eq!(s.next(start, None, 1.0), Some(ms(100)));
        assert_eq!(s.next(start + ms(100), None, 1.0), None); // 100 + 200 > 250
        assert_eq!(s.attempts(), 2);
    }
}
