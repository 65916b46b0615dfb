//! JSON-RPC 2.0 messages: reading one from bytes, writing replies as bytes.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Number, Value};

/// A request id, echoed verbatim.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub(crate) enum Id {
    /// A numeric id.
    Number(Number),
    /// A string id.
    String(String),
}

// By hand: serde's untagged enums buffer the value and try each variant in turn, which cost
// more than the rest of reading an envelope.
impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Id, D::Error> {
        struct IdVisitor;
        impl serde::de::Visitor<'_> for IdVisitor {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a number")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Id, E> {
                Ok(Id::Number(v.into()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Id, E> {
                Ok(Id::Number(v.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Id, E> {
                Number::from_f64(v)
                    .map(Id::Number)
                    .ok_or_else(|| E::invalid_value(serde::de::Unexpected::Float(v), &self))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Id, E> {
                Ok(Id::String(v.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Id, E> {
                Ok(Id::String(v))
            }
        }
        deserializer.deserialize_any(IdVisitor)
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// Standard and MCP error codes.
pub(crate) mod code {
    /// Invalid JSON.
    pub(crate) const PARSE_ERROR: i64 = -32700;
    /// Not a valid request object.
    pub(crate) const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
    /// Bad parameters (unknown tool, bad cursor, unsupported version, ...).
    pub(crate) const INVALID_PARAMS: i64 = -32602;
    /// A server fault.
    pub(crate) const INTERNAL_ERROR: i64 = -32603;
    /// Transport-level refusal (bad headers, missing session), as the SDKs use it.
    pub(crate) const TRANSPORT: i64 = -32000;
    /// Authentication required / unknown session, as the SDKs use it.
    pub(crate) const UNAUTHORIZED: i64 = -32001;
    /// Resource not found (2025-11-25).
    pub(crate) const RESOURCE_NOT_FOUND: i64 = -32002;
}

/// One incoming message.
#[derive(Debug)]
pub(crate) enum Message {
    /// A request: it gets exactly one response.
    Request(Request),
    /// A notification: it gets none.
    Notification(Notification),
    /// A response to a request this server sent the client.
    Response(ClientResponse),
}

/// A request.
#[derive(Debug)]
pub(crate) struct Request {
    /// The id to answer with.
    pub id: Id,
    /// The method.
    pub method: String,
    /// The parameters, unparsed until the method is known.
    pub params: Option<Box<RawValue>>,
}

/// A notification.
#[derive(Debug)]
pub(crate) struct Notification {
    /// The method.
    pub method: String,
    /// The parameters.
    pub params: Option<Box<RawValue>>,
}

/// The client's answer to a server-to-client request.
#[derive(Debug)]
pub(crate) struct ClientResponse {
    /// The id of the server's request.
    pub id: Id,
    /// The result, or the error object.
    pub outcome: Result<Value, Value>,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    // Borrowed from the request when it has no escapes, as it always has: no allocation.
    #[serde(borrow)]
    jsonrpc: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Option<Id>>,
    method: Option<String>,
    params: Option<Box<RawValue>>,
    result: Option<Value>,
    error: Option<Value>,
}

// Tells a missing `id` (a notification) from `"id": null` (an invalid request).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<Id>>, D::Error> {
    Option::<Id>::deserialize(d).map(Some)
}

/// Why bytes are not a message; the error to send back.
#[derive(Debug)]
pub(crate) struct ParseFailure {
    /// The id, when one could be read.
    pub id: Option<Id>,
    /// The error.
    pub error: RpcError,
}

impl Message {
    /// Reads one message.
    pub(crate) fn parse(bytes: &[u8]) -> Result<Message, ParseFailure> {
        // serde would read an array of the fields in order as the struct; only an object is a
        // message (batches are gone since 2025-06-18).
        if bytes.trim_ascii_start().first() == Some(&b'[') {
            let error = RpcError::new(
                code::INVALID_REQUEST,
                "Invalid request: batches are not supported; send one message per request",
            );
            return Err(ParseFailure { id: None, error });
        }
        // JSON is UTF-8 (RFC 8259). Checked once for the whole message rather than string by
        // string as `from_slice` does.
        let text = std::str::from_utf8(bytes).map_err(|e| ParseFailure {
            id: None,
            error: RpcError::new(code::PARSE_ERROR, format!("Parse error: the message is not UTF-8 ({e})")),
        })?;
        let envelope: Envelope<'_> = serde_json::from_str(text).map_err(|e| {
            let (code, what) = if e.is_data() {
                (code::INVALID_REQUEST, "Invalid request")
            } else {
                (code::PARSE_ERROR, "Parse error")
            };
            ParseFailure { id: None, error: RpcError::new(code, format!("{what}: {e}")) }
        })?;
        let invalid = |id: Option<Id>, message: &str| ParseFailure {
            id,
            error: RpcError::new(code::INVALID_REQUEST, message.to_owned()),
        };
        if envelope.jsonrpc.as_deref() != Some("2.0") {
            return Err(invalid(envelope.id.flatten(), "Invalid request: \"jsonrpc\" must be \"2.0\""));
        }
        match (envelope.method, envelope.id) {
            (Some(method), Some(Some(id))) if !method.is_empty() => {
                Ok(Message::Request(Request { id, method, params: envelope.params }))
            }
            (Some(method), None) if !method.is_empty() => {
                Ok(Message::Notification(Notification { method, params: envelope.params }))
            }
            (Some(_), Some(None)) => Err(invalid(None, "Invalid request: \"id\" must be a string or a number")),
            (Some(_), id) => Err(invalid(id.flatten(), "Invalid request: \"method\" is empty")),
            (None, Some(Some(id))) => match (envelope.result, envelope.error) {
                (Some(result), None) => Ok(Message::Response(ClientResponse { id, outcome: Ok(result) })),
                (None, Some(error)) => Ok(Message::Response(ClientResponse { id, outcome: Err(error) })),
                _ => Err(invalid(Some(id), "Invalid response: exactly one of \"result\" and \"error\" is required")),
            },
            (None, _) => Err(invalid(None, "Invalid request: \"method\" is required")),
        }
    }
}

/// A JSON-RPC error.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct RpcError {
    /// The code.
    pub code: i64,
    /// The message.
    pub message: String,
    /// Extra data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with a code and a message.
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError { code, message: message.into(), data: None }
    }

    /// Adds data.
    pub(crate) fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// -32602 with a message.
    pub(crate) fn invalid_params(message: impl Into<String>) -> Self {
        RpcError::new(code::INVALID_PARAMS, message)
    }
}

#[derive(Serialize)]
struct ErrorEnvelope<'a> {
    jsonrpc: &'static str,
    id: Option<&'a Id>,
    error: &'a RpcError,
}

#[derive(Serialize)]
struct OutgoingRequest<'a> {
    jsonrpc: &'static str,
    id: &'a Id,
    method: &'a str,
    params: &'a Value,
}

#[derive(Serialize)]
struct OutgoingNotification<'a> {
    jsonrpc: &'static str,
    method: &'a str,
    params: &'a Value,
}

/// Writes a success response.
pub(crate) fn result_bytes(id: &Id, result: &impl Serialize) -> Vec<u8> {
    // Serializing to a Vec fails only for maps with non-string keys, which no result has.
    result_envelope(id, 256, |out| {
        let _ = serde_json::to_writer(out, result);
    })
}

/// Writes the success response of a `tools/call`.
pub(crate) fn tool_result_bytes(id: &Id, result: &mirobody_core::ToolResult) -> Vec<u8> {
    result_envelope(id, 256, |out| result.write_json(out))
}

/// Writes a success response whose result is JSON text already (a pre-rendered listing).
pub(crate) fn raw_result_bytes(id: &Id, result_json: &str) -> Vec<u8> {
    result_envelope(id, result_json.len() + 48, |out| out.extend_from_slice(result_json.as_bytes()))
}

// The envelope around a result, written by hand: its keys never change, so serde need not
// escape them on every reply.
fn result_envelope(id: &Id, capacity: usize, write_result: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut out = Vec::with_capacity(capacity);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    let _ = serde_json::to_writer(&mut out, id);
    out.extend_from_slice(br#","result":"#);
    write_result(&mut out);
    out.push(b'}');
    out
}

/// Writes an error response (`id` null when the request's id could not be read).
pub(crate) fn error_bytes(id: Option<&Id>, error: &RpcError) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    let _ = serde_json::to_writer(&mut out, &ErrorEnvelope { jsonrpc: "2.0", id, error });
    out
}

/// Writes a server-to-client request.
pub(crate) fn request_bytes(id: &Id, method: &str, params: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    let _ = serde_json::to_writer(&mut out, &OutgoingRequest { jsonrpc: "2.0", id, method, params });
    out
}

/// Writes a notification.
pub(crate) fn notification_bytes(method: &str, params: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    let _ = serde_json::to_writer(&mut out, &OutgoingNotification { jsonrpc: "2.0", method, params });
    out
}

/// Reads a request's params as `T`; a missing `params` reads as `{}`. -32602 naming `method` when
/// they do not fit.
pub(crate) fn parse<'de, T: Deserialize<'de>>(params: Option<&'de RawValue>, method: &str) -> Result<T, RpcError> {
    let raw = params.map(RawValue::get).unwrap_or("{}");
    serde_json::from_str(raw).map_err(|e| RpcError::invalid_params(format!("Invalid params for {method}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_requests_notifications_and_responses_apart() {
        assert!(matches!(Message::parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), Ok(Message::Request(_))));
        assert!(matches!(
            Message::parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Message::Notification(_))
        ));
        assert!(matches!(Message::parse(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#), Ok(Message::Response(_))));
        // The version is read borrowed; written with an escape it is the same string.
        assert!(matches!(Message::parse(br#"{"jsonrpc":"2\u002e0","id":1,"method":"ping"}"#), Ok(Message::Request(_))));
    }

    #[test]
    fn bad_messages_get_the_right_codes() {
        let code_of = |bytes: &[u8]| Message::parse(bytes).err().map(|f| f.error.code);
        assert_eq!(code_of(b"{not json"), Some(code::PARSE_ERROR));
        let not_utf8 = Message::parse(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffing\"}").unwrap_err();
        assert_eq!(not_utf8.error.code, code::PARSE_ERROR);
        assert!(not_utf8.error.message.contains("not UTF-8"), "{}", not_utf8.error.message);
        assert_eq!(code_of(b"[1,2]"), Some(code::INVALID_REQUEST));
        assert_eq!(code_of(br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#), Some(code::INVALID_REQUEST));
        assert_eq!(code_of(br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#), Some(code::INVALID_REQUEST));
        assert_eq!(code_of(br#"{"jsonrpc":"2.0","id":1,"method":""}"#), Some(code::INVALID_REQUEST));
        assert_eq!(code_of(br#"{"jsonrpc":"2.0","id":1}"#), Some(code::INVALID_REQUEST));
    }

    #[test]
    fn ids_are_echoed_verbatim() {
        let out = raw_result_bytes(&Id::String("x\"y".into()), "{}");
        assert_eq!(out, br#"{"jsonrpc":"2.0","id":"x\"y","result":{}}"#);
        let out = result_bytes(&Id::Number(7.into()), &serde_json::json!({"a": [1, "b\n"]}));
        assert_eq!(out, br#"{"jsonrpc":"2.0","id":7,"result":{"a":[1,"b\n"]}}"#);
        let tool = mirobody_core::ToolResult::text("a \"quoted\" word");
        let out = tool_result_bytes(&Id::String("t".into()), &tool);
        assert_eq!(out, result_bytes(&Id::String("t".into()), &tool));
        let out = error_bytes(None, &RpcError::new(code::PARSE_ERROR, "Parse error"));
        assert_eq!(out, br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#);
    }
}
