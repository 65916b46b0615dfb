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
//!
//! Nothing heard is believed unless signed with the key all instances share, and nothing is
//! readable to whoever reads the backplane without it (`seal.rs`: every envelope and record
//! sealed and signed). Beyond that, nothing a person or a tool said travels at all: a client's
//! answers are kept sealed for a minute under a random reference that alone goes out, and a
//! task's status change carries its id, owner and status, the receiver reading the task from
//! the task store. Each owner's sessions are indexed beside their records (`owners.rs`), so
//! that all of a person's can be ended at once.

use crate::metrics::BackplaneMetrics;

mod owners;

use super::seal::{BackplaneKeys, Guard, Refusal, RefusedEvents, now_ms};
use super::*;
use crate::protocol::TracePropagation;
use futures::stream::{BoxStream, StreamExt};
use mirobody_core::backend::BackendResult;
use mirobody_ports::SessionBackplane;
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
            owner: session.owner().map(str::to_owned),
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

    /// Whether a signed-in `user_id` takes this session, made anonymous and not claimed yet.
    pub(crate) fn claimable_by(&self, user_id: Option<&str>) -> bool {
        self.owner.is_none() && user_id.is_some()
    }

    /// Makes the session `user_id`'s.
    pub(crate) fn set_owner(&mut self, user_id: Option<&str>) {
        self.owner = user_id.map(str::to_owned);
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

/// What an instance tells the others, as it is handed to [`SharedSessions::publish`]. What
/// travels is less (see [`Heard`]): a client's answers are kept sealed in the backplane's store
/// and only their reference goes out, and a task's status change goes as its id, owner and
/// status.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Event {
    /// `notifications/cancelled` for a request of the session not running where it arrived.
    Cancel { session: String, request: Id },
    /// A client's answer to a question, for the instance whose call asked it.
    Answer { session: String, user: Option<String>, request: Id, outcome: Answer },
    /// A change announced in one instance (a list, a resource, a task's status), for the
    /// `subscriptions/listen` streams of the others, as `Change::to_wire` writes it.
    Change { change: Value },
    /// `tasks/update` for a task not running where it arrived, for the instance running it.
    TaskAnswers { task: String, owner: String, responses: serde_json::Map<String, Value> },
    /// `tasks/cancel` for a task not running where it arrived: the instance running it stops it.
    TaskCancel { task: String, owner: String },
}

/// What an instance hears from the others, as it travels (sealed and signed, see `seal.rs`):
/// ids, statuses and references. The receiver reads what a reference names
/// ([`SharedSessions::answer`], [`SharedSessions::task_answers`]; a task from the task store)
/// when it is the instance it is for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Heard {
    /// A session changed: holders of a copy take the new record.
    Changed { session: String, record: Record },
    /// A session ended.
    Ended { session: String },
    /// A cancellation.
    Cancel { session: String, request: Id },
    /// A client's answer, kept under `payload`.
    Answer { session: String, user: Option<String>, request: Id, payload: String },
    /// A change of a list or a resource (never a task's: that is `TaskStatus`).
    Change { change: Value },
    /// A task's status changed: its owner's listen streams are told what the task store shows.
    TaskStatus { task: String, owner: String, status: String },
    /// Answers to a task's questions, kept under `payload`.
    TaskAnswers { task: String, owner: String, payload: String },
    /// A task's cancellation.
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

// An event on the wire, sealed and signed: the instance that sent it (so an instance skips its own), a
// random id (so a replay is refused), and when it was sent (so an old one is).
#[derive(Serialize, Deserialize)]
struct Envelope {
    from: String,
    id: String,
    at: i64,
    // Set on the changes whose writer waits to hear them back (see `SharedSessions::save`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    echo: bool,
    // The W3C `traceparent` of the span that sent it, when traces are exported: the span
    // that handles it on another instance joins the same trace. An instance of an earlier
    // release ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    traceparent: Option<String>,
    #[serde(flatten)]
    event: Heard,
}

/// How long a change's writer waits to hear its own announcement back before answering.
const ECHO_WAIT: Duration = Duration::from_secs(1);

/// How long a client's answers wait in the store for the instance they are for: it reads them
/// as soon as it hears the reference.
const PAYLOAD_TTL: Duration = Duration::from_secs(60);

