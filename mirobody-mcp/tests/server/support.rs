//! Shared fixtures: the test tools, resources and prompts, a server built from them, and the
//! `mirobody_mcp::testing` clients (HTTP through the router without sockets, SSE, stdio pipes)
//! wrapped so that what they report as an error fails the test.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use http::{HeaderMap, HeaderValue, Method, Request, Response, header};
use http_body_util::BodyExt;
use mirobody_core::{
    Args, Content, Param, PeerError, Prompt, PromptMessage, PromptRegistry, Registry, Resource, ResourceContents,
    ResourceRegistry, ResourceTemplate, TemplateReadFn, Tool, ToolContext, ToolResult, Type, UserInfo,
};
use mirobody_mcp::http::{HttpOptions, McpHttp};
use mirobody_mcp::testing::{JsonReply, Revision, SseEvent, SseStream, StdioClient, TestClient};
use mirobody_mcp::{McpEngine, McpOptions};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// How long any single wait in a test may take before the test fails.
/// Options of type `T`: the defaults, with `set` applied. The option structs are
/// `#[non_exhaustive]`, so a test starts from the defaults as an application does.
pub(crate) fn with<T: Default>(set: impl FnOnce(&mut T)) -> T {
    let mut options = T::default();
    set(&mut options);
    options
}

pub(crate) const TIMEOUT: Duration = Duration::from_secs(5);
/// The Accept header a conforming client sends on POST.
pub(crate) const ACCEPT_BOTH: &str = "application/json, text/event-stream";
/// The latest protocol revision.
pub(crate) const LATEST: &str = "2025-11-25";

/// Awaits `future`, failing the test after [`TIMEOUT`].
pub(crate) async fn within<F: Future>(what: &str, future: F) -> F::Output {
    match tokio::time::timeout(TIMEOUT, future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {TIMEOUT:?} waiting for {what}"),
    }
}

// =============================================================================================
// Signals between tools and tests (keyed by a `tag` argument so parallel tests stay apart)
// =============================================================================================

fn signals() -> &'static Mutex<HashMap<String, Arc<Notify>>> {
    static SIGNALS: OnceLock<Mutex<HashMap<String, Arc<Notify>>>> = OnceLock::new();
    SIGNALS.get_or_init(Mutex::default)
}

/// The signal a `slow` call with this tag fires when its handler starts.
pub(crate) fn started(tag: &str) -> Arc<Notify> {
    let mut map = signals().lock().unwrap_or_else(|p| p.into_inner());
    Arc::clone(map.entry(tag.to_owned()).or_default())
}

/// The signal a `slow` call with this tag fires when its handler stops early (its future is
/// dropped before the sleep ends: cancelled, or its caller went away).
pub(crate) fn stopped(tag: &str) -> Arc<Notify> {
    started(&format!("stopped:{tag}"))
}

struct StopSignal(Option<String>);

impl Drop for StopSignal {
    fn drop(&mut self) {
        if let Some(tag) = self.0.take() {
            stopped(&tag).notify_one();
        }
    }
}

fn runs() -> &'static Mutex<HashMap<String, usize>> {
    static RUNS: OnceLock<Mutex<HashMap<String, usize>>> = OnceLock::new();
    RUNS.get_or_init(Mutex::default)
}

/// How many times an auth tool's handler ran with this tag.
pub(crate) fn handler_runs(tag: &str) -> usize {
    runs().lock().unwrap_or_else(|p| p.into_inner()).get(tag).copied().unwrap_or(0)
}

fn count_run(args: &Args) {
    let tag = args.str_or("tag", "").to_owned();
    *runs().lock().unwrap_or_else(|p| p.into_inner()).entry(tag).or_default() += 1;
}

// =============================================================================================
// Tools
// =============================================================================================

/// Three progress notifications (0, 50, 100 of 100), yielding after each like a tool doing I/O.
async fn progress(_args: Args, _user: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    for step in [0.0, 50.0, 100.0] {
        ctx.progress(step, Some(100.0), Some("working")).await;
        tokio::task::yield_now().await;
    }
    ToolResult::ok(json!({"done": true}))
}

/// `echo`, as mirobody-tools has it (this crate's tests depend on no tools crate): the
/// required `text` back as `{"echo": text}`.
pub(crate) fn echo_tool() -> Tool {
    Tool::new("echo", "Echo back the provided text.")
        .param(Param::required("text", Type::String, "The text to echo back."))
        .read_only()
        .sync_handler(|args, _user, _ctx| ToolResult::ok(json!({"echo": args.str_or("text", "")})))
}

