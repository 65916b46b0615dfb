//! Streamable HTTP: one endpoint for POST, GET and DELETE, serving MCP 2025-11-25 (and the
//! earlier handshake revisions) with sessions, and 2026-07-28 statelessly, chosen per request
//! (see [`crate::modern_http`]).
//!
//! Replies are plain JSON unless a tool call sends something to the client while it runs
//! (progress, a log line, a question); that call's reply then becomes an SSE stream carrying
//! those messages and finally the response. [`McpHttp::router`] is an axum `Router` an
//! application can mount at any path.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::future::RouteFuture;
use bytes::{Bytes, BytesMut};
use futures::future::{AbortHandle, Abortable, BoxFuture, Either};
use futures::stream::{self, Stream, StreamExt};
use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use mirobody_core::UserInfo;
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::jsonrpc::{self, Id, Message, RpcError, code};
use crate::limits::{BodyBudget, CallerKey, CallerLimits, Callers, retry_after_secs};
use crate::mcp::{self, Exchange, McpService, Reply, Status, ToolCall};
use crate::peer::{ChannelPeer, Inbox, Outbox};
use crate::session::{Session, SessionRefused, SessionStore};
use crate::{modern, modern_http};

/// The session header.
pub const SESSION_HEADER: &str = "mcp-session-id";
/// The protocol version header.
pub const VERSION_HEADER: &str = "mcp-protocol-version";

// The same names, parsed once: a `&str` name is parsed again on every lookup.
const SESSION: HeaderName = HeaderName::from_static(SESSION_HEADER);
pub(crate) const VERSION: HeaderName = HeaderName::from_static(VERSION_HEADER);

/// How the HTTP transport behaves.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// Serve without sessions: every request stands alone (for many instances behind a load
    /// balancer). No GET stream, no DELETE, and tools cannot ask the client questions.
    pub stateless: bool,
    /// The largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Host names (without port) accepted in the `Host` header; `*` accepts any. Guards against
    /// DNS rebinding.
    pub allowed_hosts: Vec<String>,
    /// Origins accepted besides those whose host is an allowed host; `*` accepts any.
    pub allowed_origins: Vec<String>,
    /// The most sessions kept at once.
    pub max_sessions: usize,
    /// How long an unused session lives.
    pub session_idle_timeout: Duration,
    /// The interval of SSE keep-alive comments.
    pub keep_alive: Duration,
    /// The `resource_metadata` URL for `WWW-Authenticate` challenges, if auth is configured.
    pub resource_metadata_url: Option<String>,
    /// The most `subscriptions/listen` streams (MCP 2026-07-28) open at once.
    pub max_subscriptions: usize,
    /// How many of [`max_sessions`](Self::max_sessions) anonymous callers may hold; the rest
    /// are kept for signed-in callers.
    pub max_anonymous_sessions: usize,
    /// How long a client may take to send a whole request body, from its headers on (408
    /// beyond, and the connection closes).
    pub request_body_timeout: Duration,
    /// Request bodies being read or answered at once, in bytes, for the whole endpoint (503
    /// with `Retry-After` beyond); zero for no bound.
    pub max_inflight_body_bytes: usize,
    /// What one caller may hold at once and how fast it may ask.
    pub caller_limits: CallerLimits,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            stateless: false,
            max_body_bytes: 4 * 1024 * 1024,
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()],
            allowed_origins: Vec::new(),
            max_sessions: 10_000,
            session_idle_timeout: Duration::from_secs(30 * 60),
            keep_alive: Duration::from_secs(15),
            resource_metadata_url: None,
            max_subscriptions: 1024,
            max_anonymous_sessions: 5_000,
            request_body_timeout: Duration::from_secs(30),
            max_inflight_body_bytes: 16 * 1024 * 1024,
            caller_limits: CallerLimits::default(),
        }
    }
}

/// The MCP HTTP endpoint: an [`McpService`] with sessions and HTTP rules.
#[derive(Clone)]
pub struct McpHttp {
    inner: Arc<HttpInner>,
}

struct HttpInner {
    service: McpService,
    sessions: SessionStore,
    options: HttpOptions,
    callers: Arc<Callers>,
    body_budget: BodyBudget,
}

/// A call in progress; `None` when it was cancelled.
pub(crate) type CallFuture<R> = Pin<Box<dyn Future<Output = Option<R>> + Send>>;

/// A reply that ends a call's stream.
pub(crate) trait ReplyBody: Send + 'static {
    /// The JSON-RPC response.
    fn into_body(self) -> Vec<u8>;
}

impl ReplyBody for Reply {
    fn into_body(self) -> Vec<u8> {
        self.body
    }
}

impl McpHttp {
    /// The endpoint for `service`.
    pub fn new(service: McpService, options: HttpOptions) -> Self {
        let sessions = SessionStore::new(options.max_sessions, options.session_idle_timeout)
            .with_anonymous_share(options.max_anonymous_sessions);
        let callers = Callers::new(options.caller_limits.clone());
        let body_budget = BodyBudget::new(options.max_inflight_body_bytes);
        McpHttp { inner: Arc::new(HttpInner { service, sessions, options, callers, body_budget }) }
    }

    /// Who holds what now, and the bounds per caller.
    pub fn callers(&self) -> &Arc<Callers> {
        &self.inner.callers
    }

    /// The live sessions.
    pub fn sessions(&self) -> &SessionStore {
        &self.inner.sessions
    }

    /// The protocol engine.
    pub fn service(&self) -> &McpService {
        &self.inner.service
    }

    /// The transport options.
    pub fn options(&self) -> &HttpOptions {
        &self.inner.options
    }

    /// `response` with the HTTP treatment `status` calls for (401 or 403 with a challenge).
    pub(crate) fn challenge(&self, status: &Status, response: Response) -> Response {
        self.inner.challenge(status, response)
    }

    /// A router that serves MCP at `/`: mount it with `Router::nest("/mcp", ...)` or serve it
    /// as is. Callers are read from a [`UserInfo`] request extension (set by an auth layer);
    /// without one they are anonymous.
    pub fn router(&self) -> Router {
        self.router_at("/")
    }

