//! Streamable HTTP for MCP 2026-07-28, beside the session path of [`crate::transport::http`] on the same
//! endpoint.
//!
//! A POST is served statelessly when it is a 2026-07-28 request: its `MCP-Protocol-Version`
//! header names that revision, or (with no header, or one naming no revision served with a
//! handshake) its `params._meta` carries a protocol version, or it is `server/discover`.
//! Everything else takes the 2025-11-25 path unchanged. A stateless request never touches a
//! session: `Mcp-Session-Id` is ignored and none is minted.
//!
//! Before the method runs, the request passes a ladder, the first failure answering:
//! `params._meta` with the protocol version and client capabilities (400, -32602); the
//! `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers matching the body, each given
//! once (400, -32020); the version served (400, -32022, naming the versions served); the log
//! level known (400, -32602); the `Mcp-Param-*` headers of a tool's `x-mcp-header` arguments
//! matching them (400, -32020). Method errors then map to statuses the same way (-32601 is 404).
//!
//! A reply is JSON unless the call sends progress or logs first, or stays silent past the
//! keep-alive interval: it then becomes an SSE stream with keep-alive comments. Closing the
//! stream (or the connection, before any reply) drops the call, which cancels the handler.
//! `subscriptions/listen` answers with a stream that acknowledges first and then carries the
//! change notifications the client asked for.

use crate::session::limits::{Caller, Slot};
use std::borrow::Cow;
use std::future::Future;
use std::task::Poll;

use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use futures::stream;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use mirobody_core::UserInfo;
use serde_json::Value;
use tokio::sync::broadcast;

use crate::jsonrpc::{self, Id, Message, Request, RpcError, code};
use crate::protocol::changes::{self, SUBSCRIPTION_ID_KEY};
use crate::protocol::peer::{Inbox, Outbox};
use crate::protocol::rev_2026_07_28::{self, HeaderParam, OwnedCall, RequestMeta, codes};
use crate::protocol::{self, McpEngine};
use crate::transport::http::{
    CallFuture, CallState, McpHttp, ReplyBody, VERSION, accepts, event, json_response, rpc_error, sse, sse_response,
};

/// The header that mirrors the request's method.
pub(super) const METHOD_HEADER: &str = "mcp-method";
/// The header that mirrors the tool or prompt name, or the resource URI.
pub(super) const NAME_HEADER: &str = "mcp-name";

// The same names, parsed once.
const METHOD: HeaderName = HeaderName::from_static(METHOD_HEADER);
const NAME: HeaderName = HeaderName::from_static(NAME_HEADER);

impl ReplyBody for rev_2026_07_28::Reply {
    fn into_body(self) -> Vec<u8> {
        self.body
    }
}

/// Whether a request is served statelessly, as 2026-07-28.
pub(crate) fn is_request(version: Option<&str>, request: &Request) -> bool {
    match version {
        Some(v) if protocol::SUPPORTED_VERSIONS.contains(&v) => false,
        Some(v) if crate::protocol::versions::VERSIONS_WITHOUT_INITIALIZE.contains(&v) => true,
        _ => crate::protocol::rev_2026_07_28::is_request(request),
    }
}

/// A notification or response POSTed at a stateless revision: a notification is accepted and
/// dropped (cancellation is closing the stream; no other is defined), a response refused
/// (servers send no requests on 2026-07-28).
pub(crate) fn not_a_request(message: &Message) -> Response {
    match message {
        Message::Notification(_) => StatusCode::ACCEPTED.into_response(),
        Message::Response(_) | Message::Request(_) => rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            code::INVALID_REQUEST,
            "Invalid request: 2026-07-28 clients send requests and notifications only; answers to a server's \
             questions travel as inputResponses in a retried request",
        ),
    }
}

