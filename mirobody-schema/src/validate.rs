//! Argument validation: a direct walk over a parameter table, or a compiled JSON Schema for a
//! verbatim schema. Built once per tool; run on every call.

use std::fmt;

use serde_json::{Map, Value};

use crate::param::{Param, Type};

/// Checks a call's arguments against a tool's declaration, filling in defaults.
///
/// Made by [`ToolSpec::validator`](crate::ToolSpec::validator).
pub struct Validator {
    kind: Kind,
}

enum Kind {
    Params(Vec<Param>),
    // Boxed: a compiled schema is large and rare next to parameter tables.
    Schema { compiled: Box<jsonschema::Validator>, raw: Box<Value> },
}

impl fmt::Debug for Validator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Params(params) => f.debug_tuple("Validator::Params").field(&params.len()).finish(),
            Kind::Schema { .. } => f.write_str("Validator::Schema"),
        }
    }
}

/// One thing wrong with a call's arguments.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ArgProblem {
    /// `arguments` was not a JSON object.
    NotAnObject {
        /// The JSON type that was sent.
        got: &'static str,
    },
    /// A required argument is absent (or null).
    Missing {
        /// The parameter.
        name: String,
        /// Its type.
        expected: Type,
        /// Its description, to tell the model what to send.
        description: String,
    },
    /// An argument has the wrong JSON type.
    WrongType {
        /// The parameter.
        name: String,
        /// The declared type.
        expected: Type,
        /// The type that was sent.
        got: &'static str,
    },
    /// An element of an array argument has the wrong type.
    WrongItemType {
        /// The parameter.
        name: String,
        /// The element's index.
        index: usize,
        /// The declared element type.
        expected: Type,
        /// The type that was sent.
        got: &'static str,
    },
    /// A value outside the declared enumeration.
    NotAllowed {
        /// The parameter.
        name: String,
        /// The value that was sent.
        value: Value,
        /// The values accepted.
        allowed: Vec<Value>,
    },
    /// An argument the tool does not declare.
    Unknown {
        /// The name that was sent.
        name: String,
        /// The names the tool accepts.
        known: Vec<String>,
    },
    /// A verbatim schema rejected the arguments.
    Schema {
        /// Where, as a JSON pointer into the arguments (`""` for the root).
        path: String,
        /// The schema validator's message.
        message: String,
    },
}

impl fmt::Display for ArgProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgProblem::NotAnObject { got } => {
                write!(f, "arguments must be a JSON object of named arguments, not {got}")
            }
            ArgProblem::Missing { name, expected, description } => {
                write!(f, "missing required argument '{name}' ({expected})")?;
                let description = description.trim_end_matches('.');
                if !description.is_empty() {
                    write!(f, ": {description}")?;
                }
                Ok(())
            }
            ArgProblem::WrongType { name, expected, got } => {
                write!(f, "argument '{name}' must be {} {expected}, not {got}", article(*expected))
            }
            ArgProblem::WrongItemType { name, index, expected, got } => {
                write!(f, "argument '{name}'[{index}] must be {} {expected}, not {got}", article(*expected))
            }
            ArgProblem::NotAllowed { name, value, allowed } => {
                write!(f, "argument '{name}' is {value}, but must be one of ")?;
                write_list(f, allowed.iter().map(ToString::to_string))
            }
            ArgProblem::Unknown { name, known } => {
                write!(f, "unknown argument '{name}'; ")?;
                if known.is_empty() {
                    f.write_str("this tool takes no arguments")
                } else {
                    f.write_str("the arguments are ")?;
                    write_list(f, known.iter().map(|k| format!("'{k}'")))
                }
            }
            ArgProblem::Schema { path, message } if path.is_empty() => write!(f, "{message}"),
            ArgProblem::Schema { path, message } => write!(f, "at {path}: {message}"),
        }
    }
}

fn article(ty: Type) -> &'static str {
    match ty {
        Type::Integer | Type::Array | Type::Object => "an",
        _ => "a",
    }
}

fn write_list(f: &mut fmt::Formatter<'_>, items: impl Iterator<Item = String>) -> fmt::Result {
    let items: Vec<String> = items.collect();
    f.write_str(&items.join(", "))
}

/// Every problem with a call's arguments, phrased for the model to fix its call.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub struct InvalidArguments {
    /// The problems, in parameter order.
    pub problems: Vec<ArgProblem>,
}

impl fmt::Display for InvalidArguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Invalid arguments: ")?;
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{problem}")?;
        }
        f.write_str(". Fix the arguments and call the tool again.")
    }
}

impl Validator {
    pub(crate) fn from_params(params: &[Param]) -> Self {
        Validator { kind: Kind::Params(params.to_vec()) }
    }

    pub(crate) fn from_schema(schema: &Value) -> Result<Self, String> {
        let compiled = jsonschema::validator_for(schema).map_err(|e| e.to_string())?;
        Ok(Validator { kind: Kind::Schema { compiled: Box::new(compiled), raw: Box::new(schema.clone()) } })
    }

