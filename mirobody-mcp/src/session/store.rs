//! The sessions of one endpoint: a bounded store, with room kept for signed-in callers, that
//! refuses a new session rather than evict an active one, and expires idle ones.

use super::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a session must have been unused before a new one may push it out of a full store.
pub const MIN_IDLE_TO_EVICT: Duration = Duration::from_secs(60);

/// Why a session could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionRefused {
    /// The store is full of sessions in use (for anonymous callers: their share of it).
    #[error("too many active sessions; try again later")]
    Full,
    /// The caller holds as many sessions as it may, each with a call running.
    #[error("too many sessions for this caller; end one (DELETE) or try again later")]
    CallerLimit,
}

/// Sessions of stateful HTTP, bounded in number and evicted when idle. Anonymous callers may
/// hold only part of the store, so they cannot crowd out signed-in ones; a session with a call
/// running (a tool waiting on a person's answer, say) is never pushed out for a new one.
pub struct SessionStore {
    sessions: Mutex<Sessions>,
    max_sessions: usize,
    max_anonymous: usize,
    idle_timeout: Duration,
}

// Whether a signed-in caller takes an anonymous session as theirs: only one with no call
// running, as a client's is when it signs in after a 401 (its refused call never ran), so no
// one can step into a call under way, or answer the questions it asks.
fn claims(session: &Session, user_id: Option<&str>) -> bool {
    let Some(user_id) = user_id else { return false };
    let claimed = session.owner().is_none() && !session.has_running_calls() && session.claim(user_id);
    if claimed {
        tracing::debug!("an anonymous session now belongs to its first signed-in caller");
    }
    claimed
}

#[derive(Default)]
pub(crate) struct Sessions {
    by_id: foldhash::HashMap<String, Arc<Session>>,
    anonymous: usize,
}

impl Sessions {
    fn insert(&mut self, id: String, session: Arc<Session>) {
        self.anonymous += usize::from(session.made_anonymous());
        self.by_id.insert(id, session);
    }

    fn remove(&mut self, id: &str) -> Option<Arc<Session>> {
        let gone = self.by_id.remove(id)?;
        self.anonymous -= usize::from(gone.made_anonymous());
        gone.close();
        Some(gone)
    }

    // The longest-idle session that `may_go` lets go and that has nothing running.
    fn evictable(&self, may_go: impl Fn(&Session, Duration) -> bool) -> Option<String> {
        let now = clock_ms();
        self.by_id
            .iter()
            .map(|(id, s)| (id, s, s.idle_at(now)))
            .filter(|(_, s, idle)| may_go(s, *idle) && !s.has_running_calls())
            .max_by_key(|(_, s, idle)| (*idle, std::cmp::Reverse(s.born)))
            .map(|(id, _, _)| id.clone())
    }
}

impl SessionStore {
    /// A store of at most `max_sessions`, dropping sessions idle longer than `idle_timeout`.
    /// Anonymous callers may hold half of it ([`SessionStore::with_anonymous_share`]).
    pub fn new(max_sessions: usize, idle_timeout: Duration) -> Self {
        let max_sessions = max_sessions.max(1);
        SessionStore { sessions: Mutex::default(), max_sessions, max_anonymous: max_sessions.div_ceil(2), idle_timeout }
    }

    /// Lets anonymous callers hold at most `max_anonymous` of the sessions; the rest are kept
    /// for signed-in ones.
    pub fn with_anonymous_share(mut self, max_anonymous: usize) -> Self {
        self.max_anonymous = max_anonymous.min(self.max_sessions);
        self
    }

    /// Creates a session for `caller` with a fresh random id (128 bits, visible ASCII).
    ///
    /// Room is made, in order, by dropping expired sessions; at the caller's own bound, by
    /// pushing out its own longest-idle session with nothing running; in a full store (or a
    /// full anonymous share), by pushing out the longest-idle session idle at least
    /// [`MIN_IDLE_TO_EVICT`] with nothing running, or for a signed-in caller any anonymous one
    /// with nothing running. A flood of new sessions cannot push out clients in use.
    pub fn create(&self, caller: crate::session::limits::Caller) -> Result<Arc<Session>, SessionRefused> {
        let owner = match caller.key() {
            crate::session::limits::CallerKey::User(id) => Some(id.to_string()),
            _ => None,
        };
        let session = Session::new(Some(random_token())).owned_by(owner.as_deref());
        self.insert(session, caller)
    }

    /// Keeps `session`, this instance's copy of a session another instance made (read from its
    /// shared record), for `caller`, making room as [`create`](Self::create) does. When a copy
    /// is kept already (another request adopted it meanwhile), that one is given back: one
    /// session has one copy per instance, where its calls register.
    pub(crate) fn adopt(
        &self,
        session: Session,
        caller: crate::session::limits::Caller,
    ) -> Result<Arc<Session>, SessionRefused> {
        self.insert(session, caller)
    }