/// The HTTP status of a 2026-07-28 reply with this JSON-RPC error code.
pub(super) fn status_for(error_code: Option<i64>) -> StatusCode {
    match error_code {
        Some(
            code::PARSE_ERROR
            | code::INVALID_REQUEST
            | code::INVALID_PARAMS
            | codes::HEADER_MISMATCH
            | codes::MISSING_REQUIRED_CLIENT_CAPABILITY
            | codes::UNSUPPORTED_PROTOCOL_VERSION,
        ) => StatusCode::BAD_REQUEST,
        Some(code::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

fn refusal(id: &Id, error: &RpcError) -> Response {
    json_response(status_for(Some(error.code)), jsonrpc::error_bytes(Some(id), error))
}

fn mismatch(message: impl Into<String>) -> RpcError {
    RpcError::new(codes::HEADER_MISMATCH, format!("Header mismatch: {}", message.into()))
}

// The one value of a header, without surrounding whitespace; a header given twice, or with
// bytes that are not visible ASCII, is a mismatch.
fn single<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Result<Option<&'a str>, RpcError> {
    let mut values = headers.get_all(name).iter();
    Seen { first: values.next(), again: values.next().is_some() }.value(name)
}

// What came of one header: its first value, if any, and whether it came again.
#[derive(Clone, Copy, Default)]
struct Seen<'a> {
    first: Option<&'a HeaderValue>,
    again: bool,
}

impl<'a> Seen<'a> {
    // The header's value, as `single` says.
    fn value(self, name: &HeaderName) -> Result<Option<&'a str>, RpcError> {
        let Some(first) = self.first else { return Ok(None) };
        if self.again {
            return Err(mismatch(format!("the {name} header appears more than once")));
        }
        let value = first.to_str().map_err(|_| mismatch(format!("the {name} header has invalid characters")))?;
        Ok(Some(value.trim_matches([' ', '\t'])))
    }
}

// The three standard headers, found in one walk over the map (looking each up by name hashes
// it and probes the map).
#[derive(Default)]
struct StandardHeaders<'a> {
    version: Seen<'a>,
    method: Seen<'a>,
    name: Seen<'a>,
}

impl<'a> StandardHeaders<'a> {
    fn read(headers: &'a HeaderMap) -> Self {
        let mut found = StandardHeaders::default();
        for (name, value) in headers {
            let seen = if name == VERSION {
                &mut found.version
            } else if name == METHOD {
                &mut found.method
            } else if name == NAME {
                &mut found.name
            } else {
                continue;
            };
            seen.again |= seen.first.is_some();
            seen.first.get_or_insert(value);
        }
        found
    }
}

/// A header value as sent: verbatim, or decoded from the `=?base64?...?=` form. `None` for a
/// malformed encoded value (bad or non-canonical base64, or not UTF-8).
pub(super) fn decode_header_value(value: &str) -> Option<Cow<'_, str>> {
    let Some(encoded) = value.strip_prefix("=?base64?").and_then(|rest| rest.strip_suffix("?=")) else {
        return Some(Cow::Borrowed(value));
    };
    let bytes = STANDARD.decode(encoded).ok()?;
    String::from_utf8(bytes).ok().map(Cow::Owned)
}

// The rest of the ladder once the params are read: the headers, then the version and the log
// level.
fn ladder(
    engine: &McpEngine,
    headers: &HeaderMap,
    method: &str,
    params: &rev_2026_07_28::Params<'_>,
) -> Result<(), RpcError> {
    check_headers(engine, headers, method, params)?;
    params.meta.check()
}

