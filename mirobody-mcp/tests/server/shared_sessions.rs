//! Sessions shared by several endpoints through one backplane, as instances behind a load
//! balancer share a Redis: any instance serves any request of a session, a change made through
//! one holds on the others, cancellations and answers reach the call wherever it runs, a
//! session outlives the instance that made it, and DELETE ends it everywhere. And what crosses
//! the backplane: a task's status reaches the owner's streams elsewhere while its result never
//! travels; a forged message reaches no stream and is counted; another secret shares nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::Body;
use futures::StreamExt;
use futures::stream::BoxStream;
use http::{Method, Request, StatusCode, header};
use mirobody_core::backend::BackendResult;
use mirobody_core::{BackendError, Registry, TaskSupport, Tool, ToolResult, UserInfo};
use mirobody_mcp::http::{HttpOptions, McpHttp};
use mirobody_mcp::session::MemoryBackplane;
use mirobody_mcp::{McpEngine, MemoryTaskStore, StateKey, TaskOptions};
use mirobody_ports::SessionBackplane;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::support::{
    ACCEPT_BOTH, Sse, TestServer, json_reply, notification, rpc, shared_key, started, stopped, with, within,
};

fn tool_call(id: i64, name: &str, arguments: Value) -> Value {
    rpc(id, "tools/call", json!({"name": name, "arguments": arguments}))
}

// Two instances over one backplane.
async fn two(backplane: &Arc<MemoryBackplane>) -> (TestServer, TestServer) {
    let a = TestServer::sharing(Arc::clone(backplane) as _, HttpOptions::default()).await;
    let b = TestServer::sharing(Arc::clone(backplane) as _, HttpOptions::default()).await;
    (a, b)
}

