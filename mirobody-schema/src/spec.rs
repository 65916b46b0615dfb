//! The declaration of a tool: everything a model sees of it.

use std::borrow::Cow;
use std::collections::HashSet;

use serde_json::{Map, Value, json};

use crate::param::{Param, Type};
use crate::validate::Validator;

/// The longest tool or parameter name accepted (the limit of OpenAI, Anthropic and the MCP
/// conformance suite).
pub const MAX_NAME_LEN: usize = 64;

/// Hints that tell a client what a tool does, so it can ask before a write.
///
/// MCP's defaults assume the worst (may write, may destroy, not idempotent, reaches outside);
/// a hint left unset is rendered as absent and so means that default.
///
/// ```
/// use mirobody_schema::Annotations;
///
/// let read = Annotations::read_only();
/// assert_eq!(read.read_only_hint, Some(true));
/// let write = Annotations::additive().idempotent(false);
/// assert_eq!(write.destructive_hint, Some(false));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Annotations {
    /// A display name for the tool.
    pub title: Option<Cow<'static, str>>,
    /// The tool changes nothing.
    pub read_only_hint: Option<bool>,
    /// A write may destroy or overwrite data (meaningful when not read-only).
    pub destructive_hint: Option<bool>,
    /// Calling again with the same arguments has no further effect.
    pub idempotent_hint: Option<bool>,
    /// The tool reaches an open world (the web, other people) beyond the server's own data.
    pub open_world_hint: Option<bool>,
}

impl Annotations {
    /// A tool that only reads the server's own data.
    pub fn read_only() -> Self {
        Annotations { read_only_hint: Some(true), open_world_hint: Some(false), ..Annotations::default() }
    }

    /// A tool that adds data without destroying any.
    pub fn additive() -> Self {
        Annotations {
            read_only_hint: Some(false),
            destructive_hint: Some(false),
            open_world_hint: Some(false),
            ..Annotations::default()
        }
    }

    /// A tool that may overwrite or delete data.
    pub fn destructive() -> Self {
        Annotations {
            read_only_hint: Some(false),
            destructive_hint: Some(true),
            open_world_hint: Some(false),
            ..Annotations::default()
        }
    }

    /// Sets the display title.
    pub fn title(mut self, title: impl Into<Cow<'static, str>>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the idempotent hint.
    pub fn idempotent(mut self, yes: bool) -> Self {
        self.idempotent_hint = Some(yes);
        self
    }

    /// Sets the open-world hint.
    pub fn open_world(mut self, yes: bool) -> Self {
        self.open_world_hint = Some(yes);
        self
    }

    fn is_empty(&self) -> bool {
        *self == Annotations::default()
    }

    pub(crate) fn to_json(&self) -> Option<Value> {
        if self.is_empty() {
            return None;
        }
        let mut out = Map::new();
        let mut put = |key: &str, value: Option<Value>| {
            if let Some(value) = value {
                out.insert(key.into(), value);
            }
        };
        put("title", self.title.as_deref().map(Value::from));
        put("readOnlyHint", self.read_only_hint.map(Value::from));
        put("destructiveHint", self.destructive_hint.map(Value::from));
        put("idempotentHint", self.idempotent_hint.map(Value::from));
        put("openWorldHint", self.open_world_hint.map(Value::from));
        Some(Value::Object(out))
    }
}

/// A declaration that cannot be served, found when the tool is checked or registered.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpecError {
    /// The tool name is empty, too long, or has characters some model provider rejects.
    #[error("invalid tool name '{0}': use 1 to {MAX_NAME_LEN} of A-Z a-z 0-9 _ -, starting with a letter or _")]
    InvalidToolName(String),
    /// A parameter name is empty, too long, or has characters some provider rejects.
    #[error("tool '{tool}': invalid parameter name '{param}': use 1 to {MAX_NAME_LEN} of A-Z a-z 0-9 _ . -")]
    InvalidParamName {
        /// The tool.
        tool: String,
        /// The parameter.
        param: String,
    },
    /// Two parameters share a name.
    #[error("tool '{tool}': parameter '{param}' is declared twice")]
    DuplicateParam {
        /// The tool.
        tool: String,
        /// The parameter.
        param: String,
    },
    /// A parameter is named `user_id`: identity must never come from arguments.
    #[error(
        "tool '{tool}': a parameter may not be named 'user_id'. The caller's identity comes from \
         the verified credentials in UserInfo (user.user_id()), never from arguments a model \
         can forge; mark the tool auth and read the user from there"
    )]
    ReservedUserId {
        /// The tool.
        tool: String,
    },
    /// A default or an allowed value does not have the parameter's type.
    #[error("tool '{tool}': parameter '{param}': {problem}")]
    BadParamValue {
        /// The tool.
        tool: String,
        /// The parameter.
        param: String,
        /// What is wrong.
        problem: String,
    },
    /// A verbatim input schema is not an object schema, or does not compile.
    #[error("tool '{tool}': invalid input schema: {problem}")]
    InvalidInputSchema {
        /// The tool.
        tool: String,
        /// What is wrong.
        problem: String,
    },
    /// An output schema is not an object schema.
    #[error("tool '{tool}': invalid output schema: {problem}")]
    InvalidOutputSchema {
        /// The tool.
        tool: String,
        /// What is wrong.
        problem: String,
    },
}

