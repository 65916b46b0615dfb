//! A walk over a JSON object's members for the one-pass readers: member names are matched
//! where they stand in the request, and each value is read where it lies, by serde_json or,
//! for the values a reader skips or keeps as text and for the plain members of a call's
//! arguments ([`Cursor::json_value`]), by the walk itself.
//!
//! By hand, because serde's derived readers spent more on a `tools/call` envelope's names and
//! fixed strings than on the arguments themselves, and neither sonic-rs nor simd-json read the
//! envelope for less (benches/README.md has the measurements). The walk reads only what is plain:
//! a name or a string with an escape or a control character in it, or anything that is not
//! JSON, stops it with `None`, and the caller then reads the message with serde_json, as it
//! reads every other message.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value};

use crate::jsonrpc::Id;

/// How deep the walk follows arrays and objects inside a skipped value before it leaves the
/// rest to serde_json (which has a limit of its own): the walk recurses.
const MAX_DEPTH: u32 = 16;

/// The members [`Cursor::json_value`] makes room for at its first: most tools take a few.
const ARGUMENTS_CAPACITY: usize = 4;

/// A position in a JSON text.
///
/// Over `str`, checked as UTF-8 once and whole: serde_json reading from bytes checks each
/// string it meets, which cost more than the one check.
pub(crate) struct Cursor<'a> {
    text: &'a str,
    // Always just past an ASCII byte or a whole value, so on a char boundary.
    at: usize,
}

impl<'a> Cursor<'a> {
    /// The start of `text`.
    pub(crate) fn new(text: &'a str) -> Self {
        Cursor { text, at: 0 }
    }

    /// Walks the object here: `member` is called with each member's name and reads its value.
    /// `None` when there is no object here, when a name is not a plain string, or when
    /// `member` gives up.
    pub(crate) fn members(&mut self, mut member: impl FnMut(&'a str, &mut Self) -> Option<()>) -> Option<()> {
        (self.next_byte()? == b'{').then_some(())?;
        let mut first = true;
        loop {
            match self.next_byte()? {
                b'"' => {}
                b'}' if first => return Some(()),
                _ => return None,
            }
            let name = self.string_rest()?;
            (self.next_byte()? == b':').then_some(())?;
            member(name, self)?;
            match self.next_byte()? {
                b',' => first = false,
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }

    /// The string here, as it stands in the text, when it has no escape or control character;
    /// `None`, and the cursor moved past whitespace only, when there is none here or it is not
    /// plain.
    pub(crate) fn plain_str(&mut self) -> Option<&'a str> {
        self.skip_whitespace();
        if self.text.as_bytes().get(self.at) != Some(&b'"') {
            return None;
        }
        let opening = self.at;
        self.at += 1;
        let string = self.string_rest();
        if string.is_none() {
            self.at = opening;
        }
        string
    }

    /// The number here when it is a plain unsigned integer (no sign, fraction or exponent) of
    /// at most 19 digits, so it fits a `u64`; `None`, and the cursor moved past whitespace
    /// only, otherwise. The ids clients number their requests with.
    pub(crate) fn plain_u64(&mut self) -> Option<u64> {
        self.skip_whitespace();
        let rest = &self.text.as_bytes()[self.at..];
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        // A leading zero before more digits is not JSON: serde_json says so.
        if digits == 0 || digits > 19 || (digits > 1 && rest[0] == b'0') {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = rest.get(digits) {
            return None;
        }
        self.at += digits;
        Some(rest[..digits].iter().fold(0, |n, digit| n * 10 + u64::from(digit - b'0')))
    }

    /// The first byte of the value here, past whitespace, without moving past it.
    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.skip_whitespace();
        self.text.as_bytes().get(self.at).copied()
    }

    /// The value here, read by serde_json.
    pub(crate) fn value<T: Deserialize<'a>>(&mut self) -> Option<T> {
        let mut values = serde_json::Deserializer::from_str(&self.text[self.at..]).into_iter::<T>();
        let value = values.next()?.ok()?;
        self.at += values.byte_offset();
        Some(value)
    }

    /// The value here as serde_json reads it into a [`Value`]. An object (a call's arguments)
    /// is walked member by member: plain strings, plain integers and literals are read where
    /// they stand, every other member value by serde_json, and the members go into the map as
    /// serde_json puts them (in order, a repeated name keeping its place and its last value).
    /// Any other value is read by serde_json. `None` where serde_json would refuse the value,
    /// and where a member's name is not plain.
    pub(crate) fn json_value(&mut self) -> Option<Value> {
        if self.peek()? != b'{' {
            return self.value();
        }
        let mut map = Map::new();
        self.members(|name, value| {
            let value = value.member_value()?;
            if map.is_empty() {
                // Room for a usual call's arguments at once, where the first insert into an
                // empty map grew it through the general resizing path.
                map = Map::with_capacity(ARGUMENTS_CAPACITY);
            }
            map.insert(name.to_owned(), value);
            Some(())
        })?;
        Some(Value::Object(map))
    }

    // The value of one of `json_value`'s members. Only the first level is walked: arguments
    // are mostly flat, and serde_json reads what is nested.
    fn member_value(&mut self) -> Option<Value> {
        match self.peek()? {
            b'"' => match self.plain_str() {
                Some(text) => Some(Value::String(text.to_owned())),
                None => self.value(),
            },
            b'0'..=b'9' => match self.plain_u64() {
                Some(number) => Some(Value::from(number)),
                None => self.value(),
            },
            b't' => self.literal("true").map(|()| Value::Bool(true)),
            b'f' => self.literal("false").map(|()| Value::Bool(false)),
            b'n' => self.literal("null").map(|()| Value::Null),
            _ => self.value(),
        }
    }

    /// Skips the value of a member the reader has no use for.
    pub(crate) fn skip(&mut self) -> Option<()> {
        self.skip_value(0)
    }

    /// The JSON text of the value here, without the whitespace around it; the cursor past it.
    pub(crate) fn raw(&mut self) -> Option<&'a str> {
        self.skip_whitespace();
        let start = self.at;
        self.skip_value(0)?;
        // Both ends are next to a whole value, so on char boundaries.
        self.text.get(start..self.at)
    }

