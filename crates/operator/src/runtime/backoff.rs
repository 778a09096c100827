//! Per-object exponential back-off with jitter that resets on success, after controller-runtime's
//! per-item rate limiter. kube-runtime's `error_policy` keeps no state, so the failure counts live here.

use std::{collections::HashMap, sync::Mutex, time::Duration};

use rand::Rng;

#[derive(Debug)]
pub struct Backoff {
    base: Duration,
    cap: Duration,
    failures: Mutex<HashMap<String, u32>>,
}

impl Backoff {
    pub fn new(base: Duration, cap: Duration) -> Self {
        Self {
            base,
            cap,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// Records one more failure for `key` and returns how long to wait: base * 2^(failures-1), capped,
    /// then jittered into [delay/2, delay] so that many objects failing together do not retry in step.
    pub fn on_failure(&self, key: &str) -> Duration {
        let attempt = {
            let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
            let count = failures.entry(key.to_owned()).or_insert(0);
            *count = count.saturating_add(1);
            *count
        };
        let exponent = attempt.saturating_sub(1).min(20);
        let delay = self.base.saturating_mul(1u32 << exponent).min(self.cap);
        let half = delay / 2;
        half + rand::rng().random_range(Duration::ZERO..=half)
    }

    /// Forgets `key`'s failures: the next failure starts again at the base delay. Called when a
    /// reconcile succeeds, when it fails in a way only a change can fix, and when the object is gone,
    /// so that the map holds only objects that wait to retry.
    pub fn reset(&self, key: &str) {
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
    }

    /// How many objects have failures on record: those waiting to retry.
    pub fn len(&self) -> usize {
        self.failures.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many failures in a row `key` has had.
    pub fn failures(&self, key: &str) -> u32 {
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .copied()
            .unwrap_or(0)
    }
}

impl Default for Backoff {
    /// 5 ms doubling up to 30 s: controller-runtime's per-item defaults, with a cap that keeps
    /// PostgresWriter retrying at least every 30 s while the database is down.
    fn default() -> Self {
        Self::new(Duration::from_millis(5), Duration::from_secs(30))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_to_the_cap_and_reset_on_success() {
        let backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
        let first = backoff.on_failure("a");
        assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
        for _ in 0..10 {
            assert!(backoff.on_failure("a") <= Duration::from_secs(1));
        }
        assert!(
            backoff.on_failure("a") >= Duration::from_millis(500),
            "capped delay keeps its floor"
        );
        assert_eq!(backoff.failures("b"), 0, "keys are independent");
        assert_eq!(backoff.len(), 1);
        backoff.reset("a");
        assert!(backoff.is_empty(), "a reset object is forgotten");
        assert!(backoff.on_failure("a") <= Duration::from_millis(100));
    }
}
