//! What one caller may hold at once, and how fast it may ask: the bounds that keep a server
//! facing the internet serving honest users whatever anonymous or authenticated clients send.
//!
//! A caller is a signed-in user (by user id), or for anonymous requests the client's address
//! (an IPv6 address by its /64, which one host usually holds whole). Each caller has counts of
//! its sessions, running calls and open streams, kept in one [`Caller`] handle that its
//! sessions hold, so a call on a session counts itself with one atomic add and no lookup.
//! Requests per second go through `governor`'s keyed GCRA limiter. Request bodies being read or
//! answered draw on one budget of bytes for the whole server, so many large bodies at once are
//! refused rather than held.

use std::hash::{BuildHasher, Hash};
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use http::Extensions;
use mirobody_core::UserInfo;

use crate::session::lock;

/// The client's address, as the server that accepted its connection saw it. [`crate::serve`]
/// puts it in every request's extensions; an application serving [`crate::transport::http::McpHttp`]
/// itself may put it there too (axum's `ConnectInfo<SocketAddr>` is read as well).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

/// The bounds per caller. A zero count or rate turns that bound off.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CallerLimits {
    /// Sessions one caller may hold. At the bound, the caller's own longest-idle session with
    /// nothing running makes room; if every one is busy, the new one is refused (429).
    pub max_sessions: usize,
    /// Tool calls one caller may have running at once (429 beyond).
    pub max_calls: usize,
    /// Streams one caller may hold open at once: session GET streams and `subscriptions/listen`.
    pub max_streams: usize,
    /// Requests per second one caller may send, on average (429 with `Retry-After` beyond).
    pub requests_per_second: u32,
    /// How many requests a caller may send at once above the average rate.
    pub burst: u32,
}

impl Default for CallerLimits {
    fn default() -> Self {
        CallerLimits { max_sessions: 32, max_calls: 32, max_streams: 8, requests_per_second: 50, burst: 200 }
    }
}

impl CallerLimits {
    /// These limits with other bounds on what a caller holds at once: `sessions`, running
    /// `calls` and open `streams` (zero turns one off).
    pub fn with_holdings(mut self, sessions: usize, calls: usize, streams: usize) -> Self {
        self.max_sessions = sessions;
        self.max_calls = calls;
        self.max_streams = streams;
        self
    }

    /// These limits with another request rate: `per_second` on average, `burst` at once; zero
    /// turns the rate limit off (for a test fixture or a trusted load generator, which are one
    /// caller sending as fast as they can).
    pub fn with_rate(mut self, per_second: u32, burst: u32) -> Self {
        self.requests_per_second = per_second;
        self.burst = burst;
        self
    }
}

/// Who a request counts against.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CallerKey {
    /// A signed-in user.
    User(Arc<str>),
    /// An anonymous client, by address (IPv6 by its /64).
    Address(IpAddr),
    /// An anonymous client whose address the transport did not say (stdio, or a host
    /// application that hands none): all such clients count as one.
    Unknown,
}

impl CallerKey {
    /// The caller of a request: its user, or its client's address.
    pub fn of(user: &UserInfo, extensions: &Extensions) -> CallerKey {
        match user.user_id() {
            Some(id) => CallerKey::User(Arc::from(id)),
            None => Self::anonymous(extensions),
        }
    }

    /// An anonymous caller, by the address in `extensions`.
    pub fn anonymous(extensions: &Extensions) -> CallerKey {
        match client_addr(extensions) {
            Some(addr) => CallerKey::Address(network_of(addr)),
            None => CallerKey::Unknown,
        }
    }

    /// Whether the caller is signed in.
    pub fn is_user(&self) -> bool {
        matches!(self, CallerKey::User(_))
    }
}

fn client_addr(extensions: &Extensions) -> Option<IpAddr> {
    if let Some(ClientAddr(addr)) = extensions.get::<ClientAddr>() {
        return Some(*addr);
    }
    extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>().map(|info| info.0.ip())
}

