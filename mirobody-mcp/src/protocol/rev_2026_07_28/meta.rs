//! What every 2026-07-28 request carries and how it is read: the `_meta` members, checked
//! ([`RequestMeta`]), and the params read in one pass where they are plain ([`Params`]).

use std::borrow::Cow;

use serde::Deserialize;

use serde_json::value::RawValue;

use serde_json::{Value, json};

use crate::jsonrpc::parse;

use crate::jsonrpc::{Id, Request, RpcError};

pub(crate) use crate::protocol::one_pass::meta::{
    META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION, META_SERVER_INFO, Members,
    MetaEnvelope, MetaFields, ReadParams, is_implementation, raw_unless_null,
};

use crate::protocol::versions::{VERSIONS_WITHOUT_INITIALIZE, supported_versions};

use crate::session::{LOGS_OFF, log_rank};

/// The error codes 2026-07-28 defines.
pub(crate) mod codes {
    /// The HTTP headers disagree with the body, or a required header is missing or malformed.
    pub(crate) const HEADER_MISMATCH: i64 = -32020;
    /// The request needs a client capability the client did not declare.
    pub(crate) const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// The request's protocol version is not served.
    pub(crate) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// The per-request `_meta` of a 2026-07-28 request.
#[derive(Debug)]
pub(crate) struct RequestMeta {
    pub(crate) protocol_version: Value,
    pub(crate) client_capabilities: Value,
    pub(crate) log_level: Option<Value>,
    pub(crate) progress_token: Option<Value>,
    pub(crate) traceparent: Option<Value>,
}

/// A 2026-07-28 `tools/call` read in one pass, envelope, params and `_meta` together, rather
/// than the envelope first and the params again, which reads the params twice: its
/// id, and its params as [`Params::parse`] gives them. `None` where
/// [`protocol::read_tool_call`] gives up, and where the params are not a well-formed object:
/// `Message::parse` and `Params::parse` then read the request and say what is wrong.
pub(crate) fn read_tool_call(bytes: &[u8]) -> Option<(Id, Result<Params<'_>, RpcError>)> {
    crate::protocol::one_pass::scan::read_call(bytes, ReadParams::read)
        .map(|(id, params)| (id, Params::checked(params)))
}

/// The params of a 2026-07-28 request as one read of them gives: its `_meta`, and the members
/// HTTP mirrors into headers (the name or URI, the tool arguments).
pub(crate) struct Params<'a> {
    /// The checked-for-presence `_meta`; boxed, as it is large and the params move about.
    pub(crate) meta: Box<RequestMeta>,
    pub(crate) members: Members<'a>,
}

