//! The 2025-11-25 side of the endpoint: sessions (`initialize`, `Mcp-Session-Id`, GET
//! streams, DELETE), and a session's requests, a `tools/call` answered in its first poll
//! when it can be.

use crate::jsonrpc::{self, Id, Message, code};
use crate::protocol::peer::{ChannelPeer, Inbox, Outbox};
use crate::protocol::{self, Exchange, Reply, ToolCall};
use crate::session::limits::CallerKey;
use crate::session::{Session, SessionRefused};
use axum::response::{IntoResponse, Response};
use futures::future::{AbortHandle, Abortable};
use futures::stream::{self, StreamExt};
use http::request::Parts;
use http::{HeaderValue, StatusCode};
use mirobody_core::UserInfo;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tracing::Instrument;

use super::*;

/// Gives the caller the MCP session as its conversation (for `whoami`, and for tools that keep
/// per-conversation state such as `summarize_conversation`) unless the credentials named one.
pub(super) fn with_conversation_id(user: UserInfo, session: &Session) -> UserInfo {
    match session.conversation_id() {
        Some(id) if user.session_id().is_none() => user.with_session(Arc::clone(id)),
        _ => user,
    }
}

pub(super) async fn dispatch(
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
        Message::Request(request) => match inner.session_and_caller(session_id, user, extensions).await {
            Ok((session, user)) => request_response(http, request, user, session, streamable, extensions).await,
            Err(refusal) => refusal,
        },
        Message::Notification(notification) => match inner.session_for(session_id, &user, extensions).await {
            Ok(session) => {
                let elsewhere = inner.engine.handle_notification(&notification, &session);
                // A call not running here may run in another instance.
                if let (Some(request), Some(shared), Some(id)) = (elsewhere, &inner.shared, session.id()) {
                    shared::send_cancel(shared, id, request).await;
                }
                accepted()
            }
            Err(refusal) => refusal,
        },
        Message::Response(response) => match inner.session_for(session_id, &user, extensions).await {
            Ok(session) => {
                let id = response.id.clone();
                let Err(outcome) = inner.engine.handle_response(response, &session, &user) else {
                    return accepted();
                };
                // The question may have been asked by a call in another instance: it is
                // delivered there only if it went to this session and user.
                if let (Some(shared), Some(session_id)) = (&inner.shared, session.id()) {
                    return shared::send_answer(shared, session_id, &user, id, outcome).await;
                }
                rpc_error(
                    StatusCode::BAD_REQUEST,
                    Some(&id),
                    code::INVALID_REQUEST,
                    "No request is waiting for this response",
                )
            }
            Err(refusal) => refusal,
        },
    }
}

// The answer to a request refused a session.
pub(super) fn session_refused(refused: SessionRefused, id: Option<&Id>) -> Response {
    let status = match refused {
        SessionRefused::CallerLimit => StatusCode::TOO_MANY_REQUESTS,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    };
    let message = match refused {
        SessionRefused::CallerLimit => "Too Many Requests: too many sessions for this caller, each busy",
        _ => "Service Unavailable: too many active sessions; try again later",
    };
    over_limit(status, id, message, Duration::from_secs(60))
}

pub(super) async fn initialize(
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
        let reply = inner.engine.handle_request(request, &exchange).await;
        return json_response(StatusCode::BAD_REQUEST, reply.body);
    }
    let session = if inner.options.stateless {
        Arc::new(Session::new(None))
    } else {
        match inner.sessions.create(inner.callers.caller(CallerKey::of(user, extensions))) {
            Ok(session) => session,
            Err(refused) => return session_refused(refused, Some(&request.id)),
        }
    };
    let exchange = Exchange { user, session: &session, client: None };
    let reply = inner.engine.handle_request(request, &exchange).await;
    let succeeded = session.is_initialized();
    // Kept for every instance before its id goes out.
    if succeeded
        && let Some(shared) = &inner.shared
        && let Err(refusal) = shared::save(shared, &session, &request.id).await
    {
        inner.sessions.remove(session.id().unwrap_or_default(), user.user_id());
        return refusal;
    }
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

pub(super) async fn request_response(
    http: &McpHttp,
    request: jsonrpc::Request,
    user: UserInfo,
    session: Arc<Session>,
    streamable: bool,
    extensions: &http::Extensions,
) -> Response {
    let inner = &http.inner;
    if request.method != "tools/call" {
        let changes = session.changes();
        let exchange = Exchange { user: &user, session: &session, client: None };
        let reply = Box::pin(inner.engine.handle_request(&request, &exchange)).await;
        // A change other instances must see is kept before it is answered.
        if session.changes() != changes
            && let Some(shared) = &inner.shared
            && let Err(refusal) = shared::save(shared, &session, &request.id).await
        {
            return refusal;
        }
        return inner.challenge(&reply.status, json_response(StatusCode::OK, reply.body));
    }
    // A tools/call the one-pass reading left to `Message::parse`.
    match protocol::parse::<ToolCall<'_>>(request.params.as_deref(), "tools/call") {
        Ok(call) => {
            let Some(slot) = inner.call_slot(&session, &user, extensions) else {
                return too_many_calls(&request.id);
            };
            let started = start_tool_call(http, &request.id, call.into_owned(), user, &session, streamable, slot);
            // In the span `dispatch` runs in already.
            answer_tool_call(http, request.id, session, started, tracing::Span::none()).await
        }
        Err(error) => json_response(StatusCode::OK, jsonrpc::error_bytes(Some(&request.id), &error)),
    }
}