// Polls `check` until it holds: what one instance says reaches the others a moment later.
async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    within(what, async {
        while !check().await {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn a_session_made_on_one_instance_is_served_by_another_and_only_for_its_owner() {
    let backplane = Arc::new(MemoryBackplane::new());
    let (a, b) = two(&backplane).await;
    let alice = a.initialized_as(UserInfo::authenticated("alice"), json!({})).await;
    assert_eq!(backplane.len(), 1, "the record is kept before the id goes out");
    assert_eq!(b.http.sessions().len(), 0);

    let on_b = alice.via(&b);
    let reply = on_b.post_json(&tool_call(2, "echo", json!({"text": "hi"}))).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.result()["structuredContent"]["echo"], "hi", "{}", reply.body);
    assert_eq!(b.http.sessions().len(), 1, "b keeps a copy");
    on_b.call("tools/list", json!({})).await.result();

    let mallory = on_b.as_user(UserInfo::authenticated("mallory"));
    assert_eq!(mallory.call("tools/list", json!({})).await.status, StatusCode::NOT_FOUND);
    let anonymous = b.client().on_session(alice.session().as_deref());
    assert_eq!(anonymous.call("tools/list", json!({})).await.status, StatusCode::NOT_FOUND);
    for made_up in ["0123456789abcdef0123456789abcdef", "not-an-id", &"f".repeat(4096)] {
        let made_up = on_b.on_session(Some(made_up));
        assert_eq!(made_up.call("tools/list", json!({})).await.status, StatusCode::NOT_FOUND);
    }
}

#[tokio::test]
async fn an_anonymous_session_claimed_on_one_instance_is_its_callers_everywhere() {
    let backplane = Arc::new(MemoryBackplane::new());
    let (a, b) = two(&backplane).await;
    let anonymous = a.initialized(json!({})).await;
    // Signed in on another instance than the one that made it.
    let ana_on_b = anonymous.via(&b).as_user(UserInfo::authenticated("ana"));
    assert_eq!(ana_on_b.call("tools/list", json!({})).await.status, StatusCode::OK);
    assert_eq!(anonymous.via(&b).call("tools/list", json!({})).await.status, StatusCode::NOT_FOUND);
    // A third instance reads the record: it is ana's.
    let c = TestServer::sharing(Arc::clone(&backplane) as _, HttpOptions::default()).await;
    assert_eq!(anonymous.via(&c).call("tools/list", json!({})).await.status, StatusCode::NOT_FOUND);
    let bo_on_c = anonymous.via(&c).as_user(UserInfo::authenticated("bo"));
    assert_eq!(bo_on_c.call("tools/list", json!({})).await.status, StatusCode::NOT_FOUND);
    let ana_on_c = anonymous.via(&c).as_user(UserInfo::authenticated("ana"));
    assert_eq!(ana_on_c.call("tools/list", json!({})).await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_change_through_one_instance_holds_on_the_others() {
    let backplane = Arc::new(MemoryBackplane::new());
    let (a, b) = two(&backplane).await;
    let client = a.initialized(json!({})).await;
    let before = client.call_tool("log", json!({})).await;
    assert_eq!(before.content_type(), "application/json", "no logs asked for yet");

    client.via(&b).call("logging/setLevel", json!({"level": "debug"})).await.result();
    eventually("a to take b's change", async || {
        let reply = client.post(&tool_call(client.id(), "log", json!({}))).await;
        reply.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream")
    })
    .await;
    // And a third instance, which never saw the session, reads it with the change.
    let c = TestServer::sharing(Arc::clone(&backplane) as _, HttpOptions::default()).await;
    let reply = client.via(&c).post(&tool_call(50, "log", json!({}))).await;
    let mut sse = Sse::new(reply);
    assert_eq!(sse.next_message().await["method"], "notifications/message");
}

#[tokio::test]
async fn a_cancellation_reaches_the_call_on_another_instance() {
    let backplane = Arc::new(MemoryBackplane::new());
    let (a, b) = two(&backplane).await;
    let client = a.initialized(json!({})).await;
    let signal = started("shared-cancel");
    let pending = tokio::spawn({
        let client = client.clone();
        async move { client.post(&tool_call(31, "slow", json!({"tag": "shared-cancel"}))).await }
    });
    within("the slow tool to start", signal.notified()).await;

    let cancel = client.via(&b).post(&notification("notifications/cancelled", json!({"requestId": 31}))).await;
    assert_eq!(cancel.status(), StatusCode::ACCEPTED);
    within("the tool on a to stop", stopped("shared-cancel").notified()).await;
    let reply = json_reply(within("the reply", pending).await.unwrap()).await;
    assert_eq!(reply.body["id"], 31);
    assert!(reply.body.get("error").is_some(), "{}", reply.body);
}

#[tokio::test]
async fn an_answer_reaches_the_question_asked_on_another_instance_from_its_session_only() {
    let backplane = Arc::new(MemoryBackplane::new());
    let (a, b) = two(&backplane).await;
    let client = a.initialized_as(UserInfo::authenticated("alice"), json!({"elicitation": {}})).await;
    let other = b.initialized_as(UserInfo::authenticated("alice"), json!({"elicitation": {}})).await;
    let mut sse = Sse::new(client.post(&tool_call(41, "elicit", json!({}))).await);
    let ask = sse.next_message().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    let answer = |name: &str| json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"name": name}}});

    // Another session of the same user, on b: passed on, but a takes it only from the session
    // it asked.
    assert_eq!(other.post(&answer("Mallory")).await.status(), StatusCode::ACCEPTED);
    let impostor = client.via(&b).as_user(UserInfo::authenticated("mallory"));
    assert_eq!(impostor.post(&answer("Trudy")).await.status(), StatusCode::NOT_FOUND);

    // Only an answer under an id of the form the server's questions have, of a bounded size,
    // is kept for another instance; anything else is refused and nothing is stored.
    let kept = backplane.len();
    let made_up = json!({"jsonrpc": "2.0", "id": "not-a-question", "result": {"action": "accept"}});
    let refused = client.via(&b).post_json(&made_up).await;
    assert_eq!((refused.status, refused.error_code()), (StatusCode::BAD_REQUEST, -32600), "{}", refused.body);
    let numbered = json!({"jsonrpc": "2.0", "id": 7, "result": {"action": "accept"}});
    assert_eq!(client.via(&b).post_json(&numbered).await.status, StatusCode::BAD_REQUEST);
    let huge = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"name": "x".repeat(300_000)}}});
    let refused = client.via(&b).post_json(&huge).await;
    assert_eq!((refused.status, refused.error_code()), (StatusCode::BAD_REQUEST, -32600), "{}", refused.body);
    assert!(refused.error_message().contains("256 KiB"), "{}", refused.body);
    assert_eq!(backplane.len(), kept, "nothing refused was kept");

    assert_eq!(client.via(&b).post(&answer("Ada")).await.status(), StatusCode::ACCEPTED);
    let response = sse.next_message().await;
    assert_eq!(response["id"], 41);
    assert_eq!(response["result"]["structuredContent"]["answer"]["content"]["name"], "Ada", "{response}");
}