    /// [`Cursor::raw`], with `null` read as no value, as serde reads an `Option`.
    pub(crate) fn raw_unless_null(&mut self) -> Option<Option<&'a str>> {
        self.raw().map(|raw| (raw != "null").then_some(raw))
    }

    // Skips the value here: plain strings, literals, and the arrays and objects made of them
    // are walked here, which costs less than setting serde_json up for each; numbers, strings
    // with escapes and values nested deeper than `MAX_DEPTH` are checked by serde_json.
    fn skip_value(&mut self, depth: u32) -> Option<()> {
        match self.peek()? {
            b'"' => {
                if self.plain_str().is_none() {
                    self.value::<IgnoredAny>()?;
                }
                Some(())
            }
            b'{' if depth < MAX_DEPTH => self.members(|_, value| value.skip_value(depth + 1)),
            b'[' if depth < MAX_DEPTH => self.elements(|value| value.skip_value(depth + 1)),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            _ => self.value::<IgnoredAny>().map(drop),
        }
    }

    // Walks the array here: `element` reads each element.
    fn elements(&mut self, mut element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        (self.next_byte()? == b'[').then_some(())?;
        if self.peek()? == b']' {
            self.at += 1;
            return Some(());
        }
        loop {
            element(self)?;
            match self.next_byte()? {
                b',' => {}
                b']' => return Some(()),
                _ => return None,
            }
        }
    }

    // Takes `word` (`true`, `false` or `null`), which must be here. What follows it is the
    // caller's to judge, as after any value.
    fn literal(&mut self, word: &str) -> Option<()> {
        self.text[self.at..].starts_with(word).then_some(())?;
        self.at += word.len();
        Some(())
    }

    /// Whether nothing but whitespace is left.
    pub(crate) fn at_end(&mut self) -> bool {
        self.skip_whitespace();
        self.at == self.text.len()
    }

    // The rest of a plain string whose opening quote the cursor is past; the cursor past its
    // closing quote. Always inlined, as `special_byte` is: a call for each name cost a sixth
    // of the walk (callgrind).
    #[inline(always)]
    fn string_rest(&mut self) -> Option<&'a str> {
        let start = self.at;
        let end = start + mirobody_core::json::special_byte(&self.text.as_bytes()[start..])?;
        (self.text.as_bytes()[end] == b'"').then_some(())?;
        self.at = end + 1;
        // Both ends are next to a quote, so on char boundaries.
        self.text.get(start..end)
    }

    // Takes the next byte that is not whitespace.
    fn next_byte(&mut self) -> Option<u8> {
        self.skip_whitespace();
        let byte = *self.text.as_bytes().get(self.at)?;
        self.at += 1;
        Some(byte)
    }

    fn skip_whitespace(&mut self) {
        let bytes = self.text.as_bytes();
        while let Some(&byte) = bytes.get(self.at) {
            // Nothing above the space is whitespace: one test for the usual byte.
            if byte > b' ' || !matches!(byte, b' ' | b'\n' | b'\r' | b'\t') {
                return;
            }
            self.at += 1;
        }
    }
}

