//! The in-process HTTP client: requests through a tower service, no sockets.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use mirobody_core::UserInfo;
use serde_json::{Value, json};
use tower::ServiceExt;
use tower::util::BoxCloneSyncService;

use super::sse::SseStream;
use super::{DEFAULT_TIMEOUT, TestError, parse_json, within};

/// The protocol revision a [`TestClient`] speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Revision {
    /// 2025-11-25: `initialize` opens a session whose id goes on every later request.
    #[default]
    Sessions2025_11_25,
    /// 2026-07-28: no session; every request carries the protocol version, client info and
    /// capabilities in its `_meta`, and the headers that mirror them (`Mcp-Method`,
    /// `Mcp-Name`, `MCP-Protocol-Version`).
    Stateless2026_07_28,
}

impl Revision {
    /// The revision's date, as `protocolVersion` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Revision::Sessions2025_11_25 => "2025-11-25",
            Revision::Stateless2026_07_28 => "2026-07-28",
        }
    }
}

/// A JSON reply, read whole.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct JsonReply {
    /// The HTTP status.
    pub status: StatusCode,
    /// The response headers.
    pub headers: HeaderMap,
    /// The body.
    pub body: Value,
}

impl JsonReply {
    /// Reads a response whose body is one JSON value, waiting at most [`DEFAULT_TIMEOUT`].
    pub async fn read(response: Response<Body>) -> Result<Self, TestError> {
        JsonReply::read_within(response, DEFAULT_TIMEOUT).await
    }

    async fn read_within(response: Response<Body>, timeout: Duration) -> Result<Self, TestError> {
        let (parts, body) = response.into_parts();
        let bytes = read_body_within(body, timeout).await?;
        Ok(JsonReply { status: parts.status, headers: parts.headers, body: parse_json(&bytes)? })
    }

    /// The JSON-RPC `result`, if the reply has one.
    pub fn result(&self) -> Option<&Value> {
        self.body.get("result")
    }

    /// The JSON-RPC error's code, if the reply is an error.
    pub fn error_code(&self) -> Option<i64> {
        self.body.get("error")?.get("code")?.as_i64()
    }

    /// The JSON-RPC error's message, if the reply is an error.
    pub fn error_message(&self) -> Option<&str> {
        self.body.get("error")?.get("message")?.as_str()
    }

    /// A header's value, if present and text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// The tower service a [`TestClient`] sends through: a router, or anything serving HTTP.
type HttpService = BoxCloneSyncService<Request<Body>, Response<Body>, Infallible>;

/// An MCP client that drives an endpoint in-process: each request goes straight to the
/// service, with the headers a conforming client sends, this client's session id (2025-11-25)
/// or `_meta` (2026-07-28), and its [`UserInfo`] as a request extension.
///
/// Clones share the request-id counter; [`TestClient::acting_as`], [`TestClient::on_session`]
/// and [`TestClient::via`] make variants of one client.
///
/// A 2026-07-28 client needs no `initialize`:
///
/// ```
/// use std::sync::Arc;
/// use mirobody_core::{Registry, Tool, ToolResult, UserInfo};
/// use mirobody_mcp::McpEngine;
/// use mirobody_mcp::http::{HttpOptions, McpHttp};
/// use mirobody_mcp::testing::{Revision, TestClient};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let registry = Registry::builder()
///     .tool(Tool::new("whoami", "Says who calls.").auth(true).sync_handler(|_, user, _| {
///         ToolResult::text(user.user_id().unwrap_or_default().to_owned())
///     }))
///     .build()?;
/// let http = McpHttp::new(McpEngine::builder(Arc::new(registry)).build(), HttpOptions::default());
///
/// let client = TestClient::new(http.router()).revision(Revision::Stateless2026_07_28);
/// let reply = client.acting_as(UserInfo::authenticated("ada")).call_tool("whoami", json!({})).await?;
/// assert_eq!(reply.result().unwrap()["content"][0]["text"], "ada");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct TestClient {
    service: HttpService,
    path: Arc<str>,
    revision: Revision,
    capabilities: Value,
    session: Option<String>,
    user: Option<UserInfo>,
    next_id: Arc<AtomicI64>,
    timeout: Duration,
}

impl std::fmt::Debug for TestClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestClient")
            .field("path", &self.path)
            .field("revision", &self.revision)
            .field("session", &self.session)
            .field("user", &self.user.as_ref().map(UserInfo::user_id))
            .finish_non_exhaustive()
    }
}

