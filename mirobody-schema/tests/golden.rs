//! Golden-file tests: representative tool declarations rendered in every `Format`, compared
//! with `tests/golden/<tool>.<format>.json`. Run with `UPDATE_GOLDEN=1` to rewrite the files
//! (then read the diff: a golden file is only as good as the review it got).

use std::path::PathBuf;

use mirobody_schema::{Annotations, Format, Param, ToolSpec, Type};
use serde_json::{Map, Value, json};

// ---------------------------------------------------------------------------------------------
// The golden tools
// ---------------------------------------------------------------------------------------------

fn no_params() -> ToolSpec {
    ToolSpec::new("ping", "Answers pong. Call it to check that the server is up.")
}

fn every_type() -> ToolSpec {
    ToolSpec::new("every_type", "Takes one parameter of every JSON type.").params([
        Param::required("text", Type::String, "Some text."),
        Param::required("count", Type::Integer, "A whole number."),
        Param::optional("ratio", Type::Number, "Any number."),
        Param::optional("verbose", Type::Boolean, "Whether to explain."),
        Param::optional("tags", Type::Array, "Labels to attach."),
        Param::optional("options", Type::Object, "Free-form options."),
    ])
}

fn arrays() -> ToolSpec {
    ToolSpec::new("arrays", "Takes arrays of strings and of integers.").params([
        Param::required("names", Type::Array, "Names to look up.").items(Type::String),
        Param::optional("ids", Type::Array, "Record ids.").items(Type::Integer),
    ])
}

fn enums() -> ToolSpec {
    ToolSpec::new("enums", "Takes enumerated values.").params([
        Param::required("kind", Type::String, "What to store.").one_of(["fact", "preference", "episode"]),
        Param::optional("channels", Type::Array, "Where to send it.")
            .items(Type::String)
            .one_of(["email", "sms", "push"]),
        Param::optional("level", Type::Integer, "Detail level.").one_of([1, 2, 3]),
    ])
}

fn defaults() -> ToolSpec {
    ToolSpec::new("defaults", "Takes parameters with defaults.").params([
        Param::optional("unit", Type::String, "Unit system.").default("metric"),
        Param::optional("limit", Type::Integer, "How many readings to return.").default(20),
        Param::optional("include_notes", Type::Boolean, "Whether to include notes.").default(false),
        // A required parameter with a default becomes optional.
        Param::required("page", Type::Integer, "").default(1),
    ])
}

/// A verbatim schema as pydantic or a hand-written spec would produce it.
fn raw_schema_value() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for."},
            "window": {
                "allOf": [{"$ref": "#/$defs/Window"}],
                "description": "The time window to search."
            },
            "source": {"$ref": "#/$defs/Source"},
            "filters": {
                "type": "object",
                "description": "Narrow the search.",
                "properties": {
                    "kind": {"type": "string", "const": "observation"},
                    "code": {"type": ["string", "null"], "description": "A LOINC code, or null for any."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100}
                },
                "required": ["kind"],
                "additionalProperties": false
            }
        },
        "required": ["query"],
        "additionalProperties": false,
        "$defs": {
            "Window": {
                "type": "object",
                "description": "A span of time.",
                "properties": {
                    "from": {"type": "string", "format": "date-time"},
                    "to": {"type": "string", "format": "date-time"}
                },
                "required": ["from"],
                "additionalProperties": false
            },
            "Source": {
                "type": "string",
                "description": "Where the data came from.",
                "enum": ["lab", "wearable", "manual"]
            }
        }
    })
}

fn raw_schema() -> ToolSpec {
    ToolSpec::new("search_records", "Search health records with nested filters.").raw_input_schema(raw_schema_value())
}

fn free_form_object() -> ToolSpec {
    ToolSpec::new("render_chart", "Render a chart from an ECharts option.").params([
        Param::required("option", Type::Object, "The ECharts option object."),
        Param::optional("title", Type::String, "The chart title."),
    ])
}

fn full_metadata() -> ToolSpec {
    let mut meta = Map::new();
    meta.insert("openai/outputTemplate".into(), json!("ui://widget/memory.html"));
    meta.insert("openai/widgetAccessible".into(), json!(true));
    ToolSpec::new("remember", "Store a fact about the user for later turns.")
        .title("Remember")
        .param(Param::required("text", Type::String, "The fact, in one sentence."))
        .output_schema(json!({
            "type": "object",
            "properties": {"id": {"type": "integer"}, "stored": {"type": "boolean"}},
            "required": ["id", "stored"]
        }))
        .annotations(Annotations::additive().idempotent(false).title("Remember a fact"))
        .meta(meta)
}

