//! Sessions kept where every instance of a server finds them (a [`SessionBackplane`]: Redis in
//! mirobody-server), so that any instance serves any request of a session and a session
//! outlives the instance that made it.
//!
//! What is shared is a session's summary (its [`Record`]: owner, revision, what the client
//! declared, log level, subscriptions), written whenever it changes, and [`Event`]s: a change
//! or an end, so that instances holding a copy update or drop it; a cancellation, which reaches
//! the call wherever it runs; and a client's answer to a question, which reaches the instance
//! whose call asked it (the same for a task's answers and its cancellation). What runs (calls,
//! tasks, streams, questions) stays in the instance it runs in.

use super::*;
use futures::stream::{BoxStream, StreamExt};
use mirobody_core::SessionBackplane;
use mirobody_core::backend::BackendResult;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

// The record's format: a record of another format is not read, so instances of two releases
// that disagree on it make fresh sessions rather than misread each other's.
const RECORD_FORMAT: u8 = 1;

/// What a session's record holds: enough to serve its requests anywhere.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Record {
    format: u8,
    owner: Option<String>,
    version: String,
    capabilities: u8,
    client_name: String,
    client_version: String,
    log_level: u8,
    subscriptions: Vec<String>,
}

impl Record {
    /// The record of an initialized session; `None` before `initialize`.
    pub(crate) fn of(session: &Session) -> Option<Record> {
        let version = session.protocol_version()?;
        let client = session.client().cloned().unwrap_or_default();
        let mut subscriptions: Vec<String> = lock(&session.subscriptions).iter().cloned().collect();
        subscriptions.sort_unstable();
        Some(Record {
            format: RECORD_FORMAT,
            owner: session.owner.clone(),
            version: version.to_owned(),
            capabilities: client.capabilities,
            client_name: client.name.into(),
            client_version: client.version.into(),
            log_level: session.log_level.load(Ordering::Relaxed),
            subscriptions,
        })
    }

    /// Whether the session belongs to `user_id` (None for anonymous).
    pub(crate) fn belongs_to(&self, user_id: Option<&str>) -> bool {
        self.owner.as_deref() == user_id
    }

    /// The session this record describes, under `id`, as this instance's copy; `None` for a
    /// record this release cannot serve (another format, a revision it does not know).
    pub(crate) fn to_session(&self, id: &str, versions: &[&'static str]) -> Option<Session> {
        if self.format != RECORD_FORMAT {
            return None;
        }
        let version = versions.iter().copied().find(|v| *v == self.version)?;
        let session = Session::new(Some(id.to_owned())).owned_by(self.owner.as_deref());
        let client = ClientInfo {
            capabilities: self.capabilities,
            name: cut(&self.client_name).into(),
            version: cut(&self.client_version).into(),
        };
        session.initialize(version, client);
        self.apply(&session);
        Some(session)
    }

    /// Brings a copy up to date: the log level and subscriptions another instance changed.
    /// (Revision and client are settled by `initialize`, before any record is written.)
    pub(crate) fn apply(&self, session: &Session) {
        session.log_level.store(self.log_level, Ordering::Relaxed);
        let subscriptions =
            self.subscriptions.iter().take(MAX_SUBSCRIPTIONS).filter(|uri| uri.len() <= MAX_SUBSCRIBED_URI_BYTES);
        *lock(&session.subscriptions) = subscriptions.cloned().collect();
    }
}

/// What instances tell each other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Event {
    /// A session changed: holders of a copy take the new record.
    Changed { session: String, record: Record },
    /// A session ended (DELETE): holders of a copy drop it, ending what runs in it.
    Ended { session: String },
    /// `notifications/cancelled` for a request of the session not running where it arrived.
    Cancel { session: String, request: Id },
    /// A client's answer to a question, for the instance whose call asked it.
    Answer { session: String, user: Option<String>, request: Id, outcome: Answer },
    /// A change announced in one instance (a list, a resource, a task's status), for the
    /// `subscriptions/listen` streams of the others.
    Change { change: Value },
    /// `tasks/update` for a task not running where it arrived, for the instance running it.
    TaskAnswers { task: String, owner: String, responses: serde_json::Map<String, Value> },
    /// `tasks/cancel` for a task not running where it arrived: the instance running it stops it.
    TaskCancel { task: String, owner: String },
}

/// A client's answer, as JSON-RPC gives it: a result or an error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Answer {
    Result(Value),
    Error(Value),
}