    /// A router that serves MCP at `path` (such as `/mcp`), to merge into an application's
    /// router. Cheaper per request than nesting [`McpHttp::router`], which rewrites every URI.
    pub fn router_at(&self, path: &str) -> Router {
        Router::new().route_service(path, self.clone())
    }

    /// MCP at `path` in front of an application's other routes: requests for `path` come
    /// straight here, everything else goes to `rest`. The cheapest way to serve the endpoint
    /// beside other routes, since MCP requests skip the router's matching and boxing.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mirobody_core::Registry;
    /// use mirobody_mcp::McpService;
    /// use mirobody_mcp::axum::{Router, routing::get};
    /// use mirobody_mcp::http::{HttpOptions, McpHttp};
    ///
    /// let service = McpService::builder(Arc::new(Registry::builder().build().unwrap())).build();
    /// let health = Router::new().route("/healthz", get(|| async { "ok" }));
    /// let app = McpHttp::new(service, HttpOptions::default()).mount("/mcp", health);
    /// # let _ = app;
    /// ```
    pub fn mount(&self, path: &str, rest: Router) -> Mounted {
        Mounted { path: path.into(), mcp: self.clone(), rest }
    }

    /// Starts a task that drops idle sessions every minute; it ends with the runtime.
    pub fn spawn_session_sweeper(&self) {
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(60));
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else { break };
                let gone = inner.sessions.sweep();
                inner.callers.forget_quiet();
                if gone > 0 {
                    tracing::debug!(gone, "idle sessions dropped");
                }
            }
        });
    }

    // The endpoint's methods: POST carries messages, GET opens the server's stream, DELETE
    // ends a session. Only POST waits on anything.
    fn respond<B: RequestBody>(&self, request: Request<B>) -> ResponseFuture {
        let (parts, body) = request.into_parts();
        let response = match parts.method {
            // The request goes in as its parts and body, not as a whole: an async fn keeps its
            // arguments for as long as it runs, and this future is moved into a box.
            Method::POST => return ResponseFuture(Box::pin(handle_post(self.clone(), parts, body))),
            Method::GET => handle_get(self, &parts),
            Method::DELETE => handle_delete(self, &parts),
            _ if self.inner.options.stateless => method_not_allowed(),
            _ => not_allowed("GET, POST, DELETE"),
        };
        ResponseFuture(Box::pin(std::future::ready(response)))
    }
}

/// The response of [`McpHttp`] as a tower service: it always answers.
///
/// A box of the endpoint's own future, made `Ok` as it is polled: wrapped before boxing (as
/// `.map(Ok)` does), a POST's future, the largest the server makes, was copied once more on
/// every request.
pub struct ResponseFuture(BoxFuture<'static, Response>);

impl Future for ResponseFuture {
    type Output = Result<Response, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0.as_mut().poll(cx).map(Ok)
    }
}

/// A request body the endpoint reads: hyper's, axum's, or any other HTTP body of bytes.
pub trait RequestBody: http_body::Body<Data = Bytes, Error: Into<axum::BoxError>> + Send + 'static {}

impl<B> RequestBody for B where B: http_body::Body<Data = Bytes, Error: Into<axum::BoxError>> + Send + 'static {}

/// The endpoint as a tower service, for `Router::route_service` or any server: every method
/// at whatever path it is mounted.
impl<B: RequestBody> tower::Service<Request<B>> for McpHttp {
    type Response = Response;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        self.respond(request)
    }
}

/// [`McpHttp::mount`]: the endpoint at one path, the rest of an application's routes behind it.
#[derive(Clone)]
pub struct Mounted {
    path: Arc<str>,
    mcp: McpHttp,
    rest: Router,
}

impl<B: RequestBody> tower::Service<Request<B>> for Mounted {
    type Response = Response;
    type Error = Infallible;
    type Future = Either<ResponseFuture, RouteFuture<Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // Both are always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        if request.uri().path() == &*self.path {
            Either::Left(self.mcp.call(request))
        } else {
            Either::Right(self.rest.call(request))
        }
    }
}

pub(crate) fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    json_response_in(HeaderMap::new(), status, body)
}

/// The most headers a request's map may have room for and still be used again for the reply
/// (a client that sent a hundred headers does not keep a map that size for its connection).
const REUSED_HEADERS_MAX: usize = 64;

/// A JSON response whose headers go in `headers`, emptied first: the request's own map, on the
/// paths every call takes. hyper keeps a reply's header map to read the next request on the
/// connection into, so with the request's map passed on, one map sized for what the client
/// sends serves every request on a connection, where a fresh map for each reply was too small
/// for the next request and grew on reading it (four allocations a request).
pub(crate) fn json_response_in(mut headers: HeaderMap, status: StatusCode, body: Vec<u8>) -> Response {
    if headers.capacity() > REUSED_HEADERS_MAX {
        headers = HeaderMap::new();
    }
    headers.clear();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// 429 (or 503 for `status`) with `Retry-After`: the caller, or the server, is over a limit.
pub(crate) fn over_limit(status: StatusCode, id: Option<&Id>, message: &str, retry_after: Duration) -> Response {
    let mut response = rpc_error(status, id, code::TRANSPORT, message);
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs(retry_after)));
    response
}

/// 429 for a caller holding as many calls as it may.
pub(crate) fn too_many_calls(id: &Id) -> Response {
    over_limit(
        StatusCode::TOO_MANY_REQUESTS,
        Some(id),
        "Too Many Requests: too many calls running for this caller; wait for one to finish",
        Duration::from_secs(1),
    )
}

/// 429 for a caller holding as many streams as it may.
pub(crate) fn too_many_streams() -> Response {
    over_limit(
        StatusCode::TOO_MANY_REQUESTS,
        None,
        "Too Many Requests: too many open streams for this caller; close one first",
        Duration::from_secs(5),
    )
}

pub(crate) fn rpc_error(status: StatusCode, id: Option<&Id>, code: i64, message: impl Into<String>) -> Response {
    json_response(status, jsonrpc::error_bytes(id, &RpcError::new(code, message)))
}