#[tokio::test]
async fn a_session_outlives_the_instance_that_made_it() {
    let backplane = Arc::new(MemoryBackplane::new());
    let a = TestServer::sharing(Arc::clone(&backplane) as _, HttpOptions::default()).await;
    let client = a.initialized_as(UserInfo::authenticated("alice"), json!({})).await;
    client.call("logging/setLevel", json!({"level": "info"})).await.result();
    drop(a);

    let c = TestServer::sharing(Arc::clone(&backplane) as _, HttpOptions::default()).await;
    let on_c = client.via(&c);
    let mut sse = Sse::new(on_c.post(&tool_call(7, "log", json!({}))).await);
    assert_eq!(sse.next_message().await["params"]["data"]["msg"], "first", "the log level came along");
    let echo = on_c.post_json(&tool_call(8, "echo", json!({"text": "still here"}))).await;
    assert_eq!(echo.result()["structuredContent"]["echo"], "still here");
}

#[tokio::test]
async fn delete_through_one_instance_ends_the_session_everywhere() {
    let backplane = Arc::new(MemoryBackplane::new());
    let (a, b) = two(&backplane).await;
    let client = a.initialized_as(UserInfo::authenticated("alice"), json!({})).await;
    client.via(&b).call("tools/list", json!({})).await.result();
    assert_eq!((a.http.sessions().len(), b.http.sessions().len()), (1, 1));

    let not_hers = client.via(&b).as_user(UserInfo::authenticated("mallory"));
    assert_eq!(not_hers.send(not_hers.request(Method::DELETE, "")).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(backplane.len(), 1, "another user's DELETE ends nothing");

    let on_b = client.via(&b);
    assert_eq!(on_b.send(on_b.request(Method::DELETE, "")).await.status(), StatusCode::NO_CONTENT);
    assert!(backplane.is_empty());
    eventually("a to drop its copy", async || a.http.sessions().is_empty()).await;
    assert_eq!(client.call("tools/list", json!({})).await.status, StatusCode::NOT_FOUND);
    assert_eq!(on_b.call("tools/list", json!({})).await.status, StatusCode::NOT_FOUND);
}

// An instance whose news of other instances is late: it shares the records but never hears
// an event, as one that has not yet read the end another instance announced.
struct Late(Arc<MemoryBackplane>);

#[async_trait::async_trait]
impl SessionBackplane for Late {
    async fn save(&self, id: &str, record: Vec<u8>, ttl: Duration) -> BackendResult<()> {
        self.0.save(id, record, ttl).await
    }
    async fn load(&self, id: &str) -> BackendResult<Option<Vec<u8>>> {
        self.0.load(id).await
    }
    async fn remove(&self, id: &str) -> BackendResult<()> {
        self.0.remove(id).await
    }
    async fn renew(&self, ids: &[String], ttl: Duration) -> BackendResult<()> {
        self.0.renew(ids, ttl).await
    }
    async fn publish(&self, event: Vec<u8>) -> BackendResult<()> {
        self.0.publish(event).await
    }
    async fn events(&self) -> BackendResult<BoxStream<'static, Vec<u8>>> {
        Ok(futures::stream::pending().boxed())
    }
}