/// The most bytes a client's answers (to a question, or a task's) may take when they are kept
/// for another instance: far more than any form's answer, and a bound on what one client can
/// make the store hold for a minute.
pub(crate) const MAX_KEPT_BYTES: usize = 256 * 1024;

/// The longest request id passed on to the other instances (in a cancellation): longer ones
/// name no request a client sensibly makes, and would only swell the envelope.
pub(crate) const MAX_FORWARDED_ID_BYTES: usize = 256;

/// Whether `value`, written as JSON, fits in [`MAX_KEPT_BYTES`]; stops writing once it does
/// not, so a large value costs no more than the bound to measure.
pub(crate) fn fits_kept(value: &impl Serialize) -> bool {
    // A writer that counts, and fails past the bound to end the writing there.
    struct Bounded(usize);
    impl std::io::Write for Bounded {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            if self.0 > MAX_KEPT_BYTES {
                return Err(std::io::Error::other("over the bound"));
            }
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(Bounded(0), value).is_ok()
}

/// Whether a request id is short enough to pass on ([`MAX_FORWARDED_ID_BYTES`]).
pub(crate) fn forwardable(id: &Id) -> bool {
    match id {
        Id::String(text) => text.len() <= MAX_FORWARDED_ID_BYTES,
        Id::Number(_) => true,
    }
}

// What records and payloads are sealed for, so one is never read as another.
const RECORD: &str = "session record";
const ANSWER: &str = "answer";
const TASK_ANSWERS: &str = "task answers";

// The changes of this instance whose announcement it waits to hear back, by envelope id.
type Echoes = Arc<Mutex<HashMap<String, tokio::sync::oneshot::Sender<()>>>>;

// What the listening side needs, shared with the stream it returns.
struct Trust {
    keys: BackplaneKeys,
    guard: Guard,
    metrics: BackplaneMetrics,
}

/// This instance's side of the shared sessions: the backplane, its own name among the
/// instances, how long a record lives unused, and the keys every message is signed and every
/// record sealed with.
pub struct SharedSessions {
    backplane: Arc<dyn SessionBackplane>,
    instance: String,
    ttl: Duration,
    echoes: Echoes,
    trust: Arc<Trust>,
    trace: Option<Arc<dyn TracePropagation>>,
}

/// An event heard from another instance, with the `traceparent` of the span that sent it
/// (when traces are exported there).
pub(crate) struct Delivery {
    pub(crate) event: Heard,
    pub(crate) traceparent: Option<String>,
}

impl std::fmt::Debug for SharedSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedSessions").field("ttl", &self.ttl).finish_non_exhaustive()
    }
}

impl SharedSessions {
    /// Sessions shared through `backplane`, each record kept `ttl` after its last use, signed
    /// and sealed under keys derived from `secret`, which every instance must share (and which
    /// serves nothing else).
    pub fn new(backplane: Arc<dyn SessionBackplane>, ttl: Duration, secret: &[u8; 32]) -> Self {
        let trust = Arc::new(Trust {
            keys: BackplaneKeys::new(secret),
            guard: Guard::default(),
            metrics: BackplaneMetrics::default(),
        });
        SharedSessions { backplane, instance: random_token(), ttl, echoes: Echoes::default(), trust, trace: None }
    }

    /// The same, its messages carrying the trace context of the span that sends them, through
    /// `trace` (none: nothing is added).
    pub(crate) fn traced(mut self, trace: Option<Arc<dyn TracePropagation>>) -> Self {
        self.trace = trace;
        self
    }

    /// The span a message heard from another instance is handled in: a child of the span that
    /// sent it when traces are exported (and the message says which); else none at all.
    pub(crate) fn handling_span(&self, traceparent: Option<&str>) -> tracing::Span {
        let (Some(trace), Some(traceparent)) = (&self.trace, traceparent) else { return tracing::Span::none() };
        if traceparent.len() > crate::protocol::MAX_TRACEPARENT_BYTES {
            return tracing::Span::none();
        }
        let span = tracing::debug_span!(target: "mirobody::trace", "backplane receive", otel.kind = "consumer");
        trace.adopt(&span, traceparent);
        span
    }

    /// The same, counting the messages published and received and their lag into `metrics`.
    pub(crate) fn recording(mut self, metrics: BackplaneMetrics) -> Self {
        if let Some(trust) = Arc::get_mut(&mut self.trust) {
            trust.metrics = metrics;
        }
        self
    }