// The standard headers against the body: the version, the method, and the name of the tool or
// prompt or the resource URI.
fn check_headers(
    engine: &McpEngine,
    headers: &HeaderMap,
    method: &str,
    params: &rev_2026_07_28::Params<'_>,
) -> Result<(), RpcError> {
    let standard = StandardHeaders::read(headers);
    match (standard.version.value(&VERSION)?, params.meta.protocol_version()) {
        (Some(header), Some(body)) if header == body => {}
        (None, _) => return Err(mismatch("the MCP-Protocol-Version header is required")),
        (Some(header), _) => {
            return Err(mismatch(format!(
                "the MCP-Protocol-Version header ('{header}') does not match the request's _meta protocol version"
            )));
        }
    }
    match standard.method.value(&METHOD)? {
        Some(header) if header == method => {}
        Some(header) => {
            return Err(mismatch(format!("the Mcp-Method header ('{header}') does not match the method '{method}'")));
        }
        None => return Err(mismatch("the Mcp-Method header is required")),
    }
    let key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return Ok(()),
    };
    // Malformed params are the method's to report.
    let Some(body) = params.text(key) else { return Ok(()) };
    let header = standard.name.value(&NAME)?.ok_or_else(|| mismatch("the Mcp-Name header is required"))?;
    match decode_header_value(header) {
        Some(decoded) if decoded == body => {}
        Some(_) => return Err(mismatch(format!("the Mcp-Name header does not match the request's {key}"))),
        None => return Err(mismatch("the Mcp-Name header has a malformed base64 value")),
    }
    if method == "tools/call"
        && let Some(mirrored) = engine.header_params(&body)
    {
        let arguments: Value = params.arguments().and_then(|raw| serde_json::from_str(raw).ok()).unwrap_or_default();
        for param in mirrored {
            check_param(param, &arguments, headers)?;
        }
    }
    Ok(())
}

fn value_at<'a>(arguments: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut node = arguments;
    for key in path {
        node = node.as_object()?.get(key)?;
    }
    (!node.is_null()).then_some(node)
}

// How a client renders an argument into its header; `None` when it cannot.
fn rendered(value: &Value) -> Option<Cow<'_, str>> {
    match value {
        Value::String(s) => Some(Cow::Borrowed(s)),
        Value::Bool(b) => Some(Cow::Borrowed(if *b { "true" } else { "false" })),
        Value::Number(n) => Some(Cow::Owned(n.to_string())),
        _ => None,
    }
}

// An integer argument matches its header numerically when the header is a plain decimal
// (`42` matches `42.0`).
fn same_integer(value: &Value, header: &str) -> Option<bool> {
    let number = value.as_i64().map(i128::from).or_else(|| value.as_u64().map(i128::from)).or_else(|| {
        let f = value.as_f64()?;
        (f.fract() == 0.0 && f.abs() < 9.0e15).then_some(f as i128)
    })?;
    let (whole, fraction) = header.split_once('.').unwrap_or((header, ""));
    let digits = whole.strip_prefix('-').unwrap_or(whole);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || !fraction.bytes().all(|b| b == b'0') {
        return None;
    }
    if header.ends_with('.') {
        return None;
    }
    Some(whole.parse::<i128>().ok()? == number)
}

fn check_param(param: &HeaderParam, arguments: &Value, headers: &HeaderMap) -> Result<(), RpcError> {
    let header = single(headers, &param.header)?;
    let name = &param.display;
    let argument = param.path.join(".");
    let Some(value) = value_at(arguments, &param.path) else {
        return match header {
            Some(_) => Err(mismatch(format!("{name} is sent but the argument '{argument}' is absent"))),
            None => Ok(()),
        };
    };
    let Some(expected) = rendered(value) else {
        // A value no header can carry: a conforming client omits the header.
        return match header {
            Some(_) => Err(mismatch(format!("{name} does not match the argument '{argument}'"))),
            None => Ok(()),
        };
    };
    let header = header.ok_or_else(|| mismatch(format!("{name} is required: the argument '{argument}' is present")))?;
    let decoded =
        decode_header_value(header).ok_or_else(|| mismatch(format!("{name} has a malformed base64 value")))?;
    let matches = match (param.kind.as_str(), same_integer(value, &decoded)) {
        ("integer", Some(same)) => same,
        _ => decoded == expected,
    };
    if matches { Ok(()) } else { Err(mismatch(format!("{name} does not match the argument '{argument}'"))) }
}

