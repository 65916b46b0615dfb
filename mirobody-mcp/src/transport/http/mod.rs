//! Streamable HTTP: one endpoint for POST, GET and DELETE, serving MCP 2025-11-25 (and the
//! earlier handshake revisions) with sessions, and 2026-07-28 statelessly, chosen per request
//! (see its `rev_2026_07_28` module).
//!
//! Replies are plain JSON unless a tool call sends something to the client while it runs
//! (progress, a log line, a question); that call's reply then becomes an SSE stream carrying
//! those messages and finally the response. [`McpHttp::router`] is an axum `Router` an
//! application can mount at any path.

use crate::jsonrpc::{self, Message, code};
use crate::protocol::methods::Method as RpcMethod;
use crate::protocol::{self, McpEngine, Status};
use crate::session::limits::{BodyBudget, CallerKey, CallerLimits, Callers};
use crate::session::{Session, SessionStore, SharedSessions};
use axum::Router;
use axum::response::Response;
use axum::routing::future::RouteFuture;
use bytes::Bytes;
use futures::future::{BoxFuture, Either};
use http::request::Parts;
use http::{HeaderName, HeaderValue, Method, Request, StatusCode, header};
use mirobody_core::UserInfo;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tracing::Instrument;

mod body;
mod headers;
mod responses;
mod rev_2025_11_25;
mod rev_2026_07_28;
mod shared;

use body::*;
use headers::*;
pub(crate) use responses::*;
use rev_2025_11_25::*;

/// The session header.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// The protocol version header.
pub const VERSION_HEADER: &str = "mcp-protocol-version";

// The same names, parsed once: a `&str` name is parsed again on every lookup.
const SESSION: HeaderName = HeaderName::from_static(SESSION_HEADER);

pub(crate) const VERSION: HeaderName = HeaderName::from_static(VERSION_HEADER);

/// How the HTTP transport behaves. New settings may be added in any release, so start from the
/// defaults and change what you need:
///
/// ```
/// use mirobody_mcp::http::HttpOptions;
///
/// let mut options = HttpOptions::default();
/// options.max_body_bytes = 1 << 20;
/// options.allowed_hosts.push("mcp.example.com".into());
/// assert_eq!(options.max_body_bytes, 1_048_576);
/// ```
///
/// It reads from configuration too (unknown keys are refused, durations are read by
/// [`human_duration`](crate::human_duration)), as mirobody-server's `http` section.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
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
    #[serde(deserialize_with = "crate::human_duration::deserialize")]
    pub session_idle_timeout: Duration,
    /// The interval of SSE keep-alive comments.
    #[serde(deserialize_with = "crate::human_duration::deserialize")]
    pub keep_alive: Duration,
    /// The `resource_metadata` URL for `WWW-Authenticate` challenges, if auth is configured
    /// (not read from configuration: the application knows it).
    #[serde(skip)]
    pub resource_metadata_url: Option<String>,
    /// The scopes a 401 from the endpoint itself names (`scope=` in `WWW-Authenticate`), so a
    /// client asks for them when it signs in; empty names none (not read from configuration:
    /// the application knows them).
    #[serde(skip)]
    pub challenge_scopes: Vec<String>,
    /// The most `subscriptions/listen` streams (MCP 2026-07-28) open at once.
    pub max_subscriptions: usize,
    /// How many of [`max_sessions`](Self::max_sessions) anonymous callers may hold; the rest
    /// are kept for signed-in callers.
    pub max_anonymous_sessions: usize,
    /// How long a client may take to send a whole request body, from its headers on (408
    /// beyond, and the connection closes).
    #[serde(deserialize_with = "crate::human_duration::deserialize")]
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
            challenge_scopes: Vec::new(),
            max_subscriptions: 1024,
            max_anonymous_sessions: 5_000,
            request_body_timeout: Duration::from_secs(30),
            max_inflight_body_bytes: 16 * 1024 * 1024,
            caller_limits: CallerLimits::default(),
        }
    }
}

