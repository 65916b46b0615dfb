//! The client as a tool sees it: progress, logs and questions, sent on the stream of the call
//! that asked, with the answers matched back by request id.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mirobody_core::{ClientPeer, PeerError};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::jsonrpc::{self, Id};
use crate::session::{Session, lock, random_token};

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
pub struct PendingRequests {
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
    pub fn abandon(&self, session: Option<&str>) {
        lock(&self.waiting).retain(|_, p| p.session.as_deref() != session);
    }

    /// Delivers the client's answer; false when no request of this session and user waits
    /// under that id.
    pub fn complete(&self, id: &Id, session: Option<&str>, user: Option<&str>, outcome: Result<Value, Value>) -> bool {
        let Id::String(key) = id else { return false };
        let mut waiting = lock(&self.waiting);
        let matches = waiting.get(key).is_some_and(|p| p.session.as_deref() == session && p.user.as_deref() == user);
        if !matches {
            return false;
        }
        waiting.remove(key).is_some_and(|p| p.answer.send(outcome).is_ok())
    }
}

/// The client capability a server-to-client method needs (`elicitation`, `sampling`, `roots`);
/// `None` for methods a server does not send.
pub fn capability_for(method: &str) -> Option<&'static str> {
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

/// A [`ClientPeer`] that writes to the stream of one call.
pub struct ChannelPeer {
    out: mpsc::Sender<Vec<u8>>,
    session: Arc<Session>,
    pending: Arc<PendingRequests>,
    user: Option<String>,
    progress_token: Option<Value>,
    answer_timeout: Duration,
}

impl ChannelPeer {
    /// A peer for one call of `session`, writing to `out`.
    pub fn new(
        out: mpsc::Sender<Vec<u8>>,
        session: Arc<Session>,
        pending: Arc<PendingRequests>,
        user: Option<String>,
        progress_token: Option<Value>,
        answer_timeout: Duration,
    ) -> Self {
        ChannelPeer { out, session, pending, user, progress_token, answer_timeout }
    }

    async fn send(&self, message: Vec<u8>) {
        // The receiver is gone only when the call's stream is closed; nothing is left to tell.
        let _ = self.out.send(message).await;
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
        self.send(jsonrpc::request_bytes(&Id::String(key.clone()), method, &params)).await;
        let outcome = tokio::time::timeout(self.answer_timeout, answer).await;
        self.pending.forget(&key);
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