/// Serves one 2026-07-28 request.
pub(crate) async fn handle(
    http: &McpHttp,
    request: Request,
    user: UserInfo,
    headers: HeaderMap,
    streamable: bool,
    caller: Caller,
) -> Response {
    if request.method == "subscriptions/listen" {
        return match rev_2026_07_28::Params::parse(request.params.as_deref()).and_then(|params| {
            ladder(http.engine(), &headers, &request.method, &params)?;
            Ok(crate::protocol::tasks::listens_for_tasks(&params.meta.client_capabilities, &user))
        }) {
            Ok(tasks_of) => listen(http, &request, &headers, &caller, tasks_of),
            Err(error) => refusal(&request.id, &error),
        };
    }
    // A call counts against its caller's running calls until it ends.
    let slot = match request.method.as_str() {
        "tools/call" => match caller.try_call() {
            Some(slot) => Some(slot),
            None => return crate::transport::http::too_many_calls(&request.id),
        },
        _ => None,
    };

    // The call may send progress and logs before its reply, when the client reads SSE
    // (`streamable`).
    let (outbox, inbox) = Outbox::lazy();
    let call: CallFuture<rev_2026_07_28::Reply> = {
        let engine = http.engine().clone();
        let notifications = streamable.then_some(outbox);
        Box::pin(async move {
            let _slot = slot;
            // The params are read once, here: the ladder and the method both use the reading.
            let read = rev_2026_07_28::Params::parse(request.params.as_deref())
                .and_then(|params| ladder(&engine, &headers, &request.method, &params).map(|()| params));
            let params = match read {
                Ok(params) => params,
                Err(error) => return Some(rev_2026_07_28::Reply::error(&request.id, &error)),
            };
            let exchange = rev_2026_07_28::Exchange { user: &user, meta: &params.meta, notifications };
            Some(engine.handle_parsed_rev_2026_07_28(&request, &exchange, Some(&params)).await)
        })
    };
    answer(http, call, inbox, streamable).await
}

/// The checks a 2026-07-28 `tools/call` read in one pass ([`read_tool_call`](crate::protocol::rev_2026_07_28::read_tool_call)) must
/// pass before it runs, in the order [`handle`] makes them: its params and `_meta`, the
/// headers, the version and log level, the params of the call. The first failure is the
/// response; otherwise its `_meta` and params, owned, for [`tool_call`].
pub(crate) fn check_tool_call(
    http: &McpHttp,
    id: &Id,
    params: Result<rev_2026_07_28::Params<'_>, RpcError>,
    headers: &HeaderMap,
) -> Result<(Box<RequestMeta>, OwnedCall), Response> {
    let params = params.map_err(|error| refusal(id, &error))?;
    let call = ladder(http.engine(), headers, "tools/call", &params)
        .and_then(|()| params.owned_call())
        .map_err(|error| refusal(id, &error))?;
    Ok((params.meta, call))
}

/// Runs a 2026-07-28 `tools/call` that passed [`check_tool_call`], answered as [`handle`]
/// answers.
pub(crate) fn tool_call(
    http: &McpHttp,
    id: Id,
    (meta, call): (Box<RequestMeta>, OwnedCall),
    user: UserInfo,
    streamable: bool,
    slot: Slot,
) -> impl Future<Output = Response> + Send + '_ {
    let (outbox, inbox) = Outbox::lazy();
    let engine = http.engine().clone();
    let notifications = streamable.then_some(outbox);
    let call: CallFuture<rev_2026_07_28::Reply> = Box::pin(async move {
        let _slot = slot;
        let exchange = rev_2026_07_28::Exchange { user: &user, meta: &meta, notifications };
        Some(engine.call_owned_rev_2026_07_28(&id, call, &exchange).await)
    });
    answer(http, call, inbox, streamable)
}