    fn insert(
        &self,
        mut session: Session,
        caller: crate::session::limits::Caller,
    ) -> Result<Arc<Session>, SessionRefused> {
        let id = session.id.clone().unwrap_or_default();
        let signed_in = session.owner().is_some();
        let mut sessions = lock(&self.sessions);
        if let Some(kept) = sessions.by_id.get(&id) {
            return Ok(Arc::clone(kept));
        }
        let mut slot = caller.try_session();
        if slot.is_none() {
            let key = caller.key().clone();
            let own = sessions.evictable(|s, _| s.caller.as_ref().is_some_and(|c| *c.key() == key));
            let Some(own) = own else { return Err(SessionRefused::CallerLimit) };
            sessions.remove(&own);
            slot = caller.try_session();
        }
        let full = |sessions: &Sessions| {
            sessions.by_id.len() >= self.max_sessions || (!signed_in && sessions.anonymous >= self.max_anonymous)
        };
        if full(&sessions) {
            evict(&mut sessions, self.idle_timeout);
        }
        if full(&sessions) {
            let anonymous_share_full = !signed_in && sessions.anonymous >= self.max_anonymous;
            let victim = sessions.evictable(|s, idle| {
                let anonymous = s.owner().is_none();
                if anonymous_share_full {
                    anonymous && idle >= MIN_IDLE_TO_EVICT
                } else {
                    idle >= MIN_IDLE_TO_EVICT || (signed_in && anonymous)
                }
            });
            match victim {
                Some(victim) => {
                    sessions.remove(&victim);
                }
                None => return Err(SessionRefused::Full),
            }
        }
        session.caller = Some(caller);
        *session.slot.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner()) = slot;
        let session = Arc::new(session);
        sessions.insert(id, Arc::clone(&session));
        Ok(session)
    }

    /// The live session with this id, if it belongs to `user_id`, or is anonymous and becomes
    /// theirs now (see `Session::claim`).
    pub fn get(&self, id: &str, user_id: Option<&str>) -> Option<Arc<Session>> {
        let mut sessions = lock(&self.sessions);
        let session = sessions.by_id.get(id).filter(|s| s.belongs_to(user_id) || claims(s, user_id))?;
        if !session.renew(self.idle_timeout) {
            sessions.remove(id);
            return None;
        }
        Some(Arc::clone(session))
    }

    /// Ends a session of `user_id`; whether it existed.
    pub fn remove(&self, id: &str, user_id: Option<&str>) -> bool {
        let mut sessions = lock(&self.sessions);
        if !sessions.by_id.get(id).is_some_and(|s| s.belongs_to(user_id)) {
            return false;
        }
        sessions.remove(id).is_some()
    }

    /// The session with this id, whoever it belongs to, without renewing it: for what
    /// another instance says of it.
    pub(crate) fn peek(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.sessions).by_id.get(id).cloned()
    }

    /// Drops this instance's copy of a session (it ended elsewhere), ending what runs in it;
    /// whether there was one.
    pub(crate) fn forget(&self, id: &str) -> bool {
        lock(&self.sessions).remove(id).is_some()
    }

    /// Drops the copies with nothing running and no stream open: they are read again from
    /// their shared records when next used, after news of them may have been missed.
    pub(crate) fn forget_unused(&self) -> usize {
        let mut sessions = lock(&self.sessions);
        let unused: Vec<String> = sessions
            .by_id
            .iter()
            .filter(|(_, s)| !s.has_running_calls() && !s.has_open_stream())
            .map(|(id, _)| id.clone())
            .collect();
        for id in &unused {
            sessions.remove(id);
        }
        unused.len()
    }

    /// The ids of the sessions used here within `within`, and their owners (each once).
    pub(crate) fn used_within(&self, within: Duration) -> (Vec<String>, Vec<String>) {
        let now = clock_ms();
        let sessions = lock(&self.sessions);
        let used = sessions.by_id.iter().filter(|(_, s)| s.idle_at(now) <= within);
        let (mut ids, mut owners) = (Vec::new(), Vec::new());
        for (id, session) in used {
            ids.push(id.clone());
            owners.extend(session.owner().map(str::to_owned));
        }
        drop(sessions);
        owners.sort_unstable();
        owners.dedup();
        (ids, owners)
    }

    /// Ends every session of `user_id` here, with what runs in them; their ids.
    pub(crate) fn remove_all_of(&self, user_id: &str) -> Vec<String> {
        let mut sessions = lock(&self.sessions);
        let theirs: Vec<String> =
            sessions.by_id.iter().filter(|(_, s)| s.belongs_to(Some(user_id))).map(|(id, _)| id.clone()).collect();
        for id in &theirs {
            sessions.remove(id);
        }
        theirs
    }

    /// Drops every idle session; how many went.
    pub fn sweep(&self) -> usize {
        evict(&mut lock(&self.sessions), self.idle_timeout)
    }

    /// How many sessions are live.
    pub fn len(&self) -> usize {
        lock(&self.sessions).by_id.len()
    }

    /// How many of them belong to anonymous callers.
    pub fn anonymous(&self) -> usize {
        lock(&self.sessions).anonymous
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

// A session idle past the timeout goes even with a call running: its client has not been
// heard from for that long.
pub(crate) fn evict(sessions: &mut Sessions, idle_timeout: Duration) -> usize {
    let now = clock_ms();
    let expired: Vec<String> =
        sessions.by_id.iter().filter(|(_, s)| s.idle_at(now) > idle_timeout).map(|(id, _)| id.clone()).collect();
    for id in &expired {
        sessions.remove(id);
    }
    expired.len()
}