impl From<Result<Value, Value>> for Answer {
    fn from(outcome: Result<Value, Value>) -> Self {
        match outcome {
            Ok(result) => Answer::Result(result),
            Err(error) => Answer::Error(error),
        }
    }
}

impl From<Answer> for Result<Value, Value> {
    fn from(answer: Answer) -> Self {
        match answer {
            Answer::Result(result) => Ok(result),
            Answer::Error(error) => Err(error),
        }
    }
}

// An event on the wire, with the instance that sent it, so an instance skips its own.
#[derive(Serialize, Deserialize)]
struct Envelope {
    from: String,
    // Set on the changes whose writer waits to hear them back (see `SharedSessions::save`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    echo: Option<String>,
    #[serde(flatten)]
    event: Event,
}

/// How long a change's writer waits to hear its own announcement back before answering.
const ECHO_WAIT: Duration = Duration::from_secs(1);

// The changes of this instance whose announcement it waits to hear back, by nonce.
type Echoes = Arc<Mutex<HashMap<String, tokio::sync::oneshot::Sender<()>>>>;

/// This instance's side of the shared sessions: the backplane, its own name among the
/// instances, and how long a record lives unused.
pub struct SharedSessions {
    backplane: Arc<dyn SessionBackplane>,
    instance: String,
    ttl: Duration,
    echoes: Echoes,
}

impl std::fmt::Debug for SharedSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedSessions").field("ttl", &self.ttl).finish_non_exhaustive()
    }
}

impl SharedSessions {
    /// Sessions shared through `backplane`, each record kept `ttl` after its last use.
    pub fn new(backplane: Arc<dyn SessionBackplane>, ttl: Duration) -> Self {
        SharedSessions { backplane, instance: random_token(), ttl, echoes: Echoes::default() }
    }

    /// How long a record lives unused.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Writes the session's record and tells the other instances; nothing for a session not
    /// initialized.
    pub(crate) async fn save(&self, session: &Session) -> BackendResult<()> {
        let (Some(id), Some(record)) = (session.id(), Record::of(session)) else { return Ok(()) };
        let bytes = serde_json::to_vec(&record).map_err(encode_error)?;
        self.backplane.save(id, bytes, self.ttl).await?;
        // The change is answered once its announcement came back through the backplane, which
        // hands it to every instance at once: the client's next request, wherever it lands,
        // then finds the copy there changed (a copy that missed it is read again after the
        // backplane's connection comes back). Without a listener (or past the wait) it goes on.
        let nonce = random_token();
        let (heard, echo) = tokio::sync::oneshot::channel();
        lock(&self.echoes).insert(nonce.clone(), heard);
        let event = Event::Changed { session: id.to_owned(), record };
        let published = self.send(event, Some(nonce.clone())).await;
        if published.is_ok() && tokio::time::timeout(ECHO_WAIT, echo).await.is_err() {
            tracing::debug!("a session change was not heard back in time");
        }
        lock(&self.echoes).remove(&nonce);
        published
    }

    /// The record of session `id`, if one is kept (an unreadable one counts as none).
    pub(crate) async fn load(&self, id: &str) -> BackendResult<Option<Record>> {
        let bytes = self.backplane.load(id).await?;
        Ok(bytes.and_then(|bytes| serde_json::from_slice(&bytes).ok()))
    }

    /// Ends session `id` everywhere.
    pub(crate) async fn end(&self, id: &str) -> BackendResult<()> {
        self.backplane.remove(id).await?;
        self.publish(Event::Ended { session: id.to_owned() }).await
    }

    /// Keeps the records of `ids` another [`ttl`](Self::ttl).
    pub(crate) async fn renew(&self, ids: &[String]) -> BackendResult<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.backplane.renew(ids, self.ttl).await
    }

    /// Tells every other instance.
    pub(crate) async fn publish(&self, event: Event) -> BackendResult<()> {
        self.send(event, None).await
    }

    // Publishes `event` from this instance, asking to hear it back under `echo` when given.
    async fn send(&self, event: Event, echo: Option<String>) -> BackendResult<()> {
        let envelope = Envelope { from: self.instance.clone(), echo, event };
        self.backplane.publish(serde_json::to_vec(&envelope).map_err(encode_error)?).await
    }

    /// What the other instances say from now on (this one's own events and unreadable ones
    /// skipped); ends when the backplane's connection does.
    pub(crate) async fn events(&self) -> BackendResult<BoxStream<'static, Event>> {
        let (instance, echoes) = (self.instance.clone(), Arc::clone(&self.echoes));
        let events = self.backplane.events().await?;
        Ok(events
            .filter_map(move |bytes| {
                let envelope = serde_json::from_slice::<Envelope>(&bytes).ok();
                let event = envelope.and_then(|envelope| {
                    if envelope.from != instance {
                        return Some(envelope.event);
                    }
                    if let Some(heard) = envelope.echo.and_then(|nonce| lock(&echoes).remove(&nonce)) {
                        let _ = heard.send(());
                    }
                    None
                });
                std::future::ready(event)
            })
            .boxed())
    }
}

