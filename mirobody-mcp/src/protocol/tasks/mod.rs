//! Tasks (the MCP tasks extension, `io.modelcontextprotocol/tasks`): a call that goes on in the
//! background, answered at once with a handle its caller polls, answers questions through, or
//! cancels.
//!
//! A call of a tool with task support starts like any other, in the request's own future, with
//! a [`TaskPeer`] as its client. It becomes a task when its handler is still working after the
//! sync budget, or when it calls `ToolContext::become_task`; its future then moves to a tokio
//! task of its own, and its record to the [`TaskStore`] before the handle is returned (so a
//! `tasks/get` right after finds it). A question asked before that is a 2026-07-28
//! `input_required` result like any other call's; one asked after waits in the task's
//! `inputRequests` until `tasks/update` brings its answer.
//!
//! The records are the store's; the running futures, their questions and their abort handles
//! are this process's ([`Tasks`]). A finished task's record is what every later read sees, here
//! or on another instance sharing the store; a task not ended whose process is gone reads as
//! failed once its lease passes (a running task renews it). Answers and cancellations for a
//! task running in another instance reach it through the instances' shared sessions
//! ([`SharedSessions`]), when they share them.

mod api;
mod memory;
mod peer;
mod wire;

pub use api::TaskError;
pub use memory::MemoryTaskStore;
pub(crate) use peer::{Escalation, TaskPeer, drive};
pub(crate) use wire::task_json;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use mirobody_core::{CallError, Content, ToolResult, UserInfo};
use mirobody_ports::{ANONYMOUS_OWNER_PREFIX, AccessOutcome, TaskRecord, TaskState, TaskStore};
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;
use tokio::task::{AbortHandle, JoinHandle};

use crate::jsonrpc::{RpcError, code};
use crate::protocol::access::CallAccess;
use crate::protocol::changes::{Change, ChangeNotifier};
use crate::protocol::outcome::{CallFailure, call_failure};
use crate::session::{Event, SharedSessions, lock, random_token};
use tracing::Instrument;

/// How long `tasks/update` for a task running in another instance waits for it to take the
/// answers before acknowledging them.
const ANSWER_WAIT: Duration = Duration::from_secs(2);

/// The most expired records one purge forgets: a bounded batch, so that no purge holds the
/// store long; a full batch is followed by another soon after.
const PURGE_BATCH: u64 = 1_000;

/// The extension's identifier, under `capabilities.extensions`.
pub(crate) const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// How tasks are kept and bounded. It reads from configuration too (durations by
/// [`human_duration`](crate::human_duration)), as mirobody-server's `tasks` section.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct TaskOptions {
    /// How long a task (and its result) is kept after it is created (`ttlMs`).
    #[serde(deserialize_with = "crate::human_duration::deserialize")]
    pub ttl: Duration,
    /// How often a client should poll (`pollIntervalMs`).
    #[serde(deserialize_with = "crate::human_duration::deserialize")]
    pub poll_interval: Duration,
    /// The most tasks one caller may have running at once.
    pub max_live_per_caller: u64,
    /// The most task records one signed-in caller may have kept at once, running or ended
    /// (each is kept for `ttl`): what a caller starting short tasks in a loop can make the
    /// store hold. Anonymous callers, who cannot be told apart, share one such bound.
    pub max_kept_per_caller: u64,
    /// How long a call of a tool with optional task support runs in its request before it
    /// becomes a task.
    #[serde(deserialize_with = "crate::human_duration::deserialize")]
    pub sync_budget: Duration,
    /// How long a running task's record vouches for it without being renewed: after that, a
    /// task whose process died reads as failed.
    #[serde(deserialize_with = "crate::human_duration::deserialize")]
    pub lease: Duration,
}

impl Default for TaskOptions {
    fn default() -> Self {
        TaskOptions {
            ttl: Duration::from_secs(3600),
            poll_interval: Duration::from_millis(500),
            max_live_per_caller: 32,
            max_kept_per_caller: 1_000,
            sync_budget: Duration::from_millis(200),
            lease: Duration::from_secs(30),
        }
    }
}

impl TaskOptions {
    /// The same options with another time to live.
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The same options with another bound on running tasks per caller.
    pub fn with_max_live_per_caller(mut self, max: u64) -> Self {
        self.max_live_per_caller = max;
        self
    }

