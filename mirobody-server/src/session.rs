//! Per-client state: the negotiated version, what the client can do, its log level, its
//! subscriptions, the calls it has running, and the stream for unrelated server messages.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::future::AbortHandle;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::jsonrpc::Id;

/// MCP log levels, lowest first (RFC 5424 severities).
pub const LOG_LEVELS: [&str; 8] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

// Log level value meaning "the client did not ask for logs".
pub(crate) const LOGS_OFF: u8 = u8::MAX;

/// The rank of a level name in [`LOG_LEVELS`].
pub fn log_rank(level: &str) -> Option<u8> {
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

/// One client's session.
pub struct Session {
    id: Option<String>,
    conversation_id: Option<Arc<str>>,
    owner: Option<String>,
    closing: std::sync::atomic::AtomicBool,
    protocol_version: OnceLock<String>,
    client_capabilities: OnceLock<Value>,
    log_level: AtomicU8,
    subscriptions: Mutex<HashSet<String>>,
    running: Mutex<Running>,
    stream: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    // When the client was last seen, on `clock_ms`.
    last_seen_ms: AtomicU64,
}

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
            owner: None,
            closing: std::sync::atomic::AtomicBool::new(false),
            protocol_version: OnceLock::new(),
            client_capabilities: OnceLock::new(),
            log_level: AtomicU8::new(LOGS_OFF),
            subscriptions: Mutex::new(HashSet::new()),
            running: Mutex::default(),
            stream: Mutex::new(None),
            last_seen_ms: AtomicU64::new(clock_ms()),
        }
    }

    /// A session that belongs to one caller: requests from anyone else do not find it.
    pub fn owned_by(mut self, owner: Option<&str>) -> Self {
        self.owner = owner.map(str::to_owned);
        self
    }

    /// The session id.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The conversation id tools see for this session (`mcp-` and 24 hex digits): derived from
    /// the session id, which is a bearer of the session and so never handed to tools, models or
    /// the database. Derived once here rather than per request.
    pub fn conversation_id(&self) -> Option<&Arc<str>> {
        self.conversation_id.as_ref()
    }

    /// Whether `user_id` (None for anonymous) is the caller the session belongs to.
    pub fn belongs_to(&self, user_id: Option<&str>) -> bool {
        self.owner.as_deref() == user_id
    }

    /// Records what `initialize` settled; false if it was already settled.
    pub fn initialize(&self, version: &str, capabilities: Value) -> bool {
        let first = self.protocol_version.set(version.to_owned()).is_ok();
        if first {
            let _ = self.client_capabilities.set(capabilities);
        }
        first
    }

    /// Whether `initialize` has happened.
    pub fn is_initialized(&self) -> bool {
        self.protocol_version.get().is_some()
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> Option<&str> {
        self.protocol_version.get().map(String::as_str)
    }

    /// Whether the client declared a capability.
    pub fn client_supports(&self, capability: &str) -> bool {
        self.client_capabilities.get().and_then(|c| c.get(capability)).is_some_and(|v| !v.is_null())
    }

    /// Sets the lowest level of log messages the client wants.
    pub fn set_log_level(&self, rank: u8) {
        self.log_level.store(rank, Ordering::Relaxed);
    }

    /// Whether a message at `level` should be sent.
    pub fn wants_log(&self, level: &str) -> bool {
        let min = self.log_level.load(Ordering::Relaxed);
        min != LOGS_OFF && log_rank(level).is_some_and(|rank| rank >= min)
    }

    /// Subscribes to updates of a resource.
    pub fn subscribe(&self, uri: &str) {
        lock(&self.subscriptions).insert(uri.to_owned());
    }

    /// Unsubscribes.
    pub fn unsubscribe(&self, uri: &str) {
        lock(&self.subscriptions).remove(uri);
    }

    /// Whether the client subscribed to `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        lock(&self.subscriptions).contains(uri)
    }

    /// Registers a running request so `notifications/cancelled` can stop it; the request is
    /// forgotten when the returned guard drops, however the call ends (done, cancelled, or its
    /// connection dropped). A request whose cancellation came first (see
    /// [`Session::cancel_request`]) is aborted at once.
    pub fn start_request(self: &Arc<Self>, id: Id, handle: AbortHandle) -> RunningRequest {
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
    /// [`EARLY_CANCELS_KEPT`] such ids are kept.
    pub fn cancel_request(&self, id: &Id) -> bool {
        let mut running = lock(&self.running);
        if let Some(handle) = running.calls.remove(id) {
            handle.abort();
            return true;
        }
        if running.cancelled_early.len() == EARLY_CANCELS_KEPT {
            running.cancelled_early.pop_front();
        }
        running.cancelled_early.push_back(id.clone());
        false
    }

    /// Opens the stream for server messages unrelated to a request; `None` if one is open.
    pub fn open_stream(&self, capacity: usize) -> Option<mpsc::Receiver<Vec<u8>>> {
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

    /// Notes activity now.
    pub fn touch(&self) {
        self.last_seen_ms.store(clock_ms(), Ordering::Relaxed);
    }

    /// Records activity now, unless the session has been idle longer than `idle_timeout`;
    /// whether it was still live. One clock read where `idle_for` then `touch` take two.
    fn renew(&self, idle_timeout: Duration) -> bool {
        let now = clock_ms();
        if self.idle_at(now) > idle_timeout {
            return false;
        }
        self.last_seen_ms.store(now, Ordering::Relaxed);
        true
    }

    /// How long since the last activity.
    pub fn idle_for(&self) -> Duration {
        self.idle_at(clock_ms())
    }

    fn idle_at(&self, now_ms: u64) -> Duration {
        Duration::from_millis(now_ms.saturating_sub(self.last_seen_ms.load(Ordering::Relaxed)))
    }

    /// Marks the client as gone: questions to it fail at once from now on.
    pub fn set_closing(&self) {
        self.closing.store(true, Ordering::Relaxed);
    }

    /// Whether the client is gone.
    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Relaxed)
    }

    /// Cancels everything running (the session is ending).
    pub fn close(&self) {
        self.set_closing();
        for (_, handle) in lock(&self.running).calls.drain() {
            handle.abort();
        }
        lock(&self.stream).take();
    }
}

