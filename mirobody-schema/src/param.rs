//! Parameter declarations: the rows of a tool's parameter table.

use std::borrow::Cow;

use serde_json::{Map, Value, json};

/// The JSON type of a parameter, as JSON Schema names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// A JSON string.
    String,
    /// A whole number (`5` or `5.0`; never `"5"`).
    Integer,
    /// Any JSON number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// A JSON array; the element type is [`Param::items`].
    Array,
    /// A JSON object with free-form members.
    Object,
}

impl Type {
    /// The JSON Schema name of the type: `"string"`, `"integer"`, ...
    pub const fn as_str(self) -> &'static str {
        match self {
            Type::String => "string",
            Type::Integer => "integer",
            Type::Number => "number",
            Type::Boolean => "boolean",
            Type::Array => "array",
            Type::Object => "object",
        }
    }

    /// The JSON type name of a value, for error messages (`"null"` for null).
    pub fn name_of(value: &Value) -> &'static str {
        match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
}

impl std::fmt::Display for Type {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One declared parameter of a tool.
///
/// ```
/// use mirobody_schema::{Param, Type};
///
/// let count = Param::optional("count", Type::Integer, "How many readings to return.").default(20);
/// assert!(!count.is_required());
/// assert_eq!(count.default_value(), Some(&serde_json::json!(20)));
///
/// let kind = Param::optional("kind", Type::String, "What to store.").one_of(["fact", "preference"]);
/// assert_eq!(kind.allowed_values().unwrap().len(), 2);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    name: Cow<'static, str>,
    ty: Type,
    required: bool,
    description: Cow<'static, str>,
    items: Type,
    default: Option<Value>,
    allowed: Option<Vec<Value>>,
}

impl Param {
    /// A parameter, in the order of the C++ engine's table: name, type, required, description.
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        ty: Type,
        required: bool,
        description: impl Into<Cow<'static, str>>,
    ) -> Self {
        Param {
            name: name.into(),
            ty,
            required,
            description: description.into(),
            items: Type::String,
            default: None,
            allowed: None,
        }
    }

    /// A parameter the caller must send.
    pub fn required(name: impl Into<Cow<'static, str>>, ty: Type, description: impl Into<Cow<'static, str>>) -> Self {
        Param::new(name, ty, true, description)
    }

    /// A parameter the caller may leave out.
    pub fn optional(name: impl Into<Cow<'static, str>>, ty: Type, description: impl Into<Cow<'static, str>>) -> Self {
        Param::new(name, ty, false, description)
    }

    /// The element type of an array parameter (default: string).
    pub fn items(mut self, items: Type) -> Self {
        self.items = items;
        self
    }

    /// A default, written into the schema and applied when the argument is absent.
    ///
    /// A parameter with a default is optional: the caller never has to send it.
    pub fn default(mut self, value: impl Into<Value>) -> Self {
        self.default = Some(value.into());
        self.required = false;
        self
    }

    /// The values the argument may take (a JSON Schema `enum`). For an array parameter the
    /// values constrain each element.
    pub fn one_of<V: Into<Value>>(mut self, values: impl IntoIterator<Item = V>) -> Self {
        self.allowed = Some(values.into_iter().map(Into::into).collect());
        self
    }

    /// The parameter's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The parameter's type.
    pub fn ty(&self) -> Type {
        self.ty
    }

    /// Whether the caller must send it.
    pub fn is_required(&self) -> bool {
        self.required
    }

    /// What the model reads about this parameter.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The element type, meaningful when [`Param::ty`] is [`Type::Array`].
    pub fn item_type(&self) -> Type {
        self.items
    }

    /// The default applied when the argument is absent.
    pub fn default_value(&self) -> Option<&Value> {
        self.default.as_ref()
    }

    /// The allowed values, if the parameter is an enumeration.
    pub fn allowed_values(&self) -> Option<&[Value]> {
        self.allowed.as_deref()
    }

    /// The parameter's JSON Schema, as MCP and OpenAI read it.
    pub(crate) fn schema(&self) -> Value {
        let mut schema = Map::new();
        schema.insert("type".into(), self.ty.as_str().into());
        if self.ty == Type::Array {
            let mut items = Map::new();
            items.insert("type".into(), self.items.as_str().into());
            if let Some(allowed) = &self.allowed {
                items.insert("enum".into(), Value::Array(allowed.clone()));
            }
            schema.insert("items".into(), Value::Object(items));
        } else if let Some(allowed) = &self.allowed {
            schema.insert("enum".into(), Value::Array(allowed.clone()));
        }
        if !self.description.is_empty() {
            schema.insert("description".into(), json!(self.description));
        }
        if let Some(default) = &self.default {
            schema.insert("default".into(), default.clone());
        }
        Value::Object(schema)
    }
}