// One host usually holds a whole IPv6 /64, so an address within it is the same client.
pub(crate) fn network_of(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V4(_) => addr,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & (u128::MAX << 64)).into()),
        },
    }
}

// A caller as the rate limiter keys it: hashed, so the limiter keeps eight bytes per caller.
#[derive(Hash)]
enum RateKey<'a> {
    User(&'a str),
    Address(IpAddr),
    Unknown,
}

/// What a caller holds at once.
#[derive(Debug, Default)]
struct Held {
    sessions: AtomicUsize,
    calls: AtomicUsize,
    streams: AtomicUsize,
}

/// Every caller that holds something now, and the bounds.
pub struct Callers {
    held: Mutex<foldhash::HashMap<CallerKey, Arc<Held>>>,
    limits: CallerLimits,
    rate: Option<DefaultKeyedRateLimiter<u64>>,
    // Seeded per process, so a caller cannot pick names whose keys collide in the rate limiter.
    hasher: foldhash::fast::RandomState,
}

impl std::fmt::Debug for Callers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Callers").field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl Callers {
    /// No one holding anything yet, under `limits`.
    pub fn new(limits: CallerLimits) -> Arc<Callers> {
        let rate = NonZeroU32::new(limits.requests_per_second).map(|per_second| {
            let burst = NonZeroU32::new(limits.burst).unwrap_or(per_second);
            RateLimiter::keyed(Quota::per_second(per_second).allow_burst(burst))
        });
        Arc::new(Callers { held: Mutex::default(), limits, rate, hasher: Default::default() })
    }

    /// The bounds.
    pub fn limits(&self) -> &CallerLimits {
        &self.limits
    }

    /// The handle through which `key` holds things; the caller is forgotten when its last
    /// handle drops.
    pub fn caller(self: &Arc<Self>, key: CallerKey) -> Caller {
        let held = Arc::clone(lock(&self.held).entry(key.clone()).or_default());
        Caller { key, held, callers: Arc::clone(self) }
    }

    /// Counts one request of `key` against its rate; `Err` with how long to wait when the
    /// caller is over it.
    pub fn admit(&self, key: &CallerKey) -> Result<(), Duration> {
        let Some(rate) = &self.rate else { return Ok(()) };
        let key = match key {
            CallerKey::User(id) => RateKey::User(id),
            CallerKey::Address(addr) => RateKey::Address(*addr),
            CallerKey::Unknown => RateKey::Unknown,
        };
        Self::check(rate, self.hasher.hash_one(key))
    }

    /// [`admit`](Self::admit) for the caller of a request ([`CallerKey::of`]), without making
    /// its key.
    pub fn admit_request(&self, user: &UserInfo, extensions: &Extensions) -> Result<(), Duration> {
        let Some(rate) = &self.rate else { return Ok(()) };
        let key = match (user.user_id(), client_addr(extensions)) {
            (Some(id), _) => RateKey::User(id),
            (None, Some(addr)) => RateKey::Address(network_of(addr)),
            (None, None) => RateKey::Unknown,
        };
        Self::check(rate, self.hasher.hash_one(key))
    }

    fn check(rate: &DefaultKeyedRateLimiter<u64>, key: u64) -> Result<(), Duration> {
        rate.check_key(&key).map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }

    /// Forgets the rate state of callers quiet long enough to be back at their full burst
    /// (run now and then: the limiter keeps a few bytes per caller seen).
    pub fn forget_quiet(&self) {
        if let Some(rate) = &self.rate {
            rate.retain_recent();
            rate.shrink_to_fit();
        }
    }

    /// How many callers hold something now.
    pub fn len(&self) -> usize {
        lock(&self.held).len()
    }

    /// Whether no caller holds anything.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One caller's hold on the server: its sessions keep it, and its calls and streams count
/// through it.
pub struct Caller {
    key: CallerKey,
    held: Arc<Held>,
    callers: Arc<Callers>,
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A user id is not a secret, but it need not be in every debug print either.
        f.debug_struct("Caller").field("signed_in", &self.key.is_user()).finish_non_exhaustive()
    }
}

