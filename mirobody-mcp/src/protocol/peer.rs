//! The client as a tool sees it: progress, logs and questions, sent on the stream of the call
//! that asked, with the answers matched back by request id.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use mirobody_core::{ClientPeer, PeerError};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc, oneshot};

use crate::jsonrpc::{self, Id};
use crate::session::{LOGS_OFF, Session, lock, log_rank, random_token};

struct Pending {
    answer: oneshot::Sender<Result<Value, Value>>,
    session: Option<String>,
    user: Option<String>,
}

/// Server-to-client requests awaiting the client's answer.
///
/// Ids are random 128-bit tokens and an answer is accepted only from the session and user the
/// request went to, so no client can answer (or spoil) another's question.
#[derive(Default)]
pub(crate) struct PendingRequests {
    waiting: Mutex<HashMap<String, Pending>>,
}

impl PendingRequests {
    fn register(&self, session: Option<&str>, user: Option<&str>) -> (String, oneshot::Receiver<Result<Value, Value>>) {
        let id = random_token();
        let (answer, rx) = oneshot::channel();
        lock(&self.waiting)
            .insert(id.clone(), Pending { answer, session: session.map(str::to_owned), user: user.map(str::to_owned) });
        (id, rx)
    }

    fn forget(&self, id: &str) {
        lock(&self.waiting).remove(id);
    }

    /// Gives up on every question sent to `session` (its client is gone): the tools waiting for
    /// answers get [`PeerError::NoAnswer`] at once.
    pub(crate) fn abandon(&self, session: Option<&str>) {
        lock(&self.waiting).retain(|_, p| p.session.as_deref() != session);
    }

    /// How many questions wait for an answer.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.waiting).len()
    }

    /// Whether none does.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `id` has the form this server gives its questions' ids (a random token: 32
    /// lowercase hex digits). An answer under any other id answers no question, here or in
    /// another instance, and is refused without being passed on or kept anywhere.
    pub(crate) fn could_be_ours(id: &Id) -> bool {
        matches!(id, Id::String(key) if key.len() == 32 && key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
    }

    /// Whether a request of this session and user waits here for an answer under `id`.
    pub(crate) fn awaits(&self, id: &Id, session: Option<&str>, user: Option<&str>) -> bool {
        let Id::String(key) = id else { return false };
        lock(&self.waiting).get(key).is_some_and(|p| p.session.as_deref() == session && p.user.as_deref() == user)
    }

    /// Delivers the client's answer; gives it back when no request of this session and user
    /// waits for it under that id.
    pub(crate) fn complete(
        &self,
        id: &Id,
        session: Option<&str>,
        user: Option<&str>,
        outcome: Result<Value, Value>,
    ) -> Result<(), Result<Value, Value>> {
        let Id::String(key) = id else { return Err(outcome) };
        let mut waiting = lock(&self.waiting);
        let matches = waiting.get(key).is_some_and(|p| p.session.as_deref() == session && p.user.as_deref() == user);
        if !matches {
            return Err(outcome);
        }
        match waiting.remove(key) {
            Some(pending) => pending.answer.send(outcome),
            None => Err(outcome),
        }
    }
}

// A question waiting for its answer, forgotten when this drops.
struct Asked<'a> {
    pending: &'a PendingRequests,
    key: &'a str,
}

impl Drop for Asked<'_> {
    fn drop(&mut self) {
        self.pending.forget(self.key);
    }
}

/// The client capability a server-to-client method needs (`elicitation`, `sampling`, `roots`);
/// `None` for methods a server does not send.
pub(crate) fn capability_for(method: &str) -> Option<&'static str> {
    match method {
        "elicitation/create" => Some("elicitation"),
        "sampling/createMessage" => Some("sampling"),
        "roots/list" => Some("roots"),
        _ => None,
    }
}