/// How many cancellations of requests not (yet) running a session remembers.
pub const EARLY_CANCELS_KEPT: usize = 16;

// The calls a session has running, and the cancellations that came before their call was.
#[derive(Default)]
struct Running {
    calls: foldhash::HashMap<Id, AbortHandle>,
    cancelled_early: VecDeque<Id>,
}

/// A request registered as running; dropping it forgets the request.
pub struct RunningRequest {
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
/// (`Instant::elapsed` took 56 more instructions a request, callgrind), at the resolution of
/// the kernel's tick (1 to 10 ms): far finer than an idle timeout needs.
#[cfg(target_os = "linux")]
fn clock_ms() -> u64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicCoarse);
    let (secs, nanos) = (u64::try_from(now.tv_sec).unwrap_or(0), u64::try_from(now.tv_nsec).unwrap_or(0));
    secs * 1000 + nanos / 1_000_000
}

/// Milliseconds on a monotonic clock: the clock sessions note their activity on.
#[cfg(not(target_os = "linux"))]
fn clock_ms() -> u64 {
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed().as_millis() as u64
}

// A poisoned lock only means another thread panicked while holding it; the data is still
// consistent for these simple maps, so keep serving.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How long a session must have been unused before a new one may push it out of a full store.
pub const MIN_IDLE_TO_EVICT: Duration = Duration::from_secs(60);

/// Sessions of stateful HTTP, bounded in number and evicted when idle.
pub struct SessionStore {
    sessions: Mutex<foldhash::HashMap<String, Arc<Session>>>,
    max_sessions: usize,
    idle_timeout: Duration,
}