    /// The same options with another bound on the records one caller keeps.
    pub fn with_max_kept_per_caller(mut self, max: u64) -> Self {
        self.max_kept_per_caller = max;
        self
    }

    /// The same options with another sync budget.
    pub fn with_sync_budget(mut self, budget: Duration) -> Self {
        self.sync_budget = budget;
        self
    }

    /// The same options with another lease.
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }
}

// The one wall clock (core's), under the name the tasks engine imports it by.
pub(crate) use mirobody_core::clock::now_ms;

/// The key the task `task_id` of `user` is kept under: `user:<id>` for a signed-in caller.
/// Anonymous callers cannot be told apart, so an anonymous task is owned by its own unguessable
/// id (128 random bits): only the caller it was given to can read, answer or cancel it, and
/// for every other caller it does not exist.
pub(crate) fn owner_of(user: &UserInfo, task_id: &str) -> String {
    match user.user_id() {
        Some(id) => format!("user:{id}"),
        None => format!("{ANONYMOUS_OWNER_PREFIX}{task_id}"),
    }
}

fn is_anonymous(owner: &str) -> bool {
    owner.starts_with(ANONYMOUS_OWNER_PREFIX)
}

/// A task id as the log shows it: its first characters, enough to follow one task through
/// the log; the whole id is an anonymous task's capability, which no log line carries.
pub(crate) fn log_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// Whether a request negotiated the extension; `capabilities` is its `_meta` client
/// capabilities.
pub(crate) fn negotiated(capabilities: &Value) -> bool {
    let negotiated = capabilities.get("extensions").and_then(|e| e.get(EXTENSION));
    negotiated.is_some_and(|v| !v.is_null())
}

/// Whose task status changes a `subscriptions/listen` stream carries: its signed-in caller's,
/// when the request negotiated the extension. None for an anonymous caller: an anonymous task
/// is nobody's to follow but the one who holds its id, which polls it.
pub(crate) fn listens_for_tasks(capabilities: &Value, user: &UserInfo) -> Option<String> {
    let id = user.user_id()?;
    negotiated(capabilities).then(|| format!("user:{id}"))
}

/// A question waiting in a task for its answer.
struct Pending {
    key: String,
    request: Value,
    answer: oneshot::Sender<Value>,
}

struct LiveState {
    record: TaskRecord,
    pending: Vec<Pending>,
    abort: Option<AbortHandle>,
}

/// A task of this process: its record as it stands, its questions, its abort handle.
pub(crate) struct LiveTask {
    // The record's id and owner, which never change: read without locking or copying it.
    id: String,
    owner: String,
    state: Mutex<LiveState>,
    store: Arc<dyn TaskStore>,
    // Where its status changes are announced (its owner's listen streams), and how.
    changes: ChangeNotifier,
    options: TaskOptions,
    // Saves one at a time, each of the state as it stands then: the last save is the latest.
    saving: tokio::sync::Mutex<()>,
    // The call's access record, written when the task ends (with its real outcome by the
    // call itself, or here when it is cancelled or expires).
    access: OnceLock<Arc<CallAccess>>,
}

impl LiveTask {
    fn new(record: TaskRecord, tasks: &Tasks) -> Arc<LiveTask> {
        Arc::new(LiveTask {
            id: record.id.clone(),
            owner: record.owner.clone(),
            state: Mutex::new(LiveState { record, pending: Vec::new(), abort: None }),
            store: tasks.store.clone(),
            changes: tasks.changes.clone(),
            options: tasks.options.clone(),
            saving: tokio::sync::Mutex::new(()),
            access: OnceLock::new(),
        })
    }

    pub(crate) fn record(&self) -> TaskRecord {
        lock(&self.state).record.clone()
    }

    // Saves the record as it stands and tells its owner's listen streams.
    async fn persist(&self) -> Result<(), RpcError> {
        let _one_at_a_time = self.saving.lock().await;
        let record = self.record();
        self.store.save(&record).await.map_err(|e| {
            tracing::error!(task = %log_id(&record.id), error = %e, "could not save a task");
            RpcError::new(code::INTERNAL_ERROR, "Internal error: the task could not be saved")
        })?;
        self.announce(record);
        Ok(())
    }

    // Tells the owner's listen streams of the record as it stands; an anonymous task is never
    // announced (no listen stream is an anonymous caller's, and nothing of it travels).
    fn announce(&self, record: TaskRecord) {
        if is_anonymous(&record.owner) {
            return;
        }
        let task = task_json(&record, &self.options, true);
        self.changes.notify(Change::TaskStatus { owner: record.owner, task });
    }

