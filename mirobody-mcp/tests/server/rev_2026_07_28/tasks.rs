//! The tasks extension: a slow call becomes a task its owner polls to the result; nobody else
//! reads, answers or cancels it; cancelling drops the handler; a question inside a task waits
//! for `tasks/update` and a wrong answer is refused; results expire; running tasks per caller
//! are bounded; without the extension the methods are -32021 and a task-only tool too; a store
//! shared by two services answers for a task either ran (another instance, or a restart); an
//! anonymous task is its id's holder's alone and never announced; expired records are purged on
//! a timer; a time limit counts a task's work, not its wait for answers.

use mirobody_core::TaskSupport;
use mirobody_mcp::{MemoryTaskStore, TaskOptions};
use mirobody_ports::TaskStore;

use super::*;
use crate::support::Sse;

const TASKS: &str = "io.modelcontextprotocol/tasks";

// The tags of the `forever` handlers dropped so far: tests run at once, so each watches its own.
static DROPPED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

struct NoteDrop(String);

impl Drop for NoteDrop {
    fn drop(&mut self) {
        DROPPED.lock().unwrap_or_else(|p| p.into_inner()).push(std::mem::take(&mut self.0));
    }
}

async fn sleepy(args: Args, _: &UserInfo, _: &ToolContext<'_>) -> ToolResult {
    tokio::time::sleep(Duration::from_millis(args.integer("ms", 300) as u64)).await;
    ToolResult::text("slept")
}

async fn forever(args: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    ctx.become_task();
    let _guard = NoteDrop(args.str_or("tag", "").to_owned());
    std::future::pending::<()>().await;
    ToolResult::text("never")
}

async fn ask_in_task(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    ctx.become_task();
    let question = json!({"message": "Go?", "requestedSchema": {"type": "object", "properties": {}}});
    match ctx.request_keyed("go", "elicitation/create", question).await {
        Ok(answer) => ToolResult::text(format!("answer: {}", answer["action"])),
        Err(e) => ToolResult::error(e.to_string()),
    }
}

fn task_service(store: Arc<MemoryTaskStore>, options: TaskOptions) -> McpEngine {
    task_service_on(store, options)
}

fn task_service_on(store: Arc<dyn mirobody_ports::TaskStore>, options: TaskOptions) -> McpEngine {
    let registry = Registry::builder()
        .tool(
            Tool::new("sleepy", "Sleeps.")
                .param(mirobody_core::Param::optional("ms", mirobody_core::Type::Integer, "How long."))
                .task_support(TaskSupport::Optional)
                .handler(sleepy),
        )
        .tool(
            Tool::new("forever", "Never ends.")
                .param(mirobody_core::Param::optional("tag", mirobody_core::Type::String, "Names the call."))
                .task_support(TaskSupport::Optional)
                .handler(forever),
        )
        .tool(Tool::new("ask_in_task", "Asks inside a task.").task_support(TaskSupport::Optional).handler(ask_in_task))
        .tool(
            Tool::new("ask_within_a_limit", "Asks inside a task, within 200 ms of its own work.")
                .task_support(TaskSupport::Optional)
                .time_limit(Duration::from_millis(200))
                .handler(ask_in_task),
        )
        .tool(
            Tool::new("sleep_past_a_limit", "Sleeps past its 200 ms.")
                .param(mirobody_core::Param::optional("ms", mirobody_core::Type::Integer, "How long."))
                .task_support(TaskSupport::Optional)
                .time_limit(Duration::from_millis(200))
                .handler(sleepy),
        )
        .tool(
            Tool::new("only_task", "Only ever a task.")
                .task_support(TaskSupport::Required)
                .sync_handler(|_, _, _| ToolResult::text("done")),
        )
        .build()
        .unwrap();
    McpEngine::builder(Arc::new(registry)).task_store(store).task_options(options).build()
}

fn options() -> TaskOptions {
    TaskOptions::default().with_sync_budget(Duration::from_millis(50)).with_max_live_per_caller(2)
}

fn client_of(engine: McpEngine) -> MetaClient {
    let http = McpHttp::new(engine, HttpOptions::default());
    MetaClient::new(http.router()).with_capabilities(json!({"elicitation": {}, "extensions": {TASKS: {}}}))
}