impl Clone for Caller {
    fn clone(&self) -> Self {
        Caller { key: self.key.clone(), held: Arc::clone(&self.held), callers: Arc::clone(&self.callers) }
    }
}

impl Drop for Caller {
    fn drop(&mut self) {
        // The map holds one reference and this handle another: this is the last handle.
        if Arc::strong_count(&self.held) == 2 {
            let mut held = lock(&self.callers.held);
            if Arc::strong_count(&self.held) == 2 {
                held.remove(&self.key);
            }
        }
    }
}

/// What a [`Slot`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Session,
    Call,
    Stream,
}

/// A session, call or stream counted against its caller until it drops.
#[must_use = "the slot is given back when it drops"]
pub struct Slot {
    caller: Caller,
    kind: Kind,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot").field("kind", &self.kind).finish()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.caller.counter(self.kind).fetch_sub(1, Ordering::AcqRel);
    }
}

impl Caller {
    /// Who this is.
    pub fn key(&self) -> &CallerKey {
        &self.key
    }

    fn counter(&self, kind: Kind) -> &AtomicUsize {
        match kind {
            Kind::Session => &self.held.sessions,
            Kind::Call => &self.held.calls,
            Kind::Stream => &self.held.streams,
        }
    }

    fn take(&self, kind: Kind, max: usize) -> Option<Slot> {
        let counter = self.counter(kind);
        if max == 0 {
            counter.fetch_add(1, Ordering::AcqRel);
        } else {
            counter.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1)).ok()?;
        }
        Some(Slot { caller: self.clone(), kind })
    }

    /// A running call, if the caller has fewer than [`CallerLimits::max_calls`].
    pub fn try_call(&self) -> Option<Slot> {
        self.take(Kind::Call, self.callers.limits.max_calls)
    }

    /// An open stream, if the caller has fewer than [`CallerLimits::max_streams`].
    pub fn try_stream(&self) -> Option<Slot> {
        self.take(Kind::Stream, self.callers.limits.max_streams)
    }

    /// A session, if the caller has fewer than [`CallerLimits::max_sessions`].
    pub(crate) fn try_session(&self) -> Option<Slot> {
        self.take(Kind::Session, self.callers.limits.max_sessions)
    }

    /// How many sessions, calls and streams the caller holds.
    pub fn holds(&self) -> (usize, usize, usize) {
        let held = &self.held;
        (
            held.sessions.load(Ordering::Acquire),
            held.calls.load(Ordering::Acquire),
            held.streams.load(Ordering::Acquire),
        )
    }
}

/// Request bodies being read or answered, in bytes, for the whole server: each body takes its
/// size from the budget as it arrives and gives it back when its request is answered, and a
/// body that finds the budget spent is refused (503) instead of buffered.
#[derive(Debug, Clone)]
pub(crate) struct BodyBudget(Option<Arc<tokio::sync::Semaphore>>);

impl BodyBudget {
    /// A budget of `bytes`; zero for none.
    pub(crate) fn new(bytes: usize) -> Self {
        let bytes = bytes.min(tokio::sync::Semaphore::MAX_PERMITS);
        BodyBudget((bytes > 0).then(|| Arc::new(tokio::sync::Semaphore::new(bytes))))
    }

    /// Takes `bytes` more for `held`; false when the budget is spent.
    pub(crate) fn take(&self, held: &mut Option<tokio::sync::OwnedSemaphorePermit>, bytes: usize) -> bool {
        let Some(budget) = &self.0 else { return true };
        let Ok(bytes) = u32::try_from(bytes) else { return false };
        if bytes == 0 {
            return true;
        }
        match Arc::clone(budget).try_acquire_many_owned(bytes) {
            Ok(permit) => {
                match held {
                    Some(all) => all.merge(permit),
                    None => *held = Some(permit),
                }
                true
            }
            Err(_) => false,
        }
    }

    /// The bytes left, for tests.
    #[cfg(test)]
    pub(crate) fn available(&self) -> usize {
        self.0.as_ref().map_or(usize::MAX, |b| b.available_permits())
    }
}