    // Renews the lease: a save nobody is told about.
    async fn renew(&self, lease: Duration) {
        let _one_at_a_time = self.saving.lock().await;
        let record = {
            let mut state = lock(&self.state);
            state.record.lease_until_ms = now_ms() + lease.as_millis() as i64;
            state.record.clone()
        };
        if let Err(e) = self.store.save(&record).await {
            tracing::warn!(task = %log_id(&record.id), error = %e, "could not renew a task's lease");
        }
    }

    /// Waits in the task for the answer to a question (see [`TaskPeer`]).
    pub(crate) async fn ask(&self, key: String, request: Value) -> Option<Value> {
        let (tx, rx) = oneshot::channel();
        {
            let mut state = lock(&self.state);
            if state.record.state.is_terminal() {
                return None;
            }
            state.pending.retain(|p| p.key != key);
            state.pending.push(Pending { key, request, answer: tx });
            state.set_questions(now_ms());
        }
        // A failed save is logged; the question still waits here for this process's readers.
        let _ = self.persist().await;
        rx.await.ok()
    }

    // Ends the task: the ended record saved first, then shown here (so nobody sees an end
    // that a crash could still lose), its questions dropped, its owner told. `abort` stops its
    // future (a cancel); the future's own end passes false. False when it had ended already.
    async fn end_with(&self, state: TaskState, outcome: Option<Value>, abort: bool) -> Result<bool, RpcError> {
        let _one_at_a_time = self.saving.lock().await;
        let mut record = {
            let live = lock(&self.state);
            if live.record.state.is_terminal() {
                return Ok(false);
            }
            live.record.clone()
        };
        record.state = state;
        record.outcome = outcome;
        record.input_requests = None;
        record.updated_ms = now_ms();
        self.store.save(&record).await.map_err(|e| {
            tracing::error!(task = %log_id(&record.id), error = %e, "could not save a task's end");
            RpcError::new(code::INTERNAL_ERROR, "Internal error: the task could not be saved")
        })?;
        let handle = {
            let mut live = lock(&self.state);
            live.record = record.clone();
            live.pending.clear();
            live.abort.take()
        };
        if let Some(handle) = handle.filter(|_| abort) {
            handle.abort();
        }
        if state == TaskState::Cancelled
            && let Some(access) = self.access.get()
        {
            access.finish(AccessOutcome::Cancelled);
        }
        self.announce(record);
        Ok(true)
    }
}

impl LiveState {
    // The record's questions and state from the questions pending.
    fn set_questions(&mut self, now: i64) {
        let before = self.record.state;
        if self.pending.is_empty() {
            self.record.input_requests = None;
            self.record.state = TaskState::Working;
        } else {
            let requests: Map<String, Value> =
                self.pending.iter().map(|p| (p.key.clone(), p.request.clone())).collect();
            self.record.input_requests = Some(Value::Object(requests));
            self.record.state = TaskState::InputRequired;
        }
        if before != self.record.state || self.record.state == TaskState::InputRequired {
            self.record.updated_ms = now;
        }
    }
}

/// How a call's outcome ends its task: completed with a result (a tool's own error included),
/// or failed with a protocol-level error.
fn outcome_of(outcome: Result<ToolResult, CallError>) -> (TaskState, Value) {
    let result = match outcome.map_err(call_failure) {
        Ok(result) | Err(CallFailure::Result(result)) => result,
        Err(CallFailure::Error(error, _)) => return (TaskState::Failed, json!({"error": error_json(&error)})),
    };
    if result.is_internal_error() {
        let message = match result.content().first() {
            Some(Content::Text { text, .. }) => text.clone(),
            _ => "Internal error".to_owned(),
        };
        return (TaskState::Failed, json!({"error": {"code": code::INTERNAL_ERROR, "message": message}}));
    }
    (TaskState::Completed, json!({"result": result}))
}

fn error_json(error: &RpcError) -> Value {
    let mut value = json!({"code": error.code, "message": error.message});
    if let Some(data) = &error.data {
        value["data"] = data.clone();
    }
    value
}