/// The request headers the endpoint reads, found in one walk over the map: looking six names up
/// one by one hashes each name and probes the map, 4% of the instructions of a `tools/call`.
#[derive(Default)]
struct EndpointHeaders<'a> {
    host: Option<&'a HeaderValue>,
    origin: Option<&'a HeaderValue>,
    content_type: Option<&'a HeaderValue>,
    accept: Option<&'a HeaderValue>,
    version: Option<&'a HeaderValue>,
    session: Option<&'a HeaderValue>,
}

impl<'a> EndpointHeaders<'a> {
    fn read(headers: &'a HeaderMap) -> Self {
        let mut found = EndpointHeaders::default();
        // The map yields a name's values together, first value first: keeping the first one
        // seen gives what `HeaderMap::get` would.
        for (name, value) in headers {
            let slot = if name == header::HOST {
                &mut found.host
            } else if name == header::ORIGIN {
                &mut found.origin
            } else if name == header::CONTENT_TYPE {
                &mut found.content_type
            } else if name == header::ACCEPT {
                &mut found.accept
            } else if name == VERSION {
                &mut found.version
            } else if name == SESSION {
                &mut found.session
            } else {
                continue;
            };
            slot.get_or_insert(value);
        }
        found
    }

    /// The `MCP-Protocol-Version` header, trimmed.
    fn version(&self) -> Option<&'a str> {
        as_str(self.version).map(str::trim)
    }

    /// The `Mcp-Session-Id` header.
    fn session(&self) -> Option<&'a str> {
        as_str(self.session)
    }
}

fn as_str(value: Option<&HeaderValue>) -> Option<&str> {
    value.and_then(|v| v.to_str().ok())
}

// DNS-rebinding protection: the Host must be one of ours, and a browser's Origin must be
// listed, name an allowed host, or be the Host itself. A wildcard host list does not open
// Origins: those need `allowed_origins`.
fn check_host_and_origin(headers: &EndpointHeaders<'_>, options: &HttpOptions) -> Result<(), Response> {
    let host = as_str(headers.host).map(strip_port).unwrap_or_default();
    let any_host = options.allowed_hosts.iter().any(|h| h == "*");
    let named = |name: &str| options.allowed_hosts.iter().any(|h| same_name(h.as_bytes(), name.as_bytes()));
    if !any_host && !named(host) {
        return Err(rpc_error(StatusCode::FORBIDDEN, None, code::TRANSPORT, "Forbidden: Host not allowed"));
    }
    if let Some(origin) = as_str(headers.origin) {
        let origin_host = origin.split_once("://").map(|(_, rest)| strip_port(rest)).unwrap_or(origin);
        let listed = options.allowed_origins.iter().any(|o| o == "*" || same_name(o.as_bytes(), origin.as_bytes()));
        if !listed && !named(origin_host) && !same_name(origin_host.as_bytes(), host.as_bytes()) {
            return Err(rpc_error(StatusCode::FORBIDDEN, None, code::TRANSPORT, "Forbidden: Origin not allowed"));
        }
    }
    Ok(())
}

fn strip_port(host: &str) -> &str {
    let bytes = host.as_bytes();
    if bytes.first() == Some(&b'[') {
        return bytes.iter().position(|&b| b == b']').map_or(host, |end| &host[..=end]);
    }
    bytes.iter().rposition(|&b| b == b':').map_or(host, |colon| &host[..colon])
}

/// The media type of a `Content-Type` value or an `Accept` entry: what precedes its
/// parameters, trimmed.
fn media_type(value: &[u8]) -> &[u8] {
    memchr::memchr(b';', value).map_or(value, |semicolon| &value[..semicolon]).trim_ascii()
}

/// The `Accept` header of the spec's clients.
const SPEC_ACCEPT: &[u8] = b"application/json, text/event-stream";

/// Whether an `Accept` header (its first line) accepts `mime`, a lower-case media type; no
/// header accepts anything. Media types match whatever their case.
pub(crate) fn accepts(accept: Option<&HeaderValue>, mime: &str) -> bool {
    let Some(accept) = accept else { return true };
    let mime = mime.as_bytes();
    // What the spec asks every client to send, and what the SDKs send: taken whole, in one
    // comparison, where reading it entry by entry took 370 instructions a request.
    if accept.as_bytes() == SPEC_ACCEPT {
        return mime == b"application/json" || mime == b"text/event-stream";
    }
    // Over bytes, jumping from comma to comma with memchr: splitting byte by byte cost more
    // (callgrind: 560 instructions a request against 345).
    let mut rest = accept.as_bytes();
    loop {
        let (entry, next) = match memchr::memchr(b',', rest) {
            Some(comma) => (&rest[..comma], Some(&rest[comma + 1..])),
            None => (rest, None),
        };
        if media_range_matches(media_type(entry), mime) {
            return true;
        }
        match next {
            Some(next) => rest = next,
            None => return false,
        }
    }
}

// Whether the media range `range` (`type/subtype`, `type/*` or `*/*`) takes the lower-case
// media type `mime`.
fn media_range_matches(range: &[u8], mime: &[u8]) -> bool {
    if same_name(range, mime) || range == b"*/*" {
        return true;
    }
    // `type/*`: every subtype of that whole type.
    range
        .strip_suffix(b"*")
        .filter(|kind| kind.ends_with(b"/"))
        .is_some_and(|kind| mime.get(..kind.len()).is_some_and(|head| same_name(kind, head)))
}

// Whether two names are the same but for ASCII case. The bytes as they stand are compared
// first: the usual case, and cheaper than folding each byte's case (the Host check took 335
// instructions a request with folding alone, 220 with this).
fn same_name(a: &[u8], b: &[u8]) -> bool {
    a == b || a.eq_ignore_ascii_case(b)
}

fn check_version(version: Option<&str>) -> Result<(), Response> {
    match version {
        Some(v) if !mcp::SUPPORTED_VERSIONS.contains(&v) => Err(rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            code::TRANSPORT,
            format!(
                "Bad Request: unsupported MCP-Protocol-Version '{v}'; supported: {}",
                mcp::SUPPORTED_VERSIONS.join(", ")
            ),
        )),
        _ => Ok(()),
    }
}

