//! One declaration, every provider's shape.

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value, json};

use crate::spec::ToolSpec;

/// The shapes a tool declaration is rendered to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// An MCP `tools/list` entry (protocol 2025-11-25): `name`, `title`, `description`,
    /// `inputSchema`, `outputSchema`, `annotations`, `_meta`.
    Mcp,
    /// OpenAI Chat Completions: `{"type":"function","function":{name, description, parameters}}`.
    OpenAi,
    /// OpenAI Responses (the "simplified" shape): `{"type":"function", name, description,
    /// parameters, "strict": false}`. `strict` is written out because the Responses API treats an
    /// absent `strict` as true, which rejects optional parameters.
    Responses,
    /// A Gemini function declaration: `{name, description, parameters}`, its schema reduced to
    /// the OpenAPI subset Gemini accepts (see [`Format::Gemini`]'s notes in the README). Wrap the
    /// list as `{"tools":[{"functionDeclarations":[...]}]}`.
    Gemini,
    /// An Anthropic Messages tool: `{name, description, input_schema}`.
    Anthropic,
}

impl Format {
    /// Every format, in a fixed order.
    pub const ALL: [Format; 5] = [Format::Mcp, Format::OpenAi, Format::Responses, Format::Gemini, Format::Anthropic];

    /// The format's name, as [`FromStr`] reads it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Format::Mcp => "mcp",
            Format::OpenAi => "openai",
            Format::Responses => "responses",
            Format::Gemini => "gemini",
            Format::Anthropic => "anthropic",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A format name that is not one of [`Format::ALL`].
#[derive(Debug, thiserror::Error)]
#[error("unknown format '{0}': use mcp, openai, responses (or simplified), gemini or anthropic")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "mcp" => Ok(Format::Mcp),
            "openai" | "chat" => Ok(Format::OpenAi),
            "responses" | "simplified" => Ok(Format::Responses),
            "gemini" => Ok(Format::Gemini),
            "anthropic" | "claude" => Ok(Format::Anthropic),
            _ => Err(UnknownFormat(s.to_owned())),
        }
    }
}

impl ToolSpec {
    /// Renders the declaration in one format.
    ///
    /// ```
    /// use mirobody_schema::{Format, ToolSpec};
    ///
    /// let spec = ToolSpec::new("ping", "Answers pong.");
    /// assert_eq!(spec.render(Format::Anthropic)["input_schema"]["type"], "object");
    /// assert_eq!(spec.render(Format::Responses)["strict"], false);
    /// ```
    pub fn render(&self, format: Format) -> Value {
        let name = Value::from(self.name());
        let description = Value::from(self.description());
        match format {
            Format::Mcp => self.mcp_entry(),
            Format::OpenAi => json!({
                "type": "function",
                "function": {"name": name, "description": description, "parameters": self.input_schema()},
            }),
            Format::Responses => json!({
                "type": "function",
                "name": name,
                "description": description,
                "parameters": self.input_schema(),
                "strict": false,
            }),
            Format::Gemini => {
                let parameters = crate::gemini::sanitize(&self.input_schema());
                if crate::gemini::is_empty_object(&parameters) {
                    json!({"name": name, "description": description})
                } else {
                    json!({"name": name, "description": description, "parameters": parameters})
                }
            }
            Format::Anthropic => json!({
                "name": name,
                "description": description,
                "input_schema": self.input_schema(),
            }),
        }
    }

    fn mcp_entry(&self) -> Value {
        let mut entry = Map::new();
        entry.insert("name".into(), self.name().into());
        if let Some(title) = self.title_text() {
            entry.insert("title".into(), title.into());
        }
        entry.insert("description".into(), self.description().into());
        entry.insert("inputSchema".into(), self.input_schema());
        if let Some(output) = self.output_schema_value() {
            entry.insert("outputSchema".into(), output.clone());
        }
        if let Some(annotations) = self.annotation_hints().to_json() {
            entry.insert("annotations".into(), annotations);
        }
        if self.task_support_level() != crate::TaskSupport::Forbidden {
            entry.insert("execution".into(), json!({"taskSupport": self.task_support_level().as_str()}));
        }
        if let Some(meta) = self.meta_value() {
            entry.insert("_meta".into(), Value::Object(meta.clone()));
        }
        Value::Object(entry)
    }
}
