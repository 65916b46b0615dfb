//! Shared fixtures: backends in a temp dir (or on the PostgreSQL and Redis of this machine),
//! the real MCP engine and HTTP router over them, and a client that drives the router with
//! `mirobody_mcp::testing`'s client, reading JSON and SSE replies.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use http::Response;
use mirobody_core::{ResourceRegistry, UserInfo};
use mirobody_mcp::http::{HttpOptions, McpHttp};
use mirobody_mcp::testing::{JsonReply, SseStream, TestClient};
use mirobody_mcp::{Backends, McpEngine};
use mirobody_store::{BackendConfig, OpenedBackends, open};
use serde_json::{Value, json};
use tempfile::TempDir;

/// How long any single wait may take.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(20);

/// Awaits `future`, failing the test after [`TIMEOUT`].
pub(crate) async fn within<F: Future>(what: &str, future: F) -> F::Output {
    match tokio::time::timeout(TIMEOUT, future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {TIMEOUT:?} waiting for {what}"),
    }
}

/// The URL of an external service from `var`, or `None` after printing `SKIPPED: <why>`; with
/// `MIROBODY_REQUIRE_EXTERNAL=1` a missing URL fails the test instead.
pub(crate) fn external(var: &str, test: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            if std::env::var("MIROBODY_REQUIRE_EXTERNAL").as_deref() == Ok("1") {
                panic!("{test}: {var} is not set, and MIROBODY_REQUIRE_EXTERNAL=1 requires it");
            }
            println!("SKIPPED: {test}: {var} is not set");
            None
        }
    }
}

/// A name unique to this process and call, for PostgreSQL schemas and Redis prefixes.
pub(crate) fn unique(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{prefix}_{}_{}_{}", std::process::id(), nanos, NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A PostgreSQL schema that is dropped when this goes out of scope (even when a test fails).
pub(crate) struct PgSchema {
    pub(crate) url: String,
    pub(crate) name: String,
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        let (url, name) = (self.url.clone(), self.name.clone());
        // A runtime of its own: Drop cannot await, and the test's runtime may be gone.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                use sqlx::{Connection, Executor};
                if let Ok(mut conn) = sqlx::PgConnection::connect(&url).await {
                    let _ = conn.execute(format!("DROP SCHEMA IF EXISTS {name} CASCADE").as_str()).await;
                    let _ = conn.close().await;
                }
            });
        })
        .join();
    }
}

/// Backends under a temp dir, and the engine over them.
pub(crate) struct Env {
    pub(crate) backends: Arc<OpenedBackends>,
    pub(crate) router: Router,
    pub(crate) dir: TempDir,
    pub(crate) _schema: Option<PgSchema>,
}

/// The embedded configuration under `dir`.
pub(crate) fn config_in(dir: &std::path::Path) -> BackendConfig {
    BackendConfig {
        signing_key: Some("k".repeat(32)),
        signed_url_base: "http://localhost/files".into(),
        ..BackendConfig::embedded(dir)
    }
}

impl Env {
    /// SQLite, local files, in-process cache, memory on.
    pub(crate) async fn sqlite() -> Env {
        Env::with(|c| c).await
    }

    /// The embedded set-up, changed by `edit`.
    pub(crate) async fn with(edit: impl FnOnce(BackendConfig) -> BackendConfig) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let config = edit(config_in(dir.path()));
        let backends = Arc::new(open(&config).await.expect("the backends open"));
        let router = router(&backends, |b| b);
        Env { backends, router, dir, _schema: None }
    }

    /// PostgreSQL in a fresh schema (and Redis for the cache), when the machine has them.
    pub(crate) async fn postgres(test: &str) -> Option<Env> {
        let url = external("MIROBODY_TEST_POSTGRES_URL", test)?;
        let schema = PgSchema { url: url.clone(), name: unique("mirobody_test") };
        let dir = tempfile::tempdir().unwrap();
        let config = BackendConfig {
            database_url: Some(url),
            database_schema: Some(schema.name.clone()),
            ..config_in(dir.path())
        };
        let backends = Arc::new(open(&config).await.expect("the backends open on PostgreSQL"));
        let router = router(&backends, |b| b);
        Some(Env { backends, router, dir, _schema: Some(schema) })
    }

    /// A client of this env's router.
    pub(crate) fn client(&self) -> Client {
        Client::new(self.router.clone())
    }

    /// A client initialized as `user` (with a session named by the user), without elicitation.
    pub(crate) async fn user(&self, id: &str) -> Client {
        let mut client = self.client().as_user(UserInfo::authenticated(id).with_session(format!("chat-{id}")));
        client.initialize(json!({})).await;
        client
    }
}