impl TestClient {
    /// A 2025-11-25 client of the endpoint `service` serves at `/`, with no session and no
    /// identity yet. `service` is an endpoint's router ([`McpHttp::router`](crate::http::McpHttp::router))
    /// or an application's whole router or service; see [`TestClient::at_path`].
    pub fn new<S>(service: S) -> Self
    where
        S: tower::Service<Request<Body>, Response = Response<Body>, Error = Infallible> + Clone + Send + Sync + 'static,
        S::Future: Send + 'static,
    {
        TestClient {
            service: BoxCloneSyncService::new(service),
            path: Arc::from("/"),
            revision: Revision::default(),
            capabilities: json!({}),
            session: None,
            user: None,
            next_id: Arc::new(AtomicI64::new(1)),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The same client, posting to `path` (where an application mounted the endpoint).
    #[must_use]
    pub fn at_path(mut self, path: &str) -> Self {
        self.path = Arc::from(path);
        self
    }

    /// The same client, speaking `revision`.
    #[must_use]
    pub fn revision(mut self, revision: Revision) -> Self {
        self.revision = revision;
        self
    }

    /// The same client, declaring these capabilities in each 2026-07-28 request's `_meta`
    /// (2025-11-25 declares them once, in [`TestClient::initialize`]).
    #[must_use]
    pub fn client_capabilities(mut self, capabilities: Value) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// The same client, waiting at most `timeout` for each response.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The same client acting as `user`: the extension an authentication layer in front of
    /// the endpoint sets goes on every request.
    #[must_use]
    pub fn acting_as(&self, user: UserInfo) -> Self {
        TestClient { user: Some(user), ..self.clone() }
    }

    /// The same client on another session id (or none).
    #[must_use]
    pub fn on_session(&self, session: Option<&str>) -> Self {
        TestClient { session: session.map(str::to_owned), ..self.clone() }
    }

    /// The same client (session, identity, ids) sending through another service: another
    /// instance sharing sessions with the first.
    #[must_use]
    pub fn via(&self, other: &TestClient) -> Self {
        TestClient { service: other.service.clone(), path: Arc::clone(&other.path), ..self.clone() }
    }

    /// The session id `initialize` returned, if any.
    pub fn session_id(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// The identity requests carry, if any.
    pub fn user(&self) -> Option<&UserInfo> {
        self.user.as_ref()
    }

    /// A fresh request id.
    pub fn next_id(&self) -> i64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// An HTTP request to the endpoint with this body and the headers this client sends: Accept
    /// (`text/event-stream` on GET, both types on POST), Content-Type on POST, the session id,
    /// the identity. A 2026-07-28 POST also gets the headers mirroring the body's method and
    /// name; its body is not touched (see [`TestClient::rpc_request`] for `_meta`).
    pub fn http_request(&self, method: Method, body: impl Into<Body>) -> Request<Body> {
        self.build(method, body.into(), None)
    }

    /// A POST of `message` with this client's headers.
    pub fn post_request(&self, message: &Value) -> Request<Body> {
        self.build(Method::POST, Body::from(message.to_string()), Some(message))
    }

    /// A JSON-RPC request (at 2026-07-28 with this client's `_meta`, merged over any the params
    /// carry), as a POST.
    pub fn rpc_request(&self, id: i64, method: &str, params: Value) -> Request<Body> {
        self.post_request(&self.message(Some(id), method, params))
    }

    /// Sends a request through the service.
    pub async fn send(&self, request: Request<Body>) -> Result<Response<Body>, TestError> {
        let response = within(self.timeout, "a response", self.service.clone().oneshot(request)).await?;
        Ok(response.unwrap_or_else(|never| match never {}))
    }

    /// POSTs `message` as it is and returns the response unread.
    pub async fn post(&self, message: &Value) -> Result<Response<Body>, TestError> {
        self.send(self.post_request(message)).await
    }

    /// POSTs `message` as it is and reads a JSON reply.
    pub async fn post_json(&self, message: &Value) -> Result<JsonReply, TestError> {
        self.read_json(self.post(message).await?).await
    }

    /// Reads a JSON reply within this client's timeout.
    pub async fn read_json(&self, response: Response<Body>) -> Result<JsonReply, TestError> {
        JsonReply::read_within(response, self.timeout).await
    }

    /// Reads a response's whole body, whatever it holds (a route of the application beside the
    /// endpoint may answer text), within this client's timeout.
    pub async fn read_body(&self, response: Response<Body>) -> Result<Bytes, TestError> {
        read_body_within(response.into_body(), self.timeout).await
    }

    /// Sends a request of `method` with a fresh id and reads a JSON reply.
    pub async fn request(&self, method: &str, params: Value) -> Result<JsonReply, TestError> {
        self.read_json(self.request_unread(method, params).await?).await
    }

    /// Sends a request of `method` with a fresh id and returns the response unread (an SSE
    /// stream when the server streams it: [`SseStream::from_response`]).
    pub async fn request_unread(&self, method: &str, params: Value) -> Result<Response<Body>, TestError> {
        self.send(self.rpc_request(self.next_id(), method, params)).await
    }

    /// Calls a tool and reads a JSON reply.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<JsonReply, TestError> {
        self.request("tools/call", json!({"name": name, "arguments": arguments})).await
    }

    /// Sends a notification; the server must accept it (202).
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), TestError> {
        let response = self.post(&self.message(None, method, params)).await?;
        match response.status() {
            StatusCode::ACCEPTED => Ok(()),
            other => Err(TestError::NotAccepted(other)),
        }
    }

    /// Opens the 2025-11-25 GET stream of the client's session.
    pub async fn open_event_stream(&self) -> Result<SseStream, TestError> {
        let response = self.send(self.http_request(Method::GET, Body::empty())).await?;
        Ok(SseStream::from_response(response)?.with_timeout(self.timeout))
    }

    /// Initializes at 2025-11-25 with these client capabilities, keeps the session id the
    /// server returns, and sends `notifications/initialized`.
    pub async fn initialize(&mut self, capabilities: Value) -> Result<JsonReply, TestError> {
        let params = json!({
            "protocolVersion": Revision::Sessions2025_11_25.as_str(),
            "capabilities": capabilities,
            "clientInfo": {"name": "mirobody-mcp-testing", "version": env!("CARGO_PKG_VERSION")},
        });
        let message = json!({"jsonrpc": "2.0", "id": self.next_id(), "method": "initialize", "params": params});
        let reply = self.post_json(&message).await?;
        if reply.status != StatusCode::OK || reply.result().is_none() {
            return Err(TestError::InitializeRefused { status: reply.status, body: reply.body });
        }
        self.session = reply.header("mcp-session-id").filter(|id| !id.is_empty()).map(str::to_owned);
        self.notify("notifications/initialized", json!({})).await?;
        Ok(reply)
    }

    /// A request (with `id`) or notification, with this client's `_meta` at 2026-07-28.
    fn message(&self, id: Option<i64>, method: &str, mut params: Value) -> Value {
        if self.revision == Revision::Stateless2026_07_28 {
            let mut meta = json!({
                "io.modelcontextprotocol/protocolVersion": self.revision.as_str(),
                "io.modelcontextprotocol/clientCapabilities": self.capabilities,
                "io.modelcontextprotocol/clientInfo": {"name": "mirobody-mcp-testing", "version": env!("CARGO_PKG_VERSION")},
            });
            if let Some(given) = params.get("_meta").and_then(Value::as_object) {
                for (key, value) in given {
                    meta[key] = value.clone();
                }
            }
            params["_meta"] = meta;
        }
        let mut message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        if let Some(id) = id {
            message["id"] = id.into();
        }
        message
    }

    fn build(&self, method: Method, body: Body, message: Option<&Value>) -> Request<Body> {
        let accept = if method == Method::GET { "text/event-stream" } else { "application/json, text/event-stream" };
        let mut builder = Request::builder().method(method.clone()).uri(&*self.path).header(header::HOST, "localhost");
        builder = builder.header(header::ACCEPT, accept);
        if method == Method::POST {
            builder = builder.header(header::CONTENT_TYPE, "application/json");
        }
        if let Some(session) = &self.session {
            builder = builder.header("mcp-session-id", session);
        }
        if let (Revision::Stateless2026_07_28, Some(message)) = (self.revision, message) {
            builder = builder.header("mcp-protocol-version", self.revision.as_str());
            let rpc_method = message["method"].as_str().unwrap_or_default();
            builder = builder.header("mcp-method", rpc_method);
            if let Some(name) = mirrored_name(rpc_method, &message["params"]) {
                builder = builder.header("mcp-name", name);
            }
        }
        // Only a path or session id that is not a valid URI or header value fails here.
        let mut request = builder.body(body).expect("the client's path and headers are valid");
        if let Some(user) = &self.user {
            request.extensions_mut().insert(user.clone());
        }
        request
    }
}

/// A body read whole, waiting at most `timeout`.
async fn read_body_within(body: Body, timeout: Duration) -> Result<Bytes, TestError> {
    let collected = within(timeout, "a response body", body.collect()).await?;
    Ok(collected.map_err(|e| TestError::Body(e.to_string()))?.to_bytes())
}

/// The param 2026-07-28 mirrors into `Mcp-Name` for this method, if any.
fn mirrored_name<'a>(method: &str, params: &'a Value) -> Option<&'a str> {
    match method {
        "tools/call" | "prompts/get" => params["name"].as_str(),
        "resources/read" => params["uri"].as_str(),
        "tasks/get" | "tasks/update" | "tasks/cancel" => params["taskId"].as_str(),
        _ => None,
    }
}
