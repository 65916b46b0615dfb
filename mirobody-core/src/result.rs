//! What a tool returns: content for the model, structured data for programs, an error flag.

use std::fmt;
use std::sync::OnceLock;

use serde::Serialize;
use serde_json::{Map, Value};

/// One piece of content in a tool result, as MCP defines it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 data.
        data: String,
        /// For example `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Audio, base64-encoded.
    Audio {
        /// Base64 data.
        data: String,
        /// For example `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A link to a resource the client may read.
    ResourceLink {
        /// The resource URI.
        uri: String,
        /// A short name.
        name: String,
        /// What it is.
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Its MIME type.
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    /// A resource's contents, embedded.
    Resource {
        /// The contents.
        resource: EmbeddedResource,
    },
}

/// The contents of an embedded resource: text or base64 bytes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EmbeddedResource {
    /// The resource URI.
    pub uri: String,
    /// Its MIME type.
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 contents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// `_meta` of the contents (for example an MCP Apps view's `ui` settings).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Map<String, Value>>,
}

impl Content {
    /// Text content.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into() }
    }

    /// An image from base64 data.
    pub fn image(base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Image { data: base64.into(), mime_type: mime_type.into() }
    }

    /// Audio from base64 data.
    pub fn audio(base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Audio { data: base64.into(), mime_type: mime_type.into() }
    }

    /// A link to a resource.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Content::ResourceLink { uri: uri.into(), name: name.into(), description: None, mime_type: None }
    }

    /// An embedded text resource.
    pub fn embedded_text(uri: impl Into<String>, mime_type: impl Into<String>, text: impl Into<String>) -> Self {
        Content::Resource {
            resource: EmbeddedResource {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                text: Some(text.into()),
                blob: None,
                meta: None,
            },
        }
    }

    /// An embedded binary resource from base64 data.
    pub fn embedded_blob(uri: impl Into<String>, mime_type: impl Into<String>, base64: impl Into<String>) -> Self {
        Content::Resource {
            resource: EmbeddedResource {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                text: None,
                blob: Some(base64.into()),
                meta: None,
            },
        }
    }
}

/// The result of a tool call, serialized as an MCP `CallToolResult`.
///
/// Structured content is always a JSON object: [`ToolResult::ok`] wraps an array or a scalar as
/// `{"result": ...}`, and sends the same JSON as text for clients that read only text.
///
/// ```
/// use mirobody_core::{Content, ToolResult};
/// use serde_json::json;
///
/// let ok = ToolResult::ok(json!({"echo": "hi"}));
/// assert_eq!(serde_json::to_value(&ok).unwrap(), json!({
///     "content": [{"type": "text", "text": "{\"echo\":\"hi\"}"}],
///     "structuredContent": {"echo": "hi"},
///     "isError": false,
/// }));
///
/// let list = ToolResult::ok(vec![1, 2]);
/// assert_eq!(list.structured_content().unwrap()["result"], json!([1, 2]));
///
/// let failed = ToolResult::error("File not found.");
/// assert!(failed.is_error());
///
/// let rich = ToolResult::text("Here is the chart:").with(Content::image("iVBORw0KGgo=", "image/png"));
/// assert_eq!(rich.content().len(), 2);
/// ```
#[derive(Clone, PartialEq)]
pub struct ToolResult {
    content: Vec<Content>,
    structured: Option<Structured>,
    is_error: bool,
    // The handler did not finish (it panicked): a protocol-level failure where one can be
    // told apart from a tool's own error (a task then reports `failed`).
    internal: bool,
    // Boxed: few results carry it, and a result moves through several futures on its way out
    // (past 128 bytes, each move is a call to memcpy).
    meta: Option<Box<Map<String, Value>>>,
}

/// The structured content of a result. Its JSON is the text of the result's first content
/// block, which only the constructors set and nothing changes after: a result is serialized
/// once, for the text block and `structuredContent` alike, and parsed back into a map only
/// when something in-process reads it, rather than building and then serializing a map for
/// every call (benches/README.md has what that cost).
#[derive(Clone, Default)]
struct Structured(OnceLock<Map<String, Value>>);

impl PartialEq for Structured {
    // Equal whether or not either has been parsed yet: both are the JSON of their result's
    // first text block, which the results' own comparison compares.
    fn eq(&self, _: &Structured) -> bool {
        true
    }
}

impl fmt::Debug for ToolResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolResult")
            .field("content", &self.content)
            .field("structured", &self.structured_content())
            .field("is_error", &self.is_error)
            .field("meta", &self.meta)
            .finish()
    }
}