impl<'a> Params<'a> {
    /// The params read, once `_meta` has what every request carries.
    pub(crate) fn checked(read: ReadParams<'a>) -> Result<Params<'a>, RpcError> {
        let fields = read.meta.ok_or_else(|| bad_meta("params._meta is missing"))?;
        Ok(Params { meta: Box::new(RequestMeta::from_fields(*fields)?), members: read.members })
    }
    /// Reads the params once: -32602 as [`RequestMeta::read`] says.
    pub(crate) fn parse(params: Option<&'a RawValue>) -> Result<Params<'a>, RpcError> {
        let raw = params.map(RawValue::get).unwrap_or("{}");
        // One pass over well-formed params; anything malformed is read again, `_meta` as text,
        // to say what is wrong with it.
        let read = ReadParams::walk(raw)
            .map_or_else(|| serde_json::from_str::<MetaEnvelope<'a, Box<MetaFields>>>(raw).map(ReadParams::from), Ok);
        match read {
            Ok(read) => Params::checked(read),
            Err(_) => {
                let envelope: MetaEnvelope<'a, &'a RawValue> =
                    serde_json::from_str(raw).map_err(|_| bad_meta("params must be an object"))?;
                let (meta, members) = envelope.split();
                let meta = meta.ok_or_else(|| bad_meta("params._meta is missing"))?;
                let fields: MetaFields =
                    serde_json::from_str(meta.get()).map_err(|_| bad_meta("params._meta must be an object"))?;
                Ok(Params { meta: Box::new(RequestMeta::from_fields(fields)?), members })
            }
        }
    }

    // The `tools/call` params, without reading the params again.
    pub(crate) fn call(&self) -> Result<CallParams<'a>, RpcError> {
        let name = self.text("name").ok_or_else(|| {
            RpcError::invalid_params("Invalid params for tools/call: \"name\" must be the name of a tool")
        })?;
        let value = |raw: Option<&str>| -> Result<Option<Value>, RpcError> {
            raw.map(serde_json::from_str)
                .transpose()
                .map_err(|e| RpcError::invalid_params(format!("Invalid params for tools/call: {e}")))
        };
        Ok(CallParams {
            name,
            arguments: self.members.arguments,
            input_responses: value(self.members.input_responses)?,
            request_state: value(self.members.request_state)?,
        })
    }

    /// The `tools/call` params, owned: for a call that outlives the request's bytes.
    pub(crate) fn owned_call(&self) -> Result<OwnedCall, RpcError> {
        let CallParams { name, arguments, input_responses, request_state } = self.call()?;
        Ok(OwnedCall { name: name.into_owned(), arguments: arguments.map(Box::from), input_responses, request_state })
    }

    /// The JSON text of `params.arguments`, if given (and not `null`).
    pub(crate) fn arguments(&self) -> Option<&'a str> {
        self.members.arguments
    }

    /// `params.name` (or `params.uri` or `params.taskId` when `key` says so), when it is a
    /// string.
    pub(crate) fn text(&self, key: &str) -> Option<Cow<'a, str>> {
        // Borrowed from the request unless it has escapes: a bare `Cow` always allocates.
        #[derive(Deserialize)]
        struct Text<'a>(#[serde(borrow)] Cow<'a, str>);
        let raw = match key {
            "uri" => self.members.uri,
            "taskId" => self.members.task_id,
            _ => self.members.name,
        }?;
        // A string without escapes is the text between its quotes: the reader that captured it
        // already refused control characters. Reading it with serde_json costs more than the
        // rest of the header check, and a call reads the name twice.
        if let Some(inner) = raw.strip_prefix('"').and_then(|rest| rest.strip_suffix('"'))
            && memchr::memchr(b'\\', inner.as_bytes()).is_none()
        {
            return Some(Cow::Borrowed(inner));
        }
        serde_json::from_str::<Text<'a>>(raw).ok().map(|text| text.0)
    }
}

pub(crate) fn bad_meta(detail: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "Invalid params: {detail}; every 2026-07-28 request carries params._meta with \
         \"{META_PROTOCOL_VERSION}\" and \"{META_CLIENT_CAPABILITIES}\""
    ))
}

impl RequestMeta {
    /// Reads `params._meta`: -32602 when it is missing, not an object, or lacks the protocol
    /// version or the client capabilities.
    pub(crate) fn read(params: Option<&RawValue>) -> Result<RequestMeta, RpcError> {
        Params::parse(params).map(|p| *p.meta)
    }

    pub(crate) fn from_fields(fields: MetaFields) -> Result<RequestMeta, RpcError> {
        let protocol_version = fields
            .protocol_version
            .ok_or_else(|| bad_meta(&format!("params._meta lacks \"{META_PROTOCOL_VERSION}\"")))?;
        let client_capabilities = match fields.client_capabilities {
            Some(caps @ Value::Object(_)) => caps,
            Some(_) => return Err(bad_meta(&format!("\"{META_CLIENT_CAPABILITIES}\" must be an object"))),
            None => return Err(bad_meta(&format!("params._meta lacks \"{META_CLIENT_CAPABILITIES}\""))),
        };
        if let Some(info) = &fields.client_info
            && !is_implementation(info)
        {
            return Err(bad_meta(&format!("\"{META_CLIENT_INFO}\" must be an object with a name and a version")));
        }
        Ok(RequestMeta {
            protocol_version,
            client_capabilities,
            log_level: fields.log_level,
            progress_token: fields.progress_token,
            traceparent: fields.traceparent,
        })
    }