/// The JSON text `text` as serde_json reads it into a [`Value`] (`None` where it refuses it):
/// walked as [`Cursor::json_value`] walks a call's arguments, and read by serde_json where the
/// walk gives up.
pub(crate) fn read_value(text: &str) -> Option<Value> {
    let mut cursor = Cursor::new(text);
    match cursor.json_value() {
        Some(value) if cursor.at_end() => Some(value),
        _ => serde_json::from_str(text).ok(),
    }
}

/// Fills `slot` with `value` unless a value is there already: a member given twice is not
/// plain (serde refuses it), so the walk gives up.
pub(crate) fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value);
    Some(())
}

/// The id and params of a `tools/call` request, read in one pass, the params by
/// `read_params`; `None` as the readers say (see [`super::tool_call::read_tool_call`]). Both
/// revisions' one-pass readers share it, so both give up on exactly the same envelopes.
pub(crate) fn read_call<'a, P>(
    bytes: &'a [u8],
    read_params: impl FnOnce(&mut Cursor<'a>) -> Option<P>,
) -> Option<(Id, P)> {
    let mut cursor = Cursor::new(std::str::from_utf8(bytes).ok()?);
    let (mut version, mut id, mut method, mut params) = (None, None, None, None);
    let mut read_params = Some(read_params);
    cursor.members(|member, value| match member {
        "jsonrpc" => once(&mut version, (value.plain_str()? == "2.0").then_some(())?),
        "id" => once(&mut id, value.plain_u64().map(|n| Id::Number(n.into())).or_else(|| value.value())?),
        // Gives up at the method when it is another one, before reading the params.
        "method" => once(&mut method, (value.plain_str()? == "tools/call").then_some(())?),
        // Read once: a second `params` finds the reader gone.
        "params" => once(&mut params, read_params.take()?(value)?),
        _ => value.skip(),
    })?;
    (cursor.at_end() && version.is_some() && method.is_some()).then_some(())?;
    Some((id?, params?))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    // Every member of the object in `text`, with its value read as JSON.
    fn walk(text: &str) -> Option<Vec<(String, Value)>> {
        let mut cursor = Cursor::new(text);
        let mut members = Vec::new();
        cursor.members(|name, value| {
            members.push((name.to_owned(), value.value::<Value>()?));
            Some(())
        })?;
        cursor.at_end().then_some(members)
    }

    #[test]
    fn members_are_walked_in_order_with_any_whitespace() {
        let members = walk(" {\n\"a\" :1 ,\t\"b\":{\"c\":[1,2]},\"d\":\"x\\\"y\" , \"e\":null}\r\n").unwrap();
        let expected = [("a", json!(1)), ("b", json!({"c": [1, 2]})), ("d", json!("x\"y")), ("e", Value::Null)];
        assert_eq!(members, expected.map(|(name, value)| (name.to_owned(), value)));
        assert_eq!(walk("{}").unwrap(), []);
        assert_eq!(walk(" { } ").unwrap(), []);
    }

    #[test]
    fn what_is_not_plain_json_stops_the_walk() {
        for text in [
            "",
            "[]",
            "{",
            r#"{"a"}"#,
            r#"{"a":}"#,
            r#"{"a":1,}"#,
            r#"{"a":1 "b":2}"#,
            r#"{"a":1}}"#,
            r#"{"a":1} x"#,
            r#"{"\u0061":1}"#,
            "{\"a\nb\":1}",
            r#"{a:1}"#,
            r#"{"a":tru}"#,
            r#"{"a":1x}"#,
        ] {
            assert_eq!(walk(text), None, "{text:?}");
        }
    }

    #[test]
    fn plain_strings_are_borrowed_and_others_are_left_to_read_another_way() {
        let mut cursor = Cursor::new(r#" "2.0" "a\"b" 7 "café""#);
        assert_eq!(cursor.plain_str(), Some("2.0"));
        assert_eq!(cursor.plain_str(), None, "an escape");
        assert_eq!(cursor.value::<String>().as_deref(), Some("a\"b"), "still there to read another way");
        assert_eq!(cursor.plain_str(), None, "a number");
        assert_eq!(cursor.value::<u32>(), Some(7));
        assert_eq!(cursor.plain_str(), Some("café"));
        assert!(cursor.at_end());
        assert_eq!(Cursor::new("\"tab\t\"").plain_str(), None, "a control character");
        assert_eq!(Cursor::new("\"unclosed").plain_str(), None);
    }

    #[test]
    fn plain_integers_are_read_and_other_numbers_are_left_to_serde() {
        for (text, plain) in [
            ("0", Some(0)),
            (" 7,", Some(7)),
            ("9999999999999999999}", Some(9_999_999_999_999_999_999)),
            ("99999999999999999999", None),
            ("-1", None),
            ("1.5", None),
            ("1e3", None),
            ("1E3", None),
            ("01", None),
            ("\"1\"", None),
            ("", None),
        ] {
            let mut cursor = Cursor::new(text);
            assert_eq!(cursor.plain_u64(), plain, "{text:?}");
            if plain.is_none() {
                // Left where serde_json reads it, whole.
                let whole = serde_json::from_str::<serde_json::Value>(text.trim()).ok();
                assert_eq!(cursor.value::<serde_json::Value>(), whole, "{text:?}");
            }
        }
    }

    #[test]
    fn skipped_values_must_still_be_json() {
        let mut cursor = Cursor::new(r#"{"x":[1,{"y":2}]}"#);
        assert_eq!(cursor.members(|_, value| value.skip()), Some(()));
        assert!(Cursor::new(r#"{"x":[1,}"#).members(|_, value| value.skip()).is_none());
    }

    #[test]
    fn raw_values_are_their_text_whatever_they_hold() {
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        for value in [
            r#""plain""#,
            r#""esc\"aped""#,
            "-1.5e3",
            "true",
            "false",
            "null",
            "[]",
            "[ 1 , \"a\" ,{}]",
            r#"{"a":{"b":[null,{"c":"d"}]},"e":"f\n"}"#,
            r#"{"a":1,"a":2}"#,
            &deep,
        ] {
            let text = format!(" {value} ,");
            let mut cursor = Cursor::new(&text);
            assert_eq!(cursor.raw(), Some(value), "{value}");
            assert_eq!(cursor.next_byte(), Some(b','), "{value}: the cursor is just past the value");
        }
        assert_eq!(Cursor::new("null").raw_unless_null(), Some(None));
        assert_eq!(Cursor::new(" \"null\"").raw_unless_null(), Some(Some("\"null\"")));
    }

    #[test]
    fn raw_values_must_be_json() {
        let deep_and_bad = format!("{}1,{}", "[".repeat(200), "]".repeat(200));
        for text in ["", "nul", "tru", "[1,]", "[1 2]", "{\"a\":}", "\"open", "01", "[", "{\"a\":1", &deep_and_bad] {
            assert_eq!(Cursor::new(text).raw(), None, "{text:?}");
        }
        // What follows a literal is for the caller to judge, as after any value.
        let mut cursor = Cursor::new("truex");
        assert_eq!(cursor.raw(), Some("true"));
        assert!(!cursor.at_end());
    }

    #[test]
    fn a_member_given_twice_fills_its_slot_once() {
        let mut slot = None;
        assert_eq!(once(&mut slot, 1), Some(()));
        assert_eq!(once(&mut slot, 2), None);
        assert_eq!(slot, Some(1));
    }

    // `json_value` of the whole of `text`, as its value and its JSON text (maps compare equal
    // in any order; the text says the order too).
    fn json_value_of(text: &[u8]) -> Option<(Value, String)> {
        let mut cursor = Cursor::new(std::str::from_utf8(text).ok()?);
        let value = cursor.json_value()?;
        let order = value.to_string();
        cursor.at_end().then_some((value, order))
    }

    fn serde_value_of(text: &[u8]) -> Option<(Value, String)> {
        let value: Value = serde_json::from_slice(text).ok()?;
        let order = value.to_string();
        Some((value, order))
    }

    #[test]
    fn objects_are_read_member_by_member_as_serde_json_reads_them() {
        let text = br#" { "s" : "plain", "e":"tab\tand \u00e9", "n": 42 ,"neg":-7,"f":2.5,"x":1e3,
            "big":123456789012345678901, "t":true,"u":false,"z":null, "a":[1,{"b":"c"}], "o":{"p":null},
            "s":"again" } "#;
        let (value, order) = json_value_of(text).unwrap();
        assert_eq!(Some((value.clone(), order.clone())), serde_value_of(text));
        // A name given again keeps its first place and takes its last value, as in serde_json.
        assert!(order.starts_with(r#"{"s":"again","e":"tab\tand é","n":42,"neg":-7,"f":2.5,"x":1000.0,"#), "{order}");
        assert_eq!(value["big"], json!(123456789012345678901.0));
        for text in [&b"[1,2]"[..], b"\"text\"", b"12", b"-1", b"null", b"{}", b" { } "] {
            assert_eq!(json_value_of(text), serde_value_of(text), "{}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn what_serde_json_refuses_is_not_read() {
        for text in [
            &b"{"[..],
            b"{\"a\":}",
            b"{\"a\":tru}",
            b"{\"a\":nul}",
            b"{\"a\":012}",
            b"{\"a\":1,}",
            b"{\"a\" 1}",
            b"{\"a\":1 \"b\":2}",
            b"{\"a\":\"\n\"}",
            b"{\"a\":truex}",
            b"{\"a\":1}}",
        ] {
            assert_eq!(json_value_of(text), None, "{}", String::from_utf8_lossy(text));
            assert_eq!(serde_value_of(text), None, "serde_json refuses {}", String::from_utf8_lossy(text));
        }
        // An escaped name is left to serde_json, which reads it.
        assert_eq!(json_value_of(br#"{"\u0061":1}"#), None);
        assert_eq!(serde_value_of(br#"{"\u0061":1}"#).unwrap().0, json!({"a": 1}));
    }

    // Member values of every kind, written as serde_json writes them or by hand.
    fn member_values() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            any::<String>().prop_map(|s| Value::String(s).to_string()),
            "[a-z ]{0,8}".prop_map(|s| format!("\"{s}\"")),
            any::<u64>().prop_map(|n| n.to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| json!(f).to_string()),
            proptest::sample::select(vec![
                "true",
                "false",
                "null",
                "[]",
                "{}",
                "[1,\"a\",{\"b\":[null]}]",
                "{\"k\":{\"l\":2}}",
                "0",
                "00",
                "1.",
                "-",
                "1e",
                "12345678901234567890",
                "9999999999999999999",
                "tru",
                "\"\\u00e9\"",
            ])
            .prop_map(str::to_owned),
        ]
    }

    // Objects of those values under a few names (one escaped, some given twice), with any
    // whitespace, now and then mangled.
    fn argument_objects() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let names = proptest::sample::select(vec!["a", "b", "text", "a\\u0062"]);
        let member = (names, member_values()).prop_map(|(name, value)| format!("\"{name}\":{value}"));
        testing::mangled_objects(proptest::collection::vec(member, 0..6))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// `json_value` reads every object serde_json reads, the same and in the same order,
        /// except those with an escaped member name (left to serde_json); and it reads nothing
        /// serde_json refuses.
        #[test]
        fn json_value_reads_what_serde_json_reads(text in argument_objects()) {
            testing::walked_as_serde_reads(&text, json_value_of(&text), serde_value_of(&text))?;
        }

        /// `read_value` is serde_json's reading, value and member order, escaped names and
        /// refusals included: where the walk gives up, serde_json reads.
        #[test]
        fn read_value_reads_as_serde_json_reads(text in argument_objects()) {
            let Ok(text) = std::str::from_utf8(&text) else { return Ok(()) };
            let read = read_value(text).map(|value| {
                let order = value.to_string();
                (value, order)
            });
            proptest::prop_assert_eq!(read, serde_value_of(text.as_bytes()));
        }
    }
}

/// Helpers for the tests of the one-pass readers: JSON objects made of members, and what
/// the walk may leave to serde.
#[cfg(test)]
pub(crate) mod testing {
    // Whether a member name in the JSON `text` has an escape in it.
    fn has_escaped_name(text: &[u8]) -> bool {
        let mut bytes = text.iter().enumerate();
        while let Some((_, &byte)) = bytes.next() {
            if byte != b'"' {
                continue;
            }
            let mut escaped = false;
            let end = loop {
                match bytes.next() {
                    Some((_, b'\\')) => {
                        escaped = true;
                        bytes.next();
                    }
                    Some((end, b'"')) => break end,
                    Some(_) => {}
                    None => return false,
                }
            };
            let is_name = text[end + 1..].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b':');
            if escaped && is_name {
                return true;
            }
        }
        false
    }

    // The object of `members` ("name":value), with the whitespace of `gaps` between tokens.
    pub(crate) fn object(members: &[String], gaps: &[&str]) -> String {
        let gap = |i: usize| gaps[i % gaps.len()];
        let mut text = format!("{}{{", gap(0));
        for (i, member) in members.iter().enumerate() {
            if i > 0 {
                text.push_str(&format!("{},", gap(i)));
            }
            let (name, value) = member.split_once("\":").expect("a member");
            text.push_str(&format!("{}{name}\"{}:{}{value}", gap(i + 1), gap(i + 2), gap(i + 3)));
        }
        text.push_str(&format!("{}}}", gap(members.len())));
        text
    }

    /// Whitespace to put between a JSON text's tokens.
    pub(crate) fn gaps() -> impl proptest::strategy::Strategy<Value = Vec<&'static str>> {
        proptest::collection::vec(proptest::sample::select(vec!["", " ", "\n", "\t", "\r\n "]), 1..6)
    }

    /// `text`, now and then (as `byte` says) with a byte changed, cut short, or with more
    /// after it.
    pub(crate) fn mangled(mut text: Vec<u8>, (at, byte): (usize, u8)) -> Vec<u8> {
        match byte % 16 {
            0 => {
                let at = at % text.len();
                text[at] = byte;
            }
            1 => text.truncate(at % text.len()),
            2 => text.extend_from_slice(b" x"),
            _ => {}
        }
        text
    }

    /// JSON objects of the shuffled `members` with any whitespace, now and then mangled.
    pub(crate) fn mangled_objects(
        members: impl proptest::strategy::Strategy<Value = Vec<String>>,
    ) -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::strategy::Strategy;
        (members.prop_shuffle(), gaps(), proptest::prelude::any::<(usize, u8)>())
            .prop_map(|(members, gaps, change)| mangled(object(&members, &gaps).into_bytes(), change))
    }

    /// What a one-pass walk read of `text` against what serde's derived reader read: the same
    /// whenever the walk reads, and the walk gives up only on text with an escaped member name
    /// (which it leaves to serde); it reads nothing serde would refuse.
    pub(crate) fn walked_as_serde_reads<T: PartialEq + std::fmt::Debug>(
        text: &[u8],
        walked: Option<T>,
        serde: Option<T>,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let shown = String::from_utf8_lossy(text);
        match (&walked, &serde) {
            (Some(_), _) => proptest::prop_assert_eq!(&walked, &serde, "{}", shown),
            (None, Some(_)) => proptest::prop_assert!(has_escaped_name(text), "gave up on {}", shown),
            (None, None) => {}
        }
        Ok(())
    }

    #[test]
    fn escaped_names_are_told_from_escaped_values() {
        assert!(has_escaped_name(br#"{"a":"\"b\":","n\u0061me" :1}"#));
        assert!(!has_escaped_name(br#"{"a":"\"b\":","name":"x\"y"}"#));
    }
}