/// A `notifications/progress` message for `token`.
pub(crate) fn progress_bytes(token: &Value, progress: f64, total: Option<f64>, message: Option<&str>) -> Vec<u8> {
    let mut params = json!({"progressToken": token, "progress": progress});
    if let Some(total) = total {
        params["total"] = json!(total);
    }
    if let Some(message) = message {
        params["message"] = json!(message);
    }
    jsonrpc::notification_bytes("notifications/progress", &params)
}

/// A `notifications/message` log message.
pub(crate) fn log_bytes(level: &str, data: Value) -> Vec<u8> {
    jsonrpc::notification_bytes("notifications/message", &json!({"level": level, "data": data}))
}

/// How many messages a call may have waiting on its stream before its next one waits.
const CALL_STREAM_CAPACITY: usize = 64;

/// Where one call's messages to its client go (progress, logs, questions): a channel, or one
/// that opens at the first message (see [`Outbox::lazy`]).
#[derive(Clone)]
pub(crate) struct Outbox(OutboxKind);

#[derive(Clone)]
enum OutboxKind {
    Open(mpsc::Sender<Vec<u8>>),
    Lazy(Arc<LazyChannel>),
}

// A call's channel, made when the call first sends: most calls send nothing, and opening and
// closing a tokio channel (its block allocation, the drain on drop) is not free.
#[derive(Default)]
struct LazyChannel {
    opened: OnceLock<OpenChannel>,
    first_message: Notify,
}

struct OpenChannel {
    sender: mpsc::Sender<Vec<u8>>,
    // Taken by the inbox, once.
    receiver: Mutex<Option<mpsc::Receiver<Vec<u8>>>>,
}

impl From<mpsc::Sender<Vec<u8>>> for Outbox {
    fn from(sender: mpsc::Sender<Vec<u8>>) -> Outbox {
        Outbox(OutboxKind::Open(sender))
    }
}

impl Outbox {
    /// An outbox whose channel opens at the first message, with the [`Inbox`] that reads it.
    pub(crate) fn lazy() -> (Outbox, Inbox) {
        let channel = Arc::new(LazyChannel::default());
        (Outbox(OutboxKind::Lazy(Arc::clone(&channel))), Inbox(channel))
    }

    /// Sends a message, waiting while the stream is full; false when nobody reads it any more.
    pub(crate) async fn send(&self, message: Vec<u8>) -> bool {
        let sender = match &self.0 {
            OutboxKind::Open(sender) => sender,
            OutboxKind::Lazy(channel) => channel.sender(),
        };
        sender.send(message).await.is_ok()
    }
}

impl LazyChannel {
    fn sender(&self) -> &mpsc::Sender<Vec<u8>> {
        if let Some(open) = self.opened.get() {
            return &open.sender;
        }
        let mut made = false;
        let open = self.opened.get_or_init(|| {
            made = true;
            let (sender, receiver) = mpsc::channel(CALL_STREAM_CAPACITY);
            OpenChannel { sender, receiver: Mutex::new(Some(receiver)) }
        });
        // Told once the receiver can be taken, never from inside the initialisation.
        if made {
            self.first_message.notify_one();
        }
        &open.sender
    }
}

/// The reading end of a lazy [`Outbox`]. The channel closes once every clone of the outbox and
/// the inbox are gone.
pub(crate) struct Inbox(Arc<LazyChannel>);

impl Inbox {
    /// The channel's receiver, if anything has been sent; once.
    pub(crate) fn take(&self) -> Option<mpsc::Receiver<Vec<u8>>> {
        lock(&self.0.opened.get()?.receiver).take()
    }

    /// The receiver, opening the channel if nothing has been sent yet: for a stream that starts
    /// before the call speaks. Once; a closed receiver after that.
    pub(crate) fn open(&self) -> mpsc::Receiver<Vec<u8>> {
        self.0.sender();
        self.take().unwrap_or_else(|| mpsc::channel(1).1)
    }

