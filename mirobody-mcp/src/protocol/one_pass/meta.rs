//! A 2026-07-28 request's params read in one pass: `_meta` and the members HTTP mirrors into
//! headers, walked where they are plain ([`ReadParams::walk`]), with their serde twins
//! ([`MetaEnvelope`], [`MetaFields`]) that read what the walk gives up on and that the property
//! tests hold the walk to.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::scan::{Cursor, once};

/// `_meta` key: the request's protocol version (required).
pub(crate) const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// `_meta` key: the client's capabilities for this request (required).
pub(crate) const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// `_meta` key: the client's name and version (optional).
pub(crate) const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

/// `_meta` key: the lowest log level the request wants; no logs without it.
pub(crate) const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// Result `_meta` key: the server's name and version.
pub(crate) const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

// The params with `_meta` as `M`: read in place (`MetaFields`, boxed: it is large, and the
// envelope moves about whole) on the fast path, or kept as text (`&RawValue`) to say exactly
// what is wrong with it.
#[derive(Deserialize)]
#[serde(bound(deserialize = "M: Deserialize<'de>"))]
pub(crate) struct MetaEnvelope<'a, M> {
    #[serde(rename = "_meta")]
    pub(crate) meta: Option<M>,
    #[serde(borrow, default)]
    pub(crate) name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(crate) uri: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(crate) arguments: Option<&'a RawValue>,
    #[serde(rename = "taskId", borrow, default)]
    pub(crate) task_id: Option<&'a RawValue>,
    #[serde(rename = "inputResponses", borrow, default, deserialize_with = "raw_present")]
    pub(crate) input_responses: Option<&'a RawValue>,
    #[serde(rename = "requestState", borrow, default, deserialize_with = "raw_present")]
    pub(crate) request_state: Option<&'a RawValue>,
}

impl<'a, M> MetaEnvelope<'a, M> {
    // `_meta`, and the other members as JSON text.
    pub(crate) fn split(self) -> (Option<M>, Members<'a>) {
        let text = |raw: Option<&'a RawValue>| raw.map(RawValue::get);
        let members = Members {
            name: text(self.name),
            uri: text(self.uri),
            arguments: text(self.arguments),
            task_id: text(self.task_id),
            input_responses: text(self.input_responses),
            request_state: text(self.request_state),
        };
        (self.meta, members)
    }
}

/// The members of a 2026-07-28 request's params besides `_meta`, as JSON text: the name or
/// URI HTTP mirrors into headers, and what a call reads later.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Members<'a> {
    pub(crate) name: Option<&'a str>,
    pub(crate) uri: Option<&'a str>,
    pub(crate) arguments: Option<&'a str>,
    pub(crate) task_id: Option<&'a str>,
    // Given, even as `null`.
    pub(crate) input_responses: Option<&'a str>,
    pub(crate) request_state: Option<&'a str>,
}

/// The params of a 2026-07-28 request, read in one pass, `_meta` not yet checked.
pub(crate) struct ReadParams<'a> {
    pub(crate) meta: Option<Box<MetaFields>>,
    pub(crate) members: Members<'a>,
}

impl<'a> From<MetaEnvelope<'a, Box<MetaFields>>> for ReadParams<'a> {
    fn from(envelope: MetaEnvelope<'a, Box<MetaFields>>) -> Self {
        let (meta, members) = envelope.split();
        ReadParams { meta, members }
    }
}

impl<'a> ReadParams<'a> {
    // The params at `cursor`, as their derived `Deserialize` (`MetaEnvelope`) reads them,
    // `_meta` included, walked where they stand: serde's derived readers spent more on the
    // long `_meta` names and on capturing the members' text than on the rest of the call
    // (benches/README.md). `None` where the walk gives up (see `scan`): the caller then reads
    // them with serde.
    pub(crate) fn read(cursor: &mut Cursor<'a>) -> Option<Self> {
        let (mut meta, mut name, mut uri, mut arguments, mut task_id) = (None, None, None, None, None);
        let (mut input_responses, mut request_state) = (None, None);
        cursor.members(|member, value| match member {
            "_meta" if value.peek() == Some(b'{') => once(&mut meta, Some(MetaFields::read(value)?)),
            "_meta" => once(&mut meta, value.value::<Option<Box<MetaFields>>>()?),
            "name" => once(&mut name, value.raw_unless_null()?),
            "uri" => once(&mut uri, value.raw_unless_null()?),
            "arguments" => once(&mut arguments, value.raw_unless_null()?),
            "taskId" => once(&mut task_id, value.raw_unless_null()?),
            "inputResponses" => once(&mut input_responses, value.raw()?),
            "requestState" => once(&mut request_state, value.raw()?),
            _ => value.skip(),
        })?;
        let members = Members {
            name: name.flatten(),
            uri: uri.flatten(),
            arguments: arguments.flatten(),
            task_id: task_id.flatten(),
            input_responses,
            request_state,
        };
        Some(ReadParams { meta: meta.flatten(), members })
    }

