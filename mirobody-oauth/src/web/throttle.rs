//! Sign-in attempts, bounded per account and per client address (`FailureLimiter`s of
//! `mirobody-auth`): only failures count, asked before the password is verified, so a refused
//! try costs no argon2 work, and charged after.

use std::net::IpAddr;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use mirobody_auth::FailureLimiter;
use mirobody_ports::ClientAddr;

/// Failed sign-ins, bounded per account and per address: `burst` failures, then one more per
/// `interval`. An account is its lower-cased email, whether an account has it or not (so
/// probing for accounts is bounded too); an IPv6 address counts by its /64.
pub(crate) struct SignInThrottle<C: Clock = DefaultClock> {
    accounts: FailureLimiter<C>,
    addresses: FailureLimiter<C>,
}

impl SignInThrottle {
    /// `burst` failures allowed, then one per `interval`. A zero burst turns the bound off.
    pub(crate) fn new(burst: u32, interval: Duration) -> Self {
        Self::with_clock(burst, interval, DefaultClock::default())
    }
}

impl<C: Clock + Clone> SignInThrottle<C> {
    fn with_clock(burst: u32, interval: Duration, clock: C) -> Self {
        SignInThrottle {
            accounts: FailureLimiter::with_clock(burst, interval, clock.clone()),
            addresses: FailureLimiter::with_clock(burst, interval, clock),
        }
    }

    /// Whether a try for `email` from `address` may go ahead; `Err` with how long to wait
    /// when the account or the address has failed too often. Charges nothing.
    pub(crate) fn check(&self, email: &str, address: Option<IpAddr>) -> Result<(), Duration> {
        let account = self.accounts.check(&email.to_lowercase());
        let address = address.map_or(Ok(()), |address| self.addresses.check(&ClientAddr(address).network()));
        match (account, address) {
            (Ok(()), Ok(())) => Ok(()),
            (Err(a), Err(b)) => Err(a.max(b)),
            (Err(wait), _) | (_, Err(wait)) => Err(wait),
        }
    }

    /// Whether `address` may try again, asking nothing of an account (a passkey sign-in names
    /// none until it is verified); `Err` with how long to wait. Charges nothing.
    pub(crate) fn check_address(&self, address: Option<IpAddr>) -> Result<(), Duration> {
        address.map_or(Ok(()), |address| self.addresses.check(&ClientAddr(address).network()))
    }

    /// Charges a failed try for `email` from `address`.
    pub(crate) fn failed(&self, email: &str, address: Option<IpAddr>) {
        self.accounts.fail(&email.to_lowercase());
        if let Some(address) = address {
            self.addresses.fail(&ClientAddr(address).network());
        }
    }

    /// How many accounts and addresses have state kept.
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.accounts.kept() + self.addresses.kept()
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
        for _ in 0..1024 {
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