    /// Validates `args` in place: applies declared defaults to absent arguments, turns a
    /// whole-valued float into an integer for integer parameters, and decodes a JSON-encoded
    /// object sent for an object parameter (Gemini cannot declare free-form objects, see
    /// [`Format::Gemini`](crate::Format::Gemini)). On error nothing the caller sent is lost:
    /// every problem is reported at once.
    pub fn validate(&self, args: &mut Map<String, Value>) -> Result<(), InvalidArguments> {
        let problems = match &self.kind {
            Kind::Params(params) => validate_params(params, args),
            Kind::Schema { compiled: schema, raw } => {
                decode_encoded_objects(raw, args);
                let instance = Value::Object(std::mem::take(args));
                let problems = schema
                    .iter_errors(&instance)
                    .map(|e| ArgProblem::Schema { path: e.instance_path().to_string(), message: e.to_string() })
                    .collect();
                if let Value::Object(map) = instance {
                    *args = map;
                }
                problems
            }
        };
        if problems.is_empty() { Ok(()) } else { Err(InvalidArguments { problems }) }
    }
}

fn validate_params(params: &[Param], args: &mut Map<String, Value>) -> Vec<ArgProblem> {
    let mut problems = Vec::new();
    // How many of the keys left in `args` are declared parameters, counted on the way rather
    // than looked up again: one lookup a parameter on every call.
    let mut declared = 0;
    for param in params {
        let name = param.name();
        match args.get_mut(name) {
            Some(value) if !value.is_null() => {
                check_value(param, value, &mut problems);
                declared += 1;
            }
            sent => {
                let sent_null = sent.is_some();
                if let Some(default) = param.default_value() {
                    args.insert(name.to_owned(), default.clone());
                    declared += 1;
                } else if param.is_required() {
                    problems.push(ArgProblem::Missing {
                        name: name.to_owned(),
                        expected: param.ty(),
                        description: param.description().to_owned(),
                    });
                    // A null sent for it stays, reported as missing.
                    declared += usize::from(sent_null);
                } else if sent_null {
                    // An explicit null for an optional argument means "absent".
                    args.remove(name);
                }
            }
        }
    }
    // Cheap common case: every key present is a declared parameter.
    if args.len() > declared {
        for key in args.keys() {
            if !params.iter().any(|p| p.name() == key) {
                problems.push(ArgProblem::Unknown {
                    name: key.clone(),
                    known: params.iter().map(|p| p.name().to_owned()).collect(),
                });
            }
        }
    }
    problems
}

fn check_value(param: &Param, value: &mut Value, problems: &mut Vec<ArgProblem>) {
    let name = param.name();
    coerce(param.ty(), value);
    if !has_type(value, param.ty()) {
        problems.push(ArgProblem::WrongType { name: name.to_owned(), expected: param.ty(), got: Type::name_of(value) });
        return;
    }
    if let Value::Array(items) = value {
        for (index, item) in items.iter_mut().enumerate() {
            coerce(param.item_type(), item);
            if !has_type(item, param.item_type()) {
                problems.push(ArgProblem::WrongItemType {
                    name: name.to_owned(),
                    index,
                    expected: param.item_type(),
                    got: Type::name_of(item),
                });
            } else if let Some(allowed) = param.allowed_values()
                && !allowed.iter().any(|a| same_value(a, item))
            {
                problems.push(not_allowed(param, item.clone(), allowed));
            }
        }
    } else if let Some(allowed) = param.allowed_values()
        && !allowed.iter().any(|a| same_value(a, value))
    {
        problems.push(not_allowed(param, value.clone(), allowed));
    }
}

fn not_allowed(param: &Param, value: Value, allowed: &[Value]) -> ArgProblem {
    ArgProblem::NotAllowed { name: param.name().to_owned(), value, allowed: allowed.to_vec() }
}

/// Numbers compare by value: 5 and 5.0 are the same JSON Schema value.
pub(crate) fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

// The only conversions made: ones that keep the meaning of what was sent.
fn coerce(ty: Type, value: &mut Value) {
    match (ty, &*value) {
        (Type::Integer, Value::Number(n)) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() < 9.007_199_254_740_992e15
            {
                // Exact: the float is a whole number well inside i64.
                *value = Value::from(f as i64);
            }
        }
        (Type::Object, Value::String(s)) if s.trim_start().starts_with('{') => {
            if let Ok(decoded @ Value::Object(_)) = serde_json::from_str::<Value>(s) {
                *value = decoded;
            }
        }
        _ => {}
    }
}

// Gemini is asked for every free-form object as a JSON-encoded string (see `gemini.rs`);
// decode such strings wherever the schema's `properties` declare an object.
fn decode_encoded_objects(schema: &Value, args: &mut Map<String, Value>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return };
    for (name, property) in properties {
        let Some(value) = args.get_mut(name) else { continue };
        if property.get("type").and_then(Value::as_str) == Some("object") {
            coerce(Type::Object, value);
            if let Value::Object(inner) = value {
                decode_encoded_objects(property, inner);
            }
        }
    }
}

/// Whether `value` has JSON type `ty` (integers are numbers too).
pub(crate) fn has_type(value: &Value, ty: Type) -> bool {
    match ty {
        Type::String => value.is_string(),
        Type::Integer => value.is_i64() || value.is_u64(),
        Type::Number => value.is_number(),
        Type::Boolean => value.is_boolean(),
        Type::Array => value.is_array(),
        Type::Object => value.is_object(),
    }
}