    /// Whether the params carry a `_meta` protocol version: the mark of a 2026-07-28 request.
    pub(crate) fn present(params: Option<&RawValue>) -> bool {
        let Some(raw) = params.map(RawValue::get) else { return false };
        // A quick look first, so requests of the earlier revisions are not parsed again. The
        // finder is built once: `str::contains` prepares its searcher on every call.
        static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| memchr::memmem::Finder::new(META_PROTOCOL_VERSION));
        if FINDER.find(raw.as_bytes()).is_none() {
            return false;
        }
        ReadParams::walk(raw)
            .or_else(|| serde_json::from_str::<MetaEnvelope<'_, Box<MetaFields>>>(raw).ok().map(ReadParams::from))
            .and_then(|read| read.meta)
            .is_some_and(|fields| fields.protocol_version.is_some())
    }

    /// The `traceparent`, if it is a string of at most 512 bytes (what the trace hook is
    /// handed; it checks the rest).
    pub(crate) fn traceparent(&self) -> Option<&str> {
        let traceparent = self.traceparent.as_ref()?.as_str()?;
        (traceparent.len() <= crate::protocol::hooks::MAX_TRACEPARENT_BYTES).then_some(traceparent)
    }

    /// The protocol version, when it is a string.
    pub(crate) fn protocol_version(&self) -> Option<&str> {
        self.protocol_version.as_str()
    }

    /// Whether the client declared `capability`.
    pub(crate) fn client_supports(&self, capability: &str) -> bool {
        self.client_capabilities.get(capability).is_some_and(|v| !v.is_null())
    }

    /// Checks the version and the log level: -32602 for a version that is not a string or an
    /// unknown log level, -32022 (with `supported` and `requested`) for a version not served.
    pub(crate) fn check(&self) -> Result<(), RpcError> {
        let Some(version) = self.protocol_version.as_str() else {
            return Err(bad_meta(&format!("\"{META_PROTOCOL_VERSION}\" must be a string")));
        };
        if !VERSIONS_WITHOUT_INITIALIZE.contains(&version) {
            return Err(RpcError::new(codes::UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version")
                .with_data(json!({"supported": supported_versions(), "requested": version})));
        }
        self.log_rank().map(|_| ())
    }

    // The lowest log level wanted, or LOGS_OFF when the request did not ask for logs.
    pub(crate) fn log_rank(&self) -> Result<u8, RpcError> {
        match &self.log_level {
            None | Some(Value::Null) => Ok(LOGS_OFF),
            Some(level) => level.as_str().and_then(log_rank).ok_or_else(|| {
                RpcError::invalid_params(format!(
                    "Invalid params: \"{META_LOG_LEVEL}\" must be one of debug, info, notice, warning, error, \
                     critical, alert, emergency"
                ))
            }),
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct CallParams<'a> {
    #[serde(borrow)]
    pub(crate) name: Cow<'a, str>,
    #[serde(borrow, default, deserialize_with = "raw_unless_null")]
    pub(crate) arguments: Option<&'a str>,
    #[serde(rename = "inputResponses", default, deserialize_with = "crate::protocol::rev_2026_07_28::mrtr::present")]
    pub(crate) input_responses: Option<Value>,
    #[serde(rename = "requestState", default, deserialize_with = "crate::protocol::rev_2026_07_28::mrtr::present")]
    pub(crate) request_state: Option<Value>,
}

/// The params of a `tools/call`, read and owned ([`Params::owned_call`]).
pub(crate) struct OwnedCall {
    pub(crate) name: String,
    pub(crate) arguments: Option<Box<str>>,
    pub(crate) input_responses: Option<Value>,
    pub(crate) request_state: Option<Value>,
}

#[derive(Deserialize)]
pub(crate) struct ListenParams {
    pub(crate) notifications: Option<Value>,
}

/// The `notifications` filter of `subscriptions/listen` params.
pub(crate) fn listen_filter(
    params: Option<&RawValue>,
) -> Result<crate::protocol::changes::SubscriptionFilter, RpcError> {
    let p: ListenParams = parse(params, "subscriptions/listen")?;
    crate::protocol::changes::SubscriptionFilter::parse(p.notifications.as_ref())
}

/// Whether a request is a 2026-07-28 one, on a transport without headers (stdio): it carries a
/// `_meta` protocol version, or is `server/discover`.
pub(crate) fn is_request(request: &Request) -> bool {
    request.method == "server/discover" || RequestMeta::present(request.params.as_deref())
}