/// Why a task operation was refused.
pub(crate) enum TaskRefusal {
    /// No task with that id is the caller's (or it expired).
    Unknown,
    /// The caller has too many tasks running.
    TooMany(u64),
    /// The caller keeps too many task records.
    TooManyKept(u64),
    /// An answer does not fit its question, or the store failed.
    Rpc(RpcError),
}

impl TaskRefusal {
    pub(crate) fn into_rpc(self, id: &str) -> RpcError {
        match self {
            TaskRefusal::Unknown => RpcError::invalid_params(format!("Unknown task: '{id}'")),
            TaskRefusal::TooMany(max) => RpcError::new(
                code::INVALID_REQUEST,
                format!("Too many running tasks: at most {max} per caller; wait for one to end or cancel one"),
            ),
            TaskRefusal::TooManyKept(max) => RpcError::new(
                code::INVALID_REQUEST,
                format!(
                    "Too many task results kept: at most {max} per caller, each kept until it expires; \
                     try again later"
                ),
            ),
            TaskRefusal::Rpc(error) => error,
        }
    }
}

/// This process's tasks, and the store of every task's record.
pub(crate) struct Tasks {
    live: Mutex<HashMap<String, Arc<LiveTask>>>,
    store: Arc<dyn TaskStore>,
    changes: ChangeNotifier,
    pub(crate) options: TaskOptions,
    // Forgets expired records on a timer, on the runtime the engine runs on.
    purger: Mutex<Option<JoinHandle<()>>>,
    // How answers and cancellations reach a task another instance runs, when there are several.
    elsewhere: OnceLock<Arc<SharedSessions>>,
}

impl Tasks {
    pub(crate) fn new(store: Arc<dyn TaskStore>, options: TaskOptions, changes: ChangeNotifier) -> Tasks {
        let tasks = Tasks {
            live: Mutex::default(),
            store,
            changes,
            options,
            purger: Mutex::default(),
            elsewhere: OnceLock::new(),
        };
        tasks.keep_purging();
        tasks
    }