/// Everything a model sees of one tool.
///
/// ```
/// use mirobody_schema::{Annotations, Param, ToolSpec, Type};
///
/// let spec = ToolSpec::new("remember", "Store a fact about the user for later turns.")
///     .param(Param::required("text", Type::String, "The fact, in one sentence."))
///     .param(Param::optional("kind", Type::String, "fact, preference or episode.").default("fact"))
///     .annotations(Annotations::additive());
/// assert_eq!(spec.input_schema()["required"], serde_json::json!(["text"]));
/// assert_eq!(spec.input_schema()["properties"]["kind"]["default"], "fact");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    name: Cow<'static, str>,
    title: Option<Cow<'static, str>>,
    description: Cow<'static, str>,
    params: Vec<Param>,
    raw_input_schema: Option<Value>,
    output_schema: Option<Value>,
    annotations: Annotations,
    meta: Option<Map<String, Value>>,
    task_support: TaskSupport,
}

/// Whether a call of the tool may run as a task (MCP `execution.taskSupport`): answered at
/// once with a handle the client polls, fetches the result from later, or cancels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never a task: the call is answered when it finishes (the default).
    #[default]
    Forbidden,
    /// A task when the client negotiated tasks and the call takes long; answered directly
    /// otherwise.
    Optional,
    /// Only as a task: a client that did not negotiate tasks is refused.
    Required,
}

impl TaskSupport {
    /// Its name on the wire (`forbidden`, `optional`, `required`).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

impl ToolSpec {
    /// A tool with a name and a description and no parameters yet.
    pub fn new(name: impl Into<Cow<'static, str>>, description: impl Into<Cow<'static, str>>) -> Self {
        ToolSpec {
            name: name.into(),
            title: None,
            description: description.into(),
            params: Vec::new(),
            raw_input_schema: None,
            output_schema: None,
            annotations: Annotations::default(),
            meta: None,
            task_support: TaskSupport::Forbidden,
        }
    }

    /// Adds a parameter.
    pub fn param(mut self, param: Param) -> Self {
        self.params.push(param);
        self
    }

    /// Adds parameters.
    pub fn params(mut self, params: impl IntoIterator<Item = Param>) -> Self {
        self.params.extend(params);
        self
    }

    /// A display title (MCP `title`).
    pub fn title(mut self, title: impl Into<Cow<'static, str>>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// A verbatim input schema, served as-is everywhere and used to validate arguments; for
    /// nested arguments a parameter table cannot express. It replaces the parameter table.
    pub fn raw_input_schema(mut self, schema: Value) -> Self {
        self.raw_input_schema = Some(schema);
        self
    }

    /// The schema of the tool's structured results (MCP `outputSchema`).
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// What the tool does to data.
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// MCP `_meta` for the tool (for example a ChatGPT widget template).
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(meta);
        self
    }

    /// Whether a call may run as a task (MCP `execution.taskSupport`, rendered when not
    /// [`TaskSupport::Forbidden`]).
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.task_support = support;
        self
    }

