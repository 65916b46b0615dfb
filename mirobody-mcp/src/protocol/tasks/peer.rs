//! The client of a call that may become a task, and the loop that decides when it does.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use async_trait::async_trait;
use mirobody_core::{ClientPeer, PeerError};
use serde_json::{Map, Value, json};

use super::LiveTask;
use crate::jsonrpc::RpcError;
pub(crate) use crate::protocol::peer::check_answer;
use crate::protocol::peer::{Notifications, capability_for, log_bytes, progress_bytes};
use crate::session::{LOGS_OFF, lock, log_rank};

#[derive(Default)]
struct Round {
    // Set when the call became a task: questions go to the task from then on.
    escalated: bool,
    asked: Vec<(String, Value)>,
    used: Map<String, Value>,
    invalid: Option<RpcError>,
}

// What became of a question.
enum Asked {
    // The retry brought its answer.
    Answered(Value),
    // Recorded for the round's `input_required` result (or its answer did not fit).
    EndsRound,
    // The call is a task: the question waits in it.
    InTask,
}

/// The client of a call of a tool with task support. Until the call becomes a task it is a
/// 2026-07-28 round's client (answers from the retry; an unanswered question ends the round);
/// after, a question waits in the task for `tasks/update`.
pub(crate) struct TaskPeer {
    answers: Map<String, Value>,
    capabilities: Value,
    task: Arc<LiveTask>,
    // The request's stream, until the call becomes a task.
    notifications: Mutex<Option<Notifications>>,
    round: Mutex<Round>,
    unnamed: AtomicUsize,
}

impl TaskPeer {
    pub(crate) fn new(
        answers: Map<String, Value>,
        capabilities: Value,
        task: Arc<LiveTask>,
        notifications: Option<Notifications>,
    ) -> Self {
        TaskPeer {
            answers,
            capabilities,
            task,
            notifications: Mutex::new(notifications),
            round: Mutex::default(),
            unnamed: AtomicUsize::new(0),
        }
    }

    fn escalate(&self) {
        lock(&self.round).escalated = true;
        lock(&self.notifications).take();
    }

    async fn ask(&self, key: String, method: &str, params: Value) -> Result<Value, PeerError> {
        let params = if params.is_null() { json!({}) } else { params };
        let request = json!({"method": method, "params": params});
        match self.ask_in_round(&key, method, &request) {
            Asked::Answered(answer) => Ok(answer),
            Asked::InTask => self.task.ask(key, request).await.ok_or(PeerError::NoAnswer),
            // This round ends here; see `drive`.
            Asked::EndsRound => std::future::pending().await,
        }
    }

    fn ask_in_round(&self, key: &str, method: &str, request: &Value) -> Asked {
        let mut round = lock(&self.round);
        if round.escalated {
            return Asked::InTask;
        }
        match self.answers.get(key) {
            Some(answer) => match check_answer(method, answer) {
                Ok(()) => {
                    round.used.insert(key.to_owned(), answer.clone());
                    return Asked::Answered(answer.clone());
                }
                Err(why) => {
                    round.invalid.get_or_insert_with(|| {
                        RpcError::invalid_params(format!("Invalid params: inputResponses[\"{key}\"] {why} ({method})"))
                    });
                }
            },
            None if !round.asked.iter().any(|(k, _)| k == key) => round.asked.push((key.to_owned(), request.clone())),
            None => {}
        }
        Asked::EndsRound
    }

    fn allowed(&self, method: &str) -> Result<&'static str, PeerError> {
        match capability_for(method) {
            Some(capability) if self.supports(capability) => Ok(capability),
            _ => Err(PeerError::Unsupported(method.to_owned())),
        }
    }

    fn stream(&self) -> Option<(crate::protocol::peer::Outbox, Option<Value>, u8)> {
        let notifications = lock(&self.notifications);
        notifications.as_ref().map(|n| (n.out.clone(), n.progress_token.clone(), n.log_level))
    }
}

#[async_trait]
impl ClientPeer for TaskPeer {
    async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some((out, Some(token), _)) = self.stream() {
            let _ = out.send(progress_bytes(&token, progress, total, message)).await;
        }
    }

    async fn log(&self, level: &str, data: Value) {
        if let Some((out, _, wanted)) = self.stream()
            && wanted != LOGS_OFF
            && log_rank(level).is_some_and(|rank| rank >= wanted)
        {
            let _ = out.send(log_bytes(level, data)).await;
        }
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, PeerError> {
        let capability = self.allowed(method)?;
        let n = self.unnamed.fetch_add(1, Ordering::Relaxed) + 1;
        self.ask(format!("{capability}-{n}"), method, params).await
    }

    async fn request_keyed(&self, key: &str, method: &str, params: Value) -> Result<Value, PeerError> {
        self.allowed(method)?;
        self.ask(key.to_owned(), method, params).await
    }

    fn supports(&self, capability: &str) -> bool {
        self.capabilities.get(capability).is_some_and(|v| !v.is_null())
    }

    fn become_task(&self) {
        self.escalate();
    }
}

/// How the request part of a call that may become a task ended.
pub(crate) enum Escalation<T> {
    /// The handler finished.
    Done(T),
    /// The handler asked before becoming a task: the questions and the answers used.
    InputRequired { requests: Vec<(String, Value)>, answers: Map<String, Value> },
    /// An answer the retry brought does not fit its question.
    Invalid(RpcError),
    /// The call is a task now: its future goes on in the background.
    Task,
}

/// Polls `job` (a handler using `peer` as its client) until it finishes, asks before becoming
/// a task, or becomes one: by `become_task`, or by still working when `budget` has passed.
pub(crate) async fn drive<F: Future + Unpin>(peer: &TaskPeer, job: &mut F, budget: Duration) -> Escalation<F::Output> {
    let mut deadline = std::pin::pin!(tokio::time::sleep(budget));
    std::future::poll_fn(|cx| {
        if let Poll::Ready(output) = std::pin::Pin::new(&mut *job).poll(cx) {
            return Poll::Ready(Escalation::Done(output));
        }
        let mut round = lock(&peer.round);
        if let Some(error) = round.invalid.take() {
            return Poll::Ready(Escalation::Invalid(error));
        }
        if round.escalated {
            return Poll::Ready(Escalation::Task);
        }
        if !round.asked.is_empty() {
            let requests = std::mem::take(&mut round.asked);
            let answers = std::mem::take(&mut round.used);
            return Poll::Ready(Escalation::InputRequired { requests, answers });
        }
        if deadline.as_mut().poll(cx).is_ready() {
            drop(round);
            peer.escalate();
            return Poll::Ready(Escalation::Task);
        }
        Poll::Pending
    })
    .await
}
