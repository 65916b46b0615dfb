//! Tool arguments mirrored into `Mcp-Param-*` headers (`x-mcp-header` in a schema).

use std::collections::HashSet;

use serde_json::Value;

/// A tool argument mirrored into an `Mcp-Param-*` header (`x-mcp-header` in its schema).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HeaderParam {
    /// The header's name (`mcp-param-region`).
    pub(crate) header: http::HeaderName,
    /// The header's name as declared (`Mcp-Param-Region`).
    pub(crate) display: String,
    /// The chain of `properties` keys to the argument.
    pub(crate) path: Vec<String>,
    /// The argument's JSON Schema type: `string`, `integer` or `boolean`.
    pub(crate) kind: String,
}

// The JSON Schema keywords whose values are subschemas, by shape; `properties` alone keeps a
// property reachable for `x-mcp-header`.
pub(crate) const SUBSCHEMA: [&str; 11] = [
    "items",
    "contains",
    "unevaluatedItems",
    "additionalProperties",
    "propertyNames",
    "unevaluatedProperties",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];
pub(crate) const SUBSCHEMA_LISTS: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];
pub(crate) const SUBSCHEMA_MAPS: [&str; 4] = ["patternProperties", "dependentSchemas", "$defs", "definitions"];

pub(crate) fn is_token(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The `x-mcp-header` arguments of an input schema; `None` when an annotation is invalid (not
/// on a property reached by `properties` alone, not a token, not on a string, integer or
/// boolean, or a duplicate), in which case clients drop the tool and nothing is checked.
pub(crate) fn header_params_of(schema: &Value) -> Option<Vec<HeaderParam>> {
    let mut found = Vec::new();
    let mut seen = HashSet::new();
    let mut stack: Vec<(Option<Vec<String>>, &Value)> = vec![(Some(Vec::new()), schema)];
    while let Some((path, node)) = stack.pop() {
        let Some(object) = node.as_object() else { continue };
        if let Some(token) = object.get("x-mcp-header") {
            let path = path.clone().filter(|p| !p.is_empty())?;
            let token = token.as_str().filter(|t| is_token(t))?;
            let kind = object
                .get("type")
                .and_then(Value::as_str)
                .filter(|t| matches!(*t, "string" | "integer" | "boolean"))?;
            let display = format!("Mcp-Param-{token}");
            // A token always makes a valid header name.
            let header = http::HeaderName::from_bytes(display.to_ascii_lowercase().as_bytes()).ok()?;
            if !seen.insert(header.clone()) {
                return None;
            }
            found.push(HeaderParam { header, display, path, kind: kind.to_owned() });
        }
        for (keyword, value) in object {
            if keyword == "properties" {
                if let Some(properties) = value.as_object() {
                    for (name, sub) in properties {
                        let sub_path = path.as_ref().map(|p| {
                            let mut p = p.clone();
                            p.push(name.clone());
                            p
                        });
                        stack.push((sub_path, sub));
                    }
                }
            } else if SUBSCHEMA.contains(&keyword.as_str()) {
                stack.push((None, value));
            } else if SUBSCHEMA_LISTS.contains(&keyword.as_str()) {
                stack.extend(value.as_array().into_iter().flatten().map(|sub| (None, sub)));
            } else if SUBSCHEMA_MAPS.contains(&keyword.as_str()) {
                stack.extend(value.as_object().into_iter().flat_map(|m| m.values()).map(|sub| (None, sub)));
            }
        }
    }
    found.sort_by(|a, b| a.header.as_str().cmp(b.header.as_str()));
    Some(found)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn header_params_follow_properties_only() {
        let schema = json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "nested": {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}},
                "query": {"type": "string"},
            },
        });
        let params = header_params_of(&schema).unwrap();
        let names: Vec<&str> = params.iter().map(|p| p.display.as_str()).collect();
        assert_eq!(names, ["Mcp-Param-N", "Mcp-Param-Region"]);
        assert_eq!(params[0].path, ["nested", "n"]);
        let under_items =
            json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}});
        assert_eq!(header_params_of(&under_items), None);
        let number = json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}});
        assert_eq!(header_params_of(&number), None);
        let duplicate = json!({"properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}});
        assert_eq!(header_params_of(&duplicate), None);
        assert_eq!(header_params_of(&json!({"type": "object"})), Some(vec![]));
    }
}