    // The params in `raw` (JSON text, whole), walked; `None` where the walk gives up.
    pub(crate) fn walk(raw: &'a str) -> Option<Self> {
        let mut cursor = Cursor::new(raw);
        ReadParams::read(&mut cursor).filter(|_| cursor.at_end())
    }
}

// A member's JSON text, `null` read as none (as for any `Option`).
pub(crate) fn raw_unless_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de str>, D::Error> {
    Option::<&'de RawValue>::deserialize(d).map(|raw| raw.map(RawValue::get))
}

// The same, owned.
pub(crate) fn text_unless_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Box<str>>, D::Error> {
    Option::<Box<RawValue>>::deserialize(d).map(|raw| raw.map(Box::from))
}

// A member given (even as `null`), as JSON text.
pub(crate) fn raw_present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
pub(crate) struct MetaFields {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    pub(crate) protocol_version: Option<Value>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    pub(crate) client_capabilities: Option<Value>,
    #[serde(rename = "io.modelcontextprotocol/clientInfo", default, deserialize_with = "text_unless_null")]
    pub(crate) client_info: Option<Box<str>>,
    #[serde(rename = "io.modelcontextprotocol/logLevel")]
    pub(crate) log_level: Option<Value>,
    #[serde(rename = "progressToken")]
    pub(crate) progress_token: Option<Value>,
    /// A W3C trace context the client sent along (read for a call only when traces are
    /// exported).
    pub(crate) traceparent: Option<Value>,
}

impl MetaFields {
    // The `_meta` object at `cursor`, as its derived `Deserialize` reads it; `None` where the
    // walk gives up. A plain string version is read in place, the rest by serde_json.
    pub(crate) fn read(cursor: &mut Cursor<'_>) -> Option<Box<MetaFields>> {
        let (mut protocol_version, mut client_capabilities, mut client_info) = (None, None, None);
        let (mut log_level, mut progress_token, mut traceparent) = (None, None, None);
        cursor.members(|member, value| match member {
            META_PROTOCOL_VERSION => once(
                &mut protocol_version,
                match value.plain_str() {
                    Some(version) => Some(Value::String(version.to_owned())),
                    None => value.value()?,
                },
            ),
            META_CLIENT_CAPABILITIES => once(&mut client_capabilities, value.value()?),
            META_CLIENT_INFO => once(&mut client_info, value.raw_unless_null()?.map(Box::from)),
            META_LOG_LEVEL => once(&mut log_level, value.value()?),
            "progressToken" => once(&mut progress_token, value.value()?),
            "traceparent" => once(&mut traceparent, value.value()?),
            _ => value.skip(),
        })?;
        Some(Box::new(MetaFields {
            protocol_version: protocol_version.flatten(),
            client_capabilities: client_capabilities.flatten(),
            client_info: client_info.flatten(),
            log_level: log_level.flatten(),
            progress_token: progress_token.flatten(),
            traceparent: traceparent.flatten(),
        }))
    }
}

// Whether `clientInfo` (JSON text) is an object with a string name and version: walked when
// it is plain, else read by serde.
pub(crate) fn is_implementation(info: &str) -> bool {
    let mut cursor = Cursor::new(info);
    let (mut name, mut version) = (None, None);
    let walked = cursor.members(|member, value| match member {
        "name" => once(&mut name, value.plain_str()?),
        "version" => once(&mut version, value.plain_str()?),
        _ => value.skip(),
    });
    if walked.is_some() && cursor.at_end() {
        return name.is_some() && version.is_some();
    }
    serde_json::from_str::<Implementation<'_>>(info).is_ok()
}