fn encode_error(e: serde_json::Error) -> mirobody_core::BackendError {
    mirobody_core::BackendError::new(format!("cannot encode a session record: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const VERSIONS: [&str; 2] = ["2025-11-25", "2025-06-18"];

    fn initialized(owner: Option<&str>) -> Session {
        let session = Session::new(Some("s1".into())).owned_by(owner);
        session.initialize("2025-06-18", ClientInfo::new(["elicitation", "roots"], "client", "1.2"));
        session
    }

    #[test]
    fn a_record_gives_back_the_session_it_was_made_from() {
        let session = initialized(Some("alice"));
        session.set_log_level(log_rank("warning").unwrap());
        session.subscribe("file:///a").unwrap();
        let record = Record::of(&session).unwrap();
        let bytes = serde_json::to_vec(&record).unwrap();
        let copy = serde_json::from_slice::<Record>(&bytes).unwrap().to_session("s1", &VERSIONS).unwrap();
        assert_eq!(copy.protocol_version(), Some("2025-06-18"));
        assert!(copy.belongs_to(Some("alice")) && !copy.belongs_to(None));
        assert_eq!(copy.client(), session.client());
        assert!(copy.client_supports("elicitation") && !copy.client_supports("sampling"));
        assert!(copy.wants_log("error") && !copy.wants_log("info"));
        assert!(copy.is_subscribed("file:///a"));
        assert_eq!(copy.conversation_id(), session.conversation_id(), "the same conversation anywhere");
    }

    #[test]
    fn records_this_release_cannot_serve_are_not_read() {
        assert!(Record::of(&Session::new(Some("s".into()))).is_none(), "not initialized: nothing to share");
        let mut record = Record::of(&initialized(None)).unwrap();
        assert!(record.to_session("s1", &["2025-11-25"]).is_none(), "a revision not served here");
        record.format = RECORD_FORMAT + 1;
        assert!(record.to_session("s1", &VERSIONS).is_none(), "another format");
    }

    #[test]
    fn a_record_is_held_to_the_bounds_a_session_keeps() {
        let mut record = Record::of(&initialized(None)).unwrap();
        record.subscriptions = (0..100).map(|n| format!("file:///{n}")).collect();
        record.subscriptions.push("x".repeat(MAX_SUBSCRIBED_URI_BYTES + 1));
        record.client_name = "é".repeat(500);
        let copy = record.to_session("s1", &VERSIONS).unwrap();
        assert_eq!(lock(&copy.subscriptions).len(), MAX_SUBSCRIPTIONS);
        assert!(copy.client().unwrap().name.len() <= MAX_CLIENT_INFO_BYTES);
    }

    #[test]
    fn events_travel_as_tagged_json() {
        let event = Event::Answer {
            session: "s1".into(),
            user: Some("alice".into()),
            request: Id::String("q".into()),
            outcome: Answer::Result(serde_json::json!({"action": "accept"})),
        };
        let wire = serde_json::to_value(Envelope { from: "i1".into(), echo: None, event: event.clone() }).unwrap();
        assert_eq!(wire["kind"], "answer");
        assert_eq!(wire["outcome"]["result"]["action"], "accept");
        let back: Envelope = serde_json::from_value(wire).unwrap();
        assert_eq!((back.from.as_str(), back.event), ("i1", event));

        let responses = serde_json::json!({"go": {"action": "decline"}}).as_object().cloned().unwrap();
        let event = Event::TaskAnswers { task: "t1".into(), owner: "user:alice".into(), responses };
        let wire = serde_json::to_value(Envelope { from: "i2".into(), echo: None, event: event.clone() }).unwrap();
        assert_eq!((wire["kind"].as_str(), wire["owner"].as_str()), (Some("task_answers"), Some("user:alice")));
        assert_eq!(serde_json::from_value::<Envelope>(wire).unwrap().event, event);
    }
}
