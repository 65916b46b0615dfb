//! The tasks extension on 2026-07-28: `tools/call` of a tool with task support from a client
//! that negotiated the extension (per request, in `_meta`), and `tasks/get`, `tasks/update`,
//! `tasks/cancel`. The engine is [`crate::protocol::tasks`]; this is its wire.

use std::sync::Arc;

use futures::future::BoxFuture;
use mirobody_core::{CallError, TaskSupport, ToolResult, UserInfo};
use mirobody_ports::TaskRecord;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::mrtr::{Binding, RetryParams, Round};
use super::{Exchange, Reply, codes, splice};
use crate::jsonrpc::{self, Id, RpcError};
use crate::protocol::access::CallAccess;
use crate::protocol::tasks::{self as engine, EXTENSION, Escalation, TaskPeer, drive, owner_of, task_json};
use crate::protocol::{CallFailure, McpEngine, call_failure, finish_call, parse, with_access};

/// Whether the request's client negotiated the tasks extension.
pub(crate) fn negotiated(exchange: &Exchange<'_>) -> bool {
    engine::negotiated(&exchange.meta.client_capabilities)
}

/// -32021 naming the extension: what a client that did not negotiate tasks gets from the task
/// methods and from a tool whose calls are only tasks.
pub(crate) fn missing_extension(what: &str) -> RpcError {
    RpcError::new(
        codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!("{what} needs the client capability extensions[\"{EXTENSION}\"]"),
    )
    .with_data(json!({"requiredCapabilities": {"extensions": {EXTENSION: {}}}}))
}

/// A `tools/call` that may become a task, as read and checked.
pub(crate) struct TaskCall<'a> {
    pub(crate) name: &'a str,
    pub(crate) arguments: Value,
    pub(crate) binding: &'a Binding<'a>,
    pub(crate) retry: RetryParams,
    pub(crate) support: TaskSupport,
}

#[derive(Deserialize)]
struct TaskParams {
    #[serde(rename = "taskId")]
    task_id: String,
    #[serde(rename = "inputResponses", default)]
    input_responses: Option<Value>,
}

/// A task operation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskMethod {
    Get,
    Update,
    Cancel,
}

impl TaskMethod {
    fn name(self) -> &'static str {
        match self {
            TaskMethod::Get => "tasks/get",
            TaskMethod::Update => "tasks/update",
            TaskMethod::Cancel => "tasks/cancel",
        }
    }
}

impl McpEngine {
    /// `tasks/get`, `tasks/update` or `tasks/cancel`.
    pub(crate) async fn task_method(
        &self,
        id: &Id,
        method: TaskMethod,
        params: Option<&RawValue>,
        exchange: &Exchange<'_>,
    ) -> Reply {
        if !negotiated(exchange) {
            return Reply::error(id, &missing_extension(method.name()));
        }
        let p = match parse::<TaskParams>(params, method.name()) {
            Ok(p) => p,
            Err(e) => return Reply::error(id, &e),
        };
        let tasks = &self.inner().tasks;
        let owner = owner_of(exchange.user, &p.task_id);
        let done = match method {
            TaskMethod::Get => match tasks.get(&p.task_id, &owner).await {
                Ok(record) => {
                    let task = Value::Object(task_json(&record, &tasks.options, true));
                    return Reply::ok(self.finish_value(id, &task, None));
                }
                Err(refusal) => Err(refusal),
            },
            TaskMethod::Update => {
                let responses = match p.input_responses {
                    Some(Value::Object(responses)) => responses,
                    None => Map::new(),
                    Some(_) => {
                        let error = RpcError::invalid_params("Invalid params: \"inputResponses\" must be an object");
                        return Reply::error(id, &error);
                    }
                };
                tasks.update(&p.task_id, &owner, responses).await
            }
            TaskMethod::Cancel => tasks.cancel(&p.task_id, &owner).await,
        };
        match done {
            Ok(()) => Reply::ok(self.finish(id, "{}", None)),
            Err(refusal) => Reply::error(id, &refusal.into_rpc(&p.task_id)),
        }
    }

    /// A `tools/call` of a tool with task support from a client that negotiated tasks: run in
    /// the request until it finishes, asks, or becomes a task (see [`crate::protocol::tasks`]).
    pub(crate) async fn task_call_rev_2026_07_28(&self, id: &Id, call: TaskCall<'_>, exchange: &Exchange<'_>) -> Reply {
        let TaskCall { name, arguments, binding, retry, support } = call;
        let tasks = &self.inner().tasks;
        let sealer = &self.state_rev_2026_07_28().sealer;
        let answers = match retry.answers(sealer, binding) {
            Ok(answers) => answers,
            Err(e) => return Reply::error(id, &e),
        };
        if let Err(refusal) = tasks.admit(exchange.user).await {
            return Reply::error(id, &refusal.into_rpc(""));
        }
        let live = tasks.prepare(exchange.user, name);
        let capabilities = exchange.meta.client_capabilities.clone();
        let peer = Arc::new(TaskPeer::new(answers, capabilities, live.clone(), self.notifications(exchange)));
        // Recorded when the call ends: in the request, or as a task when the task does.
        let access = self.call_access(exchange.user, name);
        let mut job = self.task_job(name.to_owned(), arguments, exchange.user.clone(), peer.clone(), access.clone());
        match drive(&peer, &mut job, tasks.options.sync_budget).await {
            Escalation::Round(Round::Done(outcome)) if support == TaskSupport::Required => {
                self.task_created(id, tasks.keep_finished(live, outcome).await)
            }
            Escalation::Round(Round::Done(outcome)) => match outcome.map_err(call_failure) {
                Ok(result) | Err(CallFailure::Result(result)) => Reply::ok(self.tool_result(id, &result)),
                Err(CallFailure::Error(error, status)) => Reply::error_with(id, &error, status),
            },
            Escalation::Round(Round::InputRequired { requests, answers }) => {
                let state = sealer.seal(binding, answers);
                Reply::ok(self.input_required(id, requests, state))
            }
            Escalation::Round(Round::Invalid(error)) => Reply::error(id, &error),
            Escalation::Task => self.task_created(id, tasks.launch(live, job, access).await),
        }
    }

    // The call's future, owning what it needs, so that it can go on after the request.
    pub(crate) fn task_job(
        &self,
        name: String,
        arguments: Value,
        user: UserInfo,
        peer: Arc<TaskPeer>,
        access: Option<Arc<CallAccess>>,
    ) -> BoxFuture<'static, Result<ToolResult, CallError>> {
        let inner = self.inner.clone();
        Box::pin(async move {
            let ctx = with_access(inner.backends.context(Some(&*peer)), &access);
            let outcome = inner.call_tool(&name, arguments, &user, &ctx).await;
            finish_call(access.as_ref(), &outcome);
            outcome
        })
    }

    // `CreateTaskResult`: the task, flat, with `resultType: "task"`.
    fn task_created(&self, id: &Id, created: Result<TaskRecord, RpcError>) -> Reply {
        let record = match created {
            Ok(record) => record,
            Err(error) => return Reply::error(id, &error),
        };
        let mut task = task_json(&record, &self.inner().tasks.options, false);
        task.insert("resultType".into(), json!("task"));
        let raw = Value::Object(task).to_string();
        Reply::ok(jsonrpc::raw_result_bytes(id, &splice(&raw, &self.state_rev_2026_07_28().server_info)))
    }
}