fn golden_tools() -> Vec<(&'static str, ToolSpec)> {
    vec![
        ("no_params", no_params()),
        ("every_type", every_type()),
        ("arrays", arrays()),
        ("enums", enums()),
        ("defaults", defaults()),
        ("raw_schema", raw_schema()),
        ("free_form_object", free_form_object()),
        ("full_metadata", full_metadata()),
    ]
}

// ---------------------------------------------------------------------------------------------
// The golden-file helper
// ---------------------------------------------------------------------------------------------

fn golden_path(name: &str, format: Format) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(format!("{name}.{format}.json"))
}

/// Renders `spec` in every format and compares each with its golden file, or rewrites the
/// files when `UPDATE_GOLDEN=1`. The spec must also pass its own check: a golden file of an
/// unservable declaration would prove nothing.
fn check(name: &str, spec: &ToolSpec) {
    spec.check().unwrap_or_else(|e| panic!("golden tool '{name}' is invalid: {e}"));
    let update = std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1");
    let mut mismatches = Vec::new();
    for format in Format::ALL {
        let path = golden_path(name, format);
        let rendered = spec.render(format);
        if update {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let text = serde_json::to_string_pretty(&rendered).unwrap() + "\n";
            std::fs::write(&path, text).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}; run with UPDATE_GOLDEN=1 to create it", path.display()));
        // Compared as text, so key order (which models read) is checked too.
        let rendered = serde_json::to_string_pretty(&rendered).unwrap() + "\n";
        if rendered != expected {
            mismatches.push(format!("{}:\n--- expected\n{expected}--- rendered\n{rendered}", path.display()));
        }
    }
    assert!(
        mismatches.is_empty(),
        "rendering differs from the golden files (UPDATE_GOLDEN=1 rewrites them):\n{}",
        mismatches.join("\n")
    );
}

#[test]
fn golden_no_params() {
    check("no_params", &no_params());
}

#[test]
fn golden_every_type() {
    check("every_type", &every_type());
}

#[test]
fn golden_arrays() {
    check("arrays", &arrays());
}

#[test]
fn golden_enums() {
    check("enums", &enums());
}

#[test]
fn golden_defaults() {
    check("defaults", &defaults());
}

#[test]
fn golden_raw_schema() {
    check("raw_schema", &raw_schema());
}

#[test]
fn golden_free_form_object() {
    check("free_form_object", &free_form_object());
}

#[test]
fn golden_full_metadata() {
    check("full_metadata", &full_metadata());
}

/// Every golden tool has a file per format, and no stale golden files lie around.
#[test]
fn golden_directory_has_exactly_the_expected_files() {
    if std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1") {
        return;
    }
    let mut expected: Vec<String> =
        golden_tools().iter().flat_map(|(name, _)| Format::ALL.map(|f| format!("{name}.{f}.json"))).collect();
    expected.sort();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut found: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    found.sort();
    assert_eq!(found, expected);
}

// ---------------------------------------------------------------------------------------------
// Properties of the renderings that must hold for every golden tool
// ---------------------------------------------------------------------------------------------

/// Keys Gemini's `functionDeclarations` reject.
const GEMINI_FORBIDDEN: &[&str] =
    &["$schema", "$ref", "$defs", "definitions", "additionalProperties", "const", "allOf", "oneOf", "_meta"];