impl HttpInner {
    // A running call counted against its caller: the session's, or in stateless mode the
    // request's. `None` when the caller has as many running as it may.
    fn call_slot(
        &self,
        session: &Session,
        user: &UserInfo,
        extensions: &http::Extensions,
    ) -> Option<crate::limits::Slot> {
        match session.caller() {
            Some(caller) => caller.try_call(),
            None => self.callers.caller(CallerKey::of(user, extensions)).try_call(),
        }
    }

    // The caller's session: it must exist and belong to the caller. (Any supported
    // MCP-Protocol-Version is accepted on it: clients send older ones on follow-up requests.)
    fn session_for(&self, session_id: Option<&str>, user_id: Option<&str>) -> Result<Arc<Session>, Response> {
        if self.options.stateless {
            return Ok(Arc::new(Session::new(None)));
        }
        let Some(id) = session_id else {
            return Err(rpc_error(
                StatusCode::BAD_REQUEST,
                None,
                code::TRANSPORT,
                "Bad Request: Mcp-Session-Id header is required",
            ));
        };
        let session = self
            .sessions
            .get(id, user_id)
            .ok_or_else(|| rpc_error(StatusCode::NOT_FOUND, None, code::UNAUTHORIZED, "Session not found"))?;
        Ok(session)
    }

    // The session a request runs in, and its caller with the session as its conversation.
    fn session_and_caller(
        &self,
        session_id: Option<&str>,
        user: UserInfo,
    ) -> Result<(Arc<Session>, UserInfo), Response> {
        let session = self.session_for(session_id, user.user_id())?;
        let user = with_conversation_id(user, &session);
        Ok((session, user))
    }