impl Serialize for ToolResult {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = serializer.serialize_struct("ToolResult", 4)?;
        out.serialize_field("content", &self.content)?;
        match self.structured_content() {
            Some(structured) => out.serialize_field("structuredContent", structured)?,
            None => out.skip_field("structuredContent")?,
        }
        out.serialize_field("isError", &self.is_error)?;
        match &self.meta {
            Some(meta) => out.serialize_field("_meta", meta)?,
            None => out.skip_field("_meta")?,
        }
        out.end()
    }
}

impl ToolResult {
    /// A successful result carrying JSON: structured content plus the same JSON as text.
    /// A value that cannot be serialized gives an error result.
    pub fn ok(value: impl Serialize) -> Self {
        // Written straight to text, not built as a `Value` first: a struct's fields never
        // become a map unless something reads the structured content in-process.
        match serde_json::to_string(&value) {
            // JSON text that opens with a brace is an object.
            Ok(json) if json.starts_with('{') => ToolResult::from_object_json(json, Structured::default()),
            Ok(json) => ToolResult::from_object_json(format!(r#"{{"result":{json}}}"#), Structured::default()),
            Err(e) => ToolResult::error(format!("The tool's result could not be encoded as JSON: {e}")),
        }
    }

    /// A successful result from JSON already built (with `json!`, say). An object is the
    /// structured content as it is; anything else is wrapped as `{"result": ...}`.
    ///
    /// ```
    /// use mirobody_core::ToolResult;
    /// use serde_json::json;
    ///
    /// let result = ToolResult::json(json!({"echo": "hi"}));
    /// assert_eq!(result.structured_content().unwrap()["echo"], "hi");
    /// assert_eq!(result.first_text(), Some(r#"{"echo":"hi"}"#));
    /// assert_eq!(ToolResult::json(json!(3)).structured_content().unwrap()["result"], 3);
    /// ```
    pub fn json(value: Value) -> Self {
        ToolResult::structured(into_object(value))
    }

    /// A successful result from a JSON object.
    pub fn structured(object: Map<String, Value>) -> Self {
        // Serializing a Map of Values cannot fail.
        let json = serde_json::to_string(&object).unwrap_or_default();
        // Kept as it is, so reading it back needs no parse.
        ToolResult::from_object_json(json, Structured(OnceLock::from(object)))
    }

    // A successful result whose structured content is the object `json`, also its text.
    fn from_object_json(json: String, structured: Structured) -> Self {
        ToolResult {
            content: vec![Content::text(json)],
            structured: Some(structured),
            is_error: false,
            internal: false,
            meta: None,
        }
    }

    /// A failed result: the message is for the model, so say what to do next.
    pub fn error(message: impl Into<String>) -> Self {
        ToolResult {
            content: vec![Content::text(message)],
            structured: None,
            is_error: true,
            internal: false,
            meta: None,
        }
    }

    /// A successful result of plain text.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult::from_content(vec![Content::text(text)])
    }

    /// A successful result of the given content blocks.
    pub fn from_content(content: Vec<Content>) -> Self {
        ToolResult { content, structured: None, is_error: false, internal: false, meta: None }
    }

    /// Adds a content block.
    pub fn with(mut self, content: Content) -> Self {
        self.content.push(content);
        self
    }

    /// Sets `_meta` on the result.
    pub fn with_meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(Box::new(meta));
        self
    }

    /// Whether the call failed.
    pub fn is_error(&self) -> bool {
        self.is_error
    }

    /// An error result for a call that failed inside the server rather than in the tool's own
    /// logic (a panicking handler gives one): still an error result for a model to read, and a
    /// protocol-level error where the protocol tells the two apart (a task reports `failed`).
    ///
    /// ```
    /// use mirobody_core::ToolResult;
    ///
    /// let failed = ToolResult::internal_error("the store is unreachable");
    /// assert!(failed.is_error() && failed.is_internal_error());
    /// assert!(!ToolResult::error("no such city").is_internal_error());
    /// ```
    pub fn internal_error(message: impl Into<String>) -> Self {
        ToolResult { internal: true, ..ToolResult::error(message) }
    }

    /// Whether this is an [internal error](ToolResult::internal_error).
    pub fn is_internal_error(&self) -> bool {
        self.internal
    }

    /// The content blocks.
    pub fn content(&self) -> &[Content] {
        &self.content
    }