/// The whole seconds to put in `Retry-After` for a wait: at least one.
pub(crate) fn retry_after_secs(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: usize) -> CallerLimits {
        CallerLimits { max_sessions: max, max_calls: max, max_streams: max, requests_per_second: 0, burst: 0 }
    }

    #[test]
    fn calls_and_streams_are_counted_per_caller_up_to_the_bound() {
        let callers = Callers::new(limits(2));
        let alice = callers.caller(CallerKey::User("alice".into()));
        let (a, b) = (alice.try_call().unwrap(), alice.try_call().unwrap());
        assert!(alice.try_call().is_none(), "a third call is over the bound");
        // Another caller is not touched by alice's.
        let bob = callers.caller(CallerKey::User("bob".into()));
        assert!(bob.try_call().is_some());
        drop(a);
        assert!(alice.try_call().is_some(), "a finished call gives its slot back");
        drop(b);
        let s = alice.try_stream().unwrap();
        assert_eq!(alice.holds(), (0, 0, 1));
        drop(s);
    }

    #[test]
    fn a_caller_is_forgotten_when_nothing_holds_it() {
        let callers = Callers::new(limits(2));
        let one = callers.caller(CallerKey::Address("192.0.2.1".parse().unwrap()));
        let two = callers.caller(CallerKey::Address("192.0.2.1".parse().unwrap()));
        assert_eq!(callers.len(), 1, "one caller, two handles");
        let call = two.try_call().unwrap();
        drop(two);
        drop(one);
        assert_eq!(callers.len(), 1, "the call still holds it");
        drop(call);
        assert!(callers.is_empty());
    }

    #[test]
    fn zero_turns_a_bound_off() {
        let callers = Callers::new(limits(0));
        let caller = callers.caller(CallerKey::Unknown);
        let calls: Vec<_> = (0..100).map(|_| caller.try_call().unwrap()).collect();
        assert_eq!(caller.holds().1, 100);
        drop(calls);
        assert!(callers.admit(&CallerKey::Unknown).is_ok());
    }

    #[test]
    fn addresses_in_one_ipv6_network_are_one_caller() {
        let key = |addr: &str| {
            let mut extensions = Extensions::new();
            extensions.insert(ClientAddr(addr.parse().unwrap()));
            CallerKey::anonymous(&extensions)
        };
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff::9"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("::ffff:192.0.2.7"), key("192.0.2.7"));
        assert_ne!(key("192.0.2.7"), key("192.0.2.8"));
        assert_eq!(CallerKey::anonymous(&Extensions::new()), CallerKey::Unknown);
    }

    #[test]
    fn the_rate_allows_a_burst_then_says_how_long_to_wait() {
        let callers = Callers::new(CallerLimits { requests_per_second: 2, burst: 3, ..limits(0) });
        let key = CallerKey::User("u".into());
        for _ in 0..3 {
            assert!(callers.admit(&key).is_ok());
        }
        let wait = callers.admit(&key).unwrap_err();
        assert!(wait > Duration::ZERO && wait <= Duration::from_millis(500), "{wait:?}");
        assert_eq!(retry_after_secs(wait), 1);
        assert!(callers.admit(&CallerKey::User("v".into())).is_ok(), "another caller has its own rate");
    }

    #[test]
    fn retry_after_is_whole_seconds_rounded_up() {
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(Duration::from_secs(2)), 2);
        assert_eq!(retry_after_secs(Duration::from_millis(2001)), 3);
    }

    #[test]
    fn the_body_budget_is_taken_and_given_back() {
        let budget = BodyBudget::new(100);
        let mut held = None;
        assert!(budget.take(&mut held, 60));
        assert!(budget.take(&mut held, 40));
        assert_eq!(budget.available(), 0);
        let mut other = None;
        assert!(!budget.take(&mut other, 1), "spent");
        drop(held);
        assert_eq!(budget.available(), 100);
        assert!(BodyBudget::new(0).take(&mut None, usize::MAX), "no budget, no bound");
    }
}