    /// Waits for the first message, then gives the receiver (with that message still in it).
    /// Pending for ever once the receiver has been taken.
    pub(crate) async fn first_message(&self) -> mpsc::Receiver<Vec<u8>> {
        loop {
            // Registered before looking, so a message sent in between is not missed.
            let notified = self.0.first_message.notified();
            if let Some(receiver) = self.take() {
                return receiver;
            }
            notified.await;
        }
    }
}

/// A [`ClientPeer`] that writes to the stream of one call.
pub(crate) struct ChannelPeer {
    out: Outbox,
    session: Arc<Session>,
    pending: Arc<PendingRequests>,
    user: Option<String>,
    progress_token: Option<Value>,
    answer_timeout: Duration,
}

impl ChannelPeer {
    /// A peer for one call of `session`, writing to `out` (a channel, or an [`Outbox`]).
    pub(crate) fn new(
        out: impl Into<Outbox>,
        session: Arc<Session>,
        pending: Arc<PendingRequests>,
        user: Option<String>,
        progress_token: Option<Value>,
        answer_timeout: Duration,
    ) -> Self {
        ChannelPeer { out: out.into(), session, pending, user, progress_token, answer_timeout }
    }

    async fn send(&self, message: Vec<u8>) {
        // The receiver is gone only when the call's stream is closed; nothing is left to tell.
        self.out.send(message).await;
    }
}

#[async_trait]
impl ClientPeer for ChannelPeer {
    async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.progress_token else { return };
        self.send(progress_bytes(token, progress, total, message)).await;
    }

    async fn log(&self, level: &str, data: Value) {
        if self.session.wants_log(level) {
            self.send(log_bytes(level, data)).await;
        }
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, PeerError> {
        if let Some(capability) = capability_for(method)
            && !self.session.client_supports(capability)
        {
            return Err(PeerError::Unsupported(method.to_owned()));
        }
        if self.session.is_closing() {
            return Err(PeerError::NoAnswer);
        }
        let (key, answer) = self.pending.register(self.session.id(), self.user.as_deref());
        // Forgets the question however this ends: answered, timed out, or the call dropped
        // (cancelled, or its client gone) while it waits.
        let _asked = Asked { pending: &self.pending, key: &key };
        self.send(jsonrpc::request_bytes(&Id::String(key.clone()), method, &params)).await;
        let outcome = tokio::time::timeout(self.answer_timeout, answer).await;
        match outcome {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => Err(PeerError::Client {
                code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: error.get("message").and_then(Value::as_str).unwrap_or_default().to_owned(),
            }),
            Ok(Err(_)) | Err(_) => Err(PeerError::NoAnswer),
        }
    }

    fn supports(&self, capability: &str) -> bool {
        self.session.client_supports(capability)
    }
}

/// Whether `answer` has the shape of a result of `method`.
pub(crate) fn check_answer(method: &str, answer: &Value) -> Result<(), &'static str> {
    let ok = match method {
        "elicitation/create" => {
            matches!(answer.get("action").and_then(Value::as_str), Some("accept" | "decline" | "cancel"))
        }
        "sampling/createMessage" => answer.get("content").is_some_and(|c| c.is_object() || c.is_array()),
        "roots/list" => answer.get("roots").is_some_and(Value::is_array),
        _ => true,
    };
    if ok { Ok(()) } else { Err("is not a valid result for its request") }
}

/// Where a call's request-scoped notifications (progress, logs) go, and which it wants.
#[derive(Clone)]
pub(crate) struct Notifications {
    /// The call's stream.
    pub(crate) out: Outbox,
    /// The `_meta.progressToken`, if the client asked for progress.
    pub(crate) progress_token: Option<Value>,
    /// The lowest log level wanted (`LOGS_OFF` for none: logs need a `logLevel` in `_meta`).
    pub(crate) log_level: u8,
}

