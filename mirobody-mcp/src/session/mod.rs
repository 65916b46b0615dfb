//! Per-client state: the negotiated version, what the client can do, its log level, its
//! subscriptions, the calls it has running, and the stream for unrelated server messages.

use crate::jsonrpc::Id;
use futures::future::AbortHandle;
use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::mpsc;

mod backplane;
pub mod limits;
mod seal;
mod shared;
mod store;

pub use backplane::MemoryBackplane;
pub use seal::RefusedEvents;
pub use shared::SharedSessions;
pub(crate) use shared::{Answer, Delivery, Event, Heard, MAX_KEPT_BYTES, fits_kept};
pub use store::{MIN_IDLE_TO_EVICT, SessionRefused, SessionStore};

/// MCP log levels, lowest first (RFC 5424 severities).
pub(crate) const LOG_LEVELS: [&str; 8] =
    ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

// Log level value meaning "the client did not ask for logs".
pub(crate) const LOGS_OFF: u8 = u8::MAX;

/// The rank of a level name in [`LOG_LEVELS`].
pub(crate) fn log_rank(level: &str) -> Option<u8> {
    LOG_LEVELS.iter().position(|l| *l == level).map(|i| i as u8)
}

// A one-way function of the session id, so the conversation id names the session without
// letting anyone who sees it act as the session.
fn conversation_id_for(session_id: &str) -> String {
    use sha2::Digest;
    use std::fmt::Write;
    let digest = sha2::Sha256::digest(session_id.as_bytes());
    let mut id = String::with_capacity(4 + 24);
    id.push_str("mcp-");
    for byte in &digest[..12] {
        let _ = write!(id, "{byte:02x}");
    }
    id
}

/// The client capabilities a server acts on, of all a client may declare in `initialize`.
pub(crate) const KNOWN_CAPABILITIES: [&str; 4] = ["roots", "sampling", "elicitation", "tasks"];

/// The longest client name or version kept from `initialize`, in bytes (cut on a character
/// boundary).
pub(crate) const MAX_CLIENT_INFO_BYTES: usize = 64;

/// How many resources one session may subscribe to.
pub(crate) const MAX_SUBSCRIPTIONS: usize = 16;

/// The longest resource URI a session may subscribe to, in bytes.
pub(crate) const MAX_SUBSCRIBED_URI_BYTES: usize = 512;

/// The longest request id a session remembers a cancellation of before its request runs, in
/// bytes of JSON text; a longer one is not remembered (no client sends one).
pub(crate) const MAX_REMEMBERED_ID_BYTES: usize = 128;

/// What a session keeps of the client's `initialize`: which of [`KNOWN_CAPABILITIES`] it
/// declared, and its name and version cut to [`MAX_CLIENT_INFO_BYTES`]. Never the raw value,
/// which a client may make as large as a request body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) struct ClientInfo {
    capabilities: u8,
    /// The client's name, as it said.
    pub name: Box<str>,
    /// The client's version, as it said.
    pub version: Box<str>,
}

impl ClientInfo {
    /// A client that declared `capabilities` (names from [`KNOWN_CAPABILITIES`]; others are
    /// ignored), with its name and version cut to [`MAX_CLIENT_INFO_BYTES`].
    pub(crate) fn new<'a>(capabilities: impl IntoIterator<Item = &'a str>, name: &str, version: &str) -> Self {
        let capabilities = capabilities
            .into_iter()
            .filter_map(|c| KNOWN_CAPABILITIES.iter().position(|known| *known == c))
            .fold(0u8, |bits, at| bits | 1 << at);
        ClientInfo { capabilities, name: cut(name).into(), version: cut(version).into() }
    }

    /// Whether the client declared `capability`.
    pub(crate) fn supports(&self, capability: &str) -> bool {
        KNOWN_CAPABILITIES
            .iter()
            .position(|known| *known == capability)
            .is_some_and(|at| self.capabilities & 1 << at != 0)
    }
}