    fn challenge(&self, status: &Status, mut response: Response) -> Response {
        if matches!(status, Status::Ok) {
            return response;
        }
        let metadata = self
            .options
            .resource_metadata_url
            .as_deref()
            .map(|url| format!(r#" resource_metadata="{url}""#))
            .unwrap_or_default();
        let (code, value) = match status {
            Status::Ok => return response,
            Status::Unauthenticated => (StatusCode::UNAUTHORIZED, format!("Bearer{metadata}")),
            Status::Forbidden(scopes) => (
                StatusCode::FORBIDDEN,
                format!(
                    r#"Bearer error="insufficient_scope", scope="{}"{}"#,
                    scopes.join(" "),
                    metadata.replacen(' ', ", ", 1)
                ),
            ),
        };
        *response.status_mut() = code;
        if let Ok(value) = HeaderValue::from_str(&value) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

async fn handle_post<B: RequestBody>(http: McpHttp, mut parts: Parts, body: B) -> Response {
    let http = &http;
    let inner = &http.inner;
    let headers = EndpointHeaders::read(&parts.headers);
    if let Err(refusal) = check_host_and_origin(&headers, &inner.options) {
        return refusal;
    }
    let is_json = headers.content_type.is_some_and(|ct| same_name(media_type(ct.as_bytes()), b"application/json"));
    if !is_json {
        return rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            code::TRANSPORT,
            "Unsupported Media Type: Content-Type must be application/json",
        );
    }
    let streamable = accepts(headers.accept, "text/event-stream");
    if !streamable && !accepts(headers.accept, "application/json") {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            code::TRANSPORT,
            "Not Acceptable: Accept must include application/json and text/event-stream",
        );
    }
    let user = parts.extensions.remove::<UserInfo>().unwrap_or_default();
    if let Err(wait) = inner.callers.admit_request(&user, &parts.extensions) {
        return over_limit(StatusCode::TOO_MANY_REQUESTS, None, "Too Many Requests: slow down", wait);
    }
    // Held until the request is answered: the body, and what is read from it, stay until then.
    let mut budget = None;
    let bytes = match read_body_in_time(inner, body, &mut budget).await {
        Ok(bytes) => bytes,
        Err(refusal) => return refusal,
    };
    let version = headers.version();
    // The common request, read in one pass: a tools/call at a revision served with sessions.
    if version.is_some_and(|v| mcp::SUPPORTED_VERSIONS.contains(&v))
        && let Some((id, call)) = mcp::read_tool_call(&bytes)
    {
        let span = tracing::debug_span!("mcp", method = %"tools/call", id = %id);
        return match inner.session_and_caller(headers.session(), user) {
            Ok((session, user)) => {
                let Some(slot) = inner.call_slot(&session, &user, &parts.extensions) else {
                    return too_many_calls(&id);
                };
                let reply_headers = std::mem::take(&mut parts.headers);
                let started = start_tool_call(http, &id, call, user, &session, streamable, slot);
                answer_tool_call(http, id, session, started, reply_headers, span).await
            }
            Err(refusal) => refusal,
        };
    }
    // The same for a 2026-07-28 tools/call, boxed as the other 2026-07-28 requests are below.
    if modern_http::names_modern_version(version)
        && let Some((id, params)) = modern::read_tool_call(&bytes)
    {
        let span = tracing::debug_span!("mcp", method = %"tools/call", id = %id);
        return match modern_http::check_tool_call(http, &id, params, &parts.headers) {
            Ok(checked) => {
                let Some(slot) = inner.callers.caller(CallerKey::of(&user, &parts.extensions)).try_call() else {
                    return too_many_calls(&id);
                };
                let reply_headers = std::mem::take(&mut parts.headers);
                Box::pin(modern_http::tool_call(http, id, checked, user, streamable, reply_headers, slot))
                    .instrument(span)
                    .await
            }
            Err(refusal) => refusal,
        };
    }
    let message = match Message::parse(&bytes) {
        Ok(message) => message,
        Err(failure) => {
            return json_response(StatusCode::BAD_REQUEST, jsonrpc::error_bytes(failure.id.as_ref(), &failure.error));
        }
    };
    // One span per request. It names the method and id, never the session id, which lets
    // anyone holding it act as the session. At DEBUG, as tower-http's TraceLayer does: a span
    // the filter enables has its fields formatted, about a tenth of an echo call's instructions.
    let span = match &message {
        Message::Request(r) => tracing::debug_span!("mcp", method = %r.method, id = %r.id),
        Message::Notification(n) => tracing::debug_span!("mcp", method = %n.method),
        Message::Response(r) => tracing::debug_span!("mcp", response_to = %r.id),
    };
    // The revision is chosen per request: 2026-07-28 requests are served statelessly, the rest
    // on the session path below, unchanged.
    match message {
        // Both boxed: a branch's future is part of every request's future, which is moved into
        // a box once per request (and twice more on the way), so only the one-pass tools/call
        // above is kept inline. Inline, these made it 2.6 KB rather than 1.8 KB.
        Message::Request(request) if modern_http::is_modern(version, &request) => {
            let caller = inner.callers.caller(CallerKey::of(&user, &parts.extensions));
            Box::pin(modern_http::handle(http, request, user, parts.headers, streamable, caller)).instrument(span).await
        }
        other if modern_http::names_modern_version(version) => modern_http::not_a_request(&other),
        message => {
            if let Err(refusal) = check_version(version) {
                return refusal;
            }
            Box::pin(dispatch(http, message, user, headers.session(), streamable, &parts.extensions))
                .instrument(span)
                .await
        }
    }
}

/// Why a body was not read.
#[derive(Debug)]
enum BodyRefused {
    /// Over the size limit, or the stream failed.
    TooLarge,
    /// The endpoint's budget of bodies in flight is spent.
    Busy,
}

// The request's body within the size limit, the body budget and the body timeout, or the
// response that refuses it. A body that is all there at once (nearly every one) is read with no
// timer: one is armed only when the first read has to wait.
async fn read_body_in_time<B: RequestBody>(
    inner: &HttpInner,
    body: B,
    budget: &mut Option<tokio::sync::OwnedSemaphorePermit>,
) -> Result<Bytes, Response> {
    let limit = inner.options.max_body_bytes;
    let mut read = std::pin::pin!(read_body(body, limit, &inner.body_budget, budget));
    let read = match std::future::poll_fn(|cx| Poll::Ready(read.as_mut().poll(cx))).await {
        Poll::Ready(read) => read,
        Poll::Pending => match tokio::time::timeout(inner.options.request_body_timeout, read).await {
            Ok(read) => read,
            Err(_) => {
                let mut response = rpc_error(
                    StatusCode::REQUEST_TIMEOUT,
                    None,
                    code::TRANSPORT,
                    "Request Timeout: the request body did not arrive in time",
                );
                response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
                return Err(response);
            }
        },
    };
    read.map_err(|refused| match refused {
        BodyRefused::TooLarge => rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            code::INVALID_REQUEST,
            format!("Payload Too Large: the limit is {limit} bytes"),
        ),
        BodyRefused::Busy => over_limit(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            "Service Unavailable: too many large requests at once; try again shortly",
            Duration::from_secs(1),
        ),
    })
}

/// Reads a whole request body of at most `limit` bytes, taking each frame's size from
/// `budget` into `held` as it arrives.
///
/// By hand rather than with `collect()`, which queues every frame and then joins them: a
/// request almost always arrives as one data frame, and that frame is returned as it is.
async fn read_body<B: RequestBody>(
    body: B,
    limit: usize,
    budget: &BodyBudget,
    held: &mut Option<tokio::sync::OwnedSemaphorePermit>,
) -> Result<Bytes, BodyRefused> {
    let mut body = std::pin::pin!(Limited::new(body, limit));
    let mut first = Bytes::new();
    let mut joined: Option<BytesMut> = None;
    while let Some(frame) = body.frame().await {
        // Trailers carry nothing a JSON-RPC message needs.
        let Ok(data) = frame.map_err(|_| BodyRefused::TooLarge)?.into_data() else { continue };
        if !budget.take(held, data.len()) {
            return Err(BodyRefused::Busy);
        }
        match &mut joined {
            Some(buffer) => buffer.extend_from_slice(&data),
            None if first.is_empty() => first = data,
            None => {
                let mut buffer = BytesMut::with_capacity(first.len() + data.len());
                buffer.extend_from_slice(&first);
                buffer.extend_from_slice(&data);
                joined = Some(buffer);
            }
        }
    }
    Ok(joined.map_or(first, BytesMut::freeze))
}

/// Gives the caller the MCP session as its conversation (for `whoami`, and for tools that keep
/// per-conversation state such as `summarize_conversation`) unless the credentials named one.
fn with_conversation_id(user: UserInfo, session: &Session) -> UserInfo {
    match session.conversation_id() {
        Some(id) if user.session_id().is_none() => user.with_session(Arc::clone(id)),
        _ => user,
    }
}

async fn dispatch(
    http: &McpHttp,
    message: Message,
    user: UserInfo,
    session_id: Option<&str>,
    streamable: bool,
    extensions: &http::Extensions,
) -> Response {
    let inner = &http.inner;
    match message {
        Message::Request(request) if request.method == "initialize" => {
            Box::pin(initialize(http, &request, &user, session_id, extensions)).await
        }
        Message::Request(request) => match inner.session_and_caller(session_id, user) {
            Ok((session, user)) => request_response(http, request, user, session, streamable, extensions).await,
            Err(refusal) => refusal,
        },
        Message::Notification(notification) => match inner.session_for(session_id, user.user_id()) {
            Ok(session) => {
                inner.service.handle_notification(&notification, &session);
                accepted()
            }
            Err(refusal) => refusal,
        },
        Message::Response(response) => match inner.session_for(session_id, user.user_id()) {
            Ok(session) => {
                let id = response.id.clone();
                if inner.service.handle_response(response, &session, &user) {
                    accepted()
                } else {
                    rpc_error(
                        StatusCode::BAD_REQUEST,
                        Some(&id),
                        code::INVALID_REQUEST,
                        "No request is waiting for this response",
                    )
                }
            }
            Err(refusal) => refusal,
        },
    }
}

fn accepted() -> Response {
    StatusCode::ACCEPTED.into_response()
}

async fn initialize(
    http: &McpHttp,
    request: &jsonrpc::Request,
    user: &UserInfo,
    session_id: Option<&str>,
    extensions: &http::Extensions,
) -> Response {
    let inner = &http.inner;
    if !inner.options.stateless
        && let Some(existing) = session_id.and_then(|id| inner.sessions.get(id, user.user_id()))
    {
        let exchange = Exchange { user, session: &existing, client: None };
        let reply = inner.service.handle_request(request, &exchange).await;
        return json_response(StatusCode::BAD_REQUEST, reply.body);
    }
    let session = if inner.options.stateless {
        Arc::new(Session::new(None))
    } else {
        match inner.sessions.create(inner.callers.caller(CallerKey::of(user, extensions))) {
            Ok(session) => session,
            Err(refused) => {
                let status = match refused {
                    SessionRefused::CallerLimit => StatusCode::TOO_MANY_REQUESTS,
                    _ => StatusCode::SERVICE_UNAVAILABLE,
                };
                let message = match refused {
                    SessionRefused::CallerLimit => "Too Many Requests: too many sessions for this caller, each busy",
                    _ => "Service Unavailable: too many active sessions; try again later",
                };
                return over_limit(status, Some(&request.id), message, Duration::from_secs(60));
            }
        }
    };
    let exchange = Exchange { user, session: &session, client: None };
    let reply = inner.service.handle_request(request, &exchange).await;
    let succeeded = session.is_initialized();
    let mut response = json_response(StatusCode::OK, reply.body);
    match session.id() {
        Some(id) if succeeded => {
            if let Ok(value) = HeaderValue::from_str(id) {
                response.headers_mut().insert(SESSION, value);
            }
        }
        Some(id) => {
            inner.sessions.remove(id, user.user_id());
        }
        None => {}
    }
    response
}

async fn request_response(
    http: &McpHttp,
    request: jsonrpc::Request,
    user: UserInfo,
    session: Arc<Session>,
    streamable: bool,
    extensions: &http::Extensions,
) -> Response {
    let inner = &http.inner;
    if request.method != "tools/call" {
        let exchange = Exchange { user: &user, session: &session, client: None };
        let reply = Box::pin(inner.service.handle_request(&request, &exchange)).await;
        return inner.challenge(&reply.status, json_response(StatusCode::OK, reply.body));
    }
    // A tools/call the one-pass reading left to `Message::parse`.
    match mcp::parse::<ToolCall<'_>>(request.params.as_deref(), "tools/call") {
        Ok(call) => {
            let Some(slot) = inner.call_slot(&session, &user, extensions) else {
                return too_many_calls(&request.id);
            };
            let started = start_tool_call(http, &request.id, call.into_owned(), user, &session, streamable, slot);
            // In the span `dispatch` runs in already.
            answer_tool_call(http, request.id, session, started, HeaderMap::new(), tracing::Span::none()).await
        }
        Err(error) => json_response(StatusCode::OK, jsonrpc::error_bytes(Some(&request.id), &error)),
    }
}