// The conformance suite's session lifecycle through a load balancer: DELETE on one instance,
// the next request on another, before that one has heard of the end, is 404 all the same.
#[tokio::test]
async fn an_ended_session_is_404_on_an_instance_that_has_not_heard_yet() {
    let backplane = Arc::new(MemoryBackplane::new());
    let a = TestServer::sharing(Arc::clone(&backplane) as _, HttpOptions::default()).await;
    let late = TestServer::sharing(Arc::new(Late(Arc::clone(&backplane))) as _, HttpOptions::default()).await;
    let client = a.initialized(json!({})).await;
    client.via(&late).call("ping", json!({})).await.result();
    assert_eq!(late.http.sessions().len(), 1, "the late instance holds a copy");

    assert_eq!(client.send(client.request(Method::DELETE, "")).await.status(), StatusCode::NO_CONTENT);
    assert_eq!(client.via(&late).call("ping", json!({})).await.status, StatusCode::NOT_FOUND);
    assert!(late.http.sessions().is_empty(), "and its copy is gone");
}

#[tokio::test]
async fn a_record_lives_while_the_session_is_used_anywhere_and_goes_when_it_is_not() {
    let backplane = Arc::new(MemoryBackplane::new());
    let idle = with(|o: &mut HttpOptions| o.session_idle_timeout = Duration::from_secs(2));
    let a = TestServer::sharing(Arc::clone(&backplane) as _, idle.clone()).await;
    let b = TestServer::sharing(Arc::clone(&backplane) as _, idle).await;
    let client = a.initialized_as(UserInfo::authenticated("alice"), json!({})).await;
    // Used through a for twice the record's life: a renews it (and the index of alice's
    // sessions with it), so b still finds it.
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        client.call("ping", json!({})).await.result();
    }
    client.via(&b).call("ping", json!({})).await.result();
    assert_eq!(backplane.sets(), 1, "alice's index lives as long");
    // Unused for longer than its life: gone everywhere.
    tokio::time::sleep(Duration::from_millis(4_500)).await;
    assert!(backplane.is_empty());
    assert_eq!(backplane.sets(), 0, "and so is the index");
    assert_eq!(client.via(&b).call("ping", json!({})).await.status, StatusCode::NOT_FOUND);
    assert_eq!(client.call("ping", json!({})).await.status, StatusCode::NOT_FOUND);
}

// A backplane that can be taken down.
struct Flaky {
    inner: MemoryBackplane,
    down: AtomicBool,
}

impl Flaky {
    fn check(&self) -> BackendResult<()> {
        if self.down.load(Ordering::Relaxed) { Err(BackendError::new("down")) } else { Ok(()) }
    }
}

#[async_trait::async_trait]
impl SessionBackplane for Flaky {
    async fn save(&self, id: &str, record: Vec<u8>, ttl: Duration) -> BackendResult<()> {
        self.check()?;
        self.inner.save(id, record, ttl).await
    }
    async fn load(&self, id: &str) -> BackendResult<Option<Vec<u8>>> {
        self.check()?;
        self.inner.load(id).await
    }
    async fn remove(&self, id: &str) -> BackendResult<()> {
        self.check()?;
        self.inner.remove(id).await
    }
    async fn renew(&self, ids: &[String], ttl: Duration) -> BackendResult<()> {
        self.check()?;
        self.inner.renew(ids, ttl).await
    }
    async fn publish(&self, event: Vec<u8>) -> BackendResult<()> {
        self.check()?;
        self.inner.publish(event).await
    }
    async fn events(&self) -> BackendResult<BoxStream<'static, Vec<u8>>> {
        self.inner.events().await
    }
}