/// The MCP HTTP endpoint: an [`McpEngine`] with sessions and HTTP rules.
#[derive(Clone)]
pub struct McpHttp {
    inner: Arc<HttpInner>,
}

struct HttpInner {
    engine: McpEngine,
    sessions: SessionStore,
    options: HttpOptions,
    callers: Arc<Callers>,
    body_budget: BodyBudget,
    // Where sessions are kept for every instance, when there are several.
    shared: Option<Arc<SharedSessions>>,
}

impl McpHttp {
    /// The endpoint for `engine`.
    pub fn new(engine: McpEngine, options: HttpOptions) -> Self {
        let sessions = SessionStore::new(options.max_sessions, options.session_idle_timeout)
            .with_anonymous_share(options.max_anonymous_sessions);
        let callers = Callers::new(options.caller_limits.clone());
        let body_budget = BodyBudget::new(options.max_inflight_body_bytes);
        McpHttp { inner: Arc::new(HttpInner { engine, sessions, options, callers, body_budget, shared: None }) }
    }

    /// The endpoint for `engine`, its 2025-11-25 sessions kept in `backplane` for every
    /// instance that shares it (Redis, in mirobody-server), so that any instance serves any
    /// request of a session and a session outlives the instance that made it.
    ///
    /// Each instance keeps a copy of the sessions it serves: a request costs no round trip to
    /// the backplane when its session is here and unchanged, and one when it is not. A change
    /// (`logging/setLevel`, a subscription) is written before it is answered; a cancellation,
    /// or a client's answer to a question, that arrives where its call does not run is sent on
    /// to every instance, as are `tasks/update` and `tasks/cancel` for a task running in
    /// another instance (whose records the instances share through their task store). Returns
    /// once this instance listens to the others; it keeps listening (connecting again when the
    /// backplane's connection drops) and keeps the records of the sessions used here alive,
    /// until the endpoint is dropped.
    ///
    /// `key` is the secret every instance shares (the one the engine seals request states
    /// with): from it each instance derives the keys, of this use only, that sign and seal
    /// every message and record, and it believes nothing on the backplane signed otherwise
    /// (counted by [`refused_events`](Self::refused_events)). Nothing a client or a tool said
    /// travels: answers are kept sealed in the backplane's store under a reference, and a
    /// task's result is read from the task store.
    ///
    /// # Errors
    ///
    /// The backplane cannot be subscribed to.
    pub async fn with_shared_sessions(
        engine: McpEngine,
        options: HttpOptions,
        backplane: Arc<dyn mirobody_ports::SessionBackplane>,
        key: &crate::StateKey,
    ) -> Result<Self, mirobody_core::BackendError> {
        let mut http = McpHttp::new(engine, options);
        let ttl = http.inner.options.session_idle_timeout;
        let secret = key.derive("mirobody-backplane-v1");
        let trace = http.inner.engine.inner().trace.clone();
        let mut shared = SharedSessions::new(backplane, ttl, &secret).traced(trace);
        if http.inner.engine.inner().metrics.is_some() {
            shared = shared.recording(crate::metrics::BackplaneMetrics::recorded());
        }
        let shared = Arc::new(shared);
        http.inner.engine.tasks().reach_other_instances(Arc::clone(&shared));
        if let Some(inner) = Arc::get_mut(&mut http.inner) {
            inner.shared = Some(shared);
        }
        shared::listen(&http.inner).await?;
        Ok(http)
    }

    /// Whether sessions are shared with other instances.
    pub fn shares_sessions(&self) -> bool {
        self.inner.shared.is_some()
    }

    /// What this instance dropped from the shared sessions' backplane (unsigned, forged, stale,
    /// replayed or unreadable messages and records) since it started; `None` when sessions are
    /// not shared.
    pub fn refused_events(&self) -> Option<crate::session::RefusedEvents> {
        self.inner.shared.as_ref().map(|shared| shared.refused())
    }

