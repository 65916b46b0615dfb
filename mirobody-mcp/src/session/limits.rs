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
//!
//! An anonymous IPv6 caller also counts against its /56 and its /48 (`address_buckets`), which
//! may use 4 and 16 times a /64's bounds: whoever is given a /48 holds 65,536 /64s, and would
//! otherwise be as many callers.

use std::hash::{BuildHasher, Hash};
use std::net::{IpAddr, Ipv6Addr};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use http::Extensions;
use mirobody_core::UserInfo;

use crate::session::lock;

/// The client's address (defined in `mirobody-ports`, where the sign-in pages read it too).
pub use mirobody_ports::ClientAddr;

/// The bounds per caller. A zero count or rate turns that bound off. It reads from
/// configuration too (unknown keys are refused), as mirobody-server's `http.caller_limits`.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
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
    ClientAddr(addr).network()
}

fn v6_network(v6: Ipv6Addr, prefix: u8) -> IpAddr {
    IpAddr::V6((u128::from(v6) & (u128::MAX << (128 - u32::from(prefix)))).into())
}

/// The networks wider than a /64 that an IPv6 caller counts against too, each with how many
/// times a /64's bounds it may use.
const WIDER_V6: [(u8, u32); 2] = [(56, 4), (48, 16)];

/// A network an address counts against: its address with the host bits cleared, and its prefix
/// length (so that a /56 and the /64 at its start are told apart).
pub(crate) type Bucket = (IpAddr, u8);

/// The buckets a client address counts against, each with how many times a caller's bounds
/// it may use: an IPv4 address alone; an IPv6 address by its /64 (1x), its /56 (4x) and its /48
/// (16x). A request must fit in every one.
pub(crate) fn address_buckets(addr: IpAddr) -> impl Iterator<Item = (Bucket, u32)> {
    let own = match network_of(addr) {
        IpAddr::V4(v4) => (IpAddr::V4(v4), 32),
        v6 => (v6, 64),
    };
    let wider = match own.0 {
        IpAddr::V6(v6) => Some(WIDER_V6.map(|(prefix, times)| ((v6_network(v6, prefix), prefix), times))),
        IpAddr::V4(_) => None,
    };
    std::iter::once((own, 1)).chain(wider.into_iter().flatten())
}

// The wider networks of a caller, when it is an anonymous IPv6 one.
fn wider_buckets(key: &CallerKey) -> Option<[(Bucket, u32); 2]> {
    match key {
        CallerKey::Address(IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_none() => {
            Some(WIDER_V6.map(|(prefix, times)| ((v6_network(*v6, prefix), prefix), times)))
        }
        _ => None,
    }
}

// A caller as the rate limiter keys it: hashed, so the limiter keeps eight bytes per caller.
#[derive(Hash)]
enum RateKey<'a> {
    User(&'a str),
    Address(IpAddr),
    Unknown,
}

// What the held counts are kept under: a caller, or a wider network its callers share.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Holder {
    Caller(CallerKey),
    Network(Bucket),
}

// The request rates: every caller's own, and for IPv6 callers their wider networks', each
// with its multiple of the rate.
struct Rates {
    own: DefaultKeyedRateLimiter<u64>,
    wider: [DefaultKeyedRateLimiter<u64>; 2],
}

/// What a caller holds at once.
#[derive(Debug, Default)]
struct Held {
    sessions: AtomicUsize,
    calls: AtomicUsize,
    streams: AtomicUsize,
    // The `Caller` handles that count here. The entry goes when the last one drops: counted
    // apart from the `Arc`'s own count so that the last handle knows it is the last by the one
    // atomic step that makes it so, however many drop at once.
    handles: AtomicUsize,
}

impl Held {
    // One more handle counts here.
    fn handle(self: &Arc<Self>) -> Arc<Held> {
        self.handles.fetch_add(1, Ordering::AcqRel);
        Arc::clone(self)
    }

    // One handle less; whether it was the last.
    fn release(&self) -> bool {
        self.handles.fetch_sub(1, Ordering::AcqRel) == 1
    }
}

