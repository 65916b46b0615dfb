//! Sign-in attempts, bounded per account and per client address.
//!
//! Only failures count: a person who signs in correctly many times is never held back. The
//! bound is asked before the password is verified, so a refused try costs no argon2 work, and a
//! failure is charged after. `governor` has no way to ask without spending, so its keyed
//! limiter runs over [`Peekable`], a store that answers a question flagged as a peek without
//! writing the state back.

use std::convert::Infallible;
use std::hash::BuildHasher;
use std::net::IpAddr;
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
/// million distinct emails tried once do not stay in memory.
const SWEEP_EVERY: u64 = 1024;

/// A limiter key: a hashed account or address, and whether the question is only a peek.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Probe {
    key: u64,
    peek: bool,
}

/// governor's dashmap state, keyed by hash, where a [`Probe`] with `peek` set reads the state
/// and leaves it as it was.
#[derive(Debug, Default)]
pub(crate) struct Peekable(DashMapStateStore<u64>);

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

/// Failed sign-ins, bounded per account and per address: `burst` failures, then one more per
/// `interval`. An account is its lower-cased email, whether an account has it or not (so
/// probing for accounts is bounded too); an IPv6 address counts by its /64, which one host
/// usually holds whole.
pub(crate) struct SignInThrottle<C: Clock = DefaultClock> {
    /// `None` when the burst is zero: no bound.
    limiters: Option<Limiters<C>>,
    hasher: std::hash::RandomState,
    uses: AtomicU64,
}

struct Limiters<C: Clock> {
    accounts: Limiter<C>,
    addresses: Limiter<C>,
    clock: C,
}

impl SignInThrottle {
    /// `burst` failures allowed, then one per `interval`. A zero burst turns the bound off.
    pub(crate) fn new(burst: u32, interval: Duration) -> Self {
        Self::with_clock(burst, interval, DefaultClock::default())
    }
}

impl<C: Clock + Clone> SignInThrottle<C> {
    fn with_clock(burst: u32, interval: Duration, clock: C) -> Self {
        let quota = NonZeroU32::new(burst)
            .and_then(|burst| Quota::with_period(interval.max(Duration::from_millis(1))).map(|q| q.allow_burst(burst)));
        let limiters = quota.map(|quota| Limiters {
            accounts: RateLimiter::new(quota, Peekable::default(), clock.clone()),
            addresses: RateLimiter::new(quota, Peekable::default(), clock.clone()),
            clock,
        });
        SignInThrottle { limiters, hasher: std::hash::RandomState::new(), uses: AtomicU64::new(0) }
    }

    /// Whether a try for `email` from `address` may go ahead; `Err` with how long to wait
    /// when the account or the address has failed too often. Charges nothing.
    pub(crate) fn check(&self, email: &str, address: Option<IpAddr>) -> Result<(), Duration> {
        let Some(limiters) = &self.limiters else { return Ok(()) };
        self.sweep_now_and_then(limiters);
        let now = limiters.clock.now();
        let wait = |not_until: governor::NotUntil<C::Instant>| not_until.wait_time_from(now);
        let account = limiters.accounts.check_key(&self.account_key(email, true)).map_err(wait);
        let address = match address {
            Some(address) => limiters.addresses.check_key(&self.address_key(address, true)).map_err(wait),
            None => Ok(()),
        };
        match (account, address) {
            (Ok(()), Ok(())) => Ok(()),
            (Err(a), Err(b)) => Err(a.max(b)),
            (Err(wait), _) | (_, Err(wait)) => Err(wait),
        }
    }

    /// Whether `address` may try again, asking nothing of an account (a passkey sign-in names
    /// none until it is verified); `Err` with how long to wait. Charges nothing.
    pub(crate) fn check_address(&self, address: Option<IpAddr>) -> Result<(), Duration> {
        let (Some(limiters), Some(address)) = (&self.limiters, address) else { return Ok(()) };
        self.sweep_now_and_then(limiters);
        let now = limiters.clock.now();
        limiters.addresses.check_key(&self.address_key(address, true)).map_err(|n| n.wait_time_from(now))
    }