impl Notifications {
    /// Sends progress, if the client asked for it.
    pub(crate) async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(token) = &self.progress_token {
            // The receiver is gone only when the call's stream is closed.
            let _ = self.out.send(progress_bytes(token, progress, total, message)).await;
        }
    }

    /// Sends a log message, if its level is one the client asked for.
    pub(crate) async fn log(&self, level: &str, data: Value) {
        if self.log_level != LOGS_OFF && log_rank(level).is_some_and(|rank| rank >= self.log_level) {
            let _ = self.out.send(log_bytes(level, data)).await;
        }
    }
}

/// Whether a client whose `_meta` declared `capabilities` supports `capability`.
pub(crate) fn declares(capabilities: &Value, capability: &str) -> bool {
    capabilities.get(capability).is_some_and(|v| !v.is_null())
}

/// The capability a question to the client needs, if the client declared it: only sampling,
/// elicitation and roots travel as input requests, and only to a client that declared the
/// capability (a server must not send others).
pub(crate) fn input_capability(method: &str, capabilities: &Value) -> Result<&'static str, PeerError> {
    match capability_for(method) {
        Some(capability) if declares(capabilities, capability) => Ok(capability),
        _ => Err(PeerError::Unsupported(method.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_lazy_outbox_opens_its_channel_at_the_first_message() {
        let (outbox, inbox) = Outbox::lazy();
        assert!(inbox.take().is_none(), "nothing sent, no channel");
        assert!(outbox.send(b"one".to_vec()).await);
        assert!(outbox.clone().send(b"two".to_vec()).await, "clones share the channel");
        let mut rx = inbox.take().expect("opened by the first message");
        assert!(inbox.take().is_none(), "the receiver is given once");
        assert_eq!(rx.recv().await.unwrap(), b"one");
        assert_eq!(rx.recv().await.unwrap(), b"two");
        drop(outbox);
        drop(inbox);
        assert!(rx.recv().await.is_none(), "closed when the outbox and the inbox are gone");
    }

    #[tokio::test]
    async fn first_message_waits_for_a_send_from_another_task() {
        let (outbox, inbox) = Outbox::lazy();
        let waiting = tokio::spawn(async move { inbox.first_message().await.recv().await });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "nothing sent yet");
        assert!(outbox.send(b"progress".to_vec()).await);
        assert_eq!(waiting.await.unwrap().unwrap(), b"progress");
    }

    #[tokio::test]
    async fn open_gives_a_receiver_before_anything_is_sent() {
        let (outbox, inbox) = Outbox::lazy();
        let mut rx = inbox.open();
        assert!(outbox.send(b"later".to_vec()).await);
        assert_eq!(rx.recv().await.unwrap(), b"later");
        let mut again = inbox.open();
        assert!(again.recv().await.is_none(), "a second open gives a closed receiver");
    }

    #[tokio::test]
    async fn an_outbox_made_from_a_channel_writes_to_it_and_reports_a_closed_one() {
        let (tx, mut rx) = mpsc::channel(4);
        let outbox = Outbox::from(tx);
        assert!(outbox.send(b"line".to_vec()).await);
        assert_eq!(rx.recv().await.unwrap(), b"line");
        drop(rx);
        assert!(!outbox.send(b"lost".to_vec()).await);
    }

    #[tokio::test]
    async fn a_question_is_forgotten_when_its_call_is_dropped_while_it_waits() {
        let session = Arc::new(Session::new(Some(random_token())));
        session.initialize("2025-11-25", crate::session::ClientInfo::new(["elicitation"], "c", "1"));
        let pending = Arc::new(PendingRequests::default());
        let (tx, mut rx) = mpsc::channel(4);
        let peer = ChannelPeer::new(tx, session, Arc::clone(&pending), None, None, Duration::from_secs(3600));
        let asking = tokio::spawn(async move { peer.request("elicitation/create", json!({})).await });
        // The question went out and waits.
        assert!(rx.recv().await.is_some());
        assert_eq!(pending.len(), 1);
        // The call is dropped (its client went away, or it was cancelled): nothing is kept.
        asking.abort();
        assert!(asking.await.unwrap_err().is_cancelled());
        assert!(pending.is_empty(), "an abandoned question is forgotten");
    }
}