fn as_user(client: MetaClient, user: &str) -> MetaClient {
    client.acting_as(UserInfo::authenticated(user))
}

async fn created(client: &MetaClient, tool: &str, arguments: Value) -> String {
    let reply = client.call_tool(tool, arguments).await;
    let result = reply.result();
    assert_eq!(result["resultType"], "task", "{result}");
    assert!(result.get("result").is_none() && result.get("requestState").is_none(), "{result}");
    result["taskId"].as_str().expect("a task id").to_owned()
}

async fn get(client: &MetaClient, task: &str) -> Reply {
    client.call("tasks/get", json!({"taskId": task})).await
}

// Polls until the task is in `status` (or has ended).
async fn until(client: &MetaClient, task: &str, status: &str) -> Value {
    within("the task's status", async {
        loop {
            let reply = get(client, task).await;
            let result = reply.result().clone();
            let now = result["status"].as_str().unwrap_or_default().to_owned();
            if now == status || ["completed", "failed", "cancelled"].contains(&now.as_str()) {
                return result;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

#[tokio::test]
async fn a_slow_call_becomes_a_task_its_owner_polls_to_the_result() {
    let client = as_user(client_of(task_service(Arc::default(), options())), "alice");
    // A fast call is answered directly.
    let fast = client.call_tool("sleepy", json!({"ms": 0})).await;
    assert_eq!(assert_complete(&fast)["content"][0]["text"], "slept");

    let task = created(&client, "sleepy", json!({"ms": 300})).await;
    let working = get(&client, &task).await;
    assert_eq!(assert_complete(&working)["status"], "working");
    assert!(working.result().get("result").is_none());
    let done = until(&client, &task, "completed").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "slept");
    assert!(done["ttlMs"].as_i64().unwrap() > 0 && done["pollIntervalMs"].as_i64().unwrap() > 0);

    // A task-only tool that finishes at once is a completed task.
    let only = created(&client, "only_task", json!({})).await;
    assert_eq!(get(&client, &only).await.result()["result"]["content"][0]["text"], "done");
}

#[tokio::test]
async fn nobody_else_reads_answers_or_cancels_a_task() {
    let engine = task_service(Arc::default(), options());
    let alice = as_user(client_of(engine.clone()), "alice");
    let bob = as_user(client_of(engine.clone()), "bob");
    let anonymous = client_of(engine);
    let task = created(&alice, "ask_in_task", json!({})).await;
    until(&alice, &task, "input_required").await;
    for other in [&bob, &anonymous] {
        assert_eq!(get(other, &task).await.error_code(), -32602);
        let answer = json!({"taskId": task, "inputResponses": {"go": {"action": "accept"}}});
        assert_eq!(other.call("tasks/update", answer).await.error_code(), -32602);
        assert_eq!(other.call("tasks/cancel", json!({"taskId": task})).await.error_code(), -32602);
    }
    // Untouched by them: still waiting for its owner's answer.
    let still = get(&alice, &task).await;
    assert_eq!(still.result()["status"], "input_required");
    assert_eq!(still.result()["inputRequests"]["go"]["method"], "elicitation/create");
}

#[tokio::test]
async fn a_question_in_a_task_waits_for_its_answer_and_a_wrong_one_is_refused() {
    let client = as_user(client_of(task_service(Arc::default(), options())), "alice");
    let task = created(&client, "ask_in_task", json!({})).await;
    until(&client, &task, "input_required").await;
    let wrong = client.call("tasks/update", json!({"taskId": task, "inputResponses": {"go": {"nope": 1}}})).await;
    assert_eq!(wrong.error_code(), -32602, "{}", wrong.body);
    assert_eq!(get(&client, &task).await.result()["status"], "input_required", "a wrong answer loses nothing");
    let not_an_object = client.call("tasks/update", json!({"taskId": task, "inputResponses": [1]})).await;
    assert_eq!(not_an_object.error_code(), -32602);
    let ack =
        client.call("tasks/update", json!({"taskId": task, "inputResponses": {"go": {"action": "accept"}}})).await;
    assert_eq!(ack.result()["resultType"], "complete");
    assert!(ack.result().get("status").is_none(), "the ack carries no task: {}", ack.body);
    let done = until(&client, &task, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "answer: \"accept\"");
}

#[tokio::test]
async fn cancelling_drops_the_handler_and_is_idempotent() {
    let client = as_user(client_of(task_service(Arc::default(), options())), "alice");
    let task = created(&client, "forever", json!({"tag": "cancelled-by-its-owner"})).await;
    let ack = client.call("tasks/cancel", json!({"taskId": task})).await;
    assert_eq!(ack.result()["resultType"], "complete");
    assert_eq!(get(&client, &task).await.result()["status"], "cancelled");
    within("the handler to be dropped", async {
        while !DROPPED.lock().unwrap().iter().any(|tag| tag == "cancelled-by-its-owner") {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    // Again: the same ack, the same status.
    assert_eq!(client.call("tasks/cancel", json!({"taskId": task})).await.result()["resultType"], "complete");
    assert_eq!(get(&client, &task).await.result()["status"], "cancelled");
    assert_eq!(client.call("tasks/cancel", json!({"taskId": "no-such-task"})).await.error_code(), -32602);
}

#[tokio::test]
async fn running_tasks_per_caller_are_bounded() {
    let engine = task_service(Arc::default(), options());
    let alice = as_user(client_of(engine.clone()), "alice");
    let first = created(&alice, "forever", json!({})).await;
    created(&alice, "forever", json!({})).await;
    let refused = alice.call_tool("forever", json!({})).await;
    assert_eq!(refused.error_code(), -32600, "{}", refused.body);
    assert!(refused.error_message().contains("at most 2"), "{}", refused.body);
    // Another caller is not held back by alice's tasks.
    created(&as_user(client_of(engine), "bob"), "forever", json!({})).await;
    // One ends: alice may start another.
    alice.call("tasks/cancel", json!({"taskId": first})).await.result();
    created(&alice, "forever", json!({})).await;
}

#[tokio::test]
async fn the_records_one_caller_keeps_are_bounded_until_they_expire() {
    let options = options().with_max_kept_per_caller(3).with_ttl(Duration::from_millis(600));
    let engine = task_service(Arc::default(), options);
    let alice = as_user(client_of(engine.clone()), "alice");
    // Tasks that end at once still leave their records, kept until they expire.
    for _ in 0..3 {
        let task = created(&alice, "only_task", json!({})).await;
        assert_eq!(until(&alice, &task, "completed").await["status"], "completed");
    }
    let refused = alice.call_tool("only_task", json!({})).await;
    assert_eq!(refused.error_code(), -32600, "{}", refused.body);
    assert!(refused.error_message().contains("at most 3"), "{}", refused.body);
    // Bob keeps his own.
    created(&as_user(client_of(engine), "bob"), "only_task", json!({})).await;
    // Once Alice's have expired, she may start tasks again.
    tokio::time::sleep(Duration::from_millis(650)).await;
    created(&alice, "only_task", json!({})).await;
}

#[tokio::test]
async fn the_records_anonymous_callers_keep_are_bounded_together_until_they_expire() {
    let options = options().with_max_kept_per_caller(3).with_ttl(Duration::from_millis(600));
    let engine = task_service(Arc::default(), options);
    // Each call as a caller of its own: anonymous callers cannot be told apart, so a loop of
    // them is one caller filling the store with ended records.
    for _ in 0..3 {
        let anonymous = client_of(engine.clone());
        let task = created(&anonymous, "only_task", json!({})).await;
        assert_eq!(until(&anonymous, &task, "completed").await["status"], "completed");
    }
    let refused = client_of(engine.clone()).call_tool("only_task", json!({})).await;
    assert_eq!(refused.error_code(), -32600, "{}", refused.body);
    assert!(refused.error_message().contains("at most 3"), "{}", refused.body);
    // A signed-in caller keeps their own.
    created(&as_user(client_of(engine.clone()), "bob"), "only_task", json!({})).await;
    // Once the anonymous records have expired, anonymous callers may start tasks again.
    tokio::time::sleep(Duration::from_millis(650)).await;
    created(&client_of(engine), "only_task", json!({})).await;
}

#[tokio::test]
async fn a_task_is_forgotten_when_its_time_to_live_passes() {
    let options = options().with_ttl(Duration::from_millis(400));
    let client = as_user(client_of(task_service(Arc::default(), options)), "alice");
    let task = created(&client, "sleepy", json!({"ms": 100})).await;
    let done = until(&client, &task, "completed").await;
    assert_eq!(done["ttlMs"], 400);
    tokio::time::sleep(Duration::from_millis(450)).await;
    assert_eq!(get(&client, &task).await.error_code(), -32602, "expired");
}

#[tokio::test]
async fn without_the_extension_the_methods_and_task_only_tools_are_refused() {
    let client = client_of(task_service(Arc::default(), options())).with_capabilities(json!({}));
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let reply = client.call(method, json!({"taskId": "t"})).await;
        assert_eq!((reply.status, reply.error_code()), (StatusCode::BAD_REQUEST, -32021), "{method}");
        assert!(reply.body["error"]["data"]["requiredCapabilities"]["extensions"][TASKS].is_object());
    }
    assert_eq!(client.call_tool("only_task", json!({})).await.error_code(), -32021);
    // A tool whose tasks are optional just answers, however long it takes.
    let slow = client.call_tool("sleepy", json!({"ms": 150})).await;
    assert_eq!(assert_complete(&slow)["content"][0]["text"], "slept");
    // The removed methods of the first tasks design are not served.
    for method in ["tasks/result", "tasks/list"] {
        assert_eq!(client.call(method, json!({"taskId": "t"})).await.error_code(), -32601, "{method}");
    }
}

#[tokio::test]
async fn a_shared_store_answers_for_a_task_another_service_ran() {
    let store = Arc::new(MemoryTaskStore::default());
    let first = as_user(client_of(task_service(store.clone(), options())), "alice");
    let task = created(&first, "sleepy", json!({"ms": 100})).await;
    until(&first, &task, "completed").await;
    // Another instance (or this one restarted) on the same store.
    let second = as_user(client_of(task_service(store, options())), "alice");
    let done = get(&second, &task).await;
    assert_eq!(done.result()["result"]["content"][0]["text"], "slept");
    assert_eq!(
        get(&as_user(client_of(task_service(Arc::default(), options())), "alice"), &task).await.error_code(),
        -32602
    );
}

#[tokio::test]
async fn the_in_process_api_runs_a_call_as_a_task_for_its_owner_only() {
    use mirobody_mcp::TaskError;
    use mirobody_ports::TaskState;

    let engine = task_service(Arc::default(), options());
    let (alice, bob) = (UserInfo::authenticated("alice"), UserInfo::authenticated("bob"));
    let task = engine.start_task("ask_in_task", json!({}), &alice).await.unwrap();
    let asking = within("the question", async {
        loop {
            let now = engine.task(&task.id, &alice).await.unwrap();
            if now.state == TaskState::InputRequired {
                return now;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_eq!(asking.input_requests.unwrap()["go"]["method"], "elicitation/create");
    assert!(matches!(engine.task(&task.id, &bob).await, Err(TaskError::Unknown(_))));
    assert!(matches!(engine.cancel_task(&task.id, &bob).await, Err(TaskError::Unknown(_))));
    let answer: serde_json::Map<String, Value> = serde_json::from_value(json!({"go": {"action": "decline"}})).unwrap();
    engine.answer_task(&task.id, &alice, answer).await.unwrap();
    let done = within("the end", async {
        loop {
            let now = engine.task(&task.id, &alice).await.unwrap();
            if now.state.is_terminal() {
                return now;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_eq!(done.outcome.unwrap()["result"]["content"][0]["text"], "answer: \"decline\"");
    // A call refused before it runs is an error, not a task.
    assert!(matches!(engine.start_task("no_such_tool", json!({}), &alice).await, Err(TaskError::Call(_))));
}

#[tokio::test]
async fn status_changes_reach_only_the_owners_listen_streams() {
    let engine = task_service(Arc::default(), options());
    let changes = engine.changes().clone();
    let alice = as_user(client_of(engine.clone()), "alice");
    let bob = as_user(client_of(engine.clone()), "bob");
    let listen = json!({"notifications": {"promptsListChanged": true}});
    let mut alices = Sse::new(alice.send(alice.request("subscriptions/listen", listen.clone())).await);
    let mut bobs = Sse::new(bob.send(bob.request("subscriptions/listen", listen)).await);
    assert_eq!(alices.next_message().await["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(bobs.next_message().await["method"], "notifications/subscriptions/acknowledged");

    let task = created(&alice, "sleepy", json!({"ms": 100})).await;
    let mut seen = Vec::new();
    let ended = within("the task's end on the stream", async {
        loop {
            let message = alices.next_message().await;
            assert_eq!(message["method"], "notifications/tasks", "{message}");
            assert_eq!(message["params"]["taskId"], task.as_str());
            seen.push(message["params"]["status"].clone());
            if message["params"]["status"] == "completed" {
                return message;
            }
        }
    })
    .await;
    assert_eq!(seen.first(), Some(&json!("working")), "{seen:?}");
    assert_eq!(ended["params"]["result"]["content"][0]["text"], "slept");
    // Bob's stream carried none of it: the next thing it sees is the next change it asked for.
    changes.prompts_changed();
    assert_eq!(bobs.next_message().await["method"], "notifications/prompts/list_changed");
}

// An instance of `engine` sharing `backplane` with the others, as instances behind a load
// balancer share a Redis (and, through `task_store`, their task records).
async fn instance_of(engine: McpEngine, backplane: &Arc<mirobody_mcp::session::MemoryBackplane>) -> McpHttp {
    let key = crate::support::shared_key();
    McpHttp::with_shared_sessions(engine, HttpOptions::default(), Arc::clone(backplane) as _, &key)
        .await
        .expect("the backplane listens")
}

fn on(http: &McpHttp, user: &str) -> MetaClient {
    as_user(
        MetaClient::new(http.router()).with_capabilities(json!({"elicitation": {}, "extensions": {TASKS: {}}})),
        user,
    )
}

#[tokio::test]
async fn answers_and_cancellations_reach_a_task_running_in_another_instance() {
    let (store, backplane) = (Arc::new(MemoryTaskStore::default()), Arc::new(Default::default()));
    let a = on(&instance_of(task_service(store.clone(), options()), &backplane).await, "alice");
    let second = instance_of(task_service(store, options()), &backplane).await;
    let (b, bob) = (on(&second, "alice"), on(&second, "bob"));

    // Asked on a, answered through b: a wrong answer is refused there, checked against the
    // question the record shows, and loses nothing.
    let task = created(&a, "ask_in_task", json!({})).await;
    until(&b, &task, "input_required").await;
    let wrong = b.call("tasks/update", json!({"taskId": task, "inputResponses": {"go": {"nope": 1}}})).await;
    assert_eq!(wrong.error_code(), -32602, "{}", wrong.body);
    let theirs = json!({"taskId": task, "inputResponses": {"go": {"action": "accept"}}});
    assert_eq!(bob.call("tasks/update", theirs).await.error_code(), -32602, "not bob's task");
    assert_eq!(get(&a, &task).await.result()["status"], "input_required");
    let answer = json!({"taskId": task, "inputResponses": {"go": {"action": "decline"}}});
    assert_eq!(b.call("tasks/update", answer).await.result()["resultType"], "complete");
    let done = until(&b, &task, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "answer: \"decline\"", "{done}");

    // Running on a, cancelled through b: cancelled at once for every reader, and a stops it.
    let forever = created(&a, "forever", json!({"tag": "cancelled-through-another-instance"})).await;
    assert_eq!(bob.call("tasks/cancel", json!({"taskId": forever})).await.error_code(), -32602);
    assert_eq!(b.call("tasks/cancel", json!({"taskId": forever})).await.result()["resultType"], "complete");
    assert_eq!(get(&b, &forever).await.result()["status"], "cancelled");
    within("a to stop the task", async {
        while !DROPPED.lock().unwrap().iter().any(|tag| tag == "cancelled-through-another-instance") {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_eq!(get(&a, &forever).await.result()["status"], "cancelled", "a's own end did not overwrite it");
}

#[tokio::test]
async fn answers_for_a_task_no_instance_can_reach_are_refused_not_lost() {
    // Two instances on one store and no backplane: b cannot reach a's task.
    let store = Arc::new(MemoryTaskStore::default());
    let a = as_user(client_of(task_service(store.clone(), options())), "alice");
    let b = as_user(client_of(task_service(store, options())), "alice");
    let task = created(&a, "ask_in_task", json!({})).await;
    until(&b, &task, "input_required").await;
    let answer = json!({"taskId": task, "inputResponses": {"go": {"action": "accept"}}});
    let refused = b.call("tasks/update", answer.clone()).await;
    assert_eq!(refused.error_code(), -32603, "{}", refused.body);
    assert!(refused.body.to_string().contains("another server process"), "{}", refused.body);
    assert_eq!(get(&a, &task).await.result()["status"], "input_required", "still waiting");
    a.call("tasks/update", answer).await.result();
    assert_eq!(until(&a, &task, "completed").await["result"]["content"][0]["text"], "answer: \"accept\"");
}

// A store whose every write waits a moment, as a database's does.
struct SlowStore(MemoryTaskStore);

#[async_trait::async_trait]
impl mirobody_ports::TaskStore for SlowStore {
    async fn save(&self, task: &mirobody_ports::TaskRecord) -> mirobody_core::backend::BackendResult<()> {
        tokio::time::sleep(Duration::from_millis(5)).await;
        self.0.save(task).await
    }
    async fn load(
        &self,
        id: &str,
        owner: &str,
        now_ms: i64,
    ) -> mirobody_core::backend::BackendResult<Option<mirobody_ports::TaskRecord>> {
        self.0.load(id, owner, now_ms).await
    }
    async fn live(&self, owner: &str, now_ms: i64) -> mirobody_core::backend::BackendResult<u64> {
        self.0.live(owner, now_ms).await
    }
    async fn live_anonymous(&self, now_ms: i64) -> mirobody_core::backend::BackendResult<u64> {
        self.0.live_anonymous(now_ms).await
    }
    async fn purge(&self, now_ms: i64, max: u64) -> mirobody_core::backend::BackendResult<u64> {
        self.0.purge(now_ms, max).await
    }
}

#[tokio::test]
async fn a_task_that_asks_as_it_starts_is_answered_on_a_store_that_takes_time() {
    // The question's save is under way as the call becomes a task; the task's first save must
    // not wait for it while it cannot go on (this hung on PostgreSQL).
    let client =
        as_user(client_of(task_service_on(Arc::new(SlowStore(MemoryTaskStore::default())), options())), "alice");
    let task = within("the task's handle", created(&client, "ask_in_task", json!({}))).await;
    until(&client, &task, "input_required").await;
    client.call("tasks/update", json!({"taskId": task, "inputResponses": {"go": {"action": "accept"}}})).await.result();
    assert_eq!(until(&client, &task, "completed").await["result"]["content"][0]["text"], "answer: \"accept\"");
}

#[tokio::test]
async fn an_anonymous_task_is_its_holders_alone_and_never_announced() {
    let store = Arc::new(MemoryTaskStore::default());
    let engine = task_service(store.clone(), options());
    let changes = engine.changes().clone();
    let anonymous = client_of(engine.clone());
    let alice = as_user(client_of(engine.clone()), "alice");
    let listen = json!({"notifications": {"promptsListChanged": true}});
    let mut anonymous_stream =
        Sse::new(anonymous.send(anonymous.request("subscriptions/listen", listen.clone())).await);
    let mut alices = Sse::new(alice.send(alice.request("subscriptions/listen", listen)).await);
    assert_eq!(anonymous_stream.next_message().await["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(alices.next_message().await["method"], "notifications/subscriptions/acknowledged");

    let task = created(&anonymous, "ask_in_task", json!({})).await;
    // Owned by a key of its own, not one every anonymous caller shares.
    assert!(store.load(&task, "anonymous", 0).await.unwrap().is_none(), "a shared anonymous owner");
    let kept = store.load(&task, &format!("anonymous:{task}"), 0).await.unwrap().expect("its own owner");
    assert_eq!(kept.tool, "ask_in_task");
    // Its holder polls, answers and reads it; a signed-in caller with its id finds nothing.
    until(&anonymous, &task, "input_required").await;
    assert_eq!(get(&alice, &task).await.error_code(), -32602);
    let answer = json!({"taskId": task, "inputResponses": {"go": {"action": "accept"}}});
    assert_eq!(alice.call("tasks/update", answer.clone()).await.error_code(), -32602);
    assert_eq!(alice.call("tasks/cancel", json!({"taskId": task})).await.error_code(), -32602);
    anonymous.call("tasks/update", answer).await.result();
    assert_eq!(until(&anonymous, &task, "completed").await["result"]["content"][0]["text"], "answer: \"accept\"");
    // Another anonymous task's id is not this one: -32602, as for one that does not exist.
    assert_eq!(get(&anonymous, "0123456789abcdef0123456789abcdef").await.error_code(), -32602);

    // No listen stream carried any of it: the next thing each sees is the next change asked for.
    changes.prompts_changed();
    assert_eq!(anonymous_stream.next_message().await["method"], "notifications/prompts/list_changed");
    assert_eq!(alices.next_message().await["method"], "notifications/prompts/list_changed");
}

#[tokio::test]
async fn anonymous_callers_share_one_bound_on_running_tasks() {
    let engine = task_service(Arc::default(), options());
    let (one, two) = (client_of(engine.clone()), client_of(engine.clone()));
    created(&one, "forever", json!({})).await;
    created(&two, "forever", json!({})).await;
    let refused = client_of(engine.clone()).call_tool("forever", json!({})).await;
    assert_eq!(refused.error_code(), -32600, "anonymous callers cannot be told apart: {}", refused.body);
    // A signed-in caller has a bound of its own.
    created(&as_user(client_of(engine), "alice"), "forever", json!({})).await;
}

// A store that counts its purges and keeps its records past their expiry until purged.
#[derive(Default)]
struct CountingStore {
    records: MemoryTaskStore,
    purges: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl mirobody_ports::TaskStore for CountingStore {
    async fn save(&self, task: &mirobody_ports::TaskRecord) -> mirobody_core::backend::BackendResult<()> {
        self.records.save(task).await
    }
    async fn load(
        &self,
        id: &str,
        owner: &str,
        now_ms: i64,
    ) -> mirobody_core::backend::BackendResult<Option<mirobody_ports::TaskRecord>> {
        self.records.load(id, owner, now_ms).await
    }
    async fn live(&self, owner: &str, now_ms: i64) -> mirobody_core::backend::BackendResult<u64> {
        self.records.live(owner, now_ms).await
    }
    async fn live_anonymous(&self, now_ms: i64) -> mirobody_core::backend::BackendResult<u64> {
        self.records.live_anonymous(now_ms).await
    }
    async fn purge(&self, now_ms: i64, max: u64) -> mirobody_core::backend::BackendResult<u64> {
        self.purges.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.records.purge(now_ms, max).await
    }
}

#[tokio::test]
async fn expired_records_are_purged_on_a_timer_without_a_new_task() {
    let store = Arc::new(CountingStore::default());
    let options = options().with_ttl(Duration::from_millis(300));
    let client = as_user(client_of(task_service_on(store.clone(), options)), "alice");
    let task = created(&client, "sleepy", json!({"ms": 60})).await;
    until(&client, &task, "completed").await;
    // Read as of the epoch, the record is there until a purge removes it; no task is admitted
    // from here on, so only the timer can.
    assert!(store.load(&task, "user:alice", 0).await.unwrap().is_some());
    within("the timer to purge it", async {
        while store.load(&task, "user:alice", 0).await.unwrap().is_some() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(store.purges.load(std::sync::atomic::Ordering::Relaxed) >= 2, "purged on a timer, more than once");
}

#[tokio::test]
async fn a_tasks_time_limit_counts_its_work_not_its_wait_for_answers() {
    let client = as_user(client_of(task_service(Arc::default(), options())), "alice");
    // Waiting three times its limit for an answer, it still ends with the answer.
    let task = created(&client, "ask_within_a_limit", json!({})).await;
    until(&client, &task, "input_required").await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    client.call("tasks/update", json!({"taskId": task, "inputResponses": {"go": {"action": "accept"}}})).await.result();
    let done = until(&client, &task, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "answer: \"accept\"", "{done}");
    // Working past it, the call becomes a task as declared, and the task ends with the error.
    let task = created(&client, "sleep_past_a_limit", json!({"ms": 60_000})).await;
    let done = until(&client, &task, "completed").await;
    assert_eq!(done["result"]["isError"], true, "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("took longer than its time limit of 0.2 s"), "{text}");
}

#[path = "task_access.rs"]
mod task_access;
