//! Where tasks are kept: a call that runs in the background, polled and cancelled by the
//! caller who started it (the MCP tasks extension). The transport runs them; a [`TaskStore`]
//! keeps their records, so a finished task's result outlives the connection, and with a
//! database the process.

use async_trait::async_trait;
use serde_json::Value;

use mirobody_core::backend::BackendResult;

/// Where a task stands (MCP task `status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskState {
    /// Running.
    Working,
    /// Waiting for the client to answer questions.
    InputRequired,
    /// Finished with a result (an error result included).
    Completed,
    /// Ended by a protocol-level error, or by the end of the process that ran it.
    Failed,
    /// Cancelled by its caller.
    Cancelled,
}

impl TaskState {
    /// Every state.
    pub const ALL: [TaskState; 5] =
        [TaskState::Working, TaskState::InputRequired, TaskState::Completed, TaskState::Failed, TaskState::Cancelled];

    /// Its name on the wire (`working`, `input_required`, `completed`, `failed`, `cancelled`).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Working => "working",
            TaskState::InputRequired => "input_required",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
        }
    }

    /// The state a name gives, if any.
    ///
    /// ```
    /// use mirobody_ports::TaskState;
    ///
    /// assert_eq!(TaskState::from_name("input_required"), Some(TaskState::InputRequired));
    /// assert!(TaskState::Cancelled.is_terminal() && !TaskState::Working.is_terminal());
    /// ```
    pub fn from_name(name: &str) -> Option<TaskState> {
        TaskState::ALL.into_iter().find(|state| state.as_str() == name)
    }

    /// Whether the task has ended (completed, failed or cancelled): nothing changes it after.
    pub fn is_terminal(self) -> bool {
        matches!(self, TaskState::Completed | TaskState::Failed | TaskState::Cancelled)
    }
}

/// How the owner key of every anonymous caller's task begins: each such task is owned by a
/// capability of its own, and [`TaskStore::live_anonymous`] counts them together.
pub const ANONYMOUS_OWNER_PREFIX: &str = "anonymous:";

/// One task as a [`TaskStore`] keeps it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The task's id: random, unguessable.
    pub id: String,
    /// Who started it, and so who may see it: `user:<id>` for a signed-in caller; for an
    /// anonymous one, a key of this task alone ([`ANONYMOUS_OWNER_PREFIX`] and a capability only
    /// the caller who got the task's id holds), since anonymous callers cannot be told apart.
    pub owner: String,
    /// The tool called.
    pub tool: String,
    /// Where it stands.
    pub state: TaskState,
    /// When it was created, in milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// When its state last changed.
    pub updated_ms: i64,
    /// When it is forgotten, result and all.
    pub expires_ms: i64,
    /// Until when the process running it vouches for it: a task not ended whose lease has
    /// passed was running in a process that is gone, and reads as failed.
    pub lease_until_ms: i64,
    /// The questions waiting for the client's answers (`inputRequests`), while input is
    /// required.
    pub input_requests: Option<Value>,
    /// How it ended: `{"result": …}` (completed) or `{"error": {code, message}}` (failed).
    pub outcome: Option<Value>,
}

impl TaskRecord {
    /// A new working task.
    pub fn new(id: String, owner: String, tool: String, now_ms: i64, ttl_ms: i64, lease_ms: i64) -> Self {
        TaskRecord {
            id,
            owner,
            tool,
            state: TaskState::Working,
            created_ms: now_ms,
            updated_ms: now_ms,
            expires_ms: now_ms.saturating_add(ttl_ms),
            lease_until_ms: now_ms.saturating_add(lease_ms),
            input_requests: None,
            outcome: None,
        }
    }

    /// The state as a reader sees it at `now_ms`: a task that has not ended and whose lease
    /// has passed is failed (the process running it is gone).
    pub fn state_at(&self, now_ms: i64) -> TaskState {
        if !self.state.is_terminal() && self.lease_until_ms < now_ms { TaskState::Failed } else { self.state }
    }
}

/// Keeps task records. Every read is scoped to the owner: a task of another caller is not
/// found.
#[async_trait]
pub trait TaskStore: Send + Sync {
    /// Writes a record: creates it, or replaces the one with its id and owner, unless that one
    /// has ended (an ended task never changes, so a cancel written by one instance stands
    /// against the end another instance writes after).
    async fn save(&self, task: &TaskRecord) -> BackendResult<()>;
    /// The record with this id, if `owner` started it and it has not expired at `now_ms`.
    async fn load(&self, id: &str, owner: &str, now_ms: i64) -> BackendResult<Option<TaskRecord>>;
    /// How many of `owner`'s tasks are live at `now_ms` (not ended, lease not passed).
    async fn live(&self, owner: &str, now_ms: i64) -> BackendResult<u64>;
    /// How many tasks of anonymous callers (owners beginning with [`ANONYMOUS_OWNER_PREFIX`])
    /// are live at `now_ms`, all together: anonymous callers share one bound.
    async fn live_anonymous(&self, now_ms: i64) -> BackendResult<u64>;
    /// Forgets at most `max` of the records expired at `now_ms` (a bounded batch, so that one
    /// purge never holds the store long); how many it forgot.
    async fn purge(&self, now_ms: i64, max: u64) -> BackendResult<u64>;
    /// How many of `owner`'s records are kept at `now_ms` (not expired, ended or not), for the
    /// bound on what one caller keeps. The default counts none: a store that keeps records
    /// for others should count them.
    async fn kept(&self, owner: &str, now_ms: i64) -> BackendResult<u64> {
        let _ = (owner, now_ms);
        Ok(0)
    }
    /// How many records of anonymous callers (owners beginning with
    /// [`ANONYMOUS_OWNER_PREFIX`]) are kept at `now_ms`, all together, ended or not: anonymous
    /// callers share one bound on what they keep. The default counts none, like
    /// [`kept`](Self::kept).
    async fn kept_anonymous(&self, now_ms: i64) -> BackendResult<u64> {
        let _ = now_ms;
        Ok(0)
    }
}