    /// The structured content, if any.
    pub fn structured_content(&self) -> Option<&Map<String, Value>> {
        let structured = self.structured.as_ref()?;
        // The JSON is the first text block's, an object serde_json wrote.
        Some(structured.0.get_or_init(|| {
            self.structured_json().and_then(|json| serde_json::from_str(json).ok()).unwrap_or_default()
        }))
    }

    // The JSON of the structured content: the first content block's text.
    fn structured_json(&self) -> Option<&str> {
        self.structured.as_ref()?;
        match self.content.first() {
            Some(Content::Text { text }) => Some(text),
            _ => None,
        }
    }

    /// The `_meta` set with [`ToolResult::with_meta`], if any.
    ///
    /// ```
    /// use mirobody_core::ToolResult;
    /// use serde_json::{Map, json};
    ///
    /// assert!(ToolResult::text("hi").meta().is_none());
    /// let meta: Map<_, _> = [("trace".to_owned(), json!("t-1"))].into_iter().collect();
    /// assert_eq!(ToolResult::text("hi").with_meta(meta).meta().unwrap()["trace"], "t-1");
    /// ```
    pub fn meta(&self) -> Option<&Map<String, Value>> {
        self.meta.as_deref()
    }

    /// Appends the result to `out` as MCP `CallToolResult` JSON: the same bytes as
    /// `serde_json::to_vec(&result)`, written with its field names as they are rather than run
    /// through serde's escaping on every call.
    ///
    /// ```
    /// use mirobody_core::ToolResult;
    /// use serde_json::json;
    ///
    /// let result = ToolResult::json(json!({"echo": "hi"}));
    /// let mut out = Vec::new();
    /// result.write_json(&mut out);
    /// assert_eq!(out, serde_json::to_vec(&result).unwrap());
    /// ```
    pub fn write_json(&self, out: &mut Vec<u8>) {
        // The keys and their order are the derived `Serialize` impl's; a test holds the two
        // to the same bytes.
        out.extend_from_slice(br#"{"content":["#);
        for (i, content) in self.content.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match content {
                Content::Text { text } => {
                    out.extend_from_slice(br#"{"type":"text","text":"#);
                    crate::json::write_str(out, text);
                    out.push(b'}');
                }
                other => write_value(out, other),
            }
        }
        out.push(b']');
        if let Some(json) = self.structured_json() {
            out.extend_from_slice(br#","structuredContent":"#);
            out.extend_from_slice(json.as_bytes());
        }
        out.extend_from_slice(if self.is_error { br#","isError":true"# } else { br#","isError":false"# });
        if let Some(meta) = &self.meta {
            out.extend_from_slice(br#","_meta":"#);
            write_value(out, meta);
        }
        out.push(b'}');
    }

    /// The text of the first text block, if any: what an in-process agent loop feeds back to
    /// the model.
    pub fn first_text(&self) -> Option<&str> {
        self.content.iter().find_map(|c| match c {
            Content::Text { text } => Some(text.as_str()),
            _ => None,
        })
    }
}

// Strings, Values and content blocks always serialize, and a Vec never refuses a write.
fn write_value(out: &mut Vec<u8>, value: &impl Serialize) {
    let _ = serde_json::to_writer(out, value);
}

fn into_object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => {
            let mut map = Map::with_capacity(1);
            map.insert("result".into(), other);
            map
        }
    }
}

/// An error a handler returns with `?`; it becomes an error result whose text is the message.
///
/// ```
/// use mirobody_core::{ToolError, ToolResult};
///
/// fn check(n: i64) -> Result<ToolResult, ToolError> {
///     if n < 0 {
///         return Err(ToolError::new("n must not be negative"));
///     }
///     Ok(ToolResult::ok(n))
/// }
/// assert!(check(-1).is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError(String);

impl ToolError {
    /// An error with a message for the model.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError(message.into())
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ToolError {}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        ToolError(message.to_owned())
    }
}

/// What a handler may return: a [`ToolResult`], a [`Json`] value, a `String` (text), or a
/// `Result` of any of these whose error displays as the message.
pub trait IntoToolResult {
    /// Converts into a result.
    fn into_tool_result(self) -> ToolResult;
}

impl IntoToolResult for ToolResult {
    fn into_tool_result(self) -> ToolResult {
        self
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::text(self)
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::text(self)
    }
}

impl IntoToolResult for Value {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::ok(self)
    }
}

/// Wraps any serializable value as a structured result ([`ToolResult::ok`]).
#[derive(Clone, Debug)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::ok(self.0)
    }
}

