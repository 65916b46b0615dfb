//! A 2025-11-25 `tools/call` read in one pass: the params type, as serde's derive reads it, and
//! the walk that reads the same where it can ([`read_tool_call`]), held to serde by the property
//! tests below.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::scan::{Cursor, once, read_call};
use crate::jsonrpc::Id;

/// The params of a `tools/call`.
#[derive(Deserialize)]
pub(crate) struct ToolCall<'a> {
    // Borrowed from the request unless it has escapes: no allocation per call.
    #[serde(borrow)]
    pub(crate) name: Cow<'a, str>,
    #[serde(default)]
    pub(crate) arguments: Value,
    // Any JSON: a `_meta` of another shape means no progress token, not a refused call. Boxed:
    // most calls have none, and the params move about whole (past 128 bytes, each move is a
    // call to memcpy).
    #[serde(rename = "_meta", default)]
    meta: Option<Box<Value>>,
}

impl ToolCall<'_> {
    /// The `_meta.progressToken`, if the call asked for progress.
    pub(crate) fn progress_token(&self) -> Option<Value> {
        token_in(self.meta.as_deref())
    }

    /// The `_meta.traceparent`, if it is a string of at most 512 bytes (what the hook is
    /// handed; it checks the rest).
    pub(crate) fn traceparent(&self) -> Option<&str> {
        let traceparent = self.meta.as_deref()?.get("traceparent")?.as_str()?;
        (traceparent.len() <= crate::protocol::hooks::MAX_TRACEPARENT_BYTES).then_some(traceparent)
    }

    /// The same params, owning the tool name.
    pub(crate) fn into_owned(self) -> ToolCall<'static> {
        ToolCall { name: Cow::Owned(self.name.into_owned()), arguments: self.arguments, meta: self.meta }
    }
}

/// A `tools/call` request read in one pass, params and all. Reading the envelope first (as
/// [`jsonrpc::Message::parse`] does) skips over the params only for `tools/call` to read them
/// again. `None` for any other message, and for any this
/// pass cannot read (escapes in `jsonrpc` or `method` or a member's name, a missing or null
/// `id`, a member given twice, bad params, bad JSON): `Message::parse` then reads it and
/// judges it, as for every other message.
pub(crate) fn read_tool_call(bytes: &[u8]) -> Option<(Id, ToolCall<'static>)> {
    read_call(bytes, ToolCall::read).map(|(id, params)| (id, params.into_owned()))
}