// A tool call, started: its future, not yet polled, and the inbox of what it sends to the
// client while it runs. A call may talk to the client while it runs (when the client accepts
// SSE), so it gets a channel, which opens at its first message.
fn start_tool_call(
    http: &McpHttp,
    id: &Id,
    call: ToolCall<'static>,
    user: UserInfo,
    session: &Arc<Session>,
    streamable: bool,
    slot: crate::limits::Slot,
) -> (CallFuture<Reply>, Inbox) {
    let (outbox, inbox) = Outbox::lazy();
    let service = http.inner.service.clone();
    let peer = ChannelPeer::new(
        outbox,
        Arc::clone(session),
        Arc::clone(service.pending()),
        user.user_id().map(str::to_owned),
        call.progress_token(),
        service.options().answer_timeout,
    );
    let (id, session) = (id.clone(), Arc::clone(session));
    let call: CallFuture<Reply> = Box::pin(async move {
        // The caller's count of running calls holds until the call ends, however it ends.
        let _slot = slot;
        let client: Option<&dyn mirobody_core::ClientPeer> = if streamable { Some(&peer) } else { None };
        let exchange = Exchange { user: &user, session: &session, client };
        Some(service.run_tool_call(&id, call, &exchange).await)
    });
    (call, inbox)
}

// The reply to a started call: JSON when it finishes without sending anything first, else an
// SSE stream of what it sends, then its reply. Most calls finish in their first poll, made
// here in `span`: they are answered at once, with no span wrapper or waiting state carried in
// the request's future, and without being registered for `notifications/cancelled`, which
// costs a lock and two map updates. A call still running after it goes on in `keep_running`,
// boxed. A JSON reply's headers go in `reply_headers` (see `json_response_in`).
async fn answer_tool_call(
    http: &McpHttp,
    id: Id,
    session: Arc<Session>,
    (mut call, inbox): (CallFuture<Reply>, Inbox),
    reply_headers: HeaderMap,
    span: tracing::Span,
) -> Response {
    let first = std::future::poll_fn(|cx| Poll::Ready(span.in_scope(|| call.as_mut().poll(cx)))).await;
    match first {
        Poll::Ready(reply) => finish_tool_call(http, &id, reply, inbox, reply_headers),
        Poll::Pending => Box::pin(keep_running(http, id, session, call, inbox, reply_headers)).instrument(span).await,
    }
}

// A call still running after its first poll: it can be cancelled now (a cancellation read on
// another thread during that poll is kept by the session and stops the call as it registers),
// and switches the reply to SSE at its first message.
async fn keep_running(
    http: &McpHttp,
    id: Id,
    session: Arc<Session>,
    call: CallFuture<Reply>,
    inbox: Inbox,
    reply_headers: HeaderMap,
) -> Response {
    let (abort, registration) = AbortHandle::new_pair();
    let running = session.start_request(id.clone(), abort);
    let mut call: CallFuture<Reply> = Box::pin(async move {
        // Forgets the request however the call ends, even when its connection drops.
        let _running = running;
        Abortable::new(call, registration).await.ok().flatten()
    });
    tokio::select! {
        biased;
        reply = &mut call => finish_tool_call(http, &id, reply, inbox, reply_headers),
        rx = inbox.first_message() => sse_response(rx, CallState::Running(call), http.inner.options.keep_alive),
    }
}