/// Every caller that holds something now, and the bounds.
pub struct Callers {
    held: Mutex<foldhash::HashMap<Holder, Arc<Held>>>,
    limits: CallerLimits,
    rate: Option<Rates>,
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
            let times = |n: u32| {
                let n = NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN);
                RateLimiter::keyed(Quota::per_second(per_second.saturating_mul(n)).allow_burst(burst.saturating_mul(n)))
            };
            Rates { own: times(1), wider: WIDER_V6.map(|(_, n)| times(n)) }
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
        let mut held = lock(&self.held);
        let wider = wider_buckets(&key)
            .map(|buckets| buckets.map(|(bucket, _)| held.entry(Holder::Network(bucket)).or_default().handle()));
        let own = held.entry(Holder::Caller(key.clone())).or_default().handle();
        Caller { key, held: own, wider, callers: Arc::clone(self) }
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
        self.check(rate, key)
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
        self.check(rate, key)
    }

    // The caller's own rate first, then its wider networks' from the narrowest: a request
    // refused for its /64 takes nothing from its /48, so one /64 cannot spend its neighbours'
    // share by being refused.
    fn check(&self, rate: &Rates, key: RateKey<'_>) -> Result<(), Duration> {
        let wait = |not_until: governor::NotUntil<_>| not_until.wait_time_from(DefaultClock::default().now());
        let wider = match key {
            RateKey::Address(IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_none() => Some(v6),
            _ => None,
        };
        rate.own.check_key(&self.hasher.hash_one(key)).map_err(wait)?;
        if let Some(v6) = wider {
            for ((prefix, _), limiter) in WIDER_V6.iter().zip(&rate.wider) {
                limiter.check_key(&self.hasher.hash_one(v6_network(v6, *prefix))).map_err(wait)?;
            }
        }
        Ok(())
    }

    /// Forgets the rate state of callers quiet long enough to be back at their full burst
    /// (run now and then: the limiter keeps a few bytes per caller seen).
    pub fn forget_quiet(&self) {
        if let Some(rate) = &self.rate {
            for limiter in std::iter::once(&rate.own).chain(&rate.wider) {
                limiter.retain_recent();
                limiter.shrink_to_fit();
            }
        }
    }

    /// How many callers hold something now.
    pub fn len(&self) -> usize {
        lock(&self.held).keys().filter(|holder| matches!(holder, Holder::Caller(_))).count()
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
    // What the caller's /56 and /48 hold, for an anonymous IPv6 caller.
    wider: Option<[Arc<Held>; 2]>,
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
        Caller {
            key: self.key.clone(),
            held: self.held.handle(),
            wider: self.wider.as_ref().map(|wider| wider.each_ref().map(Held::handle)),
            callers: Arc::clone(&self.callers),
        }
    }
}