/// The server's tool handles of opened backends.
pub(crate) fn handles(backends: &OpenedBackends) -> Backends {
    let mut handles = Backends::default();
    handles.cache = Some(backends.cache());
    handles.storage = backends.storage();
    handles.extensions.insert(backends.db());
    handles.extensions.insert(backends.access_log());
    let personal: Arc<dyn mirobody_health::PersonalData> = backends.sql().clone();
    handles.extensions.insert(personal);
    handles.memory = backends.memory();
    handles
}

/// The MCP endpoint over the built-in tools and resources, with these backends (changed by
/// `edit`, to take some away).
pub(crate) fn router(backends: &OpenedBackends, edit: impl FnOnce(Backends) -> Backends) -> Router {
    let registry = Arc::new(mirobody_tools::builtin_registry().expect("the built-ins register"));
    let resources = ResourceRegistry::from_registered(mirobody_tools::views::resources(), Vec::new())
        .expect("the resources register");
    let engine = McpEngine::builder(registry)
        .resources(resources)
        .backends(edit(handles(backends)))
        .access_log(backends.access_log())
        .build();
    // Tests send as fast as they can from one caller: no rate limit.
    let options = {
        let mut o = HttpOptions::default();
        o.caller_limits = mirobody_mcp::limits::CallerLimits::default().with_rate(0, 0);
        o
    };
    McpHttp::new(engine, options).router()
}

/// A JSON-RPC request.
pub(crate) fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The `testing` client of one router, failing the test where the client reports an error.
#[derive(Clone)]
pub(crate) struct Client(pub(crate) TestClient);

/// A JSON reply: the `testing` client's, with accessors that fail the test when the reply is
/// not what they read.
#[derive(Debug)]
pub(crate) struct Reply(JsonReply);

impl std::ops::Deref for Reply {
    type Target = JsonReply;

    fn deref(&self) -> &JsonReply {
        &self.0
    }
}

impl Reply {
    /// The `result`, failing on an error response.
    pub(crate) fn result(&self) -> &Value {
        assert!(self.body.get("error").is_none(), "expected a result, got {}", self.body);
        &self.body["result"]
    }

    /// A successful tool result's structured content, failing on an error result.
    pub(crate) fn ok(&self) -> &Value {
        let result = self.result();
        assert_eq!(result["isError"], false, "expected success, got {result}");
        &result["structuredContent"]
    }

    /// An error result's message, failing on success.
    pub(crate) fn tool_error(&self) -> &str {
        let result = self.result();
        assert_eq!(result["isError"], true, "expected an error result, got {result}");
        result["content"][0]["text"].as_str().unwrap_or_default()
    }

    /// A JSON-RPC error's message, failing on a result.
    pub(crate) fn rpc_error(&self) -> (i64, &str) {
        let error = &self.body["error"];
        assert!(error.is_object(), "expected an error, got {}", self.body);
        (error["code"].as_i64().unwrap(), error["message"].as_str().unwrap_or_default())
    }
}

impl Client {
    pub(crate) fn new(router: Router) -> Self {
        Client(TestClient::new(router).with_timeout(TIMEOUT))
    }

    /// The same client (router, session), as `user`.
    pub(crate) fn as_user(&self, user: UserInfo) -> Self {
        Client(self.0.acting_as(user))
    }

    /// The same client (session, identity), through another router.
    pub(crate) fn via(&self, router: Router) -> Self {
        Client(self.0.via(&TestClient::new(router)))
    }

    /// POSTs `message`, returning the response unread.
    pub(crate) async fn post(&self, message: &Value) -> Response<Body> {
        self.0.post(message).await.unwrap()
    }

    /// Calls a method with a fresh id.
    pub(crate) async fn call(&self, method: &str, params: Value) -> Reply {
        Reply(self.0.request(method, params).await.unwrap_or_else(|e| panic!("{e}")))
    }

    /// Calls a tool.
    pub(crate) async fn tool(&self, name: &str, arguments: Value) -> Reply {
        self.call("tools/call", json!({"name": name, "arguments": arguments})).await
    }

    /// Initializes with these client capabilities and keeps the session id.
    pub(crate) async fn initialize(&mut self, capabilities: Value) {
        self.0.initialize(capabilities).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(self.0.session_id().is_some(), "initialize gave a session");
    }
}

/// The `testing` SSE reader, failing the test where it reports an error.
pub(crate) struct Sse(SseStream);

impl Sse {
    /// The reader of a response that must be an SSE stream.
    pub(crate) fn new(response: Response<Body>) -> Self {
        Sse(SseStream::from_response(response).unwrap_or_else(|e| panic!("{e}")).with_timeout(TIMEOUT))
    }

    /// The next JSON-RPC message on the stream.
    pub(crate) async fn next_message(&mut self) -> Value {
        let event = self.0.next_event().await.unwrap_or_else(|e| panic!("{e}")).expect("the stream ended early");
        event.json().expect("SSE data is JSON")
    }
}