// The response to a call: JSON when it finishes without sending anything first, else an SSE
// stream of what it sends, then its reply.
async fn answer(
    http: &McpHttp,
    mut call: CallFuture<rev_2026_07_28::Reply>,
    inbox: Inbox,
    streamable: bool,
) -> Response {
    let keep_alive = http.options().keep_alive;
    // Most calls finish in their first poll: they are answered without arming a timer.
    let reply = match futures::poll!(&mut call) {
        Poll::Ready(reply) => reply,
        Poll::Pending => tokio::select! {
            biased;
            reply = &mut call => reply,
            rx = inbox.first_message() => return sse_response(rx, CallState::Running(call), keep_alive),
            // A silent call switches to SSE so keep-alive comments hold the connection open.
            () = tokio::time::sleep(keep_alive), if streamable => {
                let rx = inbox.open();
                return sse_response(rx, CallState::Running(call), keep_alive);
            },
        },
    };
    match (reply, inbox.take()) {
        (Some(reply), None) => {
            let response = json_response(status_for(reply.error_code), reply.body);
            http.challenge(&reply.status, response)
        }
        // A call that finished may still have sent messages first.
        (reply, Some(rx)) => sse_response(rx, CallState::Done(reply), keep_alive),
        (None, None) => sse_response(inbox.open(), CallState::<rev_2026_07_28::Reply>::Done(None), keep_alive),
    }
}