impl<T: IntoToolResult, E: fmt::Display> IntoToolResult for Result<T, E> {
    fn into_tool_result(self) -> ToolResult {
        match self {
            Ok(ok) => ok.into_tool_result(),
            Err(e) => ToolResult::error(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_typed_result_is_its_own_json_as_text_and_as_structured_content() {
        #[derive(Serialize)]
        struct Reading<'a> {
            kind: &'a str,
            value: f32,
            tags: [&'a str; 2],
        }
        let result = ToolResult::ok(Reading { kind: "hr \"rest\"", value: 0.1, tags: ["a", "b"] });
        // The field order is the struct's, and an f32 is written as itself (through a `Value`
        // it became 0.10000000149011612).
        let text = r#"{"kind":"hr \"rest\"","value":0.1,"tags":["a","b"]}"#;
        assert_eq!(result.first_text(), Some(text));
        let mut written = Vec::new();
        result.write_json(&mut written);
        let expected = format!(
            r#"{{"content":[{{"type":"text","text":{}}}],"structuredContent":{text},"isError":false}}"#,
            serde_json::to_string(text).unwrap()
        );
        assert_eq!(String::from_utf8(written).unwrap(), expected);
        let structured = result.structured_content().unwrap();
        assert_eq!(structured.keys().collect::<Vec<_>>(), ["kind", "value", "tags"]);
        assert_eq!(structured["kind"], "hr \"rest\"");
        assert_eq!(structured["tags"], json!(["a", "b"]));
    }

    #[test]
    fn a_result_that_is_not_an_object_is_wrapped_and_one_that_fails_is_an_error() {
        for (value, text) in [
            (json!([1, 2]), r#"{"result":[1,2]}"#),
            (json!("{not json"), r#"{"result":"{not json"}"#),
            (json!(null), r#"{"result":null}"#),
        ] {
            let by_value = ToolResult::ok(&value);
            assert_eq!(by_value.first_text(), Some(text));
            assert_eq!(by_value.structured_content().unwrap()["result"], value);
            assert_eq!(ToolResult::json(value), by_value);
        }
        // A map with keys JSON cannot name.
        let refused = ToolResult::ok(std::collections::BTreeMap::from([((1, 2), "pair")]));
        assert!(refused.is_error());
        assert!(refused.structured_content().is_none());
        assert!(refused.first_text().unwrap().starts_with("The tool's result could not be encoded as JSON"));
    }

    #[test]
    fn results_compare_and_clone_alike_whether_or_not_their_structured_content_was_read() {
        let read = ToolResult::ok(json!({"a": 1}));
        let unread = ToolResult::ok(json!({"a": 1}));
        assert_eq!(read.structured_content().unwrap()["a"], 1);
        assert_eq!(read, unread);
        assert_ne!(read, ToolResult::ok(json!({"a": 2})));
        let copy = unread.clone();
        assert_eq!(copy.structured_content(), read.structured_content());
        assert_eq!(format!("{copy:?}"), format!("{read:?}"));
        assert!(format!("{copy:?}").contains(r#"structured: Some({"a": Number(1)})"#));
    }

    #[test]
    fn written_json_is_byte_for_byte_what_serde_writes() {
        // Every kind of content: tests/registry.rs, `every_content_kind_serializes_as_mcp_defines_it`.
        let meta: Map<String, Value> =
            [("trace".to_owned(), json!({"id": "t-1", "n": [1, 2.5]}))].into_iter().collect();
        let results = [
            ToolResult::json(json!({"echo": "hi", "nested": {"a": null, "b": [true, "\u{1F600}"]}})),
            ToolResult::ok(3),
            ToolResult::text("quotes \" backslash \\ newline \n tab \t bell \u{7} é 日本"),
            ToolResult::error("The tool failed: try again"),
            ToolResult::from_content(Vec::new()),
            ToolResult::text("first").with(Content::text("second")).with_meta(meta.clone()),
            ToolResult::json(json!({"x": 1})).with_meta(meta),
            ToolResult::ok(json!({"typed": [1, {"b": "c"}]})).with(Content::text("more")),
        ];
        for result in &results {
            let mut written = b"prefix:".to_vec();
            result.write_json(&mut written);
            let expected = [b"prefix:".as_slice(), &serde_json::to_vec(result).unwrap()].concat();
            assert_eq!(String::from_utf8(written).unwrap(), String::from_utf8(expected).unwrap());
        }
    }
}