/// Progress 0, then 50 and 100 in the same poll that returns the result.
async fn progress_burst(_args: Args, _user: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    ctx.progress(0.0, Some(100.0), None).await;
    tokio::task::yield_now().await;
    ctx.progress(50.0, Some(100.0), None).await;
    ctx.progress(100.0, Some(100.0), None).await;
    ToolResult::ok(json!({"done": true}))
}

/// Progress 0, 50 and 100 without ever yielding: the whole call completes in its first poll.
async fn progress_sync(_args: Args, _user: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    for step in [0.0, 50.0, 100.0] {
        ctx.progress(step, Some(100.0), None).await;
    }
    ToolResult::ok(json!({"done": true}))
}

/// Two info log lines.
async fn log(_args: Args, _user: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    ctx.log("info", json!({"msg": "first"})).await;
    tokio::task::yield_now().await;
    ctx.log("info", json!({"msg": "second"})).await;
    tokio::task::yield_now().await;
    ToolResult::ok(json!({"logged": 2}))
}

/// Asks the client for a name and reports what came back (or why nothing did).
async fn elicit(_args: Args, _user: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    let params = json!({
        "message": "What is your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    });
    match ctx.request("elicitation/create", params).await {
        Ok(answer) => ToolResult::ok(json!({"answer": answer})),
        Err(PeerError::Unsupported(method)) => ToolResult::ok(json!({"unsupported": method})),
        Err(PeerError::NoAnswer) => ToolResult::ok(json!({"noAnswer": true})),
        Err(PeerError::Client { code, message }) => {
            ToolResult::ok(json!({"clientError": {"code": code, "message": message}}))
        }
        Err(other) => ToolResult::error(format!("unexpected peer error: {other}")),
    }
}

/// Signals `started(tag)`, reports progress 0 (sent only when the call has a progress token),
/// then sleeps `ms` milliseconds (default 30 s); signals `stopped(tag)` if dropped before that.
async fn slow(args: Args, _user: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    let tag = args.str_or("tag", "");
    let mut stop = StopSignal(Some(tag.to_owned()));
    started(tag).notify_one();
    ctx.progress(0.0, None, Some("started")).await;
    let ms = args.integer("ms", 30_000);
    tokio::time::sleep(Duration::from_millis(u64::try_from(ms).unwrap_or(30_000))).await;
    stop.0 = None;
    ToolResult::ok(json!({"finished": true}))
}

/// Needs an authenticated caller; counts its runs per tag.
async fn whoami(args: Args, user: &UserInfo, _ctx: &ToolContext<'_>) -> ToolResult {
    count_run(&args);
    ToolResult::ok(json!({"user": user.user_id()}))
}

/// Needs the `health:read` scope; counts its runs per tag.
async fn scoped(args: Args, user: &UserInfo, _ctx: &ToolContext<'_>) -> ToolResult {
    count_run(&args);
    ToolResult::ok(json!({"user": user.user_id(), "scoped": true}))
}

async fn boom(_args: Args, _user: &UserInfo, _ctx: &ToolContext<'_>) -> ToolResult {
    panic!("boom: secret internal detail")
}

fn tag_param() -> Param {
    Param::optional("tag", Type::String, "A label the test uses to find this call.")
}

/// Every test tool, in name order.
pub(crate) const TOOL_NAMES: [&str; 10] =
    ["echo", "elicit", "log", "panic", "progress", "progress_burst", "progress_sync", "scoped", "slow", "whoami"];

/// Tools that need an authenticated caller.
pub(crate) const AUTH_TOOLS: [&str; 2] = ["scoped", "whoami"];

/// The registry of test tools.
pub(crate) fn registry() -> Registry {
    Registry::builder()
        .tool(echo_tool())
        .tool(Tool::new("progress", "Reports progress three times.").handler(progress))
        .tool(Tool::new("progress_burst", "Reports progress, the last two with the result.").handler(progress_burst))
        .tool(Tool::new("progress_sync", "Reports progress without yielding.").handler(progress_sync))
        .tool(Tool::new("log", "Logs two info lines.").handler(log))
        .tool(Tool::new("elicit", "Asks the user for their name.").handler(elicit))
        .tool(
            Tool::new("slow", "Sleeps.")
                .param(tag_param())
                .param(Param::optional("ms", Type::Integer, "How long to sleep, in milliseconds."))
                .handler(slow),
        )
        .tool(Tool::new("whoami", "Says who is calling.").param(tag_param()).auth(true).handler(whoami))
        .tool(
            Tool::new("scoped", "Needs health:read.")
                .param(tag_param())
                .require_scopes(["health:read"])
                .handler(scoped),
        )
        .tool(Tool::new("panic", "Always panics.").handler(boom))
        .build()
        .expect("the test registry is valid")
}

// =============================================================================================
// Resources and prompts
// =============================================================================================

/// `test://static` (text), `test://private` (auth), and the template `test://items/{id}`.
pub(crate) fn resources() -> ResourceRegistry {
    let read: TemplateReadFn = Arc::new(|uri, vars, _user, _ctx| {
        let contents = ResourceContents {
            uri: uri.to_owned(),
            mime_type: Some("application/json".into()),
            text: Some(json!({"id": vars.get("id")}).to_string()),
            blob: None,
            meta: None,
        };
        Box::pin(std::future::ready(Ok(vec![contents])))
    });
    ResourceRegistry::new(
        vec![
            Resource::text("test://static", "static", "text/plain", || "static text".to_owned())
                .description("A fixed text."),
            Resource::text("test://private", "private", "text/plain", || "private text".to_owned()).auth(true),
        ],
        vec![ResourceTemplate::new("test://items/{id}", "item", read).mime_type("application/json")],
    )
    .expect("the test resources are valid")
}

/// `greet` (one required argument `name`) and `simple` (no arguments).
pub(crate) fn prompts() -> PromptRegistry {
    PromptRegistry::new(vec![
        Prompt::new("greet", "Greets someone by name.", |args| {
            let name = args.get("name").cloned().unwrap_or_default();
            Ok(vec![PromptMessage::user(Content::text(format!("Say hello to {name}.")))])
        })
        .argument("name", "Who to greet.", true),
        Prompt::new("simple", "A prompt without arguments.", |_| {
            Ok(vec![PromptMessage::user(Content::text("Hello."))])
        }),
    ])
    .expect("the test prompts are valid")
}

/// The MCP engine over the test tools, resources and prompts.
pub(crate) fn engine(options: McpOptions) -> McpEngine {
    McpEngine::builder(Arc::new(registry())).resources(resources()).prompts(prompts()).options(options).build()
}

// =============================================================================================
// HTTP
// =============================================================================================

/// The secret instances sharing sessions in these tests share.
pub(crate) fn shared_key() -> mirobody_mcp::StateKey {
    mirobody_mcp::StateKey::new(*b"the tests' shared secret, 32 B!!").expect("32 bytes")
}

/// A server: the endpoint, whose router tests drive without sockets.
pub(crate) struct TestServer {
    pub(crate) http: McpHttp,
    router: Router,
}

impl TestServer {
    /// Default options.
    pub(crate) fn new() -> Self {
        TestServer::with(McpOptions::default(), HttpOptions::default())
    }

    /// Default MCP options with these HTTP options.
    pub(crate) fn with_http(http: HttpOptions) -> Self {
        TestServer::with(McpOptions::default(), http)
    }

    /// These options.
    pub(crate) fn with(mcp: McpOptions, http: HttpOptions) -> Self {
        TestServer::of(engine(mcp), http)
    }

    /// This engine.
    pub(crate) fn of(engine: McpEngine, http: HttpOptions) -> Self {
        let http = McpHttp::new(engine, http);
        let router = http.router();
        TestServer { http, router }
    }

    /// An instance among several sharing sessions through `backplane`, with the secret they
    /// all share ([`shared_key`]).
    pub(crate) async fn sharing(backplane: Arc<dyn mirobody_ports::SessionBackplane>, http: HttpOptions) -> Self {
        TestServer::sharing_with(backplane, http, &shared_key()).await
    }

    /// An instance sharing `backplane` with the secret `key`.
    pub(crate) async fn sharing_with(
        backplane: Arc<dyn mirobody_ports::SessionBackplane>,
        http: HttpOptions,
        key: &mirobody_mcp::StateKey,
    ) -> Self {
        let http = McpHttp::with_shared_sessions(engine(McpOptions::default()), http, backplane, key)
            .await
            .expect("the backplane is subscribed to");
        let router = http.router();
        TestServer { http, router }
    }

    /// A client with no session and no identity yet.
    pub(crate) fn client(&self) -> Client {
        Client(TestClient::new(self.router.clone()))
    }

    /// A 2026-07-28 client: no session, `_meta` and the mirrored headers on every request.
    pub(crate) fn stateless_client(&self) -> TestClient {
        TestClient::new(self.router.clone()).revision(Revision::Stateless2026_07_28)
    }

    /// A client that has initialized (with these client capabilities) and sent
    /// `notifications/initialized`.
    pub(crate) async fn initialized(&self, capabilities: Value) -> Client {
        let mut client = self.client();
        client.initialize(capabilities).await;
        client
    }

    /// Like [`TestServer::initialized`], as `user` from the first request on (a session belongs
    /// to the caller that opened it).
    pub(crate) async fn initialized_as(&self, user: UserInfo, capabilities: Value) -> Client {
        let mut client = self.client().as_user(user);
        client.initialize(capabilities).await;
        client
    }
}

/// A JSON reply: the `testing` client's, with accessors that fail the test when the reply is
/// not what they read.
#[derive(Debug)]
pub(crate) struct Reply(pub(crate) JsonReply);

impl std::ops::Deref for Reply {
    type Target = JsonReply;

    fn deref(&self) -> &JsonReply {
        &self.0
    }
}

impl Reply {
    /// The `result`, failing the test on an error response.
    pub(crate) fn result(&self) -> &Value {
        assert!(self.body.get("error").is_none(), "expected a result, got {}", self.body);
        &self.body["result"]
    }

    /// The error code, failing the test on a result.
    pub(crate) fn error_code(&self) -> i64 {
        self.0.error_code().unwrap_or_else(|| panic!("expected an error, got {}", self.body))
    }

    /// The error message.
    pub(crate) fn error_message(&self) -> &str {
        self.0.error_message().unwrap_or_default()
    }

    /// The Content-Type header.
    pub(crate) fn content_type(&self) -> &str {
        header_str(&self.headers, header::CONTENT_TYPE.as_str())
    }

    /// A header, or "".
    pub(crate) fn header(&self, name: &str) -> &str {
        self.0.header(name).unwrap_or_default()
    }
}

/// A header as text, or "" when absent.
pub(crate) fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default()
}

/// The whole body of a response.
pub(crate) async fn body_bytes(response: Response<Body>) -> Bytes {
    within("a response body", response.into_body().collect()).await.expect("the body reads").to_bytes()
}

/// A JSON response, read whole.
pub(crate) async fn json_reply(response: Response<Body>) -> Reply {
    Reply(JsonReply::read(response).await.unwrap_or_else(|e| panic!("no JSON reply: {e}")))
}

/// A JSON-RPC request object.
pub(crate) fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A JSON-RPC notification object.
pub(crate) fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// `initialize` params.
pub(crate) fn init_params(version: &str, capabilities: Value) -> Value {
    json!({"protocolVersion": version, "capabilities": capabilities, "clientInfo": {"name": "tests", "version": "1"}})
}

/// Replaces (or adds) a header.
pub(crate) fn set_header(mut request: Request<Body>, name: &'static str, value: &str) -> Request<Body> {
    request.headers_mut().insert(name, HeaderValue::from_str(value).expect("a valid header value"));
    request
}

/// Removes a header.
pub(crate) fn remove_header(mut request: Request<Body>, name: &'static str) -> Request<Body> {
    request.headers_mut().remove(name);
    request
}

/// The `testing` client of one router, failing the test where the client reports an error.
#[derive(Clone)]
pub(crate) struct Client(pub(crate) TestClient);

impl Client {
    /// The session id, once initialized.
    pub(crate) fn session(&self) -> Option<String> {
        self.0.session_id().map(str::to_owned)
    }

    /// The same client acting as `user` (a UserInfo extension, as the auth layer sets it).
    pub(crate) fn as_user(&self, user: UserInfo) -> Client {
        Client(self.0.acting_as(user))
    }

    /// The same router and identity, on another session id.
    pub(crate) fn on_session(&self, session: Option<&str>) -> Client {
        Client(self.0.on_session(session))
    }

    /// The same session and identity, through another instance.
    pub(crate) fn via(&self, server: &TestServer) -> Client {
        Client(self.0.via(&server.client().0))
    }

    /// A fresh request id.
    pub(crate) fn id(&self) -> i64 {
        self.0.next_id()
    }

    /// A request with the headers a conforming client sends.
    pub(crate) fn request(&self, method: Method, body: impl Into<Body>) -> Request<Body> {
        self.0.http_request(method, body)
    }

    /// A POST of this JSON.
    pub(crate) fn post_request(&self, message: &Value) -> Request<Body> {
        self.0.post_request(message)
    }

    /// Sends a request through the router.
    pub(crate) async fn send(&self, request: Request<Body>) -> Response<Body> {
        self.0.send(request).await.unwrap_or_else(|e| panic!("{e}"))
    }

    /// POSTs a message and returns the response unread.
    pub(crate) async fn post(&self, message: &Value) -> Response<Body> {
        self.send(self.post_request(message)).await
    }

    /// POSTs a message and reads a JSON reply.
    pub(crate) async fn post_json(&self, message: &Value) -> Reply {
        json_reply(self.post(message).await).await
    }

    /// Calls a method with a fresh id and reads a JSON reply.
    pub(crate) async fn call(&self, method: &str, params: Value) -> Reply {
        Reply(self.0.request(method, params).await.unwrap_or_else(|e| panic!("no JSON reply: {e}")))
    }

    /// Calls a tool and reads a JSON reply.
    pub(crate) async fn call_tool(&self, name: &str, arguments: Value) -> Reply {
        self.call("tools/call", json!({"name": name, "arguments": arguments})).await
    }

    /// Initializes at the latest version, keeps the session id, and sends
    /// `notifications/initialized`.
    pub(crate) async fn initialize(&mut self, capabilities: Value) -> Reply {
        Reply(self.0.initialize(capabilities).await.unwrap_or_else(|e| panic!("initialize failed: {e}")))
    }
}

// =============================================================================================
// SSE
// =============================================================================================

/// The `testing` SSE reader, failing the test where it reports an error.
pub(crate) struct Sse(SseStream);

impl Sse {
    /// The reader of a response that must be an SSE stream.
    pub(crate) fn new(response: Response<Body>) -> Self {
        Sse(SseStream::from_response(response).unwrap_or_else(|e| panic!("{e}")))
    }

    /// The next event with data (comments such as keep-alives are skipped); `None` when the
    /// stream ends.
    pub(crate) async fn next_event(&mut self) -> Option<SseEvent> {
        self.0.next_event().await.unwrap_or_else(|e| panic!("reading the next SSE event: {e}"))
    }

    /// The next event's data as a JSON-RPC message; fails if the stream ended or the data is
    /// not JSON.
    pub(crate) async fn next_message(&mut self) -> Value {
        let event = self.next_event().await.expect("the stream ended early");
        assert_eq!(event.event.as_deref(), Some("message"), "event type of {event:?}");
        event.json().unwrap_or_else(|e| panic!("an SSE event's data is not one JSON message: {e}"))
    }

    /// Every remaining message, until the stream ends.
    pub(crate) async fn rest(&mut self) -> Vec<Value> {
        self.0.remaining_messages().await.unwrap_or_else(|e| panic!("reading the rest of the stream: {e}"))
    }
}

// =============================================================================================
// stdio
// =============================================================================================

/// The `testing` stdio client over the test engine, failing the test where it reports an error.
pub(crate) struct Stdio(StdioClient);

impl Stdio {
    /// Serves the test engine to `user`, refusing lines over `max` bytes.
    pub(crate) fn start(options: McpOptions, user: UserInfo, max: usize) -> Self {
        Stdio(StdioClient::start(engine(options), user, max))
    }

    /// Writes one line (a newline is added).
    pub(crate) async fn send_line(&mut self, line: &str) {
        self.0.send_line(line).await.unwrap_or_else(|e| panic!("{e}"));
    }

    /// Writes one JSON message as a line.
    pub(crate) async fn send(&mut self, message: &Value) {
        self.0.send(message).await.unwrap_or_else(|e| panic!("{e}"));
    }

    /// Reads the next line the server writes, as JSON.
    pub(crate) async fn recv(&mut self) -> Value {
        self.0.receive().await.unwrap_or_else(|e| panic!("reading the server's next line: {e}"))
    }

    /// Closes the server's input, reads every line the server still writes until its output
    /// ends, and waits for `serve` to return.
    pub(crate) async fn close_and_drain(self) -> (std::io::Result<()>, Vec<Value>) {
        self.0.close_and_drain().await.unwrap_or_else(|e| panic!("{e}"))
    }

    /// Closes the server's input and waits for `serve` to return.
    pub(crate) async fn close(self) -> std::io::Result<()> {
        self.0.close().await.unwrap_or_else(|e| panic!("{e}"))
    }
}