    /// How long a record lives unused.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// What this instance refused from the backplane since it started.
    pub fn refused(&self) -> RefusedEvents {
        self.trust.guard.counts()
    }

    /// Writes the session's record (sealed, under a keyed hash of its id) and tells the other
    /// instances; nothing for a session not initialized.
    pub(crate) async fn save(&self, session: &Session) -> BackendResult<()> {
        let (Some(id), Some(record)) = (session.id(), Record::of(session)) else { return Ok(()) };
        let bytes = serde_json::to_vec(&record).map_err(encode_error)?;
        let sealed = self.trust.keys.seal(RECORD, id, &bytes);
        // Indexed before its record is written, so that its owner's sessions are found with
        // it. Once per session, never per request.
        self.index(session).await;
        self.backplane.save(&self.trust.keys.name(id), sealed, self.ttl).await?;
        // The change is answered once its announcement came back through the backplane, which
        // hands it to every instance at once: the client's next request, wherever it lands,
        // then finds the copy there changed (a copy that missed it is read again after the
        // backplane's connection comes back). Without a listener (or past the wait) it goes on.
        self.announce(Heard::Changed { session: id.to_owned(), record }).await
    }

    // Sends `wire` and waits (at most `ECHO_WAIT`) to hear it back through the backplane.
    async fn announce(&self, wire: Heard) -> BackendResult<()> {
        let envelope = random_token();
        let (heard, echo) = tokio::sync::oneshot::channel();
        lock(&self.echoes).insert(envelope.clone(), heard);
        let published = self.send(wire, envelope.clone(), true).await;
        if published.is_ok() && tokio::time::timeout(ECHO_WAIT, echo).await.is_err() {
            tracing::debug!("a session change was not heard back in time");
        }
        lock(&self.echoes).remove(&envelope);
        published
    }

    /// The record of session `id`, if one is kept (one that does not open, or does not read,
    /// counts as none).
    pub(crate) async fn load(&self, id: &str) -> BackendResult<Option<Record>> {
        let Some(sealed) = self.backplane.load(&self.trust.keys.name(id)).await? else { return Ok(None) };
        let record = self.trust.keys.open(RECORD, id, &sealed).and_then(|bytes| serde_json::from_slice(&bytes).ok());
        if record.is_none() {
            self.trust.guard.refuse(Refusal::Unreadable);
        }
        Ok(record)
    }

    /// Whether the record of session `id` is still kept: false once any instance ended it,
    /// even before this instance has heard so. One read, nothing opened.
    pub(crate) async fn is_kept(&self, id: &str) -> BackendResult<bool> {
        Ok(self.backplane.load(&self.trust.keys.name(id)).await?.is_some())
    }

    /// Ends session `id` everywhere: answered, as a change is, once the end was heard back, so
    /// the client's next request finds it ended on whichever instance it lands.
    pub(crate) async fn end(&self, id: &str) -> BackendResult<()> {
        self.backplane.remove(&self.trust.keys.name(id)).await?;
        self.announce(Heard::Ended { session: id.to_owned() }).await
    }

