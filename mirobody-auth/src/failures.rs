//! Failures bounded per key: credentials that did not verify, per client address; sign-ins
//! that failed, per account and per address (`mirobody-oauth`).
//!
//! Only failures count: a caller who succeeds many times is never held back. The bound is
//! asked before the costly check (a signature, a password hash), so a refused try costs none
//! of it, and a failure is charged after. `governor` has no way to ask without spending, so
//! its keyed limiter runs over [`Peekable`], a store that answers a question flagged as a
//! peek without writing the state back.

use std::convert::Infallible;
use std::hash::{BuildHasher, Hash};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::StateStore;
use governor::state::keyed::{DashMapStateStore, ShrinkableKeyedStateStore};
use governor::{Quota, RateLimiter};

/// Every this many checks and failures, state indistinguishable from fresh is dropped, so a
/// million distinct keys tried once do not stay in memory.
const SWEEP_EVERY: u64 = 1024;

/// A limiter key: a hashed key, and whether the question is only a peek.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Probe {
    key: u64,
    peek: bool,
}

/// governor's dashmap state, keyed by hash, where a [`Probe`] with `peek` set reads the state
/// and leaves it as it was.
#[derive(Debug, Default)]
struct Peekable(DashMapStateStore<u64>);

impl StateStore for Peekable {
    type Key = Probe;

    fn measure_and_replace<T, F, E>(&self, probe: &Probe, f: F) -> Result<T, E>
    where
        F: Fn(Option<Nanos>) -> Result<(T, Nanos), E>,
    {
        if !probe.peek {
            return self.0.measure_and_replace(&probe.key, f);
        }
        // A key never charged is fresh: answer without making an entry for it.
        if !self.0.contains_key(&probe.key) {
            return f(None).map(|(answer, _)| answer);
        }
        // The inner store writes back only an `Ok`: hand the answer out through `Err`.
        let read = self.0.measure_and_replace(&probe.key, |state| -> Result<(Infallible, Nanos), Result<T, E>> {
            Err(f(state).map(|(answer, _)| answer))
        });
        match read {
            Ok(never) => match never {},
            Err(answer) => answer,
        }
    }
}

impl ShrinkableKeyedStateStore<Probe> for Peekable {
    fn retain_recent(&self, drop_below: Nanos) {
        ShrinkableKeyedStateStore::<u64>::retain_recent(&self.0, drop_below);
    }

    fn shrink_to_fit(&self) {
        ShrinkableKeyedStateStore::<u64>::shrink_to_fit(&self.0);
    }

    fn len(&self) -> usize {
        ShrinkableKeyedStateStore::<u64>::len(&self.0)
    }

    fn is_empty(&self) -> bool {
        ShrinkableKeyedStateStore::<u64>::is_empty(&self.0)
    }
}

type Limiter<C> = RateLimiter<Probe, Peekable, C, NoOpMiddleware<<C as Clock>::Instant>>;

/// Failures bounded per key: `burst` of them, then one more per `interval`. Keys are hashed
/// with a per-process random seed, so nobody can aim collisions at another key.
///
/// ```
/// use std::time::Duration;
/// use mirobody_auth::FailureLimiter;
///
/// let limiter = FailureLimiter::new(2, Duration::from_secs(60));
/// assert!(limiter.check(&"203.0.113.7").is_ok(), "asking charges nothing");
/// limiter.fail(&"203.0.113.7");
/// limiter.fail(&"203.0.113.7");
/// assert!(limiter.check(&"203.0.113.7").unwrap_err() <= Duration::from_secs(60));
/// assert!(limiter.check(&"198.51.100.1").is_ok(), "another key is not held back");
/// ```
pub struct FailureLimiter<C: Clock = DefaultClock> {
    /// `None` when the burst is zero: no bound.
    limiter: Option<Limiter<C>>,
    clock: C,
    hasher: std::hash::RandomState,
    uses: AtomicU64,
}

impl std::fmt::Debug for FailureLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FailureLimiter").field("bounded", &self.limiter.is_some()).finish_non_exhaustive()
    }
}

