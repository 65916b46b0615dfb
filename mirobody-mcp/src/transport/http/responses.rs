//! The responses the endpoint writes: JSON replies, refusals with their status and
//! `Retry-After`, and SSE streams for calls that talk to the client while they run.

use crate::jsonrpc::{self, Id, RpcError, code};
use crate::protocol::Reply;
use crate::session::limits::retry_after_secs;
use axum::body::Body;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, Stream};
use http::{HeaderValue, StatusCode, header};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio::sync::mpsc;

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

/// A JSON response.
pub(crate) fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
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

pub(crate) fn session_not_found() -> Response {
    rpc_error(StatusCode::NOT_FOUND, None, code::UNAUTHORIZED, "Session not found")
}

pub(crate) fn rpc_error(status: StatusCode, id: Option<&Id>, code: i64, message: impl Into<String>) -> Response {
    json_response(status, jsonrpc::error_bytes(id, &RpcError::new(code, message)))
}

pub(super) fn accepted() -> Response {
    StatusCode::ACCEPTED.into_response()
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

/// 405 for a method that only POST may be used in place of.
pub(crate) fn method_not_allowed() -> Response {
    not_allowed("POST")
}

pub(super) fn not_allowed(allow: &'static str) -> Response {
    let mut response = rpc_error(StatusCode::METHOD_NOT_ALLOWED, None, code::TRANSPORT, "Method Not Allowed");
    response.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}