impl<'a> ToolCall<'a> {
    // The params at `cursor`, as their derived `Deserialize` reads them.
    fn read(cursor: &mut Cursor<'a>) -> Option<ToolCall<'a>> {
        let (mut name, mut arguments, mut meta) = (None, None, None);
        cursor.members(|member, value| match member {
            "name" => once(&mut name, value.plain_str().map(Cow::Borrowed).or_else(|| value.value().map(Cow::Owned))?),
            "arguments" => once(&mut arguments, value.json_value()?),
            "_meta" => once(&mut meta, value.value::<Option<Box<Value>>>()?),
            _ => value.skip(),
        })?;
        Some(ToolCall { name: name?, arguments: arguments.unwrap_or_default(), meta: meta.flatten() })
    }
}

// The token in a `_meta`: a `_meta` of another shape, or a null token, asks for no progress.
pub(crate) fn token_in(meta: Option<&Value>) -> Option<Value> {
    meta?.get("progressToken").filter(|token| !token.is_null()).cloned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::one_pass::scan::testing::{gaps, mangled_objects, object, walked_as_serde_reads};

    fn read(message: &str) -> Option<(Id, String, Value, Option<Value>)> {
        read_tool_call(message.as_bytes()).map(|(id, call)| {
            let token = call.progress_token();
            (id, call.name.into_owned(), call.arguments, token)
        })
    }

    #[test]
    fn a_tool_call_is_read_in_one_pass_with_its_params() {
        let (id, name, arguments, token) = read(
            r#" {"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ec\u0068o","arguments":{"text":"hi"},"_meta":{"progressToken":"p-1"}}}"#,
        )
        .unwrap();
        assert_eq!(
            (id, name.as_str(), arguments, token),
            (Id::Number(7.into()), "echo", json!({"text": "hi"}), Some(json!("p-1")))
        );
        // Params before the method, no arguments, a string id.
        let (id, name, arguments, token) =
            read(r#"{"params":{"name":"echo"},"id":"a","method":"tools/call","jsonrpc":"2.0"}"#).unwrap();
        assert_eq!((id, name.as_str(), arguments, token), (Id::String("a".into()), "echo", Value::Null, None));
        // A `_meta` of another shape, or a null token, asks for no progress; the call still runs.
        for meta in [r#""x""#, r#"{"progressToken":null}"#, "null"] {
            let message =
                format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"e","_meta":{meta}}}}}"#);
            assert_eq!(read(&message).unwrap().3, None, "{meta}");
        }
    }

    #[test]
    fn anything_else_is_left_to_the_envelope_reader() {
        let others = [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2\u002e0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}} trailing"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"["2.0",1,"tools/call",{"name":"echo"}]"#,
            "{not json",
        ];
        for message in others {
            assert!(read(message).is_none(), "{message}");
        }
        let not_utf8 = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"e\xff\"}}";
        assert!(read_tool_call(not_utf8).is_none());
    }

    // What the one-pass walk stands in for: serde's derived readers over the whole text.
    fn read_with_serde(bytes: &[u8]) -> Option<(Id, ToolCall<'_>)> {
        #[derive(Deserialize)]
        struct Envelope<'a> {
            jsonrpc: &'a str,
            id: Id,
            method: &'a str,
            #[serde(borrow)]
            params: ToolCall<'a>,
        }
        // serde would also read an array of the fields in order as the struct.
        if bytes.trim_ascii_start().first() != Some(&b'{') {
            return None;
        }
        let envelope: Envelope<'_> = serde_json::from_str(std::str::from_utf8(bytes).ok()?).ok()?;
        (envelope.jsonrpc == "2.0" && envelope.method == "tools/call").then_some((envelope.id, envelope.params))
    }

    // The arguments as their JSON text too: maps compare equal whatever their order, and the
    // order of the arguments must be the order serde_json reads.
    type Read = (Id, String, Value, String, Option<Value>);

    fn fields((id, call): (Id, ToolCall<'_>)) -> Read {
        let text = call.arguments.to_string();
        (id, call.name.into_owned(), call.arguments, text, call.meta.map(|meta| *meta))
    }

    // Members of envelopes and params, well and badly formed, as JSON text.
    const ENVELOPE_MEMBERS: &[&str] = &[
        r#""jsonrpc":"2.0""#,
        r#""jsonrpc":"1.0""#,
        r#""jsonrpc":"2\u002e0""#,
        r#""jsonrpc":2"#,
        r#""id":1"#,
        r#""id":-3"#,
        r#""id":1.5e3"#,
        r#""id":01"#,
        r#""id":12345678901234567890"#,
        r#""id":"a\"b""#,
        r#""id":null"#,
        r#""id":[]"#,
        r#""method":"tools/call""#,
        r#""method":"tools\/call""#,
        r#""method":"tools/list""#,
        r#""method":null"#,
        r#""params":[]"#,
        r#""params":null"#,
        r#""j\u0073onrpc":"2.0""#,
        r#""extra":{"jsonrpc":"1.0","id":[1,{"x":null}]}"#,
        r#""\u00e9":true"#,
    ];
    const PARAMS_MEMBERS: &[&str] = &[
        r#""name":"echo""#,
        r#""name":"ec\u0068o""#,
        r#""name":"caf\u00e9 \ud83d\ude00""#,
        r#""name":5"#,
        r#""name":null"#,
        r#""arguments":{"text":"hello, mirobody"}"#,
        r#""arguments":{"a":{"b":[1,2.5,{"c":null}]},"d":"\n"}"#,
        r#""arguments":{"n":1,"n":-2,"f":1.5e3,"big":123456789012345678901,"t":true,"u":false,"z":null}"#,
        r#""arguments":{"zero":0,"lead":012,"exp":1E2,"s":"caf\u00e9"}"#,
        r#""arguments":{"k\u0065y":1}"#,
        r#""arguments":{ }"#,
        r#""arguments":{"t":tru}"#,
        r#""arguments":{"a":[],"b":{},"c":"x","a":"again"}"#,
        r#""arguments":null"#,
        r#""arguments":[1]"#,
        r#""arguments":"s""#,
        r#""_meta":{"progressToken":"p"}"#,
        r#""_meta":{"progressToken":null}"#,
        r#""_meta":null"#,
        r#""_meta":"x""#,
        r#""n\u0061me":"echo""#,
        r#""other":[true,false]"#,
    ];

    // Envelopes of a call and of near misses: the members a call needs, others, some left
    // out, all shuffled, with any whitespace; now and then a byte changed, the text cut
    // short, or more after it.
    fn envelope_strategy() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::collection::vec;
        use proptest::prelude::*;
        use proptest::sample::select;
        let owned = |members: Vec<&str>| members.into_iter().map(str::to_owned).collect::<Vec<_>>();
        let params = (vec(select(PARAMS_MEMBERS), 0..4).prop_map(owned).prop_shuffle(), gaps()).prop_map(
            |(mut members, gaps)| {
                if !members.iter().any(|m| m.starts_with("\"name\"")) {
                    members.push(r#""name":"echo""#.to_owned());
                }
                object(&members, &gaps)
            },
        );
        let members =
            (params, vec(select(ENVELOPE_MEMBERS), 0..2), any::<u8>()).prop_map(move |(params, extra, left_out)| {
                let mut members = owned(vec![r#""jsonrpc":"2.0""#, r#""id":1"#, r#""method":"tools/call""#]);
                members.push(format!(r#""params":{params}"#));
                if left_out % 16 < 4 {
                    members.remove(usize::from(left_out % 16));
                }
                members.extend(owned(extra));
                members
            });
        mangled_objects(members)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// The walk reads every call serde reads, the same, except those whose member names
        /// have escapes, which it leaves (with everything else it gives up on) to
        /// `Message::parse`; and it reads nothing serde would refuse.
        #[test]
        fn the_one_pass_walk_reads_what_serde_reads(text in envelope_strategy()) {
            let walked = read_call(&text, ToolCall::read).map(fields);
            walked_as_serde_reads(&text, walked, read_with_serde(&text).map(fields))?;
        }
    }

    #[test]
    fn the_strategy_makes_calls_both_readers_read_and_ones_they_refuse() {
        use proptest::strategy::{Strategy, ValueTree};
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let (mut both, mut neither) = (0, 0);
        for _ in 0..500 {
            let text = envelope_strategy().new_tree(&mut runner).unwrap().current();
            match (read_call(&text, ToolCall::read), read_with_serde(&text)) {
                (Some(_), Some(_)) => both += 1,
                (None, None) => neither += 1,
                _ => {}
            }
        }
        assert!(both > 50 && neither > 50, "both read {both}, neither {neither}");
    }
}