    /// Charges a failed try for `email` from `address`.
    pub(crate) fn failed(&self, email: &str, address: Option<IpAddr>) {
        let Some(limiters) = &self.limiters else { return };
        self.sweep_now_and_then(limiters);
        // A charge past the bound spends nothing: the next try waits as long as before.
        let _ = limiters.accounts.check_key(&self.account_key(email, false));
        if let Some(address) = address {
            let _ = limiters.addresses.check_key(&self.address_key(address, false));
        }
    }

    fn account_key(&self, email: &str, peek: bool) -> Probe {
        Probe { key: self.hasher.hash_one(email.to_lowercase()), peek }
    }

    fn address_key(&self, address: IpAddr, peek: bool) -> Probe {
        Probe { key: self.hasher.hash_one(network_of(address)), peek }
    }

    fn sweep_now_and_then(&self, limiters: &Limiters<C>) {
        if self.uses.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            for limiter in [&limiters.accounts, &limiters.addresses] {
                limiter.retain_recent();
                limiter.shrink_to_fit();
            }
        }
    }

    /// How many accounts and addresses have state kept.
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.limiters.as_ref().map_or(0, |l| l.accounts.len() + l.addresses.len())
    }
}

// An IPv4 address (or an IPv4-mapped IPv6 one) as itself, any other IPv6 address by its /64.
pub(crate) fn network_of(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & (u128::MAX << 64)).into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use governor::clock::FakeRelativeClock;

    const MINUTE: Duration = Duration::from_secs(60);

    fn throttle(burst: u32) -> (SignInThrottle<FakeRelativeClock>, FakeRelativeClock) {
        let clock = FakeRelativeClock::default();
        (SignInThrottle::with_clock(burst, MINUTE, clock.clone()), clock)
    }

    #[test]
    fn checking_spends_nothing_and_failures_do() {
        let (throttle, _) = throttle(3);
        for _ in 0..100 {
            assert_eq!(throttle.check("a@example.com", None), Ok(()));
        }
        for _ in 0..3 {
            throttle.failed("a@example.com", None);
        }
        let wait = throttle.check("A@Example.com", None).unwrap_err();
        assert!(wait > Duration::ZERO && wait <= MINUTE, "{wait:?}");
        assert_eq!(throttle.check("b@example.com", None), Ok(()), "another account is not held back");
    }

    #[test]
    fn one_more_try_each_interval_after_the_burst() {
        let (throttle, clock) = throttle(2);
        throttle.failed("a@example.com", None);
        throttle.failed("a@example.com", None);
        assert!(throttle.check("a@example.com", None).is_err());
        clock.advance(MINUTE);
        assert_eq!(throttle.check("a@example.com", None), Ok(()));
        throttle.failed("a@example.com", None);
        assert!(throttle.check("a@example.com", None).is_err());
    }

    #[test]
    fn an_address_is_bounded_across_accounts_and_ipv6_by_its_64() {
        let (throttle, _) = throttle(3);
        let host: IpAddr = "2001:db8:1:2::10".parse().unwrap();
        let neighbour: IpAddr = "2001:db8:1:2:ffff::1".parse().unwrap();
        let elsewhere: IpAddr = "2001:db8:1:3::10".parse().unwrap();
        for i in 0..3 {
            throttle.failed(&format!("p{i}@example.com"), Some(host));
        }
        assert!(throttle.check("fresh@example.com", Some(neighbour)).is_err());
        assert_eq!(throttle.check("fresh@example.com", Some(elsewhere)), Ok(()));
        assert_eq!(throttle.check("fresh@example.com", None), Ok(()));
    }

    #[test]
    fn quiet_keys_are_forgotten() {
        let (throttle, clock) = throttle(2);
        for i in 0..5000 {
            throttle.failed(&format!("p{i}@example.com"), None);
        }
        assert!(throttle.kept() >= 4000, "{}", throttle.kept());
        clock.advance(MINUTE * 3);
        for _ in 0..SWEEP_EVERY {
            let _ = throttle.check("x@example.com", None);
        }
        assert!(throttle.kept() < 10, "{}", throttle.kept());
    }

    #[test]
    fn a_zero_burst_bounds_nothing() {
        let (throttle, _) = throttle(0);
        for _ in 0..10 {
            throttle.failed("a@example.com", None);
        }
        assert_eq!(throttle.check("a@example.com", None), Ok(()));
    }
}