fn cut(text: &str) -> &str {
    if text.len() <= MAX_CLIENT_INFO_BYTES {
        return text;
    }
    let mut end = MAX_CLIENT_INFO_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Why a subscription was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum SubscribeError {
    /// The session has [`MAX_SUBSCRIPTIONS`] already.
    #[error("too many subscriptions: a session may subscribe to at most {MAX_SUBSCRIPTIONS} resources")]
    TooMany,
    /// The URI is longer than [`MAX_SUBSCRIBED_URI_BYTES`].
    #[error("the resource URI is too long to subscribe to: the limit is {MAX_SUBSCRIBED_URI_BYTES} bytes")]
    UriTooLong,
}

/// One client's session.
pub struct Session {
    id: Option<String>,
    conversation_id: Option<Arc<str>>,
    // Set at creation for a signed-in caller; an anonymous session's is set once, by its first
    // signed-in caller (`claim`).
    owner: OnceLock<String>,
    // Whether it was made anonymous: what the store's anonymous share counted it as.
    made_anonymous: bool,
    // Claimed here and not yet written to the shared record (shared sessions only).
    claim_unsaved: std::sync::atomic::AtomicBool,
    // In its owner's index of sessions (shared sessions only): added once, when its record is
    // first written with an owner.
    owner_indexed: std::sync::atomic::AtomicBool,
    caller: Option<crate::session::limits::Caller>,
    // The caller's count of sessions, given back when the session goes.
    slot: Mutex<Option<crate::session::limits::Slot>>,
    closing: std::sync::atomic::AtomicBool,
    protocol_version: OnceLock<&'static str>,
    client: OnceLock<ClientInfo>,
    log_level: AtomicU8,
    subscriptions: Mutex<HashSet<String>>,
    // How many times the log level or the subscriptions changed: a transport that shares
    // sessions writes the record again when a request changed it.
    changes: AtomicU64,
    running: Mutex<Running>,
    stream: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    // When the client was last seen, on `clock_ms`.
    last_seen_ms: AtomicU64,
    // The order sessions were made in: of two idle equally long (the clock is coarse), the
    // older goes first.
    born: u64,
}

static SESSIONS_MADE: AtomicU64 = AtomicU64::new(0);

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The id is a bearer of the session: never printed.
        f.debug_struct("Session").field("protocol_version", &self.protocol_version.get()).finish()
    }
}