// What `clientInfo` must at least be.
#[derive(Deserialize)]
pub(crate) struct Implementation<'a> {
    #[serde(borrow, rename = "name")]
    pub(crate) _name: Cow<'a, str>,
    #[serde(borrow, rename = "version")]
    pub(crate) _version: Cow<'a, str>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::Id;
    use crate::protocol::one_pass::scan::testing::walked_as_serde_reads;
    use crate::protocol::rev_2026_07_28::{self, *};

    // The `_meta` every 2026-07-28 request carries, and nothing else.
    const META: &str =
        r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

    proptest::proptest! {
        // The quick reading of a plain string and serde's reading of any string agree.
        #[test]
        fn a_name_reads_as_serde_reads_it(name in "\\PC*", other in proptest::option::of(-5i64..5)) {
            let name_json = match other {
                Some(n) => n.to_string(),
                None => serde_json::to_string(&name).unwrap(),
            };
            let raw = RawValue::from_string(format!(r#"{{"name":{name_json},"_meta":{META}}}"#)).unwrap();
            let params = rev_2026_07_28::Params::parse(Some(&raw)).unwrap();
            let expected = other.is_none().then(|| name.clone());
            proptest::prop_assert_eq!(params.text("name").map(Cow::into_owned), expected);
            proptest::prop_assert_eq!(params.text("uri"), None);
        }
    }

    // Members of `_meta` and of params, well and badly formed, as JSON text.
    const META_MEMBERS: &[&str] = &[
        r#""io.modelcontextprotocol/protocolVersion":"2026-07-28""#,
        r#""io.modelcontextprotocol/protocolVersion":"2026\u002d07-28""#,
        r#""io.modelcontextprotocol/protocolVersion":5"#,
        r#""io.modelcontextprotocol/protocolVersion":null"#,
        r#""io.modelcontextprotocol/clientCapabilities":{}"#,
        r#""io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}"#,
        r#""io.modelcontextprotocol/clientCapabilities":null"#,
        r#""io.modelcontextprotocol/clientCapabilities":"x""#,
        r#""io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}"#,
        r#""io.modelcontextprotocol/clientInfo":{"version":"1","name":"caf\u00e9","x":[1]}"#,
        r#""io.modelcontextprotocol/clientInfo":null"#,
        r#""io.modelcontextprotocol/clientInfo":[]"#,
        r#""io.modelcontextprotocol/logLevel":"info""#,
        r#""io.modelcontextprotocol/logLevel":null"#,
        r#""progressToken":"p""#,
        r#""progressToken":1.5"#,
        r#""io.modelcontextprotocol\/logLevel":"debug""#,
        r#""x.example/y":{"a":[1,{"b":null}]}"#,
    ];
    const REV_2026_07_28_PARAMS_MEMBERS: &[&str] = &[
        r#""name":"echo""#,
        r#""name":"ec\u0068o""#,
        r#""name":5"#,
        r#""name":null"#,
        r#""uri":"file:///a""#,
        r#""arguments":{"text":"hi"}"#,
        r#""arguments":null"#,
        r#""arguments":[1]"#,
        r#""inputResponses":{"a":{"action":"accept"}}"#,
        r#""inputResponses":null"#,
        r#""requestState":"s""#,
        r#""_meta":null"#,
        r#""_meta":"x""#,
        r#""n\u0061me":"x""#,
        r#""other":[true,false]"#,
    ];

    // What the walk and serde's derived reader of the params have read, comparable.
    type Read<'a> = (Option<[Option<Value>; 4]>, Option<Box<str>>, Members<'a>);

    fn read(params: ReadParams<'_>) -> Read<'_> {
        let meta = params.meta.map(|meta| *meta);
        let info = meta.as_ref().and_then(|meta| meta.client_info.clone());
        let meta = meta.map(|m| [m.protocol_version, m.client_capabilities, m.log_level, m.progress_token]);
        (meta, info, params.members)
    }

    // What serde's derived reader reads of the params in `text`.
    fn read_with_serde(text: &str) -> Option<ReadParams<'_>> {
        serde_json::from_str::<MetaEnvelope<'_, Box<MetaFields>>>(text).ok().map(ReadParams::from)
    }

    // Params of 2026-07-28 requests and of near misses: a `_meta` of the members every request
    // carries, others, some left out, all shuffled, among other params members, with any
    // whitespace; now and then mangled.
    fn params_strategy() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use crate::protocol::one_pass::scan::testing::{gaps, mangled_objects, object};
        use proptest::collection::vec;
        use proptest::prelude::*;
        use proptest::sample::select;
        let owned = |members: Vec<&str>| members.into_iter().map(str::to_owned).collect::<Vec<_>>();
        let meta = (vec(select(META_MEMBERS), 0..4), any::<u8>(), gaps()).prop_map(move |(extra, left_out, gaps)| {
            let mut members = owned(vec![META_MEMBERS[0], META_MEMBERS[4], META_MEMBERS[8]]);
            if left_out % 8 < 3 {
                members.remove(usize::from(left_out % 8));
            }
            members.extend(owned(extra));
            object(&members, &gaps)
        });
        mangled_objects((meta, vec(select(REV_2026_07_28_PARAMS_MEMBERS), 0..4)).prop_map(move |(meta, extra)| {
            let mut members = vec![format!(r#""_meta":{meta}"#)];
            members.extend(owned(extra));
            members
        }))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// The walk reads every params object serde's derived reader reads, the same, except
        /// those with escapes in member names, which it leaves to serde; and it reads nothing
        /// serde would refuse.
        #[test]
        fn the_params_walk_reads_what_serde_reads(text in params_strategy()) {
            let Ok(text) = std::str::from_utf8(&text) else { return Ok(()) };
            let walked = ReadParams::walk(text).map(read);
            walked_as_serde_reads(text.as_bytes(), walked, read_with_serde(text).map(read))?;
        }

        /// Whether `clientInfo` names a client, walked or read by serde, is what serde says.
        #[test]
        fn client_info_is_checked_as_serde_checks_it(
            members in proptest::collection::vec(proptest::sample::select(vec![
                r#""name":"c""#, r#""version":"1""#, r#""name":"\u0063""#, r#""version":1"#,
                r#""name":null"#, r#""n\u0061me":"c""#, r#""x":{"name":5}"#,
            ]), 0..4),
            gaps in crate::protocol::one_pass::scan::testing::gaps(),
            change in proptest::prelude::any::<(usize, u8)>(),
        ) {
            let members: Vec<String> = members.into_iter().map(str::to_owned).collect();
            let text = crate::protocol::one_pass::scan::testing::mangled(crate::protocol::one_pass::scan::testing::object(&members, &gaps).into_bytes(), change);
            let Ok(text) = std::str::from_utf8(&text) else { return Ok(()) };
            let serde = serde_json::from_str::<Implementation<'_>>(text).is_ok();
            proptest::prop_assert_eq!(is_implementation(text), serde, "{}", text);
        }
    }

    #[test]
    fn the_params_strategy_makes_params_both_readers_read_and_ones_they_refuse() {
        use proptest::strategy::{Strategy, ValueTree};
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let (mut both, mut neither, mut checked) = (0, 0, 0);
        for _ in 0..500 {
            let text =
                String::from_utf8_lossy(&params_strategy().new_tree(&mut runner).unwrap().current()).into_owned();
            match (ReadParams::walk(&text), read_with_serde(&text)) {
                (Some(walked), Some(_)) => {
                    both += 1;
                    checked += usize::from(rev_2026_07_28::Params::checked(walked).is_ok());
                }
                (None, None) => neither += 1,
                _ => {}
            }
        }
        assert!(both > 50 && neither > 50 && checked > 20, "both read {both} ({checked} checked), neither {neither}");
    }

    #[test]
    fn names_with_escapes_are_unescaped() {
        let raw = RawValue::from_string(format!(r#"{{"name":"a\"b\\c\u00e9","uri":"x","_meta":{META}}}"#)).unwrap();
        let params = rev_2026_07_28::Params::parse(Some(&raw)).unwrap();
        assert_eq!(params.text("name").as_deref(), Some("a\"b\\c\u{e9}"));
        assert!(matches!(params.text("uri"), Some(Cow::Borrowed("x"))), "a plain string is borrowed");
    }

    #[test]
    fn a_tools_call_is_read_in_one_pass_or_left_to_the_envelope() {
        let meta = META;
        let call = |params: &str| format!(r#"{{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{params}}}"#);
        let good = call(&format!(r#"{{"name":"ec\u0068o","arguments":{{"text":"hi"}},"_meta":{meta}}}"#));
        let (id, params) = read_tool_call(good.as_bytes()).unwrap();
        assert_eq!(id, Id::String("a".into()));
        let params = params.unwrap();
        assert_eq!(params.meta.protocol_version(), Some("2026-07-28"));
        assert_eq!(params.text("name").as_deref(), Some("echo"));
        assert_eq!(params.arguments(), Some(r#"{"text":"hi"}"#));
        // Well-formed params whose `_meta` lacks what every request carries: the same error as
        // `rev_2026_07_28::Params::parse` gives.
        for params in [
            r#"{"name":"echo"}"#.to_owned(),
            r#"{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}"#.to_owned(),
        ] {
            let (body, raw) = (call(&params), RawValue::from_string(params.clone()).unwrap());
            let (_, read) = read_tool_call(body.as_bytes()).unwrap();
            let parsed = rev_2026_07_28::Params::parse(Some(&raw));
            assert_eq!(read.err().map(|e| e.message), parsed.err().map(|e| e.message), "{params}");
        }
        // Everything else is the envelope's to read and judge.
        let left = [
            call(r#"{"name":"echo","_meta":"x"}"#),
            call(r#"[1]"#),
            good.replace("tools/call", "tools/list"),
            good.replace("tools/call", r"tools\/call"),
            good.replace(r#""id":"a""#, r#""id":null"#),
            good.replace(r#""jsonrpc":"2.0""#, r#""jsonrpc":"1.0""#),
            format!("{good} x"),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#.to_owned(),
        ];
        for body in left {
            assert!(read_tool_call(body.as_bytes()).is_none(), "{body}");
        }
    }

    #[test]
    fn meta_needs_version_and_capabilities() {
        let read = |s: &str| RequestMeta::read(Some(&RawValue::from_string(s.to_owned()).unwrap()));
        assert!(read("{}").is_err());
        assert!(read(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#).is_err());
        assert!(read(r#"{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}"#).is_err());
        assert!(read(r#"{"_meta":[]}"#).is_err());
        // Malformed params are read a second time to say what is wrong.
        let message = |s: &str| read(s).err().map(|e| e.message).unwrap_or_default();
        assert!(message("{}").contains("params._meta is missing"));
        assert!(message(r#"{"_meta":null}"#).contains("params._meta is missing"));
        assert!(message(r#"{"_meta":[]}"#).contains("params._meta must be an object"));
        assert!(message("[]").contains("params must be an object"));
        assert!(
            message(r#"{"name":7,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#)
                .contains("lacks \"io.modelcontextprotocol/clientCapabilities\"")
        );
        let ok = read(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}"#).unwrap();
        assert!(ok.check().is_ok());
        assert!(ok.client_supports("sampling") && !ok.client_supports("elicitation"));
        let old = read(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"v9","io.modelcontextprotocol/clientCapabilities":{}}}"#).unwrap();
        let error = old.check().unwrap_err();
        assert_eq!(error.code, codes::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(error.data.unwrap()["requested"], "v9");
        let bad_info = read(
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":"me"}}"#,
        );
        assert_eq!(bad_info.unwrap_err().code, -32602);
        let bad_level = read(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"loud"}}"#).unwrap();
        assert_eq!(bad_level.check().unwrap_err().code, -32602);
    }

    #[test]
    fn only_meta_with_a_version_marks_a_2026_07_28_request() {
        let present = |s: &str| RequestMeta::present(Some(&RawValue::from_string(s.to_owned()).unwrap()));
        assert!(present(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"x"}}"#));
        assert!(!present(r#"{"arguments":{"text":"io.modelcontextprotocol/protocolVersion"}}"#));
        assert!(!present(r#"{"name":"echo"}"#));
    }
}
