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
use crate::protocol::peer::{Notifications, declares, input_capability};
use crate::protocol::rev_2026_07_28::mrtr::{Round, RoundState};
use crate::session::lock;

#[derive(Default)]
struct Phase {
    // Set when the call became a task: questions go to the task from then on.
    escalated: bool,
    // Until then, what the round asked and used.
    round: RoundState,
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
    phase: Mutex<Phase>,
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
            phase: Mutex::default(),
            unnamed: AtomicUsize::new(0),
        }
    }

    fn escalate(&self) {
        lock(&self.phase).escalated = true;
        lock(&self.notifications).take();
    }

    async fn ask(&self, key: String, method: &str, params: Value) -> Result<Value, PeerError> {
        let in_round = {
            let mut phase = lock(&self.phase);
            (!phase.escalated).then(|| phase.round.ask(&self.answers, &key, method, params.clone()))
        };
        match in_round {
            Some(Some(answer)) => Ok(answer),
            // This round ends here; see `drive`.
            Some(None) => std::future::pending().await,
            None => {
                let params = if params.is_null() { json!({}) } else { params };
                let request = json!({"method": method, "params": params});
                self.task.ask(key, request).await.ok_or(PeerError::NoAnswer)
            }
        }
    }

    // The request's stream, while the call is not a task.
    fn stream(&self) -> Option<Notifications> {
        lock(&self.notifications).clone()
    }
}

#[async_trait]
impl ClientPeer for TaskPeer {
    async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(n) = self.stream() {
            n.progress(progress, total, message).await;
        }
    }

    async fn log(&self, level: &str, data: Value) {
        if let Some(n) = self.stream() {
            n.log(level, data).await;
        }
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, PeerError> {
        let capability = input_capability(method, &self.capabilities)?;
        let n = self.unnamed.fetch_add(1, Ordering::Relaxed) + 1;
        self.ask(format!("{capability}-{n}"), method, params).await
    }

    async fn request_keyed(&self, key: &str, method: &str, params: Value) -> Result<Value, PeerError> {
        input_capability(method, &self.capabilities)?;
        self.ask(key.to_owned(), method, params).await
    }

    fn supports(&self, capability: &str) -> bool {
        declares(&self.capabilities, capability)
    }

    fn become_task(&self) {
        self.escalate();
    }
}

/// How the request part of a call that may become a task ended.
pub(crate) enum Escalation<T> {
    /// As a 2026-07-28 round: the handler finished, asked before becoming a task, or was
    /// answered wrongly.
    Round(Round<T>),
    /// The call is a task now: its future goes on in the background.
    Task,
}

/// Polls `job` (a handler using `peer` as its client) until it finishes, asks before becoming
/// a task, or becomes one: by `become_task`, or by still working when `budget` has passed.
pub(crate) async fn drive<F: Future + Unpin>(peer: &TaskPeer, job: &mut F, budget: Duration) -> Escalation<F::Output> {
    let mut deadline = std::pin::pin!(tokio::time::sleep(budget));
    std::future::poll_fn(|cx| {
        if let Poll::Ready(output) = std::pin::Pin::new(&mut *job).poll(cx) {
            return Poll::Ready(Escalation::Round(Round::Done(output)));
        }
        let mut phase = lock(&peer.phase);
        if let Some(end) = phase.round.end() {
            return Poll::Ready(Escalation::Round(end));
        }
        if phase.escalated {
            return Poll::Ready(Escalation::Task);
        }
        if deadline.as_mut().poll(cx).is_ready() {
            drop(phase);
            peer.escalate();
            return Poll::Ready(Escalation::Task);
        }
        Poll::Pending
    })
    .await
}