impl Session {
    /// A session with an id (stateful HTTP), or without one (stdio, stateless HTTP).
    pub fn new(id: Option<String>) -> Self {
        Session {
            conversation_id: id.as_deref().map(|id| conversation_id_for(id).into()),
            id,
            owner: OnceLock::new(),
            made_anonymous: true,
            claim_unsaved: std::sync::atomic::AtomicBool::new(false),
            owner_indexed: std::sync::atomic::AtomicBool::new(false),
            caller: None,
            slot: Mutex::new(None),
            closing: std::sync::atomic::AtomicBool::new(false),
            protocol_version: OnceLock::new(),
            client: OnceLock::new(),
            log_level: AtomicU8::new(LOGS_OFF),
            subscriptions: Mutex::new(HashSet::new()),
            changes: AtomicU64::new(0),
            running: Mutex::default(),
            stream: Mutex::new(None),
            last_seen_ms: AtomicU64::new(clock_ms()),
            born: SESSIONS_MADE.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// A session that belongs to one caller: requests from anyone else do not find it.
    pub(crate) fn owned_by(mut self, owner: Option<&str>) -> Self {
        self.owner = OnceLock::new();
        if let Some(owner) = owner {
            let _ = self.owner.set(owner.to_owned());
        }
        self.made_anonymous = owner.is_none();
        self
    }

    /// The caller the session belongs to; `None` while it is anonymous.
    pub(crate) fn owner(&self) -> Option<&str> {
        self.owner.get().map(String::as_str)
    }

    /// Whether the session was made by an anonymous caller (claimed since or not).
    pub(crate) fn made_anonymous(&self) -> bool {
        self.made_anonymous
    }

    /// Makes an anonymous session `user_id`'s: a client that connected without credentials
    /// and signed in when a call needed it (a 401, then OAuth) goes on in its session. Once
    /// claimed, it is that caller's alone. Whether it now belongs to `user_id`. The store
    /// claims only a session with no call running.
    pub(crate) fn claim(&self, user_id: &str) -> bool {
        if self.owner.set(user_id.to_owned()).is_ok() {
            self.claim_unsaved.store(true, Ordering::Release);
            return true;
        }
        self.owner() == Some(user_id)
    }

    /// Whether the session was claimed since this was last asked: a transport that shares
    /// sessions then writes its record, so every instance knows its owner.
    pub(crate) fn take_unsaved_claim(&self) -> bool {
        self.claim_unsaved.swap(false, Ordering::AcqRel)
    }

    /// Whether the session is in its owner's index of shared sessions (see `SharedSessions`).
    pub(crate) fn owner_indexed(&self) -> bool {
        self.owner_indexed.load(Ordering::Acquire)
    }

    /// Notes that the session is in its owner's index: added there, or read from a record
    /// whose writer added it.
    pub(crate) fn set_owner_indexed(&self) {
        self.owner_indexed.store(true, Ordering::Release);
    }

    /// The session id.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The conversation id tools see for this session (`mcp-` and 24 hex digits): derived from
    /// the session id, which is a bearer of the session and so never handed to tools, models or
    /// the database. Derived once here rather than per request.
    pub(crate) fn conversation_id(&self) -> Option<&Arc<str>> {
        self.conversation_id.as_ref()
    }

    /// Whether `user_id` (None for anonymous) is the caller the session belongs to.
    pub(crate) fn belongs_to(&self, user_id: Option<&str>) -> bool {
        self.owner() == user_id
    }

    /// The caller whose calls and streams on this session count against its limits.
    pub(crate) fn caller(&self) -> Option<&crate::session::limits::Caller> {
        self.caller.as_ref()
    }

    /// Records what `initialize` settled; false if it was already settled.
    pub(crate) fn initialize(&self, version: &'static str, client: ClientInfo) -> bool {
        let first = self.protocol_version.set(version).is_ok();
        if first {
            let _ = self.client.set(client);
        }
        first
    }

    /// What the client said of itself in `initialize`.
    pub(crate) fn client(&self) -> Option<&ClientInfo> {
        self.client.get()
    }

    /// Whether `initialize` has happened.
    pub fn is_initialized(&self) -> bool {
        self.protocol_version.get().is_some()
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> Option<&str> {
        self.protocol_version.get().copied()
    }

    /// Whether the client declared a capability.
    pub fn client_supports(&self, capability: &str) -> bool {
        self.client.get().is_some_and(|c| c.supports(capability))
    }

    /// Sets the lowest level of log messages the client wants.
    pub(crate) fn set_log_level(&self, rank: u8) {
        self.log_level.store(rank, Ordering::Relaxed);
        self.changes.fetch_add(1, Ordering::Relaxed);
    }

    /// How many times the log level or the subscriptions changed: compare two readings to
    /// learn whether a request changed what a shared session's record holds.
    pub(crate) fn changes(&self) -> u64 {
        self.changes.load(Ordering::Relaxed)
    }

    /// Whether a message at `level` should be sent.
    pub(crate) fn wants_log(&self, level: &str) -> bool {
        let min = self.log_level.load(Ordering::Relaxed);
        min != LOGS_OFF && log_rank(level).is_some_and(|rank| rank >= min)
    }

    /// Subscribes to updates of a resource, within [`MAX_SUBSCRIPTIONS`] and
    /// [`MAX_SUBSCRIBED_URI_BYTES`]. Subscribing again to the same URI is not another one.
    pub(crate) fn subscribe(&self, uri: &str) -> Result<(), SubscribeError> {
        if uri.len() > MAX_SUBSCRIBED_URI_BYTES {
            return Err(SubscribeError::UriTooLong);
        }
        let mut subscriptions = lock(&self.subscriptions);
        if subscriptions.len() >= MAX_SUBSCRIPTIONS && !subscriptions.contains(uri) {
            return Err(SubscribeError::TooMany);
        }
        if subscriptions.insert(uri.to_owned()) {
            self.changes.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Unsubscribes.
    pub(crate) fn unsubscribe(&self, uri: &str) {
        if lock(&self.subscriptions).remove(uri) {
            self.changes.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Whether the client subscribed to `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        lock(&self.subscriptions).contains(uri)
    }

    /// Registers a running request so `notifications/cancelled` can stop it; the request is
    /// forgotten when the returned guard drops, however the call ends (done, cancelled, or its
    /// connection dropped). A request whose cancellation came first (see
    /// [`Session::cancel_request`]) is aborted at once.
    pub(crate) fn start_request(self: &Arc<Self>, id: Id, handle: AbortHandle) -> RunningRequest {
        let mut running = lock(&self.running);
        if let Some(at) = running.cancelled_early.iter().position(|early| *early == id) {
            running.cancelled_early.remove(at);
            handle.abort();
        }
        running.calls.insert(id.clone(), handle);
        RunningRequest { session: Arc::clone(self), id }
    }

    /// Cancels a running request; whether it was running. A request not registered yet is
    /// cancelled when it is: a transport registers a call only once it did not finish in its
    /// first poll, and a cancellation read on another thread meanwhile must not be lost. MCP
    /// never reuses a request id within a session, so remembering the id is safe; the last
    /// [`EARLY_CANCELS_KEPT`] such ids of at most [`MAX_REMEMBERED_ID_BYTES`] are kept.
    pub(crate) fn cancel_request(&self, id: &Id) -> bool {
        let mut running = lock(&self.running);
        if let Some(handle) = running.calls.remove(id) {
            handle.abort();
            return true;
        }
        if let Id::String(text) = id
            && text.len() > MAX_REMEMBERED_ID_BYTES
        {
            return false;
        }
        if running.cancelled_early.len() == EARLY_CANCELS_KEPT {
            running.cancelled_early.pop_front();
        }
        running.cancelled_early.push_back(id.clone());
        false
    }

    /// Opens the stream for server messages unrelated to a request; `None` if one is open.
    pub(crate) fn open_stream(&self, capacity: usize) -> Option<mpsc::Receiver<Vec<u8>>> {
        let mut stream = lock(&self.stream);
        if stream.as_ref().is_some_and(|tx| !tx.is_closed()) {
            return None;
        }
        let (tx, rx) = mpsc::channel(capacity);
        *stream = Some(tx);
        Some(rx)
    }

    /// Sends a message on the unrelated-messages stream, if open; whether it was sent.
    pub fn send_unrelated(&self, message: Vec<u8>) -> bool {
        lock(&self.stream).as_ref().is_some_and(|tx| tx.try_send(message).is_ok())
    }

    /// Records activity now, unless the session has been idle longer than `idle_timeout`;
    /// whether it was still live. One clock read for both.
    fn renew(&self, idle_timeout: Duration) -> bool {
        let now = clock_ms();
        if self.idle_at(now) > idle_timeout {
            return false;
        }
        self.last_seen_ms.store(now, Ordering::Relaxed);
        true
    }

    fn idle_at(&self, now_ms: u64) -> Duration {
        Duration::from_millis(now_ms.saturating_sub(self.last_seen_ms.load(Ordering::Relaxed)))
    }

    /// Marks the client as gone: questions to it fail at once from now on.
    pub(crate) fn set_closing(&self) {
        self.closing.store(true, Ordering::Relaxed);
    }

    /// Whether the client is gone.
    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Relaxed)
    }

    /// Whether a call of this session is running (registered after its first poll).
    pub fn has_running_calls(&self) -> bool {
        !lock(&self.running).calls.is_empty()
    }

    /// Whether the session's stream for unrelated messages is open.
    pub fn has_open_stream(&self) -> bool {
        lock(&self.stream).as_ref().is_some_and(|tx| !tx.is_closed())
    }

    /// Cancels everything running (the session is ending), and gives its caller's session
    /// slot back.
    pub(crate) fn close(&self) {
        self.set_closing();
        for (_, handle) in lock(&self.running).calls.drain() {
            handle.abort();
        }
        lock(&self.stream).take();
        lock(&self.slot).take();
    }
}

/// How many cancellations of requests not (yet) running a session remembers.
pub(crate) const EARLY_CANCELS_KEPT: usize = 16;

// The calls a session has running, and the cancellations that came before their call was.
#[derive(Default)]
struct Running {
    calls: foldhash::HashMap<Id, AbortHandle>,
    cancelled_early: VecDeque<Id>,
}

/// A request registered as running; dropping it forgets the request.
pub(crate) struct RunningRequest {
    session: Arc<Session>,
    id: Id,
}

impl Drop for RunningRequest {
    fn drop(&mut self) {
        lock(&self.session.running).calls.remove(&self.id);
    }
}

/// Milliseconds on a monotonic clock: the clock sessions note their activity on, read once
/// per request. On Linux the coarse clock, which the vDSO reads without the time-stamp counter
/// (cheaper than `Instant::elapsed`), at the resolution of the kernel's tick (1 to 10 ms): far
/// finer than an idle timeout needs.
#[cfg(target_os = "linux")]
pub(crate) fn clock_ms() -> u64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicCoarse);
    let (secs, nanos) = (u64::try_from(now.tv_sec).unwrap_or(0), u64::try_from(now.tv_nsec).unwrap_or(0));
    secs * 1000 + nanos / 1_000_000
}

/// Milliseconds on a monotonic clock: the clock sessions note their activity on.
#[cfg(not(target_os = "linux"))]
pub(crate) fn clock_ms() -> u64 {
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed().as_millis() as u64
}

// A poisoned lock only means another thread panicked while holding it; the data is still
// consistent for these simple maps, so keep serving.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A random token of 128 bits as 32 hex digits, from the OS-seeded CSPRNG.
pub(crate) fn random_token() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::limits::{CallerKey, CallerLimits, Callers};

    fn callers(max_per_caller: usize) -> Arc<Callers> {
        Callers::new(CallerLimits {
            max_sessions: max_per_caller,
            max_calls: 0,
            max_streams: 0,
            requests_per_second: 0,
            burst: 0,
        })
    }

    fn anonymous(callers: &Arc<Callers>, n: u8) -> crate::session::limits::Caller {
        callers.caller(CallerKey::Address(std::net::IpAddr::from([192, 0, 2, n])))
    }

    fn user(callers: &Arc<Callers>, id: &str) -> crate::session::limits::Caller {
        callers.caller(CallerKey::User(id.into()))
    }

    // A session with a call registered as running, until the returned guard drops.
    fn busy(session: &Arc<Session>) -> RunningRequest {
        session.start_request(Id::Number(1.into()), AbortHandle::new_pair().0)
    }

    fn aborted_when(start: impl FnOnce(&Arc<Session>, Id, AbortHandle) -> RunningRequest) -> bool {
        let session = Arc::new(Session::new(None));
        let (handle, registration) = AbortHandle::new_pair();
        let _running = start(&session, Id::Number(7.into()), handle);
        registration.handle().is_aborted()
    }

    #[test]
    fn a_request_cancelled_before_it_registers_is_aborted_as_it_does() {
        assert!(!aborted_when(|session, id, handle| session.start_request(id, handle)));
        assert!(aborted_when(|session, id, handle| {
            assert!(!session.cancel_request(&id), "not running yet");
            session.start_request(id, handle)
        }));
        // Another id's cancellation does not touch it, and a remembered one is used once.
        assert!(!aborted_when(|session, id, handle| {
            session.cancel_request(&Id::String("7".into()));
            session.start_request(id, handle)
        }));
        let session = Arc::new(Session::new(None));
        session.cancel_request(&Id::Number(7.into()));
        let (first, _) = AbortHandle::new_pair();
        drop(session.start_request(Id::Number(7.into()), first));
        assert!(lock(&session.running).cancelled_early.is_empty());
    }

    #[test]
    fn a_running_request_is_aborted_and_forgotten_when_cancelled() {
        let session = Arc::new(Session::new(None));
        let (handle, registration) = AbortHandle::new_pair();
        let running = session.start_request(Id::Number(1.into()), handle);
        assert!(session.cancel_request(&Id::Number(1.into())));
        assert!(registration.handle().is_aborted());
        assert!(!session.cancel_request(&Id::Number(1.into())), "forgotten once cancelled");
        drop(running);
        assert!(lock(&session.running).calls.is_empty());
    }

    #[test]
    fn only_the_latest_early_cancellations_are_kept() {
        let session = Session::new(None);
        for n in 0..EARLY_CANCELS_KEPT as u64 + 5 {
            session.cancel_request(&Id::Number(n.into()));
        }
        let early = &lock(&session.running).cancelled_early;
        assert_eq!(early.len(), EARLY_CANCELS_KEPT);
        assert_eq!(early.front(), Some(&Id::Number(5.into())), "the oldest went first");
    }

    #[test]
    fn a_full_store_refuses_new_sessions_rather_than_evict_active_ones() {
        let callers = callers(0);
        let store = SessionStore::new(2, Duration::from_secs(3600)).with_anonymous_share(2);
        let a = store.create(anonymous(&callers, 1)).unwrap();
        let b = store.create(anonymous(&callers, 2)).unwrap();
        assert_eq!(store.create(anonymous(&callers, 3)).unwrap_err(), SessionRefused::Full, "both are in use");
        assert_eq!(store.len(), 2);
        assert!(store.get(a.id().unwrap(), None).is_some());
        assert!(store.get(b.id().unwrap(), None).is_some());
    }

    #[test]
    fn sessions_belong_to_their_caller() {
        let store = SessionStore::new(10, Duration::from_secs(3600));
        let mine = store.create(user(&callers(0), "u1")).unwrap();
        let id = mine.id().unwrap();
        assert!(store.get(id, Some("u2")).is_none());
        assert!(store.get(id, None).is_none());
        assert!(!store.remove(id, Some("u2")));
        assert!(store.get(id, Some("u1")).is_some());
        assert!(store.remove(id, Some("u1")));
    }

    #[test]
    fn idle_sessions_expire() {
        let store = SessionStore::new(10, Duration::from_millis(1));
        let callers = callers(0);
        let a = store.create(anonymous(&callers, 1)).unwrap();
        std::thread::sleep(Duration::from_millis(10));
        assert!(store.get(a.id().unwrap(), None).is_none());
        store.create(anonymous(&callers, 1)).unwrap();
        std::thread::sleep(Duration::from_millis(10));
        assert_eq!(store.sweep(), 1);
        assert!(store.is_empty());
    }

    #[test]
    fn each_use_renews_a_session() {
        let store = SessionStore::new(10, Duration::from_millis(400));
        let a = store.create(anonymous(&callers(0), 1)).unwrap();
        let id = a.id().unwrap();
        // Used every 100 ms for twice the idle timeout: still live.
        for _ in 0..8 {
            std::thread::sleep(Duration::from_millis(100));
            assert!(store.get(id, None).is_some());
        }
        std::thread::sleep(Duration::from_millis(600));
        assert!(store.get(id, None).is_none(), "idle longer than the timeout");
        assert!(store.is_empty(), "an expired session found by `get` is dropped");
    }

    #[test]
    fn anonymous_callers_hold_only_their_share_and_signed_in_ones_push_them_out() {
        let callers = callers(0);
        let store = SessionStore::new(4, Duration::from_secs(3600)).with_anonymous_share(2);
        let a = store.create(anonymous(&callers, 1)).unwrap();
        let b = store.create(anonymous(&callers, 2)).unwrap();
        assert_eq!(store.create(anonymous(&callers, 3)).unwrap_err(), SessionRefused::Full, "the share is used");
        let _u = store.create(user(&callers, "u1")).unwrap();
        let _v = store.create(user(&callers, "u2")).unwrap();
        assert_eq!(store.len(), 4);
        // Full: a signed-in caller pushes out an anonymous session with nothing running, even
        // one used a moment ago; never one with a call running.
        let _busy = busy(&a);
        let w = store.create(user(&callers, "u3")).unwrap();
        assert_eq!((store.len(), store.anonymous()), (4, 1));
        assert!(store.get(a.id().unwrap(), None).is_some(), "the busy session stays");
        assert!(store.get(b.id().unwrap(), None).is_none(), "the idle one went");
        assert!(b.is_closing());
        // Now only signed-in sessions and a busy anonymous one: nothing may go.
        assert_eq!(store.create(user(&callers, "u4")).unwrap_err(), SessionRefused::Full);
        assert!(store.get(w.id().unwrap(), Some("u3")).is_some());
    }

    #[test]
    fn a_caller_at_its_bound_replaces_its_own_idle_session() {
        let callers = callers(2);
        let store = SessionStore::new(100, Duration::from_secs(3600));
        let first = store.create(user(&callers, "u1")).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let second = store.create(user(&callers, "u1")).unwrap();
        let other = store.create(user(&callers, "u2")).unwrap();
        // The third of u1's replaces its longest-idle one, and nobody else's.
        let third = store.create(user(&callers, "u1")).unwrap();
        assert!(store.get(first.id().unwrap(), Some("u1")).is_none());
        assert!(store.get(second.id().unwrap(), Some("u1")).is_some());
        assert!(store.get(other.id().unwrap(), Some("u2")).is_some());
        assert_eq!(user(&callers, "u1").holds().0, 2, "the slot of the one that went was given back");
        // With both of its sessions busy, a caller at its bound is refused.
        let (_one, _two) = (busy(&second), busy(&third));
        assert_eq!(store.create(user(&callers, "u1")).unwrap_err(), SessionRefused::CallerLimit);
        assert!(store.remove(second.id().unwrap(), Some("u1")));
        assert_eq!(user(&callers, "u1").holds().0, 1);
    }

    #[test]
    fn a_session_keeps_a_bounded_summary_of_its_client() {
        let long = "é".repeat(1000);
        let info = ClientInfo::new(["sampling", "elicitation", "made-up", "sampling"], &long, "1.0");
        assert!(info.supports("sampling") && info.supports("elicitation"));
        assert!(!info.supports("roots") && !info.supports("made-up"));
        assert!(info.name.len() <= MAX_CLIENT_INFO_BYTES && info.name.len() >= MAX_CLIENT_INFO_BYTES - 1);
        assert!(long.starts_with(&*info.name));
        let session = Session::new(None);
        assert!(session.initialize("2025-11-25", info.clone()));
        assert!(!session.initialize("2025-06-18", ClientInfo::default()), "settled once");
        assert!(session.client_supports("sampling") && !session.client_supports("roots"));
        assert_eq!(session.client(), Some(&info));
    }

    #[test]
    fn subscriptions_are_bounded_in_number_and_size() {
        let session = Session::new(None);
        for n in 0..MAX_SUBSCRIPTIONS {
            session.subscribe(&format!("file:///{n}")).unwrap();
        }
        assert_eq!(session.subscribe("file:///more"), Err(SubscribeError::TooMany));
        assert_eq!(session.subscribe("file:///0"), Ok(()), "the same one again is not another");
        session.unsubscribe("file:///0");
        assert_eq!(session.subscribe("file:///more"), Ok(()));
        let long = format!("file:///{}", "x".repeat(MAX_SUBSCRIBED_URI_BYTES));
        assert_eq!(session.subscribe(&long), Err(SubscribeError::UriTooLong));
        assert!(!session.is_subscribed(&long));
    }

    #[test]
    fn long_request_ids_are_not_remembered_as_early_cancellations() {
        let session = Session::new(None);
        session.cancel_request(&Id::String("x".repeat(MAX_REMEMBERED_ID_BYTES + 1)));
        assert!(lock(&session.running).cancelled_early.is_empty());
        session.cancel_request(&Id::String("x".repeat(MAX_REMEMBERED_ID_BYTES)));
        assert_eq!(lock(&session.running).cancelled_early.len(), 1);
    }

    #[test]
    fn session_ids_are_visible_ascii_and_unique() {
        let a = random_token();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|b| (0x21..=0x7e).contains(&b)));
        assert_ne!(a, random_token());
    }

    #[test]
    fn logs_are_off_until_the_client_sets_a_level() {
        let s = Session::new(None);
        assert!(!s.wants_log("error"));
        s.set_log_level(log_rank("warning").unwrap());
        assert!(s.wants_log("error"));
        assert!(!s.wants_log("info"));
    }
}
