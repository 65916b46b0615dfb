//! What a tool returns: content for the model, structured data for programs, an error flag.

use std::fmt;

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
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolResult {
    content: Vec<Content>,
    #[serde(rename = "structuredContent", skip_serializing_if = "Option::is_none")]
    structured: Option<Map<String, Value>>,
    #[serde(rename = "isError")]
    is_error: bool,
    // Boxed: few results carry it, and a result moves through several futures on its way out
    // (past 128 bytes, each move is a call to memcpy).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Box<Map<String, Value>>>,
}

impl ToolResult {
    /// A successful result carrying JSON: structured content plus the same JSON as text.
    /// A value that cannot be serialized gives an error result.
    pub fn ok(value: impl Serialize) -> Self {
        match serde_json::to_value(value) {
            Ok(value) => ToolResult::json(value),
            Err(e) => ToolResult::error(format!("The tool's result could not be encoded as JSON: {e}")),
        }
    }

    /// A successful result from JSON already built (with `json!`, say): [`ok`](ToolResult::ok)
    /// without copying the value. An object is the structured content as it is; anything else
    /// is wrapped as `{"result": ...}`.
    ///
    /// ```
    /// use mirobody_core::ToolResult;
    /// use serde_json::json;
    ///
    /// let result = ToolResult::json(json!({"echo": "hi"}));
    /// assert_eq!(result, ToolResult::ok(json!({"echo": "hi"})));
    /// assert_eq!(result.first_text(), Some(r#"{"echo":"hi"}"#));
    /// assert_eq!(ToolResult::json(json!(3)).structured_content().unwrap()["result"], 3);
    /// ```
    pub fn json(value: Value) -> Self {
        ToolResult::structured(into_object(value))
    }

    /// A successful result from a JSON object.
    pub fn structured(object: Map<String, Value>) -> Self {
        // Serializing a Map of Values cannot fail.
        let text = serde_json::to_string(&object).unwrap_or_default();
        ToolResult { content: vec![Content::text(text)], structured: Some(object), is_error: false, meta: None }
    }

    /// A failed result: the message is for the model, so say what to do next.
    pub fn error(message: impl Into<String>) -> Self {
        ToolResult { content: vec![Content::text(message)], structured: None, is_error: true, meta: None }
    }

    /// A successful result of plain text.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult::from_content(vec![Content::text(text)])
    }

    /// A successful result of the given content blocks.
    pub fn from_content(content: Vec<Content>) -> Self {
        ToolResult { content, structured: None, is_error: false, meta: None }
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

    /// The content blocks.
    pub fn content(&self) -> &[Content] {
        &self.content
    }

    /// The structured content, if any.
    pub fn structured_content(&self) -> Option<&Map<String, Value>> {
        self.structured.as_ref()
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
    /// through serde's escaping on every call (2% of the instructions of a `tools/call`).
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
                    write_value(out, text);
                    out.push(b'}');
                }
                other => write_value(out, other),
            }
        }
        out.push(b']');
        if let Some(structured) = &self.structured {
            out.extend_from_slice(br#","structuredContent":"#);
            write_value(out, structured);
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
        ];
        for result in &results {
            let mut written = b"prefix:".to_vec();
            result.write_json(&mut written);
            let expected = [b"prefix:".as_slice(), &serde_json::to_vec(result).unwrap()].concat();
            assert_eq!(String::from_utf8(written).unwrap(), String::from_utf8(expected).unwrap());
        }
    }
}