#[tokio::test]
async fn an_unreachable_store_is_a_503_and_nothing_is_half_made() {
    let flaky = Arc::new(Flaky { inner: MemoryBackplane::new(), down: AtomicBool::new(false) });
    let a = TestServer::sharing(Arc::clone(&flaky) as _, HttpOptions::default()).await;
    let b = TestServer::sharing(Arc::clone(&flaky) as _, HttpOptions::default()).await;
    let client = a.initialized(json!({})).await;
    flaky.down.store(true, Ordering::Relaxed);

    let refused = a.client().call("initialize", crate::support::init_params("2025-11-25", json!({}))).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE, "{}", refused.body);
    assert!(refused.header("mcp-session-id").is_empty());
    assert!(!refused.header("retry-after").is_empty());
    assert_eq!(a.http.sessions().len(), 1, "the refused session is not kept");

    let change = client.call("logging/setLevel", json!({"level": "debug"})).await;
    assert_eq!(change.status, StatusCode::SERVICE_UNAVAILABLE, "a change others would not see is not acknowledged");
    assert_eq!(client.via(&b).call("ping", json!({})).await.status, StatusCode::SERVICE_UNAVAILABLE);
    // An id this server never makes is not looked up at all.
    let made_up = client.via(&b).on_session(Some("not-an-id"));
    assert_eq!(made_up.call("ping", json!({})).await.status, StatusCode::NOT_FOUND);
    // What this instance holds still serves.
    client.call("ping", json!({})).await.result();

    flaky.down.store(false, Ordering::Relaxed);
    client.via(&b).call("ping", json!({})).await.result();
}

// ---------------------------------------------------------------------------------------------
// What travels: signed, sealed, and without content.
// ---------------------------------------------------------------------------------------------

const TASKS: &str = "io.modelcontextprotocol/tasks";
const SECRET: &str = "Allergic to penicillin";

// A task that ends with a text nobody but its owner may read.
async fn secret_task(_: mirobody_core::Args, _: &UserInfo, _: &mirobody_core::ToolContext<'_>) -> ToolResult {
    tokio::time::sleep(Duration::from_millis(200)).await;
    ToolResult::text(SECRET)
}

// A task that asks its client one question, under the key `go`.
async fn asking_task(_: mirobody_core::Args, _: &UserInfo, ctx: &mirobody_core::ToolContext<'_>) -> ToolResult {
    ctx.become_task();
    let question = json!({"message": "Go?", "requestedSchema": {"type": "object", "properties": {}}});
    match ctx.request_keyed("go", "elicitation/create", question).await {
        Ok(answer) => ToolResult::text(format!("answer: {}", answer["action"])),
        Err(e) => ToolResult::error(e.to_string()),
    }
}

// An instance whose tasks are kept in `store`, shared by all (as their database is).
async fn task_instance(store: &Arc<MemoryTaskStore>, backplane: &Arc<MemoryBackplane>, key: &StateKey) -> McpHttp {
    let registry = Registry::builder()
        .tool(Tool::new("secret_task", "Ends with a secret.").task_support(TaskSupport::Optional).handler(secret_task))
        .tool(Tool::new("asking_task", "Asks one question.").task_support(TaskSupport::Optional).handler(asking_task))
        .build()
        .unwrap();
    let options = TaskOptions::default().with_sync_budget(Duration::from_millis(50));
    let engine = McpEngine::builder(Arc::new(registry)).task_store(Arc::clone(store) as _).task_options(options);
    let engine = engine.request_state_key(key.clone()).build();
    McpHttp::with_shared_sessions(engine, HttpOptions::default(), Arc::clone(backplane) as _, key).await.unwrap()
}