// `tasks_of`: the caller whose task status changes the stream carries too, if any.
fn listen(
    http: &McpHttp,
    request: &Request,
    headers: &HeaderMap,
    caller: &Caller,
    tasks_of: Option<String>,
) -> Response {
    let id = request.id.clone();
    if !accepts(headers.get(http::header::ACCEPT), "text/event-stream") {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            Some(&id),
            code::INVALID_REQUEST,
            "Not Acceptable: subscriptions/listen answers with an SSE stream; Accept must include text/event-stream",
        );
    }
    let filter = match rev_2026_07_28::listen_filter(request.params.as_deref()) {
        Ok(filter) => tasks_of.into_iter().fold(filter, |filter, owner| filter.with_tasks_of(owner)),
        Err(error) => return refusal(&id, &error),
    };
    let changes = http.engine().changes();
    if changes.listeners() >= http.options().max_subscriptions {
        return rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            Some(&id),
            code::INTERNAL_ERROR,
            "Service Unavailable: too many open subscriptions; try again later",
        );
    }
    let Some(slot) = caller.try_stream() else {
        return crate::transport::http::too_many_streams();
    };
    // Subscribed before the acknowledgement goes out, so no change after it is missed.
    let rx = changes.subscribe();
    let ack = changes::acknowledgement(&filter, &id);
    struct Listening {
        first: Option<Vec<u8>>,
        rx: broadcast::Receiver<changes::Change>,
        changes: changes::ChangeNotifier,
        filter: changes::SubscriptionFilter,
        id: Id,
        ended: bool,
        // The caller's count of streams holds while the stream is open.
        _slot: Slot,
    }
    let state = Listening { first: Some(ack), rx, changes: changes.clone(), filter, id, ended: false, _slot: slot };
    let events = stream::unfold(state, |mut s| async move {
        if let Some(ack) = s.first.take() {
            return Some((event(ack), s));
        }
        if s.ended {
            return None;
        }
        loop {
            let change = tokio::select! {
                biased;
                () = s.changes.ended() => Err(broadcast::error::RecvError::Closed),
                change = s.rx.recv() => change,
            };
            match change {
                Ok(change) if s.filter.wants(&change) => {
                    let message = changes::change_notification(&change, &s.id);
                    return Some((event(message), s));
                }
                Ok(_) => {}
                // Fell too far behind: the stream ends, and the client listens again.
                Err(broadcast::error::RecvError::Lagged(_)) => return None,
                // The server is going away: the subscription ends gracefully, with its result.
                Err(broadcast::error::RecvError::Closed) => {
                    s.ended = true;
                    let result = serde_json::json!({"resultType": "complete", "_meta": {SUBSCRIPTION_ID_KEY: &s.id}});
                    return Some((event(jsonrpc::result_bytes(&s.id, &result)), s));
                }
            }
        }
    });
    sse(events, http.options().keep_alive)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_header_values_decode_strictly() {
        assert_eq!(decode_header_value("us-west1").as_deref(), Some("us-west1"));
        assert_eq!(decode_header_value("=?base64?SGVsbG8=?=").as_deref(), Some("Hello"));
        assert_eq!(decode_header_value("=?base64?SGVsbG8?="), None, "padding is required");
        assert_eq!(decode_header_value("=?base64?SGVs!!!bG8=?="), None);
        assert_eq!(decode_header_value("=?base64?SGVsbG8="), Some(Cow::Borrowed("=?base64?SGVsbG8=")));
        assert_eq!(decode_header_value("=?base64?5LiW55WM?=").as_deref(), Some("世界"));
    }

    #[test]
    fn integers_compare_numerically() {
        assert_eq!(same_integer(&serde_json::json!(42), "42.0"), Some(true));
        assert_eq!(same_integer(&serde_json::json!(42), "42"), Some(true));
        assert_eq!(same_integer(&serde_json::json!(-7), "-7"), Some(true));
        assert_eq!(same_integer(&serde_json::json!(42), "43"), Some(false));
        assert_eq!(same_integer(&serde_json::json!(42), "42.5"), None);
        assert_eq!(same_integer(&serde_json::json!(42), "4e1"), None);
    }

    #[test]
    fn one_walk_over_the_headers_judges_them_as_lookups_by_name_do() {
        let mut headers = HeaderMap::new();
        headers.append("x-other", HeaderValue::from_static("ignored"));
        headers.append("MCP-Protocol-Version", HeaderValue::from_static(" 2026-07-28\t"));
        headers.append("mcp-method", HeaderValue::from_static("tools/call"));
        headers.append("host", HeaderValue::from_static("localhost"));
        headers.append("Mcp-Method", HeaderValue::from_static("tools/list"));
        headers.append("mcp-name", HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap());
        let found = StandardHeaders::read(&headers);
        let walked = [(&VERSION, found.version), (&METHOD, found.method), (&NAME, found.name)];
        for (name, seen) in walked {
            let by_walk = seen.value(name).map_err(|e| e.message);
            assert_eq!(by_walk, single(&headers, name).map_err(|e| e.message), "{name}");
        }
        assert_eq!(found.version.value(&VERSION).unwrap(), Some("2026-07-28"));
        assert!(found.method.again, "tools/call came twice");
        assert!(found.name.value(&NAME).is_err(), "not visible ASCII");
        let empty = HeaderMap::new();
        let none = StandardHeaders::read(&empty);
        assert_eq!(none.name.value(&NAME).unwrap(), None);
    }

    #[test]
    fn a_header_given_twice_is_a_mismatch() {
        let mut headers = HeaderMap::new();
        headers.append(METHOD_HEADER, HeaderValue::from_static("tools/list"));
        assert_eq!(single(&headers, &METHOD).unwrap(), Some("tools/list"));
        headers.append(METHOD_HEADER, HeaderValue::from_static("tools/list"));
        assert_eq!(single(&headers, &METHOD).unwrap_err().code, codes::HEADER_MISMATCH);
    }

    #[test]
    fn statuses_follow_the_error_code() {
        assert_eq!(status_for(None), StatusCode::OK);
        assert_eq!(status_for(Some(-32601)), StatusCode::NOT_FOUND);
        for code in [-32602, -32020, -32021, -32022, -32600, -32700] {
            assert_eq!(status_for(Some(code)), StatusCode::BAD_REQUEST);
        }
        assert_eq!(status_for(Some(-32603)), StatusCode::OK);
    }
}
