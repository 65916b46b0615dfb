//! Reduces a JSON Schema to the OpenAPI subset that Gemini's `functionDeclarations` accept.
//!
//! Gemini rejects `$schema`, `$ref`/`$defs`, `additionalProperties`, `const`, type arrays, empty
//! `required` lists and objects without properties, so each is rewritten into the nearest
//! shape it accepts rather than dropped silently.

use serde_json::{Map, Value};

// `$ref` chains deeper than this are cut off, so a recursive schema terminates.
const MAX_REF_DEPTH: usize = 8;

// The schema keys Gemini documents; anything else is dropped.
const KEPT: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "items",
    "properties",
    "required",
    "anyOf",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "default",
    "propertyOrdering",
    "example",
];

pub(crate) fn sanitize(schema: &Value) -> Value {
    let defs = schema.get("$defs").or_else(|| schema.get("definitions")).and_then(Value::as_object);
    let mut root = sanitize_node(schema, defs, 0);
    // The root stays an object even without properties; the renderer then omits it.
    if let Value::Object(obj) = &mut root
        && obj.get("type").and_then(Value::as_str) == Some("string")
        && schema.get("type") == Some(&Value::from("object"))
    {
        obj.insert("type".into(), "object".into());
        obj.insert("properties".into(), Value::Object(Map::new()));
        obj.remove("description");
    }
    root
}

/// Whether a sanitized root schema declares no parameters (Gemini wants `parameters` omitted).
pub(crate) fn is_empty_object(schema: &Value) -> bool {
    schema.get("properties").and_then(Value::as_object).is_none_or(Map::is_empty)
}

fn sanitize_node(node: &Value, defs: Option<&Map<String, Value>>, depth: usize) -> Value {
    let Value::Object(obj) = node else { return node.clone() };

    // Inline local references; Gemini has no $ref.
    if let Some(target) = obj.get("$ref").and_then(Value::as_str) {
        let name = target.rsplit('/').next().unwrap_or_default();
        return match defs.and_then(|d| d.get(name)) {
            Some(def) if depth < MAX_REF_DEPTH => {
                let mut merged = sanitize_node(def, defs, depth + 1);
                if let (Value::Object(m), Some(desc)) = (&mut merged, obj.get("description")) {
                    m.insert("description".into(), desc.clone());
                }
                merged
            }
            _ => {
                // Too deep or unresolvable: asked for as encoded JSON, like a free-form object.
                let mut fallback = Map::new();
                fallback.insert("type".into(), "object".into());
                if let Some(desc) = obj.get("description") {
                    fallback.insert("description".into(), desc.clone());
                }
                free_form_object_as_string(&mut fallback);
                Value::Object(fallback)
            }
        };
    }

    let mut out = Map::new();
    let mut all_of = Vec::new();
    for (key, value) in obj {
        match key.as_str() {
            "properties" => {
                let props: Map<String, Value> = value
                    .as_object()
                    .map(|p| p.iter().map(|(k, v)| (k.clone(), sanitize_node(v, defs, depth))).collect())
                    .unwrap_or_default();
                out.insert(key.clone(), Value::Object(props));
            }
            "items" => {
                out.insert(key.clone(), sanitize_node(value, defs, depth));
            }
            "anyOf" | "oneOf" => {
                let options: Vec<Value> = value
                    .as_array()
                    .map(|a| a.iter().map(|v| sanitize_node(v, defs, depth)).collect())
                    .unwrap_or_default();
                out.insert("anyOf".into(), Value::Array(options));
            }
            "allOf" => all_of.extend(value.as_array().into_iter().flatten()),
            "const" => {
                out.insert("enum".into(), Value::Array(vec![value.clone()]));
            }
            "type" => match value {
                Value::Array(types) => {
                    let non_null: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
                    if non_null.len() < types.len() {
                        out.insert("nullable".into(), true.into());
                    }
                    if let Some(first) = non_null.first() {
                        out.insert("type".into(), (*first).clone());
                    }
                }
                other => {
                    out.insert("type".into(), other.clone());
                }
            },
            k if KEPT.contains(&k) => {
                out.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }

    // Merged last, so the result does not depend on key order, and what the node says
    // itself (its description, say) wins over what the parts say.
    for part in all_of {
        if let Value::Object(part) = sanitize_node(part, defs, depth) {
            merge_into(&mut out, part);
        }
    }

    if out.get("required").and_then(Value::as_array).is_some_and(Vec::is_empty) {
        out.remove("required");
    }
    fix_enum(&mut out);
    if out.get("type").and_then(Value::as_str) == Some("object")
        && out.get("properties").and_then(Value::as_object).is_none_or(Map::is_empty)
    {
        free_form_object_as_string(&mut out);
    }
    Value::Object(out)
}

// Gemini enums are strings only; other enums move into the description.
fn fix_enum(out: &mut Map<String, Value>) {
    let Some(Value::Array(values)) = out.get("enum") else { return };
    if values.iter().all(Value::is_string) {
        if out.get("type").and_then(Value::as_str) == Some("string") {
            out.insert("format".into(), "enum".into());
        }
        return;
    }
    let listed: Vec<String> = values.iter().map(ToString::to_string).collect();
    let note = format!("One of: {}.", listed.join(", "));
    out.remove("enum");
    append_description(out, &note);
}

// A free-form object cannot be declared to Gemini ("properties should be non-empty for OBJECT
// type"), so it is asked for as a JSON-encoded string; mirobody's validator decodes it back.
fn free_form_object_as_string(out: &mut Map<String, Value>) {
    out.insert("type".into(), "string".into());
    out.remove("properties");
    out.remove("required");
    if let Some(default) = out.get("default").filter(|d| !d.is_string()) {
        let text = default.to_string();
        out.insert("default".into(), text.into());
    }
    append_description(out, "A JSON object, encoded as a string.");
}

fn append_description(out: &mut Map<String, Value>, note: &str) {
    let text = match out.get("description").and_then(Value::as_str) {
        Some(existing) if !existing.is_empty() => format!("{existing} {note}"),
        _ => note.to_owned(),
    };
    out.insert("description".into(), text.into());
}

fn merge_into(out: &mut Map<String, Value>, part: Map<String, Value>) {
    for (key, value) in part {
        match (key.as_str(), out.get_mut(&key)) {
            ("properties", Some(Value::Object(existing))) => {
                if let Value::Object(more) = value {
                    existing.extend(more);
                }
            }
            ("required", Some(Value::Array(existing))) => {
                if let Value::Array(more) = value {
                    existing.extend(more);
                }
            }
            (_, None) => {
                out.insert(key, value);
            }
            _ => {}
        }
    }
}
