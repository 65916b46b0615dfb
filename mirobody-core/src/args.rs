//! A tool's arguments, already validated against its declaration.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::result::ToolError;

/// The arguments of one call: a JSON object, validated and with defaults applied before the
/// handler sees it, so a declared parameter always has its declared type.
///
/// The typed accessors mirror the C++ engine's and never fail: an absent argument gives the
/// default passed in. [`Args::parse`] reads the whole object into a struct.
///
/// ```
/// use mirobody_core::Args;
/// use serde_json::json;
///
/// let args = Args::from_value(json!({"text": "hi", "count": 3, "tags": ["a", "b"]})).unwrap();
/// assert_eq!(args.str("text"), Some("hi"));
/// assert_eq!(args.integer("count", 20), 3);
/// assert_eq!(args.integer("missing", 20), 20);
/// assert_eq!(args.string_array("tags"), ["a", "b"]);
///
/// #[derive(serde::Deserialize)]
/// struct Input { text: String, count: u32 }
/// let input: Input = args.parse().unwrap();
/// assert_eq!((input.text.as_str(), input.count), ("hi", 3));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Args(Map<String, Value>);

impl Args {
    /// Arguments from a JSON object.
    pub fn new(map: Map<String, Value>) -> Self {
        Args(map)
    }

    /// Arguments from any JSON value: an object as itself, null as no arguments; anything else
    /// is refused with the type that was sent.
    pub fn from_value(value: Value) -> Result<Self, &'static str> {
        match value {
            Value::Object(map) => Ok(Args(map)),
            Value::Null => Ok(Args::default()),
            other => Err(mirobody_schema::Type::name_of(&other)),
        }
    }

    /// Whether the argument is present (even as null).
    pub fn has(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    /// The raw value of one argument.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// A string argument.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    /// A string argument, or `default` when absent.
    pub fn str_or<'a>(&'a self, key: &str, default: &'a str) -> &'a str {
        self.str(key).unwrap_or(default)
    }

    /// An integer argument, or `default` when absent or not an integer.
    pub fn integer(&self, key: &str, default: i64) -> i64 {
        self.0.get(key).and_then(Value::as_i64).unwrap_or(default)
    }

    /// A number argument, or `default` when absent or not a number.
    pub fn number(&self, key: &str, default: f64) -> f64 {
        self.0.get(key).and_then(Value::as_f64).unwrap_or(default)
    }

    /// A boolean argument, or `default` when absent or not a boolean.
    pub fn boolean(&self, key: &str, default: bool) -> bool {
        self.0.get(key).and_then(Value::as_bool).unwrap_or(default)
    }

    /// The strings of an array argument (empty when absent).
    pub fn string_array(&self, key: &str) -> Vec<&str> {
        self.0
            .get(key)
            .and_then(Value::as_array)
            .map(|items| items.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// The whole argument object.
    pub fn raw(&self) -> &Map<String, Value> {
        &self.0
    }

    /// The whole argument object, owned.
    pub fn into_inner(self) -> Map<String, Value> {
        self.0
    }

    /// Reads the arguments into a struct; an error names what did not fit.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, ToolError> {
        T::deserialize(&Value::Object(self.0.clone())).map_err(|e| ToolError::new(format!("Invalid arguments: {e}")))
    }
}

impl From<Map<String, Value>> for Args {
    fn from(map: Map<String, Value>) -> Self {
        Args(map)
    }
}