// The response to a call that finished with `reply` (`None`: cancelled).
fn finish_tool_call(http: &McpHttp, id: &Id, reply: Option<Reply>, inbox: Inbox, reply_headers: HeaderMap) -> Response {
    match (reply, inbox.take()) {
        (Some(reply), None) => {
            http.inner.challenge(&reply.status, json_response_in(reply_headers, StatusCode::OK, reply.body))
        }
        // A call that finished may still have sent messages first.
        (Some(reply), Some(rx)) => sse_response(rx, CallState::Done(Some(reply)), http.inner.options.keep_alive),
        (None, _) => cancelled(id),
    }
}

fn cancelled(id: &Id) -> Response {
    rpc_error(StatusCode::OK, Some(id), code::INTERNAL_ERROR, "Request cancelled")
}

pub(crate) fn event(bytes: Vec<u8>) -> Result<Event, Infallible> {
    // Our messages are serde_json output, so always UTF-8.
    Ok(Event::default().event("message").data(String::from_utf8_lossy(&bytes)))
}

/// Where a call whose reply is an SSE stream stands.
pub(crate) enum CallState<R> {
    /// Still running.
    Running(CallFuture<R>),
    /// The call's reply; `None` when it was cancelled (a cancelled request gets no response).
    Done(Option<R>),
}

/// An SSE response carrying what the call sends on `rx` (from what is already waiting there),
/// then its reply. Dropping the response (the client closed the stream) drops the call.
pub(crate) fn sse_response<R: ReplyBody>(
    mut rx: mpsc::Receiver<Vec<u8>>,
    call: CallState<R>,
    keep_alive: Duration,
) -> Response {
    struct Streaming<R> {
        queued: std::collections::VecDeque<Vec<u8>>,
        rx: mpsc::Receiver<Vec<u8>>,
        call: CallState<R>,
    }
    // A finished call sends nothing more: what it sent is all in the channel already.
    let queued = match &call {
        CallState::Done(_) => std::iter::from_fn(|| rx.try_recv().ok()).collect(),
        CallState::Running(_) => std::collections::VecDeque::new(),
    };
    let state = Streaming { queued, rx, call };
    let events = stream::unfold(state, |mut s| async move {
        loop {
            if let Some(message) = s.queued.pop_front() {
                return Some((event(message), s));
            }
            let reply = match &mut s.call {
                CallState::Done(reply) => reply.take()?.into_body(),
                CallState::Running(call) => tokio::select! {
                    biased;
                    Some(message) = s.rx.recv() => return Some((event(message), s)),
                    reply = call => {
                        // Messages sent in the call's last poll still precede its response.
                        s.queued.extend(std::iter::from_fn(|| s.rx.try_recv().ok()));
                        s.call = CallState::Done(reply);
                        continue;
                    }
                },
            };
            return Some((event(reply), s));
        }
    });
    sse(events, keep_alive)
}

/// An SSE response of `events`, with keep-alive comments every `keep_alive` of silence.
pub(crate) fn sse(
    events: impl Stream<Item = Result<Event, Infallible>> + Send + 'static,
    keep_alive: Duration,
) -> Response {
    let mut response = Sse::new(events).keep_alive(KeepAlive::new().interval(keep_alive)).into_response();
    response.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

// GET and DELETE act on a session: refused for foreign hosts and origins, and where there are no
// sessions (stateless mode; 2026-07-28, whose clients use subscriptions/listen instead).
fn refuse_session_method(headers: &EndpointHeaders<'_>, options: &HttpOptions) -> Option<Response> {
    if let Err(refusal) = check_host_and_origin(headers, options) {
        return Some(refusal);
    }
    let modern = modern_http::names_modern_version(headers.version());
    (options.stateless || modern).then(method_not_allowed)
}

fn handle_get(http: &McpHttp, request: &Parts) -> Response {
    let (headers, user_id) = (EndpointHeaders::read(&request.headers), caller_id(request));
    let inner = &http.inner;
    if let Some(refusal) = refuse_session_method(&headers, &inner.options) {
        return refusal;
    }
    if !accepts(headers.accept, "text/event-stream") {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            code::TRANSPORT,
            "Not Acceptable: Accept must include text/event-stream",
        );
    }
    let session = match inner.session_for(headers.session(), user_id) {
        Ok(session) => session,
        Err(refusal) => return refusal,
    };
    let Some(slot) = session.caller().and_then(crate::limits::Caller::try_stream) else {
        return too_many_streams();
    };
    let Some(rx) = session.open_stream(64) else {
        return rpc_error(
            StatusCode::CONFLICT,
            None,
            code::TRANSPORT,
            "Conflict: a stream is already open for this session",
        );
    };
    // The stream ends when the session does, or when the server begins to shut down: an idle
    // stream would otherwise hold the graceful shutdown up for as long as the client keeps it.
    let changes = inner.service.changes().clone();
    // The caller's count of streams holds while the stream is open.
    let events =
        stream::unfold((rx, slot), |(mut rx, slot)| async move { rx.recv().await.map(|m| (event(m), (rx, slot))) })
            .take_until(async move { changes.ended().await });
    sse(events, inner.options.keep_alive)
}

fn handle_delete(http: &McpHttp, request: &Parts) -> Response {
    let (headers, user_id) = (EndpointHeaders::read(&request.headers), caller_id(request));
    let inner = &http.inner;
    if let Some(refusal) = refuse_session_method(&headers, &inner.options) {
        return refusal;
    }
    let Some(id) = headers.session() else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            code::TRANSPORT,
            "Bad Request: Mcp-Session-Id header is required",
        );
    };
    if inner.sessions.remove(id, user_id) {
        StatusCode::NO_CONTENT.into_response()
    } else {
        rpc_error(StatusCode::NOT_FOUND, None, code::UNAUTHORIZED, "Session not found")
    }
}

// The caller an auth layer put in the request's extensions; none for anonymous callers.
fn caller_id(request: &Parts) -> Option<&str> {
    request.extensions.get::<UserInfo>().and_then(UserInfo::user_id)
}

/// 405 for a method that only POST may be used in place of.
pub(crate) fn method_not_allowed() -> Response {
    not_allowed("POST")
}

