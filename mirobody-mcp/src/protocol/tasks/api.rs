//! Tasks in-process: an application that embeds the engine starts a call as a task, follows
//! it, answers its questions and cancels it, as a client does over MCP, with the same
//! ownership, bounds and store.

use std::sync::Arc;

use mirobody_core::{CallError, TaskSupport, UserInfo};
use mirobody_ports::TaskRecord;
use serde_json::{Map, Value};

use super::{Escalation, TaskPeer, TaskRefusal, drive, owner_of};
use crate::protocol::McpEngine;
use crate::protocol::rev_2026_07_28::mrtr::Round;

/// Why a task operation was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// The call cannot start: an unknown tool, the caller, or the arguments (see
    /// [`CallError`]).
    #[error(transparent)]
    Call(#[from] CallError),
    /// The tool's calls are never tasks ([`TaskSupport::Forbidden`]).
    #[error("tool '{0}' does not run as a task")]
    NotATaskTool(String),
    /// No task with that id is the caller's, or it expired.
    #[error("unknown task '{0}'")]
    Unknown(String),
    /// The caller has this many tasks running already.
    #[error("too many running tasks: at most {0} per caller")]
    TooMany(u64),
    /// The caller keeps this many task records already (running or ended, until they expire).
    #[error("too many task results kept: at most {0} per caller")]
    TooManyKept(u64),
    /// An answer does not fit its question, or the store failed.
    #[error("{0}")]
    Refused(String),
}

impl TaskError {
    fn of(refusal: TaskRefusal, id: &str) -> TaskError {
        match refusal {
            TaskRefusal::Unknown => TaskError::Unknown(id.to_owned()),
            TaskRefusal::TooMany(max) => TaskError::TooMany(max),
            TaskRefusal::TooManyKept(max) => TaskError::TooManyKept(max),
            TaskRefusal::Rpc(error) => TaskError::Refused(error.message),
        }
    }
}

impl McpEngine {
    /// Starts a call of `name` as a task of `user`, returning at once with its record (already
    /// in the store); the handler goes on in the background on the current tokio runtime.
    /// A question it asks waits in the task's `input_requests` until
    /// [`McpEngine::answer_task`] brings its answer.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use mirobody_core::{Args, Registry, TaskSupport, Tool, ToolContext, ToolResult, UserInfo};
    /// use mirobody_ports::TaskState;
    /// use mirobody_mcp::McpEngine;
    ///
    /// async fn import(_: Args, _: &UserInfo, _: &ToolContext<'_>) -> ToolResult {
    ///     tokio::time::sleep(Duration::from_millis(50)).await;
    ///     ToolResult::text("imported")
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let tool = Tool::new("import", "Imports a large file.").task_support(TaskSupport::Optional).handler(import);
    /// let engine = McpEngine::builder(Arc::new(Registry::builder().tool(tool).build().unwrap())).build();
    /// let ada = UserInfo::authenticated("ada");
    /// let task = engine.start_task("import", serde_json::json!({}), &ada).await.unwrap();
    /// assert_eq!(task.state, TaskState::Working);
    /// tokio::time::sleep(Duration::from_millis(200)).await;
    /// let done = engine.task(&task.id, &ada).await.unwrap();
    /// assert_eq!(done.state, TaskState::Completed);
    /// assert_eq!(done.outcome.unwrap()["result"]["content"][0]["text"], "imported");
    /// # }
    /// ```
    pub async fn start_task(&self, name: &str, arguments: Value, user: &UserInfo) -> Result<TaskRecord, TaskError> {
        let support = self.inner.registry.get(name).map(|tool| tool.spec().task_support_level());
        if support == Some(TaskSupport::Forbidden) {
            return Err(TaskError::NotATaskTool(name.to_owned()));
        }
        let tasks = &self.inner.tasks;
        tasks.admit(user).await.map_err(|r| TaskError::of(r, ""))?;
        let live = tasks.prepare(user, name);
        let capabilities = serde_json::json!({"elicitation": {}, "sampling": {}, "roots": {}});
        let peer = Arc::new(TaskPeer::new(Map::new(), capabilities, live.clone(), None));
        mirobody_core::ClientPeer::become_task(&*peer);
        let access = self.call_access(user, name);
        let mut job = self.task_job(name.to_owned(), arguments, user.clone(), peer.clone(), access.clone());
        let started = match drive(&peer, &mut job, std::time::Duration::ZERO).await {
            // Refused before the handler ran: nothing to keep.
            Escalation::Round(Round::Done(Err(error))) => return Err(TaskError::Call(error)),
            Escalation::Round(Round::Done(outcome)) => tasks.keep_finished(live, outcome).await,
            Escalation::Task => tasks.launch(live, job, access).await,
            // A task from the first poll asks through the task, never in a round: not reached.
            Escalation::Round(Round::InputRequired { .. } | Round::Invalid(_)) => {
                return Err(TaskError::Refused("the call asked outside its task".to_owned()));
            }
        };
        started.map_err(|e| TaskError::Refused(e.message))
    }

    /// `user`'s task, as it stands (a task whose process is gone reads as failed).
    pub async fn task(&self, id: &str, user: &UserInfo) -> Result<TaskRecord, TaskError> {
        self.inner.tasks.get(id, &owner_of(user, id)).await.map_err(|r| TaskError::of(r, id))
    }

    /// Answers questions `user`'s task is asking (`key` to answer, as in its `input_requests`);
    /// answers to questions it is not asking are ignored.
    pub async fn answer_task(&self, id: &str, user: &UserInfo, answers: Map<String, Value>) -> Result<(), TaskError> {
        self.inner.tasks.update(id, &owner_of(user, id), answers).await.map_err(|r| TaskError::of(r, id))
    }

    /// Cancels `user`'s task, dropping its handler; cancelling an ended task does nothing.
    pub async fn cancel_task(&self, id: &str, user: &UserInfo) -> Result<(), TaskError> {
        self.inner.tasks.cancel(id, &owner_of(user, id)).await.map_err(|r| TaskError::of(r, id))
    }

    /// How many tasks this instance holds live now (running, or waiting for their client's
    /// input), for a gauge.
    pub fn live_tasks(&self) -> usize {
        crate::session::lock(&self.inner.tasks.live).len()
    }
}