    /// Starts the timer that forgets expired records (every quarter of the time to live, at
    /// most a minute apart, a bounded batch each time), unless it runs: built outside a
    /// runtime, it starts with the first task; on a runtime that has since ended, it starts
    /// again on the one in use.
    fn keep_purging(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let mut purger = lock(&self.purger);
        if purger.as_ref().is_some_and(|running| !running.is_finished()) {
            return;
        }
        let every = (self.options.ttl / 4).clamp(Duration::from_millis(50), Duration::from_secs(60));
        // The store alone, not the tasks: the timer ends when they are dropped (see `Drop`).
        let store = self.store.clone();
        *purger = Some(runtime.spawn(async move {
            let mut timer = tokio::time::interval(every);
            timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                timer.tick().await;
                match store.purge(now_ms(), PURGE_BATCH).await {
                    // More are waiting: the next batch soon, not a whole period later.
                    Ok(removed) if removed >= PURGE_BATCH => timer.reset_after(Duration::from_millis(100)),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "could not purge expired tasks"),
                }
            }
        }));
    }

    /// Sends answers and cancellations for tasks running in other instances through `shared`
    /// (the first call only: an endpoint sets it as it starts).
    pub(crate) fn reach_other_instances(&self, shared: Arc<SharedSessions>) {
        let _ = self.elsewhere.set(shared);
    }

    /// A record for a new task of `user` calling `tool`, not yet kept anywhere, with the live
    /// task that will run it.
    pub(crate) fn prepare(&self, user: &UserInfo, tool: &str) -> Arc<LiveTask> {
        let now = now_ms();
        let id = random_token();
        let owner = owner_of(user, &id);
        let record = TaskRecord::new(
            id,
            owner,
            tool.to_owned(),
            now,
            self.options.ttl.as_millis() as i64,
            self.options.lease.as_millis() as i64,
        );
        LiveTask::new(record, self)
    }

    /// Refuses a new task when its caller has the most running already. Anonymous callers
    /// cannot be told apart, so their tasks are counted together, under one bound.
    pub(crate) async fn admit(&self, user: &UserInfo) -> Result<(), TaskRefusal> {
        self.keep_purging();
        let now = now_ms();
        let max = self.options.max_live_per_caller;
        let (here, live) = match user.user_id() {
            Some(id) => {
                let owner = format!("user:{id}");
                let kept = self.store.kept(&owner, now).await.map_err(|e| TaskRefusal::Rpc(store_error(e)))?;
                if kept >= self.options.max_kept_per_caller {
                    return Err(TaskRefusal::TooManyKept(self.options.max_kept_per_caller));
                }
                let here = lock(&self.live).values().filter(|t| t.owner == owner).count() as u64;
                (here, self.store.live(&owner, now).await)
            }
            None => {
                // Anonymous callers cannot be told apart: together they keep what one caller may.
                let kept = self.store.kept_anonymous(now).await.map_err(|e| TaskRefusal::Rpc(store_error(e)))?;
                if kept >= self.options.max_kept_per_caller {
                    return Err(TaskRefusal::TooManyKept(self.options.max_kept_per_caller));
                }
                let here = lock(&self.live).values().filter(|t| is_anonymous(&t.owner)).count() as u64;
                (here, self.store.live_anonymous(now).await)
            }
        };
        let live = live.map_err(|e| TaskRefusal::Rpc(store_error(e)))?.max(here);
        if live >= max { Err(TaskRefusal::TooMany(max)) } else { Ok(()) }
    }

    /// Starts `job` as the task `live`: its record saved (durably: a `tasks/get` finds it once
    /// this returns), its future run on the runtime until it ends, renewing its lease.
    /// `access` is the call's access record, which the task writes when it is cancelled or
    /// expires (the call writes it when it ends by itself).
    pub(crate) async fn launch(
        self: &Arc<Self>,
        live: Arc<LiveTask>,
        job: BoxFuture<'static, Result<ToolResult, CallError>>,
        access: Option<Arc<CallAccess>>,
    ) -> Result<TaskRecord, RpcError> {
        if let Some(access) = access {
            let _ = live.access.set(access);
        }
        {
            let mut state = lock(&live.state);
            let now = now_ms();
            state.set_questions(now);
        }
        lock(&self.live).insert(live.id.clone(), live.clone());
        // The job runs before the record's first save, not after: it may be stopped in the
        // middle of saving a question it asked as it became a task, holding the task's save
        // lock, which that first save waits for.
        let tasks = self.clone();
        let running = live.clone();
        // In the span of the request that started it, so its log lines name that request.
        let handle = tokio::spawn(
            async move {
                match renewing(&running, job, tasks.options.lease).await {
                    Some(outcome) => tasks.end(&running, outcome).await,
                    None => tasks.expire(&running).await,
                }
            }
            .in_current_span(),
        );
        {
            let mut state = lock(&live.state);
            if state.record.state == TaskState::Cancelled {
                handle.abort();
            } else {
                state.abort = Some(handle.abort_handle());
            }
        }
        if let Err(e) = live.persist().await {
            handle.abort();
            lock(&self.live).remove(&live.id);
            return Err(e);
        }
        Ok(live.record())
    }

    /// Keeps a call that finished before it became a task as a completed (or failed) task: for
    /// a tool whose calls are only ever tasks.
    pub(crate) async fn keep_finished(
        &self,
        live: Arc<LiveTask>,
        outcome: Result<ToolResult, CallError>,
    ) -> Result<TaskRecord, RpcError> {
        let (state, outcome) = outcome_of(outcome);
        live.end_with(state, Some(outcome), false).await?;
        Ok(live.record())
    }

    async fn end(&self, live: &Arc<LiveTask>, outcome: Result<ToolResult, CallError>) {
        let (state, outcome) = outcome_of(outcome);
        // A failed save is logged: the record then reads failed once its lease lapses.
        let _ = live.end_with(state, Some(outcome), false).await;
        lock(&self.live).remove(&live.id);
    }

    // Ends a task still running when its time to live ran out: its record is about to be
    // forgotten, so nobody could read its result or cancel it.
    async fn expire(&self, live: &Arc<LiveTask>) {
        tracing::info!(task = %log_id(&live.id), "a task ran past its time to live and was stopped");
        if let Some(access) = live.access.get() {
            access.finish(AccessOutcome::Expired);
        }
        let error = json!({"error": {
            "code": code::INTERNAL_ERROR,
            "message": "The task ran past its time to live and was stopped",
        }});
        let _ = live.end_with(TaskState::Failed, Some(error), false).await;
        lock(&self.live).remove(&live.id);
    }

    /// The caller's task, as it stands now.
    pub(crate) async fn get(&self, id: &str, owner: &str) -> Result<TaskRecord, TaskRefusal> {
        if let Some(live) = self.live_task(id, owner) {
            return Ok(live.record());
        }
        let now = now_ms();
        match self.store.load(id, owner, now).await {
            Ok(Some(mut record)) => {
                record.state = record.state_at(now);
                if record.state == TaskState::Failed && record.outcome.is_none() {
                    record.outcome = Some(json!({"error": {
                        "code": code::INTERNAL_ERROR,
                        "message": "The task ended with the server process that was running it",
                    }}));
                    record.input_requests = None;
                }
                Ok(record)
            }
            Ok(None) => Err(TaskRefusal::Unknown),
            Err(e) => Err(TaskRefusal::Rpc(store_error(e))),
        }
    }

    fn live_task(&self, id: &str, owner: &str) -> Option<Arc<LiveTask>> {
        let live = lock(&self.live).get(id).cloned()?;
        // Another caller's task is not found, exactly as a task that does not exist.
        (live.owner == owner).then_some(live)
    }

    /// Delivers answers to the caller's task's questions; answers to questions it is not
    /// asking are ignored.
    pub(crate) async fn update(&self, id: &str, owner: &str, responses: Map<String, Value>) -> Result<(), TaskRefusal> {
        match self.live_task(id, owner) {
            Some(live) => Tasks::update_live(&live, responses).await,
            None => self.update_elsewhere(id, owner, responses).await,
        }
    }

    async fn update_live(live: &LiveTask, responses: Map<String, Value>) -> Result<(), TaskRefusal> {
        {
            let mut state = lock(&live.state);
            for (key, answer) in &responses {
                let Some(position) = state.pending.iter().position(|p| p.key == *key) else { continue };
                check_response(key, &state.pending[position].request, answer)?;
            }
            for (key, answer) in responses {
                if let Some(position) = state.pending.iter().position(|p| p.key == key) {
                    let pending = state.pending.remove(position);
                    // The handler may be gone (cancelled): nothing waits for the answer then.
                    let _ = pending.answer.send(answer);
                }
            }
            let now = now_ms();
            if !state.record.state.is_terminal() {
                state.set_questions(now);
            }
        }
        live.persist().await.map_err(TaskRefusal::Rpc)
    }

    // Answers for a task not running here: an ended one (or an unknown one) takes none; one
    // running in another instance gets them there, checked here against the questions its
    // record shows. With no way to reach it they are refused, not dropped.
    async fn update_elsewhere(&self, id: &str, owner: &str, responses: Map<String, Value>) -> Result<(), TaskRefusal> {
        let record = self.get(id, owner).await?;
        if record.state.is_terminal() {
            return Ok(());
        }
        let questions = record.input_requests.as_ref().and_then(Value::as_object);
        let mut answered = Vec::new();
        for (key, answer) in &responses {
            if let Some(request) = questions.and_then(|questions| questions.get(key)) {
                check_response(key, request, answer)?;
                answered.push(key.clone());
            }
        }
        // Only answers to questions the task asks travel (are kept for the running instance),
        // and nothing when none is: what else a client sends would only fill the store.
        if answered.is_empty() {
            return Ok(());
        }
        let responses: Map<String, Value> = responses.into_iter().filter(|(key, _)| answered.contains(key)).collect();
        if !crate::session::fits_kept(&responses) {
            return Err(TaskRefusal::Rpc(RpcError::invalid_params(format!(
                "The answers are larger than the {} KiB they may be; send smaller ones",
                crate::session::MAX_KEPT_BYTES / 1024
            ))));
        }
        let event = Event::TaskAnswers { task: id.to_owned(), owner: owner.to_owned(), responses };
        self.tell_elsewhere(event).await?;
        // Acknowledged once the running instance has taken them, so that the caller's next
        // `tasks/get`, wherever it lands, no longer shows them asked; past the wait it goes on.
        let deadline = tokio::time::Instant::now() + ANSWER_WAIT;
        while !answered.is_empty() && tokio::time::Instant::now() < deadline {
            let now = self.get(id, owner).await?;
            let asked = now.input_requests.as_ref().and_then(Value::as_object);
            if now.state.is_terminal() || !answered.iter().any(|key| asked.is_some_and(|a| a.contains_key(key))) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if !answered.is_empty() {
            tracing::debug!(task = %log_id(id), "answers passed on were not taken in time");
        }
        Ok(())
    }

    /// Applies answers another instance was sent for a task running here; nothing for a task
    /// not running here (another instance's).
    pub(crate) async fn update_here(&self, id: &str, owner: &str, responses: Map<String, Value>) {
        if let Some(live) = self.live_task(id, owner)
            && let Err(TaskRefusal::Rpc(e)) = Tasks::update_live(&live, responses).await
        {
            tracing::warn!(task = %log_id(id), error = %e.message, "answers from another instance were not taken");
        }
    }

    /// Cancels the caller's task, if it has not ended (cancelling an ended one does nothing).
    pub(crate) async fn cancel(&self, id: &str, owner: &str) -> Result<(), TaskRefusal> {
        if self.cancel_here(id, owner).await? {
            return Ok(());
        }
        let mut record = self.get(id, owner).await?;
        if !record.state.is_terminal() {
            // Running on another instance: its record says cancelled from now on, and the
            // instance's own end of it does not overwrite that (see `TaskStore::save`); that
            // instance is told to stop it.
            record.state = TaskState::Cancelled;
            record.updated_ms = now_ms();
            record.input_requests = None;
            self.store.save(&record).await.map_err(|e| TaskRefusal::Rpc(store_error(e)))?;
            if self.elsewhere.get().is_some() {
                // Cancelled for every reader either way: a message lost leaves the task running
                // to its end unseen, as with no way to tell.
                let _ = self.tell_elsewhere(Event::TaskCancel { task: id.to_owned(), owner: owner.to_owned() }).await;
            }
        }
        Ok(())
    }

    /// Stops the caller's task if it runs here; whether it did.
    pub(crate) async fn cancel_here(&self, id: &str, owner: &str) -> Result<bool, TaskRefusal> {
        let Some(live) = self.live_task(id, owner) else { return Ok(false) };
        live.end_with(TaskState::Cancelled, None, true).await.map_err(TaskRefusal::Rpc)?;
        lock(&self.live).remove(id);
        Ok(true)
    }

    // Sends `event` to the instance running its task.
    async fn tell_elsewhere(&self, event: Event) -> Result<(), TaskRefusal> {
        let Some(shared) = self.elsewhere.get() else {
            return Err(TaskRefusal::Rpc(RpcError::new(
                code::INTERNAL_ERROR,
                "Internal error: the task runs in another server process, which this one cannot reach",
            )));
        };
        shared.publish(event).await.map_err(|e| {
            tracing::warn!(error = %e, "a task's answers or cancellation could not be passed on");
            TaskRefusal::Rpc(RpcError::new(
                code::INTERNAL_ERROR,
                "Internal error: the task runs in another server process, which cannot be reached now; try again",
            ))
        })
    }
}