    /// Whether a call may run as a task.
    pub fn task_support_level(&self) -> TaskSupport {
        self.task_support
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The display title, if any.
    pub fn title_text(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// What the model reads about the tool.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The parameter table (empty when a raw schema is used).
    pub fn param_list(&self) -> &[Param] {
        &self.params
    }

    /// The verbatim input schema, if one was given.
    pub fn raw_schema(&self) -> Option<&Value> {
        self.raw_input_schema.as_ref()
    }

    /// The output schema, if one was given.
    pub fn output_schema_value(&self) -> Option<&Value> {
        self.output_schema.as_ref()
    }

    /// The annotations.
    pub fn annotation_hints(&self) -> &Annotations {
        &self.annotations
    }

    /// The `_meta` object, if any.
    pub fn meta_value(&self) -> Option<&Map<String, Value>> {
        self.meta.as_ref()
    }

    /// The input schema: the verbatim one if given, else generated from the parameter table.
    ///
    /// A generated schema lists every parameter under `properties`, names the required ones
    /// (omitting an empty `required`, which Gemini rejects), and sets
    /// `additionalProperties: false`, because unknown arguments are refused.
    pub fn input_schema(&self) -> Value {
        if let Some(raw) = &self.raw_input_schema {
            return raw.clone();
        }
        let mut properties = Map::new();
        let mut required = Vec::new();
        for param in &self.params {
            properties.insert(param.name().to_owned(), param.schema());
            if param.is_required() {
                required.push(Value::from(param.name()));
            }
        }
        let mut schema = Map::new();
        schema.insert("type".into(), "object".into());
        schema.insert("properties".into(), Value::Object(properties));
        if !required.is_empty() {
            schema.insert("required".into(), Value::Array(required));
        }
        schema.insert("additionalProperties".into(), false.into());
        Value::Object(schema)
    }

    /// Checks that the declaration can be served: names, duplicate parameters, the reserved
    /// `user_id`, defaults and allowed values of the right type, object schemas.
    pub fn check(&self) -> Result<(), SpecError> {
        self.validator().map(drop)
    }

    /// Checks the declaration and builds the validator for its arguments (done once, when a
    /// registry is built).
    pub fn validator(&self) -> Result<Validator, SpecError> {
        let tool = || self.name.to_string();
        if !valid_tool_name(&self.name) {
            return Err(SpecError::InvalidToolName(tool()));
        }
        let mut seen = HashSet::new();
        for param in &self.params {
            if param.name() == "user_id" {
                return Err(SpecError::ReservedUserId { tool: tool() });
            }
            if !valid_param_name(param.name()) {
                return Err(SpecError::InvalidParamName { tool: tool(), param: param.name().into() });
            }
            if !seen.insert(param.name()) {
                return Err(SpecError::DuplicateParam { tool: tool(), param: param.name().into() });
            }
            check_param_values(param).map_err(|problem| SpecError::BadParamValue {
                tool: tool(),
                param: param.name().into(),
                problem,
            })?;
        }
        if let Some(schema) = &self.output_schema
            && schema.get("type") != Some(&json!("object"))
        {
            return Err(SpecError::InvalidOutputSchema {
                tool: tool(),
                problem: "the root must be {\"type\": \"object\", ...}".into(),
            });
        }
        match &self.raw_input_schema {
            None => Ok(Validator::from_params(&self.params)),
            Some(schema) => {
                if !self.params.is_empty() {
                    return Err(SpecError::InvalidInputSchema {
                        tool: tool(),
                        problem: "a verbatim schema replaces the parameter table; declare one or the other".into(),
                    });
                }
                if schema.get("type") != Some(&json!("object")) {
                    return Err(SpecError::InvalidInputSchema {
                        tool: tool(),
                        problem: "the root must be {\"type\": \"object\", ...}".into(),
                    });
                }
                if let Some(props) = schema.get("properties").and_then(Value::as_object)
                    && props.contains_key("user_id")
                {
                    return Err(SpecError::ReservedUserId { tool: tool() });
                }
                Validator::from_schema(schema)
                    .map_err(|problem| SpecError::InvalidInputSchema { tool: tool(), problem })
            }
        }
    }
}

fn valid_tool_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && name.len() <= MAX_NAME_LEN
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn valid_param_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

fn check_param_values(param: &Param) -> Result<(), String> {
    let element = if param.ty() == Type::Array { param.item_type() } else { param.ty() };
    if let Some(allowed) = param.allowed_values() {
        if allowed.is_empty() {
            return Err("the list of allowed values is empty".into());
        }
        if let Some(bad) = allowed.iter().find(|v| !crate::validate::has_type(v, element)) {
            return Err(format!("allowed value {bad} is not of type {element}"));
        }
    }
    if let Some(default) = param.default_value() {
        if !crate::validate::has_type(default, param.ty()) {
            return Err(format!("default {default} is not of type {}", param.ty()));
        }
        if let Some(allowed) = param.allowed_values() {
            let elements: Vec<&Value> = match default {
                Value::Array(items) if param.ty() == Type::Array => items.iter().collect(),
                other => vec![other],
            };
            if let Some(bad) = elements.iter().find(|v| !allowed.iter().any(|a| crate::validate::same_value(a, v))) {
                return Err(format!("default {bad} is not one of the allowed values"));
            }
        }
    }
    Ok(())
}