    /// Keeps the records of `ids`, and the indexes of the sessions of `owners`, another
    /// [`ttl`](Self::ttl): in one call to the backplane.
    pub(crate) async fn renew(&self, ids: &[String], owners: &[String]) -> BackendResult<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let records = ids.iter().map(|id| self.trust.keys.name(id));
        let names: Vec<String> = records.chain(owners.iter().map(|owner| self.index_name(owner))).collect();
        self.backplane.renew(&names, self.ttl).await
    }

    /// Tells every other instance: what a client said is kept sealed in the store first, and
    /// only its reference goes out; a task's status goes without its result.
    pub(crate) async fn publish(&self, event: Event) -> BackendResult<()> {
        let wire = match event {
            Event::Cancel { session, request } if forwardable(&request) => Heard::Cancel { session, request },
            Event::Cancel { .. } => {
                tracing::debug!("a cancellation of a request with an overlong id was not passed on");
                return Ok(());
            }
            Event::Answer { session, user, request, outcome } => {
                let payload = self.keep(ANSWER, &outcome).await?;
                Heard::Answer { session, user, request, payload }
            }
            Event::Change { change } => match task_status(&change) {
                Some((task, owner, status)) => Heard::TaskStatus { task, owner, status },
                None if change.get("kind").and_then(Value::as_str) == Some("task") => {
                    tracing::warn!("a task's change without its id, owner or status was not passed on");
                    return Ok(());
                }
                None => Heard::Change { change },
            },
            Event::TaskAnswers { task, owner, responses } => {
                let payload = self.keep(TASK_ANSWERS, &responses).await?;
                Heard::TaskAnswers { task, owner, payload }
            }
            Event::TaskCancel { task, owner } => Heard::TaskCancel { task, owner },
        };
        self.send(wire, random_token(), false).await
    }

    // Keeps `value` sealed under a new reference for a short while; the reference.
    async fn keep(&self, purpose: &str, value: &impl Serialize) -> BackendResult<String> {
        let bytes = serde_json::to_vec(value).map_err(encode_error)?;
        if bytes.len() > MAX_KEPT_BYTES {
            return Err(mirobody_core::BackendError::new("The answer is too large to pass to another instance."));
        }
        // Not of the form of a session id (32 hex digits), so never read as a session.
        let reference = format!("payload-{}", random_token());
        let sealed = self.trust.keys.seal(purpose, &reference, &bytes);
        self.backplane.save(&reference, sealed, PAYLOAD_TTL).await?;
        Ok(reference)
    }

    // What `reference` keeps for `purpose`, if it is there and opens.
    async fn fetch<T: serde::de::DeserializeOwned>(&self, purpose: &str, reference: &str) -> BackendResult<Option<T>> {
        if !reference.starts_with("payload-") {
            self.trust.guard.refuse(Refusal::Unreadable);
            return Ok(None);
        }
        let Some(sealed) = self.backplane.load(reference).await? else { return Ok(None) };
        let value =
            self.trust.keys.open(purpose, reference, &sealed).and_then(|bytes| serde_json::from_slice(&bytes).ok());
        if value.is_none() {
            self.trust.guard.refuse(Refusal::Unreadable);
        }
        Ok(value)
    }

    /// The client's answer kept under `reference` (by [`Heard::Answer`]), read once: it is
    /// removed as it is read.
    pub(crate) async fn answer(&self, reference: &str) -> BackendResult<Option<Answer>> {
        let answer = self.fetch(ANSWER, reference).await?;
        if answer.is_some() {
            self.backplane.remove(reference).await?;
        }
        Ok(answer)
    }

    /// The answers to a task's questions kept under `reference` (by [`Heard::TaskAnswers`]).
    /// Left for their short life: every instance reads them, and only the one running the task
    /// takes them.
    pub(crate) async fn task_answers(&self, reference: &str) -> BackendResult<Option<serde_json::Map<String, Value>>> {
        self.fetch(TASK_ANSWERS, reference).await
    }

    // Publishes `wire` from this instance, signed, under the envelope id `id`.
    async fn send(&self, wire: Heard, id: String, echo: bool) -> BackendResult<()> {
        let Some(trace) = &self.trace else { return self.send_as(wire, id, echo, None).await };
        let span = tracing::debug_span!(target: "mirobody::trace", "backplane publish", otel.kind = "producer");
        let traceparent = trace.traceparent(&span);
        tracing::Instrument::instrument(self.send_as(wire, id, echo, traceparent), span).await
    }

    async fn send_as(&self, wire: Heard, id: String, echo: bool, traceparent: Option<String>) -> BackendResult<()> {
        let envelope = Envelope { from: self.instance.clone(), id, at: now_ms(), echo, traceparent, event: wire };
        let body = serde_json::to_vec(&envelope).map_err(encode_error)?;
        let wire = self.trust.keys.wrap(&body);
        // Every instance would drop it unread, and count it as a forgery's alarm.
        if wire.len() > super::seal::MAX_ENVELOPE_BYTES {
            return Err(mirobody_core::BackendError::new("A message is too large for the shared session backplane."));
        }
        self.backplane.publish(wire).await?;
        self.trust.metrics.published.increment(1);
        Ok(())
    }

    /// What the other instances say from now on: this one's own events skipped, and every
    /// message dropped (and counted, see [`refused`](Self::refused)) that is not signed with
    /// the shared key, was sent too long ago, was heard before, or does not read. Ends when the
    /// backplane's connection does.
    pub(crate) async fn events(&self) -> BackendResult<BoxStream<'static, Delivery>> {
        let (instance, echoes, trust) = (self.instance.clone(), Arc::clone(&self.echoes), Arc::clone(&self.trust));
        let events = self.backplane.events().await?;
        Ok(events
            .filter_map(move |bytes| {
                let heard = match trust.hear(&bytes, &instance) {
                    Ok(Hearing::Other(delivery)) => Some(delivery),
                    Ok(Hearing::Own { id, echo }) => {
                        if let Some(heard) = echo.then(|| lock(&echoes).remove(&id)).flatten() {
                            let _ = heard.send(());
                        }
                        None
                    }
                    Err(why) => {
                        trust.guard.refuse(why);
                        None
                    }
                };
                std::future::ready(heard)
            })
            .boxed())
    }
}