// A 2026-07-28 request of `user` with the tasks extension.
fn request_2026_07_28(user: &str, id: i64, method: &str, mut params: Value) -> Request<Body> {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {TASKS: {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
    });
    let mut request = Request::builder()
        .method(Method::POST)
        .uri("/")
        .header(header::HOST, "localhost")
        .header(header::ACCEPT, ACCEPT_BOTH)
        .header(header::CONTENT_TYPE, "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = params["name"].as_str().or(params["taskId"].as_str()) {
        request = request.header("mcp-name", name);
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut request = request.body(Body::from(body.to_string())).unwrap();
    request.extensions_mut().insert(UserInfo::authenticated(user));
    request
}

async fn send(http: &McpHttp, request: Request<Body>) -> http::Response<Body> {
    within("a response", http.router().oneshot(request)).await.unwrap()
}

// Alice's listen stream on `http`, for her tasks and the prompt list, acknowledged.
async fn listening(http: &McpHttp) -> Sse {
    let listen = json!({"notifications": {"promptsListChanged": true}});
    let mut stream = Sse::new(send(http, request_2026_07_28("alice", 1, "subscriptions/listen", listen)).await);
    assert_eq!(stream.next_message().await["method"], "notifications/subscriptions/acknowledged");
    stream
}

#[tokio::test]
async fn a_task_status_reaches_another_instance_and_its_result_never_travels() {
    let (store, backplane) = (Arc::new(MemoryTaskStore::default()), Arc::new(MemoryBackplane::new()));
    let key = shared_key();
    let (a, b) = (task_instance(&store, &backplane, &key).await, task_instance(&store, &backplane, &key).await);
    let mut wire = backplane.events().await.unwrap();
    let mut on_b = listening(&b).await;

    let call = json!({"name": "secret_task", "arguments": {}});
    let created = json_reply(send(&a, request_2026_07_28("alice", 2, "tools/call", call)).await).await;
    let task = created.result()["taskId"].as_str().expect("a task").to_owned();
    let ended = within("the task's end on b's stream", async {
        loop {
            let message = on_b.next_message().await;
            assert_eq!(message["method"], "notifications/tasks", "{message}");
            assert_eq!(message["params"]["taskId"], task.as_str());
            if message["params"]["status"] == "completed" {
                return message;
            }
        }
    })
    .await;
    // The result, read by b from the task store.
    assert_eq!(ended["params"]["result"]["content"][0]["text"], SECRET, "{ended}");

    // Everything that crossed: neither the result, nor even whose task it was, in clear.
    let mut heard = 0;
    while let Ok(Some(bytes)) = tokio::time::timeout(Duration::from_millis(100), wire.next()).await {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("penicillin") && !text.contains("alice") && !text.contains(&task), "{text}");
        heard += 1;
    }
    assert!(heard >= 2, "the status changes went through the backplane ({heard})");
    assert_eq!((a.refused_events().unwrap().total(), b.refused_events().unwrap().total()), (0, 0));
}

#[tokio::test]
async fn a_forged_message_never_reaches_a_listen_stream_and_is_counted() {
    let (store, backplane) = (Arc::new(MemoryTaskStore::default()), Arc::new(MemoryBackplane::new()));
    let key = shared_key();
    let (a, b) = (task_instance(&store, &backplane, &key).await, task_instance(&store, &backplane, &key).await);
    let stranger = StateKey::new(*b"not the secret the others share!").unwrap();
    let intruder = task_instance(&store, &backplane, &stranger).await;
    let mut on_a = listening(&a).await;

    // A completed task for alice, as `redis-cli publish` would send it (the form messages had
    // before they were signed), and the same with a made-up signature.
    let forged = json!({"from": "x", "kind": "change", "change": {"kind": "task", "owner": "user:alice",
        "task": {"taskId": "t-forged", "status": "completed", "result": {"content": [{"type": "text", "text": "forged"}]}}}});
    backplane.publish(forged.to_string().into_bytes()).await.unwrap();
    backplane.publish(format!("mbp1:{}:{forged}", "0".repeat(64)).into_bytes()).await.unwrap();
    // An instance configured with another secret: what it says is not believed either.
    intruder.engine().changes().prompts_changed();
    // A genuine change from b: the first and only thing alice's stream carries.
    tokio::time::sleep(Duration::from_millis(100)).await;
    b.engine().changes().prompts_changed();
    assert_eq!(on_a.next_message().await["method"], "notifications/prompts/list_changed");
    let nothing_more = tokio::time::timeout(Duration::from_millis(300), on_a.next_event()).await;
    assert!(nothing_more.is_err(), "{:?}", nothing_more.map(|e| e.map(|e| e.data)));
    let refused = a.refused_events().unwrap();
    assert_eq!((refused.unsigned, refused.forged), (1, 2), "{refused:?}");
    // To the intruder, b's change is forged too.
    eventually("the intruder to refuse b's change", async || intruder.refused_events().unwrap().forged == 2).await;
    assert_eq!(intruder.refused_events().unwrap().unsigned, 1);
}