impl Drop for Tasks {
    fn drop(&mut self) {
        if let Some(purger) = lock(&self.purger).take() {
            purger.abort();
        }
    }
}

// Checks a client's answer `answer` to the task's question `request` (under `key`).
fn check_response(key: &str, request: &Value, answer: &Value) -> Result<(), TaskRefusal> {
    let method = request["method"].as_str().unwrap_or_default();
    crate::protocol::peer::check_answer(method, answer).map_err(|why| {
        TaskRefusal::Rpc(RpcError::invalid_params(format!(
            "Invalid params: inputResponses[\"{key}\"] {why} ({method})"
        )))
    })
}

fn store_error(error: mirobody_core::BackendError) -> RpcError {
    tracing::error!(error = %error, "task store failed");
    RpcError::new(code::INTERNAL_ERROR, "Internal error: the task store failed")
}

// Runs a task's future to its end, renewing the task's lease meanwhile; `None` when its time
// to live ran out first (the future is dropped then).
async fn renewing(
    live: &LiveTask,
    mut job: BoxFuture<'static, Result<ToolResult, CallError>>,
    lease: Duration,
) -> Option<Result<ToolResult, CallError>> {
    let mut renew = tokio::time::interval((lease / 3).max(Duration::from_millis(10)));
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    renew.tick().await;
    let left = u64::try_from(lock(&live.state).record.expires_ms - now_ms()).unwrap_or(0);
    let expiry = tokio::time::sleep(Duration::from_millis(left));
    tokio::pin!(expiry);
    loop {
        tokio::select! {
            outcome = &mut job => return Some(outcome),
            _ = renew.tick() => live.renew(lease).await,
            () = &mut expiry => return None,
        }
    }
}