    /// Ends every session of `user_id` (their account deleted, say): this instance's at once,
    /// with the calls running in them; and, when sessions are shared, every other instance's,
    /// their records and the index of their sessions removed from the backplane and every
    /// instance told to drop its copies (a request on any of them, anywhere, gets 404 once this
    /// returns). Returns how many sessions were ended.
    ///
    /// # Errors
    ///
    /// The backplane cannot be reached: this instance's sessions are ended all the same, those
    /// of the others end with their idle timeout unless this is called again.
    pub async fn end_sessions_of(&self, user_id: &str) -> Result<usize, mirobody_core::BackendError> {
        let here = self.inner.sessions.remove_all_of(user_id);
        for id in &here {
            // As when a session ends: questions waiting in it fail now.
            self.inner.engine.pending().abandon(Some(id));
        }
        match &self.inner.shared {
            Some(shared) => Ok(shared.end_sessions_of(user_id, &here).await?.len()),
            None => Ok(here.len()),
        }
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
    pub fn engine(&self) -> &McpEngine {
        &self.inner.engine
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
    /// use mirobody_mcp::McpEngine;
    /// use mirobody_mcp::axum::{Router, routing::get};
    /// use mirobody_mcp::http::{HttpOptions, McpHttp};
    ///
    /// let engine = McpEngine::builder(Arc::new(Registry::builder().build().unwrap())).build();
    /// let health = Router::new().route("/healthz", get(|| async { "ok" }));
    /// let app = McpHttp::new(engine, HttpOptions::default()).mount("/mcp", health);
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
            // Both may read a session's shared record.
            Method::GET => {
                let http = self.clone();
                return ResponseFuture(Box::pin(async move { handle_get(&http, &parts).await }));
            }
            Method::DELETE => {
                let http = self.clone();
                return ResponseFuture(Box::pin(async move { handle_delete(&http, &parts).await }));
            }
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

impl HttpInner {
    // A running call counted against its caller: the session's, or in stateless mode the
    // request's. `None` when the caller has as many running as it may.
    fn call_slot(
        &self,
        session: &Session,
        user: &UserInfo,
        extensions: &http::Extensions,
    ) -> Option<crate::session::limits::Slot> {
        match session.caller() {
            Some(caller) => caller.try_call(),
            None => self.callers.caller(CallerKey::of(user, extensions)).try_call(),
        }
    }

    // The caller's session: it must exist and belong to the caller. (Any supported
    // MCP-Protocol-Version is accepted on it: clients send older ones on follow-up requests.)
    // A session made by another instance is read from the shared records when not here yet.
    async fn session_for(
        &self,
        session_id: Option<&str>,
        user: &UserInfo,
        extensions: &http::Extensions,
    ) -> Result<Arc<Session>, Response> {
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
        if let Some(session) = self.sessions.get(id, user.user_id()) {
            return match &self.shared {
                // Another instance may have ended it a moment ago: its record is gone at once,
                // the news of it reaches this instance's copy a little later.
                Some(shared) => {
                    let session = Box::pin(shared::still_kept(self, shared, id, session)).await?;
                    // Claimed by its first signed-in caller just now: every instance must
                    // know whose it is.
                    if session.take_unsaved_claim() && shared.save(&session).await.is_err() {
                        return Err(shared::unreachable_sessions(None));
                    }
                    Ok(session)
                }
                None => Ok(session),
            };
        }
        match &self.shared {
            // Boxed: most requests find their session here, and need not carry this.
            Some(shared) => Box::pin(shared::adopt(self, shared, id, user, extensions)).await,
            None => Err(session_not_found()),
        }
    }

    // The session a request runs in, and its caller with the session as its conversation.
    async fn session_and_caller(
        &self,
        session_id: Option<&str>,
        user: UserInfo,
        extensions: &http::Extensions,
    ) -> Result<(Arc<Session>, UserInfo), Response> {
        let session = self.session_for(session_id, &user, extensions).await?;
        let user = with_conversation_id(user, &session);
        Ok((session, user))
    }

    fn challenge(&self, status: &Status, mut response: Response) -> Response {
        if matches!(status, Status::Ok) {
            return response;
        }
        let metadata = self.options.resource_metadata_url.as_deref().map(|url| format!(r#"resource_metadata="{url}""#));
        let (code, value) = match status {
            Status::Ok => return response,
            Status::Unauthenticated => {
                // The scopes tell a client what to ask for when it signs in (MCP 2025-11-25).
                let scopes = &self.options.challenge_scopes;
                let scope = (!scopes.is_empty()).then(|| format!(r#"scope="{}""#, scopes.join(" ")));
                let params: Vec<String> = metadata.into_iter().chain(scope).collect();
                let value =
                    if params.is_empty() { "Bearer".to_owned() } else { format!("Bearer {}", params.join(", ")) };
                (StatusCode::UNAUTHORIZED, value)
            }
            Status::Forbidden(scopes) => (
                StatusCode::FORBIDDEN,
                format!(
                    r#"Bearer error="insufficient_scope", scope="{}"{}"#,
                    scopes.join(" "),
                    metadata.map(|metadata| format!(", {metadata}")).unwrap_or_default()
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

// A POST answered, and counted when the engine records metrics: its method once known, and
// the refusals by their status.
async fn handle_post<B: RequestBody>(http: McpHttp, parts: Parts, body: B) -> Response {
    let metrics = http.inner.engine.inner().metrics.as_deref();
    let started = metrics.map(|_| std::time::Instant::now());
    let mut method = None;
    let response = answer_post(&http, parts, body, &mut method).await;
    if let (Some(metrics), Some(started)) = (metrics, started) {
        metrics.answered(method, response.status(), started);
    }
    response
}

// `method` is set to the request's method (as `Method` numbers them) once it is read.
async fn answer_post<B: RequestBody>(
    http: &McpHttp,
    mut parts: Parts,
    body: B,
    method: &mut Option<usize>,
) -> Response {
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
    if version.is_some_and(|v| protocol::SUPPORTED_VERSIONS.contains(&v))
        && let Some((id, call)) = protocol::read_tool_call(&bytes)
    {
        *method = Some(RpcMethod::ToolsCall as usize);
        let span = tracing::debug_span!("mcp", method = %"tools/call", id = %id);
        return match inner.session_and_caller(headers.session(), user, &parts.extensions).await {
            Ok((session, user)) => {
                let Some(slot) = inner.call_slot(&session, &user, &parts.extensions) else {
                    return too_many_calls(&id);
                };
                let started = start_tool_call(http, &id, call, user, &session, streamable, slot);
                answer_tool_call(http, id, session, started, span).await
            }
            Err(refusal) => refusal,
        };
    }
    // The same for a 2026-07-28 tools/call, boxed as the other 2026-07-28 requests are below.
    if names_version_without_initialize(version)
        && let Some((id, params)) = crate::protocol::rev_2026_07_28::read_tool_call(&bytes)
    {
        *method = Some(RpcMethod::ToolsCall as usize);
        let span = tracing::debug_span!("mcp", method = %"tools/call", id = %id);
        return match rev_2026_07_28::check_tool_call(http, &id, params, &parts.headers) {
            Ok(checked) => {
                let Some(slot) = inner.callers.caller(CallerKey::of(&user, &parts.extensions)).try_call() else {
                    return too_many_calls(&id);
                };
                Box::pin(rev_2026_07_28::tool_call(http, id, checked, user, streamable, slot)).instrument(span).await
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
    // the filter enables has its fields formatted, which costs more than the echo call itself.
    if let Message::Request(request) = &message {
        *method = Some(RpcMethod::of(&request.method).map_or(RpcMethod::ALL.len(), |m| m as usize));
    }
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
        Message::Request(request) if rev_2026_07_28::is_request(version, &request) => {
            let caller = inner.callers.caller(CallerKey::of(&user, &parts.extensions));
            Box::pin(rev_2026_07_28::handle(http, request, user, parts.headers, streamable, caller))
                .instrument(span)
                .await
        }
        other if names_version_without_initialize(version) => rev_2026_07_28::not_a_request(&other),
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