impl Drop for Caller {
    fn drop(&mut self) {
        // The last handle (of the caller, or of any caller in a wider network) takes the entry
        // out, under the lock new handles are made under: unless one was made meanwhile, whose
        // own drop will then.
        let own_last = self.held.release();
        let wider_last = self.wider.as_ref().map(|wider| wider.each_ref().map(|network| network.release()));
        if !own_last && !wider_last.is_some_and(|last| last.contains(&true)) {
            return;
        }
        let mut held = lock(&self.callers.held);
        let unused = |entry: Option<&Arc<Held>>, ours: &Arc<Held>| {
            entry.is_some_and(|entry| Arc::ptr_eq(entry, ours) && entry.handles.load(Ordering::Acquire) == 0)
        };
        let own = Holder::Caller(self.key.clone());
        if own_last && unused(held.get(&own), &self.held) {
            held.remove(&own);
        }
        if let (Some(wider), Some(last), Some(buckets)) = (&self.wider, wider_last, wider_buckets(&self.key)) {
            for ((network, last), (bucket, _)) in wider.iter().zip(last).zip(buckets) {
                let holder = Holder::Network(bucket);
                if last && unused(held.get(&holder), network) {
                    held.remove(&holder);
                }
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
        for held in self.caller.all_held() {
            held.counter(self.kind).fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Held {
    fn counter(&self, kind: Kind) -> &AtomicUsize {
        match kind {
            Kind::Session => &self.sessions,
            Kind::Call => &self.calls,
            Kind::Stream => &self.streams,
        }
    }

    // One more of `kind`, if fewer than `max` are held (any number when `max` is zero).
    fn take(&self, kind: Kind, max: usize) -> bool {
        let counter = self.counter(kind);
        if max == 0 {
            counter.fetch_add(1, Ordering::AcqRel);
            return true;
        }
        counter.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1)).is_ok()
    }
}

impl Caller {
    /// Who this is.
    pub fn key(&self) -> &CallerKey {
        &self.key
    }

    // The caller's own counts, then its wider networks'.
    fn all_held(&self) -> impl Iterator<Item = &Arc<Held>> {
        std::iter::once(&self.held).chain(self.wider.iter().flatten())
    }

    // A slot of `kind` if the caller holds fewer than `max`, and each of its wider networks
    // fewer than its multiple of `max`; what was taken is given back when one is full.
    fn take(&self, kind: Kind, max: usize) -> Option<Slot> {
        let times = std::iter::once(1).chain(WIDER_V6.map(|(_, times)| times as usize));
        for (taken, (held, times)) in self.all_held().zip(times).enumerate() {
            if !held.take(kind, max.saturating_mul(times)) {
                for held in self.all_held().take(taken) {
                    held.counter(kind).fetch_sub(1, Ordering::AcqRel);
                }
                return None;
            }
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
    fn callers_of_one_network_dropping_at_once_leave_nothing_behind() {
        let callers = Callers::new(limits(0));
        let threads = 8;
        for round in 0..200 {
            let start = std::sync::Barrier::new(threads);
            std::thread::scope(|scope| {
                for n in 0..threads {
                    let (callers, start) = (&callers, &start);
                    scope.spawn(move || {
                        // A /64 each, all in one /56 and /48: they share two entries.
                        let addr: IpAddr = format!("2001:db8:42:{n:x}::{round:x}").parse().unwrap();
                        let caller = callers.caller(CallerKey::Address(network_of(addr)));
                        let call = caller.try_call();
                        start.wait();
                        drop((call, caller));
                    });
                }
            });
            assert_eq!(lock(&callers.held).len(), 0, "round {round}: an entry was left behind");
        }
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

    fn anonymous_at(addr: &str) -> CallerKey {
        let mut extensions = Extensions::new();
        extensions.insert(ClientAddr(addr.parse().unwrap()));
        CallerKey::anonymous(&extensions)
    }

    // A /64 in the `n`th /56 of the /48 2001:db8:42::/48.
    fn in_56(n: u16) -> CallerKey {
        anonymous_at(&format!("2001:db8:42:{:x}::1", n << 8))
    }

    #[test]
    fn the_64s_of_one_48_share_sixteen_times_the_rate_of_one() {
        // A /64 may send a burst of 2; its /56, 8; its /48, 32.
        let callers = Callers::new(CallerLimits { requests_per_second: 1, burst: 2, ..limits(0) });
        for n in 0..16 {
            let key = in_56(n);
            assert!(callers.admit(&key).is_ok() && callers.admit(&key).is_ok(), "/56 number {n}");
            assert!(callers.admit(&key).is_err(), "the /64's own burst is spent");
        }
        // The /48 is spent: fresh /64s in fresh /56s of it are refused (but for the odd one
        // the /48's rate, 16 a second, lets through while this runs). Without the /48's bound
        // every one would pass.
        let admitted = (16..48).filter(|n| callers.admit(&in_56(*n)).is_ok()).count();
        assert!(admitted <= 3, "{admitted} of 32 fresh /64s in the spent /48 were admitted");
        assert!(callers.admit(&anonymous_at("2001:db8:43::1")).is_ok(), "another /48 is not touched");
        assert!(callers.admit(&anonymous_at("192.0.2.1")).is_ok(), "nor is IPv4");
    }

    #[test]
    fn the_64s_of_one_56_share_four_times_the_rate_of_one() {
        let callers = Callers::new(CallerLimits { requests_per_second: 1, burst: 2, ..limits(0) });
        let in_one_56 = |n: u16| anonymous_at(&format!("2001:db8:42:{n:x}::1"));
        for n in 0..4 {
            assert!(callers.admit(&in_one_56(n)).is_ok() && callers.admit(&in_one_56(n)).is_ok());
        }
        let admitted = (4..36).filter(|n| callers.admit(&in_one_56(*n)).is_ok()).count();
        assert!(admitted <= 3, "{admitted} of 32 fresh /64s in the spent /56 were admitted");
        assert!(callers.admit(&in_56(1)).is_ok(), "another /56 of the /48 is served");
    }

    #[test]
    fn a_64_refused_its_own_rate_takes_nothing_from_its_48() {
        let callers = Callers::new(CallerLimits { requests_per_second: 1, burst: 2, ..limits(0) });
        let greedy = in_56(0);
        let admitted = (0..1000).filter(|_| callers.admit(&greedy).is_ok()).count();
        assert!(admitted <= 3, "{admitted}");
        // The 15 other /56s still have their 30 of the /48's 32.
        for n in 1..16 {
            assert!(callers.admit(&in_56(n)).is_ok() && callers.admit(&in_56(n)).is_ok(), "/56 number {n}");
        }
    }

    #[test]
    fn the_64s_of_one_48_hold_sixteen_times_what_one_may() {
        let callers = Callers::new(limits(2));
        let mut held = Vec::new();
        // Four /64s of one /56 fill its 8 calls: a fifth /64 there is refused.
        for n in 0..4u16 {
            let caller = callers.caller(anonymous_at(&format!("2001:db8:42:{n:x}::1")));
            held.extend([caller.try_call().unwrap(), caller.try_call().unwrap()]);
        }
        let fifth = callers.caller(anonymous_at("2001:db8:42:4::1"));
        assert!(fifth.try_call().is_none(), "the /56 holds 4 times a /64's calls");
        assert_eq!(fifth.holds(), (0, 0, 0), "the refused call was given back");
        // A /64 in each of 12 other /56s fills the /48's 32.
        for n in 1..13u16 {
            let caller = callers.caller(in_56(n));
            held.extend([caller.try_call().unwrap(), caller.try_call().unwrap()]);
        }
        let last = callers.caller(in_56(13));
        assert!(last.try_call().is_none(), "the /48 holds 16 times a /64's calls");
        let outside = callers.caller(anonymous_at("2001:db8:43::1"));
        let elsewhere = outside.try_call();
        assert!(elsewhere.is_some(), "another /48 is not touched");
        held.truncate(31);
        let room = last.try_call();
        assert!(room.is_some(), "a call ended in the /48 makes room");
        drop((room, elsewhere));
        // Every count is given back and forgotten when nothing holds it.
        drop((held, fifth, last, outside));
        assert!(lock(&callers.held).is_empty(), "{} holders left", lock(&callers.held).len());
    }

    #[test]
    fn an_address_counts_in_its_own_bucket_and_ipv6_in_two_wider_ones() {
        let buckets = |addr: &str| address_buckets(addr.parse().unwrap()).collect::<Vec<_>>();
        let ip = |addr: &str| addr.parse::<IpAddr>().unwrap();
        assert_eq!(buckets("192.0.2.7"), [((ip("192.0.2.7"), 32), 1)]);
        assert_eq!(buckets("::ffff:192.0.2.7"), [((ip("192.0.2.7"), 32), 1)]);
        assert_eq!(
            buckets("2001:db8:42:1234:5::6"),
            [((ip("2001:db8:42:1234::"), 64), 1), ((ip("2001:db8:42:1200::"), 56), 4), ((ip("2001:db8:42::"), 48), 16)]
        );
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
