//! The endpoint's request headers: one walk over them, the Host and Origin checks
//! (DNS-rebinding protection), `Accept` negotiation and the protocol version header.

use crate::jsonrpc::code;
use crate::protocol::{self};
use axum::response::Response;
use http::{HeaderMap, HeaderValue, StatusCode, header};

use super::*;

/// The request headers the endpoint reads, found in one walk over the map: looking six names up
/// one by one hashes each name and probes the map six times.
#[derive(Default)]
pub(super) struct EndpointHeaders<'a> {
    pub(crate) host: Option<&'a HeaderValue>,
    pub(crate) origin: Option<&'a HeaderValue>,
    pub(crate) content_type: Option<&'a HeaderValue>,
    pub(crate) accept: Option<&'a HeaderValue>,
    pub(crate) version: Option<&'a HeaderValue>,
    pub(crate) session: Option<&'a HeaderValue>,
}

impl<'a> EndpointHeaders<'a> {
    pub(crate) fn read(headers: &'a HeaderMap) -> Self {
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
    pub(crate) fn version(&self) -> Option<&'a str> {
        as_str(self.version).map(str::trim)
    }

    /// The `Mcp-Session-Id` header.
    pub(crate) fn session(&self) -> Option<&'a str> {
        as_str(self.session)
    }
}

pub(super) fn as_str(value: Option<&HeaderValue>) -> Option<&str> {
    value.and_then(|v| v.to_str().ok())
}

// DNS-rebinding protection: the Host must be one of ours, and a browser's Origin must be
// listed, name an allowed host, or be the Host itself. A wildcard host list does not open
// Origins: those need `allowed_origins`.
pub(super) fn check_host_and_origin(headers: &EndpointHeaders<'_>, options: &HttpOptions) -> Result<(), Response> {
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

pub(super) fn strip_port(host: &str) -> &str {
    let bytes = host.as_bytes();
    if bytes.first() == Some(&b'[') {
        return bytes.iter().position(|&b| b == b']').map_or(host, |end| &host[..=end]);
    }
    bytes.iter().rposition(|&b| b == b':').map_or(host, |colon| &host[..colon])
}

/// The media type of a `Content-Type` value or an `Accept` entry: what precedes its
/// parameters, trimmed.
pub(super) fn media_type(value: &[u8]) -> &[u8] {
    memchr::memchr(b';', value).map_or(value, |semicolon| &value[..semicolon]).trim_ascii()
}

/// The `Accept` header of the spec's clients.
pub(super) const SPEC_ACCEPT: &[u8] = b"application/json, text/event-stream";

/// Whether an `Accept` header (its first line) accepts `mime`, a lower-case media type; no
/// header accepts anything. Media types match whatever their case.
pub(crate) fn accepts(accept: Option<&HeaderValue>, mime: &str) -> bool {
    let Some(accept) = accept else { return true };
    let mime = mime.as_bytes();
    // What the spec asks every client to send, and what the SDKs send: taken whole, in one
    // comparison, rather than entry by entry.
    if accept.as_bytes() == SPEC_ACCEPT {
        return mime == b"application/json" || mime == b"text/event-stream";
    }
    // Over bytes, jumping from comma to comma with memchr: splitting byte by byte cost more.
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
pub(super) fn media_range_matches(range: &[u8], mime: &[u8]) -> bool {
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
// first: the usual case, and cheaper than folding each byte's case.
pub(super) fn same_name(a: &[u8], b: &[u8]) -> bool {
    a == b || a.eq_ignore_ascii_case(b)
}

pub(super) fn check_version(version: Option<&str>) -> Result<(), Response> {
    match version {
        Some(v) if !protocol::SUPPORTED_VERSIONS.contains(&v) => Err(rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            code::TRANSPORT,
            format!(
                "Bad Request: unsupported MCP-Protocol-Version '{v}'; supported: {}",
                protocol::SUPPORTED_VERSIONS.join(", ")
            ),
        )),
        _ => Ok(()),
    }
}

/// Whether the `MCP-Protocol-Version` header (trimmed) names a stateless revision.
pub(super) fn names_version_without_initialize(version: Option<&str>) -> bool {
    version.is_some_and(|v| crate::protocol::versions::VERSIONS_WITHOUT_INITIALIZE.contains(&v))
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
}