impl SessionStore {
    /// A store of at most `max_sessions`, dropping sessions idle longer than `idle_timeout`.
    pub fn new(max_sessions: usize, idle_timeout: Duration) -> Self {
        SessionStore { sessions: Mutex::default(), max_sessions: max_sessions.max(1), idle_timeout }
    }

    /// Creates a session for `owner` with a fresh random id (128 bits, visible ASCII); `None`
    /// when the store is full of sessions active within the last [`MIN_IDLE_TO_EVICT`], so a
    /// flood of new sessions cannot push out clients in use.
    pub fn create(&self, owner: Option<&str>) -> Option<Arc<Session>> {
        let id = random_token();
        let session = Arc::new(Session::new(Some(id.clone())).owned_by(owner));
        session.touch();
        let mut sessions = lock(&self.sessions);
        if sessions.len() >= self.max_sessions {
            evict(&mut sessions, self.idle_timeout);
        }
        if sessions.len() >= self.max_sessions {
            let oldest = sessions.iter().max_by_key(|(_, s)| s.idle_for()).map(|(k, s)| (k.clone(), s.idle_for()));
            match oldest {
                Some((key, idle)) if idle >= MIN_IDLE_TO_EVICT => {
                    if let Some(gone) = sessions.remove(&key) {
                        gone.close();
                    }
                }
                _ => return None,
            }
        }
        sessions.insert(id, Arc::clone(&session));
        Some(session)
    }

    /// The live session with this id, if it belongs to `user_id`.
    pub fn get(&self, id: &str, user_id: Option<&str>) -> Option<Arc<Session>> {
        let mut sessions = lock(&self.sessions);
        let session = sessions.get(id).filter(|s| s.belongs_to(user_id))?;
        if !session.renew(self.idle_timeout) {
            if let Some(gone) = sessions.remove(id) {
                gone.close();
            }
            return None;
        }
        Some(Arc::clone(session))
    }

    /// Ends a session of `user_id`; whether it existed.
    pub fn remove(&self, id: &str, user_id: Option<&str>) -> bool {
        let mut sessions = lock(&self.sessions);
        if !sessions.get(id).is_some_and(|s| s.belongs_to(user_id)) {
            return false;
        }
        sessions.remove(id).inspect(|s| s.close()).is_some()
    }

    /// Drops every idle session; how many went.
    pub fn sweep(&self) -> usize {
        evict(&mut lock(&self.sessions), self.idle_timeout)
    }

    /// How many sessions are live.
    pub fn len(&self) -> usize {
        lock(&self.sessions).len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn evict(sessions: &mut foldhash::HashMap<String, Arc<Session>>, idle_timeout: Duration) -> usize {
    let before = sessions.len();
    sessions.retain(|_, s| {
        let keep = s.idle_for() <= idle_timeout;
        if !keep {
            s.close();
        }
        keep
    });
    before - sessions.len()
}

/// A random token of 128 bits as 32 hex digits, from the OS-seeded CSPRNG.
pub fn random_token() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let store = SessionStore::new(2, Duration::from_secs(3600));
        let a = store.create(None).unwrap();
        let b = store.create(None).unwrap();
        assert!(store.create(None).is_none(), "both sessions are in use");
        assert_eq!(store.len(), 2);
        assert!(store.get(a.id().unwrap(), None).is_some());
        assert!(store.get(b.id().unwrap(), None).is_some());
    }

    #[test]
    fn sessions_belong_to_their_caller() {
        let store = SessionStore::new(10, Duration::from_secs(3600));
        let mine = store.create(Some("u1")).unwrap();
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
        let a = store.create(None).unwrap();
        std::thread::sleep(Duration::from_millis(10));
        assert!(store.get(a.id().unwrap(), None).is_none());
        store.create(None);
        std::thread::sleep(Duration::from_millis(10));
        assert_eq!(store.sweep(), 1);
        assert!(store.is_empty());
    }

    #[test]
    fn each_use_renews_a_session() {
        let store = SessionStore::new(10, Duration::from_millis(400));
        let a = store.create(None).unwrap();
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