#[tokio::test]
async fn instances_with_different_secrets_share_nothing() {
    let backplane = Arc::new(MemoryBackplane::new());
    let a = TestServer::sharing(Arc::clone(&backplane) as _, HttpOptions::default()).await;
    let stranger = StateKey::new(*b"not the secret the others share!").unwrap();
    let b = TestServer::sharing_with(Arc::clone(&backplane) as _, HttpOptions::default(), &stranger).await;
    let client = a.initialized_as(UserInfo::authenticated("alice"), json!({})).await;
    // b cannot even find a's record (kept under a name only the key gives): to b the session
    // does not exist; and what a said of it, b refused.
    assert_eq!(client.via(&b).call("tools/list", json!({})).await.status, StatusCode::NOT_FOUND);
    eventually("b to refuse a's announcement", async || b.http.refused_events().unwrap().forged == 1).await;
}

// The status of alice's task `task`, as `http` reads it from the task store.
async fn status(http: &McpHttp, task: &str) -> Value {
    let reply =
        json_reply(send(http, request_2026_07_28("alice", 9, "tasks/get", json!({"taskId": task}))).await).await;
    reply.result().clone()
}

#[tokio::test]
async fn only_answers_to_a_tasks_questions_are_kept_for_the_instance_running_it() {
    let (store, backplane) = (Arc::new(MemoryTaskStore::default()), Arc::new(MemoryBackplane::new()));
    let key = shared_key();
    let (a, b) = (task_instance(&store, &backplane, &key).await, task_instance(&store, &backplane, &key).await);
    let call = json!({"name": "asking_task", "arguments": {}});
    let created = json_reply(send(&a, request_2026_07_28("alice", 2, "tools/call", call)).await).await;
    let task = created.result()["taskId"].as_str().expect("a task").to_owned();
    eventually("the task to ask", async || status(&b, &task).await["status"] == "input_required").await;

    let update = |responses: Value| {
        request_2026_07_28("alice", 3, "tasks/update", json!({"taskId": task, "inputResponses": responses}))
    };
    let big = "x".repeat(300_000);
    // Answers to nothing the task asks: taken, and nothing kept or told.
    let kept = backplane.len();
    let mut wire = backplane.events().await.unwrap();
    // What a said of the task's status may still be on its way.
    while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(200), wire.next()).await {}
    let unasked = json_reply(send(&b, update(json!({"not-asked": {"action": "accept", "note": big}}))).await).await;
    assert_eq!(unasked.result()["resultType"], "complete", "{}", unasked.body);
    assert_eq!(backplane.len(), kept, "nothing kept");
    assert!(tokio::time::timeout(Duration::from_millis(100), wire.next()).await.is_err(), "nothing told");
    // The answer to its question, beside a large one to nothing: only the answer travels.
    let both = json!({"go": {"action": "decline"}, "junk": {"action": "accept", "note": big}});
    let answered = json_reply(send(&b, update(both)).await).await;
    assert_eq!(answered.result()["resultType"], "complete", "{}", answered.body);
    assert_eq!(backplane.len(), kept + 1);
    eventually("the task to end", async || status(&b, &task).await["status"] == "completed").await;
    let done = status(&b, &task).await;
    assert_eq!(done["result"]["content"][0]["text"], "answer: \"decline\"", "{done}");
}