fn gemini_violations(value: &Value, path: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let here = format!("{path}/{key}");
                if GEMINI_FORBIDDEN.contains(&key.as_str()) {
                    out.push(format!("{here}: forbidden key"));
                }
                if key == "required" && child.as_array().is_some_and(Vec::is_empty) {
                    out.push(format!("{here}: empty required"));
                }
                if key == "type" && !child.is_string() {
                    out.push(format!("{here}: type must be a single string, got {child}"));
                }
                if key == "enum" && !child.as_array().is_some_and(|a| a.iter().all(Value::is_string)) {
                    out.push(format!("{here}: enum values must be strings, got {child}"));
                }
                if key == "type"
                    && child == "object"
                    && map.get("properties").and_then(Value::as_object).is_none_or(Map::is_empty)
                {
                    out.push(format!("{path}: object without properties"));
                }
                gemini_violations(child, &here, out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                gemini_violations(item, &format!("{path}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn gemini_renderings_contain_no_forbidden_keys() {
    for (name, spec) in golden_tools() {
        let rendered = spec.render(Format::Gemini);
        let mut violations = Vec::new();
        gemini_violations(&rendered, "", &mut violations);
        assert!(violations.is_empty(), "gemini rendering of '{name}': {violations:?}\n{rendered:#}");
    }
}

/// The walker itself must catch what it looks for, or the test above proves nothing.
#[test]
fn gemini_walker_detects_violations() {
    let mut violations = Vec::new();
    gemini_violations(
        &json!({"a": [{"b": {"$ref": "#/x", "required": [], "type": ["string", "null"]}}]}),
        "",
        &mut violations,
    );
    assert_eq!(violations.len(), 3, "{violations:?}");
    let mut violations = Vec::new();
    gemini_violations(&json!({"type": "object", "enum": [1]}), "", &mut violations);
    assert_eq!(violations.len(), 2, "{violations:?}");
}

#[test]
fn every_rendering_carries_name_and_description() {
    for (name, spec) in golden_tools() {
        for format in Format::ALL {
            let rendered = spec.render(format);
            let body = if format == Format::OpenAi { &rendered["function"] } else { &rendered };
            assert_eq!(body["name"], spec.name(), "{name} in {format}");
            assert_eq!(body["description"], spec.description(), "{name} in {format}");
        }
    }
}

/// MCP, OpenAI, Responses and Anthropic all carry the same input schema: the generated one, or
/// the verbatim one unchanged.
#[test]
fn non_gemini_formats_carry_the_input_schema_unchanged() {
    for (name, spec) in golden_tools() {
        let schema = spec.input_schema();
        assert_eq!(spec.render(Format::Mcp)["inputSchema"], schema, "{name}");
        assert_eq!(spec.render(Format::OpenAi)["function"]["parameters"], schema, "{name}");
        assert_eq!(spec.render(Format::Responses)["parameters"], schema, "{name}");
        assert_eq!(spec.render(Format::Anthropic)["input_schema"], schema, "{name}");
    }
    assert_eq!(raw_schema().input_schema(), raw_schema_value());
}

#[test]
fn generated_schemas_refuse_unknown_arguments_and_omit_empty_required() {
    for (name, spec) in golden_tools() {
        if spec.raw_schema().is_some() {
            continue;
        }
        let schema = spec.input_schema();
        assert_eq!(schema["type"], "object", "{name}");
        assert!(schema["properties"].is_object(), "{name}");
        assert_eq!(schema["additionalProperties"], false, "{name}");
        if let Some(required) = schema.get("required") {
            assert!(!required.as_array().unwrap().is_empty(), "{name}: empty required");
        }
    }
    assert!(no_params().input_schema().get("required").is_none());
    assert!(defaults().input_schema().get("required").is_none());
}

#[test]
fn mcp_optional_members_appear_only_when_set() {
    let bare = every_type().render(Format::Mcp);
    for key in ["title", "outputSchema", "annotations", "_meta"] {
        assert!(bare.get(key).is_none(), "{key} present on a tool that does not set it");
    }
    let full = full_metadata().render(Format::Mcp);
    for key in ["title", "outputSchema", "annotations", "_meta"] {
        assert!(full.get(key).is_some(), "{key} missing on a tool that sets it");
    }
    // Metadata is for MCP only.
    for format in [Format::OpenAi, Format::Responses, Format::Gemini, Format::Anthropic] {
        let rendered = full_metadata().render(format).to_string();
        assert!(!rendered.contains("outputTemplate"), "_meta leaked into {format}");
        assert!(!rendered.contains("destructiveHint"), "annotations leaked into {format}");
    }
}

#[test]
fn format_names_round_trip_and_aliases_parse() {
    for format in Format::ALL {
        assert_eq!(format.to_string().parse::<Format>().unwrap(), format);
        assert_eq!(format.as_str().to_uppercase().parse::<Format>().unwrap(), format);
    }
    assert_eq!("chat".parse::<Format>().unwrap(), Format::OpenAi);
    assert_eq!("simplified".parse::<Format>().unwrap(), Format::Responses);
    assert_eq!("claude".parse::<Format>().unwrap(), Format::Anthropic);
    let err = "xml".parse::<Format>().unwrap_err();
    assert!(err.to_string().contains("unknown format 'xml'"), "{err}");
}

/// A root-level `allOf` that adds properties next to the root's own `properties` must keep both
/// when flattened for Gemini, whichever key the schema writes first.
#[test]
fn gemini_root_all_of_keeps_both_property_sets() {
    let all_of = json!([{"properties": {"b": {"type": "integer"}}, "required": ["b"]}]);
    let mut after = Map::new();
    after.insert("type".into(), json!("object"));
    after.insert("properties".into(), json!({"a": {"type": "string"}}));
    after.insert("required".into(), json!(["a"]));
    after.insert("allOf".into(), all_of.clone());
    let mut before = Map::new();
    before.insert("allOf".into(), all_of);
    before.extend(after.clone().into_iter().filter(|(k, _)| k != "allOf"));
    for schema in [after, before] {
        let spec = ToolSpec::new("merged", "Root allOf next to properties.").raw_input_schema(Value::Object(schema));
        spec.check().unwrap();
        let params = &spec.render(Format::Gemini)["parameters"];
        assert!(params["properties"].get("a").is_some(), "{params:#}");
        assert!(params["properties"].get("b").is_some(), "allOf property lost: {params:#}");
        let mut required: Vec<&str> =
            params["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        required.sort_unstable();
        assert_eq!(required, ["a", "b"], "{params:#}");
    }
}

/// The description written where a definition is used is more specific than the definition's
/// own, whether the use site writes it before or after its `allOf`.
#[test]
fn gemini_all_of_ref_keeps_the_use_site_description() {
    let mut window = Map::new();
    window.insert("description".into(), json!("The time window to search."));
    window.insert("allOf".into(), json!([{"$ref": "#/$defs/Window"}]));
    let spec = ToolSpec::new("t", "d").raw_input_schema(json!({
        "type": "object",
        "properties": {"window": Value::Object(window)},
        "$defs": {
            "Window": {"type": "object", "description": "A span of time.", "properties": {"from": {"type": "string"}}}
        }
    }));
    spec.check().unwrap();
    let params = &spec.render(Format::Gemini)["parameters"];
    assert_eq!(params["properties"]["window"]["description"], "The time window to search.", "{params:#}");
}

// ---------------------------------------------------------------------------------------------
// Gemini reductions outside the golden set
// ---------------------------------------------------------------------------------------------

fn gemini_parameters(schema: Value) -> Value {
    let spec = ToolSpec::new("t", "d").raw_input_schema(schema);
    spec.check().unwrap();
    spec.render(Format::Gemini)["parameters"].clone()
}

#[test]
fn gemini_non_string_const_and_nullable_integer() {
    let params = gemini_parameters(json!({
        "type": "object",
        "properties": {
            "version": {"type": "integer", "const": 2, "description": "Schema version."},
            "count": {"type": ["integer", "null"]},
            "flag": {"type": "boolean", "enum": [true]}
        }
    }));
    assert_eq!(
        params["properties"],
        json!({
            "version": {"type": "integer", "description": "Schema version. One of: 2."},
            "count": {"type": "integer", "nullable": true},
            "flag": {"type": "boolean", "description": "One of: true."}
        })
    );
}

#[test]
fn gemini_inlines_definitions_spelled_the_draft_7_way() {
    let params = gemini_parameters(json!({
        "type": "object",
        "properties": {"unit": {"$ref": "#/definitions/Unit", "description": "Which unit."}},
        "definitions": {"Unit": {"type": "string", "enum": ["kg", "lb"]}}
    }));
    assert_eq!(
        params,
        json!({
            "type": "object",
            "properties": {
                "unit": {"type": "string", "enum": ["kg", "lb"], "format": "enum", "description": "Which unit."}
            }
        })
    );
}

#[test]
fn gemini_free_form_array_items_are_asked_for_as_strings() {
    let spec = ToolSpec::new("t", "d").param(Param::optional("rows", Type::Array, "Rows.").items(Type::Object));
    let rendered = spec.render(Format::Gemini);
    assert_eq!(
        rendered["parameters"]["properties"]["rows"]["items"],
        json!({"type": "string", "description": "A JSON object, encoded as a string."})
    );
}

/// A recursive schema must terminate, and what it is cut off with must itself be acceptable to
/// Gemini.
#[test]
fn gemini_recursive_ref_terminates_in_an_accepted_shape() {
    let params = gemini_parameters(json!({
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
                }
            }
        }
    }));
    let mut violations = Vec::new();
    gemini_violations(&params, "", &mut violations);
    assert!(violations.is_empty(), "{violations:?}");
}

#[test]
fn gemini_recursive_ref_terminates() {
    let params = gemini_parameters(json!({
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
                }
            }
        }
    }));
    let text = params.to_string();
    assert!(!text.contains("$ref"), "{text}");
    assert!(
        text.contains("A JSON object, encoded as a string."),
        "the cut-off point is asked for as encoded JSON: {text}"
    );
}