fn not_allowed(allow: &'static str) -> Response {
    let mut response = rpc_error(StatusCode::METHOD_NOT_ALLOWED, None, code::TRANSPORT, "Method Not Allowed");
    response.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_walk_over_the_headers_finds_what_lookups_by_name_would() {
        let mut headers = HeaderMap::new();
        headers.append("x-other", HeaderValue::from_static("ignored"));
        headers.append(header::ACCEPT, HeaderValue::from_static("text/event-stream"));
        headers.append("Mcp-Session-Id", HeaderValue::from_static("first"));
        headers.append(header::HOST, HeaderValue::from_static("localhost:8080"));
        headers.append(header::ACCEPT, HeaderValue::from_static("application/json"));
        headers.append("mcp-session-id", HeaderValue::from_static("second"));
        headers.append("MCP-Protocol-Version", HeaderValue::from_static(" 2025-11-25 "));
        headers.append(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let found = EndpointHeaders::read(&headers);
        // A name given twice counts by its first value, as `HeaderMap::get` gives it.
        assert_eq!(found.accept, headers.get(header::ACCEPT));
        assert_eq!(found.accept.unwrap(), "text/event-stream");
        assert_eq!(found.session(), Some("first"));
        assert_eq!(found.host.unwrap(), "localhost:8080");
        assert_eq!(found.content_type, headers.get(header::CONTENT_TYPE));
        assert_eq!(found.version(), Some("2025-11-25"));
        assert_eq!(found.origin, None);
        // A value that is not visible ASCII is no value at all.
        let mut odd = HeaderMap::new();
        odd.insert(SESSION, HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap());
        assert_eq!(EndpointHeaders::read(&odd).session(), None);
        assert!(EndpointHeaders::read(&HeaderMap::new()).host.is_none());
    }

    #[test]
    fn accept_lists_are_read_entry_by_entry() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT, HeaderValue::from_str(value).unwrap());
            let accept = headers.get(header::ACCEPT);
            (accepts(accept, "application/json"), accepts(accept, "text/event-stream"))
        };
        assert_eq!(with("application/json, text/event-stream"), (true, true));
        let spec = HeaderValue::from_static("application/json, text/event-stream");
        assert!(!accepts(Some(&spec), "text/html"), "the spec's value accepts its two types only");
        assert_eq!(with(" text/event-stream ; q=1 ,application/json;q=0.9"), (true, true));
        assert_eq!(with("application/json,"), (true, false));
        assert_eq!(with("text/html"), (false, false));
        assert_eq!(with("text/*"), (false, true));
        assert_eq!(with("*/*;q=0.1"), (true, true));
        assert_eq!(with("application/jsonx, text/event-streams"), (false, false));
        assert_eq!(with("Application/JSON, Text/Event-Stream"), (true, true), "media types have no case");
        assert_eq!(with("TEXT/*"), (false, true));
        assert_eq!(with("te/*, textual/*, text*, application/"), (false, false), "a range names a whole type");
        assert_eq!(with("*/*"), (true, true));
        assert_eq!(with(""), (false, false));
        assert!(accepts(None, "application/json"), "no Accept header accepts anything");
    }

    #[test]
    fn ports_and_media_type_parameters_are_cut_off() {
        assert_eq!(strip_port("localhost:8080"), "localhost");
        assert_eq!(strip_port("localhost"), "localhost");
        assert_eq!(strip_port("[::1]:8080"), "[::1]");
        assert_eq!(strip_port("[::1]"), "[::1]");
        assert_eq!(strip_port("[::1"), "[::1", "an unclosed bracket is kept whole");
        assert_eq!(strip_port(""), "");
        assert_eq!(media_type(b"application/json"), b"application/json");
        assert_eq!(media_type(b" Application/JSON ; charset=utf-8"), b"Application/JSON");
        assert_eq!(media_type(b";q=1"), b"");
    }

    /// A body sent as these frames, then these trailers.
    fn framed(parts: &[&'static str], trailers: bool) -> impl RequestBody {
        let mut frames: Vec<Result<http_body::Frame<Bytes>, Infallible>> =
            parts.iter().map(|p| Ok(http_body::Frame::data(Bytes::from_static(p.as_bytes())))).collect();
        if trailers {
            frames.push(Ok(http_body::Frame::trailers(HeaderMap::new())));
        }
        http_body_util::StreamBody::new(stream::iter(frames))
    }

    #[tokio::test]
    async fn bodies_are_read_whole_in_any_number_of_frames_up_to_the_limit() {
        let budget = BodyBudget::new(0);
        let read = async |parts: &'static [&'static str], trailers, limit| {
            read_body(framed(parts, trailers), limit, &budget, &mut None).await
        };
        assert_eq!(read(&[], false, 10).await.unwrap(), "");
        assert_eq!(read(&["{\"a\":1}"], false, 10).await.unwrap(), "{\"a\":1}");
        assert_eq!(read(&["{\"a\"", ":", "1}"], true, 10).await.unwrap(), "{\"a\":1}");
        assert_eq!(read(&["", "{}", "", "[]"], false, 10).await.unwrap(), "{}[]");
        assert_eq!(read(&["12345", "67890"], false, 10).await.unwrap(), "1234567890", "exactly the limit");
        assert!(read(&["12345", "678901"], false, 10).await.is_err(), "over the limit across frames");
        assert!(read(&["12345678901"], false, 10).await.is_err(), "over the limit in one frame");
    }

    #[tokio::test]
    async fn bodies_draw_on_the_budget_until_their_request_is_answered() {
        let budget = BodyBudget::new(12);
        let mut first = None;
        let body = read_body(framed(&["12345", "678"], false), 100, &budget, &mut first).await.unwrap();
        assert_eq!(body, "12345678");
        assert_eq!(budget.available(), 4, "held while the first request is answered");
        let mut second = None;
        let refused = read_body(framed(&["123", "45"], false), 100, &budget, &mut second).await;
        assert!(matches!(refused, Err(BodyRefused::Busy)), "{refused:?}");
        drop((first, second));
        assert_eq!(budget.available(), 12, "all given back");
    }
}