// What one message heard turned out to be.
enum Hearing {
    Other(Delivery),
    Own { id: String, echo: bool },
}

impl Trust {
    // Reads a message from the backplane, if it may be believed.
    fn hear(&self, bytes: &[u8], instance: &str) -> Result<Hearing, Refusal> {
        let body = self.keys.unwrap(bytes)?;
        let envelope: Envelope = serde_json::from_slice(&body).map_err(|_| Refusal::Unreadable)?;
        let now = now_ms();
        self.guard.admit(&envelope.id, envelope.at, now)?;
        if envelope.from == instance {
            return Ok(Hearing::Own { id: envelope.id, echo: envelope.echo });
        }
        self.metrics.received.increment(1);
        // Clocks apart by less than the guard admits: a sender ahead reads as no lag.
        let lag = u64::try_from(now.saturating_sub(envelope.at)).unwrap_or(0);
        self.metrics.lag.record(Duration::from_millis(lag));
        Ok(Hearing::Other(Delivery { event: envelope.event, traceparent: envelope.traceparent }))
    }
}

// A task's change as `Change::to_wire` writes it (`{"kind": "task", "owner", "task": {...}}`):
// its id, owner and status, nothing of its result.
fn task_status(change: &Value) -> Option<(String, String, String)> {
    if change.get("kind")?.as_str()? != "task" {
        return None;
    }
    let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_owned);
    let task = change.get("task")?;
    Some((text(task.get("taskId"))?, text(change.get("owner"))?, text(task.get("status"))?))
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

    // Two instances over one memory backplane, and a raw listener that sees what travels.
    async fn pair(
        secret: [u8; 32],
        other: [u8; 32],
    ) -> (Arc<crate::session::MemoryBackplane>, SharedSessions, SharedSessions, BoxStream<'static, Vec<u8>>) {
        let backplane = Arc::new(crate::session::MemoryBackplane::new());
        let ttl = Duration::from_secs(60);
        let a = SharedSessions::new(Arc::clone(&backplane) as _, ttl, &secret);
        let b = SharedSessions::new(Arc::clone(&backplane) as _, ttl, &other);
        let raw = backplane.events().await.unwrap();
        (backplane, a, b, raw)
    }

    async fn next<T>(stream: &mut BoxStream<'static, T>) -> Option<T> {
        tokio::time::timeout(Duration::from_millis(300), stream.next()).await.ok().flatten()
    }

    const SECRET: &str = "Allergic to penicillin";

    // What an envelope says once opened with the right key: even then, no content.
    fn opened(shared: &SharedSessions, wire: &[u8]) -> String {
        assert!(!String::from_utf8_lossy(wire).contains("alice"), "sealed on the way");
        String::from_utf8(shared.trust.keys.unwrap(wire).unwrap()).unwrap()
    }

    #[tokio::test]
    async fn answers_and_task_results_never_travel_and_are_read_from_the_store() {
        let (_backplane, a, b, mut raw) = pair([1; 32], [1; 32]).await;
        let mut on_b = b.events().await.unwrap().map(|delivery| delivery.event).boxed();

        let outcome = Answer::Result(serde_json::json!({"action": "accept", "content": {"note": SECRET}}));
        let answer = Event::Answer {
            session: "s1".into(),
            user: Some("alice".into()),
            request: Id::String("q".into()),
            outcome: outcome.clone(),
        };
        a.publish(answer).await.unwrap();
        let wire = opened(&a, &next(&mut raw).await.unwrap());
        assert!(wire.contains("alice") && !wire.contains("penicillin"), "{wire}");
        let Some(Heard::Answer { session, user, request, payload }) = next(&mut on_b).await else { panic!() };
        assert_eq!((session.as_str(), user.as_deref(), request), ("s1", Some("alice"), Id::String("q".into())));
        assert_eq!(b.answer(&payload).await.unwrap(), Some(outcome));
        assert_eq!(b.answer(&payload).await.unwrap(), None, "read once");

        let responses = serde_json::json!({"go": {"action": "accept", "content": {"note": SECRET}}});
        let responses = responses.as_object().cloned().unwrap();
        let event = Event::TaskAnswers { task: "t1".into(), owner: "user:alice".into(), responses: responses.clone() };
        a.publish(event).await.unwrap();
        let wire = opened(&a, &next(&mut raw).await.unwrap());
        assert!(wire.contains("user:alice") && !wire.contains("penicillin"), "{wire}");
        let Some(Heard::TaskAnswers { task, owner, payload }) = next(&mut on_b).await else { panic!() };
        assert_eq!((task.as_str(), owner.as_str()), ("t1", "user:alice"));
        assert_eq!(b.task_answers(&payload).await.unwrap(), Some(responses));
        assert_eq!(b.task_answers("s1").await.unwrap(), None, "only references are read");

        let change = serde_json::json!({"kind": "task", "owner": "user:alice", "task": {
            "taskId": "t1", "status": "completed", "result": {"content": [{"type": "text", "text": SECRET}]}}});
        a.publish(Event::Change { change }).await.unwrap();
        let wire = opened(&a, &next(&mut raw).await.unwrap());
        assert!(wire.contains("completed") && !wire.contains("penicillin"), "{wire}");
        let heard = next(&mut on_b).await;
        let status = Heard::TaskStatus { task: "t1".into(), owner: "user:alice".into(), status: "completed".into() };
        assert_eq!(heard, Some(status));
        // A list change goes as it is.
        a.publish(Event::Change { change: serde_json::json!({"kind": "tools"}) }).await.unwrap();
        assert_eq!(next(&mut on_b).await, Some(Heard::Change { change: serde_json::json!({"kind": "tools"}) }));
        assert_eq!((b.refused().unreadable, b.refused().total()), (1, 1), "the made-up reference, only");
    }

    #[tokio::test]
    async fn nothing_over_its_bound_is_kept_or_sent() {
        let (backplane, a, _b, mut raw) = pair([1; 32], [1; 32]).await;
        // A cancellation of a request with an overlong id: not passed on (every instance would
        // refuse the envelope as oversized, and count it as a forgery's alarm).
        let long = Id::String("x".repeat(1 << 20));
        a.publish(Event::Cancel { session: "s1".into(), request: long }).await.unwrap();
        let short = Id::String("x".repeat(MAX_FORWARDED_ID_BYTES));
        a.publish(Event::Cancel { session: "s1".into(), request: short.clone() }).await.unwrap();
        let wire = opened(&a, &next(&mut raw).await.unwrap());
        assert!(wire.contains(&"x".repeat(MAX_FORWARDED_ID_BYTES)), "only the short one went");
        assert!(next(&mut raw).await.is_none());
        // An envelope over the bound is refused here, not published.
        let huge = serde_json::json!({"kind": "tools", "padding": "x".repeat(MAX_KEPT_BYTES + 1)});
        assert!(a.publish(Event::Change { change: huge }).await.is_err());
        assert!(next(&mut raw).await.is_none(), "not published");
        // An answer over its bound is not kept.
        let answer = |size: usize| Event::Answer {
            session: "s1".into(),
            user: None,
            request: Id::String("q".into()),
            outcome: Answer::Result(serde_json::json!("x".repeat(size))),
        };
        assert!(a.publish(answer(MAX_KEPT_BYTES)).await.is_err());
        assert!(backplane.is_empty() && next(&mut raw).await.is_none(), "nothing kept or told");
        a.publish(answer(MAX_KEPT_BYTES - 100)).await.unwrap();
        assert_eq!(backplane.len(), 1);
        assert!(fits_kept(&"x".repeat(MAX_KEPT_BYTES - 2)) && !fits_kept(&"x".repeat(MAX_KEPT_BYTES - 1)));
    }

    #[tokio::test]
    async fn a_record_is_sealed_where_it_is_kept_and_on_the_way() {
        let (backplane, a, b, mut raw) = pair([1; 32], [1; 32]).await;
        let mut on_b = b.events().await.unwrap().map(|delivery| delivery.event).boxed();
        let session = initialized(Some("alice"));
        session.subscribe("file:///penicillin").unwrap();
        a.save(&session).await.unwrap();
        assert_eq!(backplane.load("s1").await.unwrap(), None, "kept under a name the id does not show");
        let kept = backplane.load(&a.trust.keys.name("s1")).await.unwrap().unwrap();
        assert!(!String::from_utf8_lossy(&kept).contains("alice"), "sealed at rest");
        let wire = next(&mut raw).await.unwrap();
        assert!(!String::from_utf8_lossy(&wire).contains("penicillin"), "nor on the way");
        assert!(opened(&a, &wire).contains("penicillin"), "for the instances only");
        let Some(Heard::Changed { session: id, record }) = next(&mut on_b).await else { panic!() };
        assert_eq!((id.as_str(), Some(record.clone())), ("s1", Record::of(&session)));
        assert_eq!(b.load("s1").await.unwrap(), Some(record));

        // A record moved to another id, or written by hand, is none.
        backplane.save(&a.trust.keys.name("s2"), kept, Duration::from_secs(60)).await.unwrap();
        assert_eq!(b.load("s2").await.unwrap(), None);
        let plain = serde_json::to_vec(&Record::of(&session).unwrap()).unwrap();
        backplane.save(&a.trust.keys.name("s3"), plain, Duration::from_secs(60)).await.unwrap();
        assert_eq!(b.load("s3").await.unwrap(), None);
        // Renewed and removed under the same name.
        b.renew(&["s1".to_owned()], &["alice".to_owned()]).await.unwrap();
        b.end("s1").await.unwrap();
        assert_eq!(b.load("s1").await.unwrap(), None);
        assert_eq!(b.refused().unreadable, 2);
    }

    #[tokio::test]
    async fn forged_tampered_stale_and_replayed_envelopes_are_dropped_and_counted() {
        let (backplane, a, stranger, mut raw) = pair([1; 32], [2; 32]).await;
        let b = SharedSessions::new(Arc::clone(&backplane) as _, Duration::from_secs(60), &[1; 32]);
        let mut on_b = b.events().await.unwrap().map(|delivery| delivery.event).boxed();

        // Unsigned, as `redis-cli publish` would send it.
        let forged = serde_json::json!({"from": "x", "id": "1", "at": now_ms(), "kind": "task_cancel", "task": "t", "owner": "user:alice"});
        backplane.publish(serde_json::to_vec(&forged).unwrap()).await.unwrap();
        // Signed under another key.
        stranger.publish(Event::Cancel { session: "s1".into(), request: Id::String("r".into()) }).await.unwrap();
        // Tampered with on the way.
        a.publish(Event::TaskCancel { task: "t".into(), owner: "user:alice".into() }).await.unwrap();
        let _ = next(&mut raw).await;
        let _ = next(&mut raw).await;
        let genuine = next(&mut raw).await.unwrap();
        let mut tampered = genuine.clone();
        *tampered.last_mut().unwrap() ^= 1;
        backplane.publish(tampered).await.unwrap();
        // Signed, but old.
        let old = Envelope {
            from: "x".into(),
            id: random_token(),
            at: now_ms() - 60_000,
            echo: false,
            traceparent: None,
            event: Heard::Ended { session: "s1".into() },
        };
        backplane.publish(a.trust.keys.wrap(&serde_json::to_vec(&old).unwrap())).await.unwrap();
        // Sealed and signed, but in no form this release reads.
        backplane.publish(a.trust.keys.wrap(br#"{"kind":"unknown"}"#)).await.unwrap();
        // The genuine one once more: a replay.
        backplane.publish(genuine).await.unwrap();

        let only = next(&mut on_b).await;
        assert_eq!(only, Some(Heard::TaskCancel { task: "t".into(), owner: "user:alice".into() }), "the genuine one");
        assert_eq!(next(&mut on_b).await, None, "and nothing else");
        let refused = b.refused();
        assert_eq!(
            (refused.unsigned, refused.forged, refused.stale, refused.unreadable, refused.replayed),
            (1, 2, 1, 1, 1)
        );
    }
}