impl FailureLimiter {
    /// `burst` failures allowed per key, then one per `interval`. A zero burst bounds
    /// nothing.
    pub fn new(burst: u32, interval: Duration) -> Self {
        Self::with_clock(burst, interval, DefaultClock::default())
    }
}

impl<C: Clock + Clone> FailureLimiter<C> {
    /// [`new`](FailureLimiter::new) on another clock (a test's fake one).
    pub fn with_clock(burst: u32, interval: Duration, clock: C) -> Self {
        let quota = NonZeroU32::new(burst)
            .and_then(|burst| Quota::with_period(interval.max(Duration::from_millis(1))).map(|q| q.allow_burst(burst)));
        let limiter = quota.map(|quota| RateLimiter::new(quota, Peekable::default(), clock.clone()));
        FailureLimiter { limiter, clock, hasher: std::hash::RandomState::new(), uses: AtomicU64::new(0) }
    }

    /// Whether a try for `key` may go ahead; `Err` with how long to wait when it has failed
    /// too often. Charges nothing, and keeps no state for a key that never failed.
    pub fn check<K: Hash + ?Sized>(&self, key: &K) -> Result<(), Duration> {
        let Some(limiter) = &self.limiter else { return Ok(()) };
        self.sweep_now_and_then(limiter);
        let probe = Probe { key: self.hasher.hash_one(key), peek: true };
        limiter.check_key(&probe).map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }

    /// Charges a failure to `key`. A charge past the bound spends nothing: the next try waits
    /// as long as before.
    pub fn fail<K: Hash + ?Sized>(&self, key: &K) {
        let Some(limiter) = &self.limiter else { return };
        self.sweep_now_and_then(limiter);
        let _ = limiter.check_key(&Probe { key: self.hasher.hash_one(key), peek: false });
    }

    /// How many keys have state kept.
    pub fn kept(&self) -> usize {
        self.limiter.as_ref().map_or(0, |limiter| limiter.len())
    }

    fn sweep_now_and_then(&self, limiter: &Limiter<C>) {
        if self.uses.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use governor::clock::FakeRelativeClock;

    const MINUTE: Duration = Duration::from_secs(60);

    fn limiter(burst: u32) -> (FailureLimiter<FakeRelativeClock>, FakeRelativeClock) {
        let clock = FakeRelativeClock::default();
        (FailureLimiter::with_clock(burst, MINUTE, clock.clone()), clock)
    }

    #[test]
    fn checking_spends_nothing_and_failures_do() {
        let (limiter, _) = limiter(3);
        for _ in 0..100 {
            assert_eq!(limiter.check("a"), Ok(()));
        }
        assert_eq!(limiter.kept(), 0, "a key that never failed keeps no state");
        for _ in 0..3 {
            limiter.fail("a");
        }
        let wait = limiter.check("a").unwrap_err();
        assert!(wait > Duration::ZERO && wait <= MINUTE, "{wait:?}");
        assert_eq!(limiter.check("b"), Ok(()));
    }

    #[test]
    fn one_more_try_each_interval_after_the_burst() {
        let (limiter, clock) = limiter(2);
        limiter.fail("a");
        limiter.fail("a");
        assert!(limiter.check("a").is_err());
        // Failing more while held back does not push the wait further.
        limiter.fail("a");
        clock.advance(MINUTE);
        assert_eq!(limiter.check("a"), Ok(()));
        limiter.fail("a");
        assert!(limiter.check("a").is_err());
    }

    #[test]
    fn quiet_keys_are_forgotten() {
        let (limiter, clock) = limiter(2);
        for i in 0..5000 {
            limiter.fail(&i);
        }
        assert!(limiter.kept() >= 4000, "{}", limiter.kept());
        clock.advance(MINUTE * 3);
        for _ in 0..SWEEP_EVERY {
            let _ = limiter.check("x");
        }
        assert!(limiter.kept() < 10, "{}", limiter.kept());
    }

    #[test]
    fn a_zero_burst_bounds_nothing() {
        let (limiter, _) = limiter(0);
        for _ in 0..10 {
            limiter.fail("a");
        }
        assert_eq!(limiter.check("a"), Ok(()));
    }
}