// A tool call, started: its future, not yet polled, and the inbox of what it sends to the
// client while it runs. A call may talk to the client while it runs (when the client accepts
// SSE), so it gets a channel, which opens at its first message.
pub(super) fn start_tool_call(
    http: &McpHttp,
    id: &Id,
    call: ToolCall<'static>,
    user: UserInfo,
    session: &Arc<Session>,
    streamable: bool,
    slot: crate::session::limits::Slot,
) -> (CallFuture<Reply>, Inbox) {
    let (outbox, inbox) = Outbox::lazy();
    let engine = http.inner.engine.clone();
    let peer = ChannelPeer::new(
        outbox,
        Arc::clone(session),
        Arc::clone(engine.pending()),
        user.user_id().map(str::to_owned),
        call.progress_token(),
        engine.options().answer_timeout,
    );
    let (id, session) = (id.clone(), Arc::clone(session));
    let call: CallFuture<Reply> = Box::pin(async move {
        // The caller's count of running calls holds until the call ends, however it ends.
        let _slot = slot;
        let client: Option<&dyn mirobody_core::ClientPeer> = if streamable { Some(&peer) } else { None };
        let exchange = Exchange { user: &user, session: &session, client };
        Some(engine.run_tool_call(&id, call, &exchange).await)
    });
    (call, inbox)
}

// The reply to a started call: JSON when it finishes without sending anything first, else an
// SSE stream of what it sends, then its reply. Most calls finish in their first poll, made
// here in `span`: they are answered at once, with no span wrapper or waiting state carried in
// the request's future, and without being registered for `notifications/cancelled`, which
// costs a lock and two map updates. A call still running after it goes on in `keep_running`,
// boxed.
pub(super) async fn answer_tool_call(
    http: &McpHttp,
    id: Id,
    session: Arc<Session>,
    (mut call, inbox): (CallFuture<Reply>, Inbox),
    span: tracing::Span,
) -> Response {
    let first = std::future::poll_fn(|cx| Poll::Ready(span.in_scope(|| call.as_mut().poll(cx)))).await;
    match first {
        Poll::Ready(reply) => finish_tool_call(http, &id, reply, inbox),
        Poll::Pending => Box::pin(keep_running(http, id, session, call, inbox)).instrument(span).await,
    }
}

// A call still running after its first poll: it can be cancelled now (a cancellation read on
// another thread during that poll is kept by the session and stops the call as it registers),
// and switches the reply to SSE at its first message.
pub(super) async fn keep_running(
    http: &McpHttp,
    id: Id,
    session: Arc<Session>,
    call: CallFuture<Reply>,
    inbox: Inbox,
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
        reply = &mut call => finish_tool_call(http, &id, reply, inbox),
        rx = inbox.first_message() => sse_response(rx, CallState::Running(call), http.inner.options.keep_alive),
    }
}

// The response to a call that finished with `reply` (`None`: cancelled).
pub(super) fn finish_tool_call(http: &McpHttp, id: &Id, reply: Option<Reply>, inbox: Inbox) -> Response {
    match (reply, inbox.take()) {
        (Some(reply), None) => http.inner.challenge(&reply.status, json_response(StatusCode::OK, reply.body)),
        // A call that finished may still have sent messages first.
        (Some(reply), Some(rx)) => sse_response(rx, CallState::Done(Some(reply)), http.inner.options.keep_alive),
        (None, _) => cancelled(id),
    }
}

pub(super) fn cancelled(id: &Id) -> Response {
    rpc_error(StatusCode::OK, Some(id), code::INTERNAL_ERROR, "Request cancelled")
}

// GET and DELETE act on a session: refused for foreign hosts and origins, and where there are no
// sessions (stateless mode; 2026-07-28, whose clients use subscriptions/listen instead).
pub(super) fn refuse_session_method(headers: &EndpointHeaders<'_>, options: &HttpOptions) -> Option<Response> {
    if let Err(refusal) = check_host_and_origin(headers, options) {
        return Some(refusal);
    }
    let without_initialize = names_version_without_initialize(headers.version());
    (options.stateless || without_initialize).then(method_not_allowed)
}

pub(super) async fn handle_get(http: &McpHttp, request: &Parts) -> Response {
    let headers = EndpointHeaders::read(&request.headers);
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
    let user = request.extensions.get::<UserInfo>().cloned().unwrap_or_default();
    let session = match inner.session_for(headers.session(), &user, &request.extensions).await {
        Ok(session) => session,
        Err(refusal) => return refusal,
    };
    let Some(slot) = session.caller().and_then(crate::session::limits::Caller::try_stream) else {
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
    let changes = inner.engine.changes().clone();
    // The caller's count of streams holds while the stream is open.
    let events =
        stream::unfold((rx, slot), |(mut rx, slot)| async move { rx.recv().await.map(|m| (event(m), (rx, slot))) })
            .take_until(async move { changes.ended().await });
    sse(events, inner.options.keep_alive)
}

pub(super) async fn handle_delete(http: &McpHttp, request: &Parts) -> Response {
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
    let here = inner.sessions.remove(id, user_id);
    match &inner.shared {
        Some(shared) => shared::end(shared, id, user_id, here).await,
        None if here => StatusCode::NO_CONTENT.into_response(),
        None => session_not_found(),
    }
}

// The caller an auth layer put in the request's extensions; none for anonymous callers.
pub(super) fn caller_id(request: &Parts) -> Option<&str> {
    request.extensions.get::<UserInfo>().and_then(UserInfo::user_id)
}
