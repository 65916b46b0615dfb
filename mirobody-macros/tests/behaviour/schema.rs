use std::collections::HashMap;

use mirobody_core::{
    Annotations, Args, Format, Param, TaskSupport, Tool, ToolContext, ToolEnum, ToolResult, Type, UserInfo, tool,
};
use serde_json::{Value, json};

use crate::registry;

// ---- The golden pair: `echo` by hand and by macro. ----

async fn echo_handler(args: Args, _: &UserInfo, _: &ToolContext<'_>) -> ToolResult {
    ToolResult::text(args.str("text").unwrap_or_default())
}

fn echo_by_hand() -> Tool {
    Tool::new("echo", "Echo back the provided text.")
        .param(Param::required("text", Type::String, "The text to echo back."))
        .annotations(Annotations::read_only())
        .handler(echo_handler)
}

/// Echo back the provided text.
///
/// Args:
///     text: The text to echo back.
///
/// Returns:
///     The same text.
#[tool(name = "echo", annotations(read_only), register = false)]
async fn echo_macro(text: &str) -> String {
    text.to_owned()
}

#[test]
fn echo_macro_declares_exactly_the_hand_written_echo() {
    assert_eq!(echo_macro_tool().spec(), echo_by_hand().spec());
    assert_eq!(echo_macro_tool().is_auth(), echo_by_hand().is_auth());

    let by_hand = registry([echo_by_hand()]);
    let by_macro = registry([echo_macro_tool()]);
    for format in Format::ALL {
        assert_eq!(by_macro.functions_json(format), by_hand.functions_json(format), "{format}");
    }
    assert_eq!(by_macro.mcp_tools_json(true), by_hand.mcp_tools_json(true));
    assert_eq!(
        by_macro.functions(Format::OpenAi)[0],
        json!({
            "type": "function",
            "function": {
                "name": "echo",
                "description": "Echo back the provided text.",
                "parameters": {
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "The text to echo back."}},
                    "required": ["text"],
                    "additionalProperties": false,
                },
            },
        })
    );
    let mcp: Value = serde_json::from_str(by_macro.mcp_tools_json(true)).unwrap();
    assert_eq!(mcp[0]["annotations"], json!({"readOnlyHint": true, "openWorldHint": false}));
}

// ---- A richer pair: every parameter kind a table can express. ----

#[derive(ToolEnum, Clone, Copy, Debug, PartialEq)]
#[tool_enum(rename_all = "snake_case")]
enum Unit {
    Metric,
    Imperial,
}

fn readings_by_hand() -> Tool {
    Tool::new(
        "query_readings",
        "Query the caller's readings of one indicator. Call query_health_indicators first for the exact name.",
    )
    .title("Query readings")
    .param(Param::required("indicator", Type::String, "The exact indicator name, e.g. \"steps\"."))
    .param(Param::optional("days", Type::Integer, "How many days back to look.").default(30))
    .param(Param::optional("tags", Type::Array, "Only readings with these tags.").items(Type::String))
    .param(Param::optional("unit", Type::String, "The unit system.").one_of(["metric", "imperial"]).default("metric"))
    .param(Param::required("threshold", Type::Number, "The lowest value to include."))
    .param(Param::optional("exact", Type::Boolean, ""))
    .param(Param::optional("filters", Type::Object, "Extra filters, e.g. {\"source\": \"watch\"}."))
    .param(Param::required("weights", Type::Array, "One weight per reading.").items(Type::Number))
    .param(Param::optional("order", Type::String, "Sort order.").one_of(["asc", "desc"]))
    .annotations(Annotations::read_only().idempotent(true))
    .auth(true)
    .handler(echo_handler)
}

/// Query the caller's readings of one indicator.
/// Call query_health_indicators first for the exact name.
///
/// # Arguments
///
/// * `indicator` - The exact indicator name, e.g. "steps".
/// * `days` - How many days back
///   to look.
/// * `tags` - Only readings with these tags.
/// * `unit` - The unit system.
/// * `threshold` - The lowest value to include.
/// * `filters` - Extra filters, e.g. {"source": "watch"}.
/// * `weights` - One weight per reading.
/// * `order` - Sort order.
///
/// # Errors
///
/// * `nothing` - This section is dropped.
#[tool(title = "Query readings", annotations(read_only, idempotent), register = false)]
#[allow(clippy::too_many_arguments)]
async fn query_readings(
    user: &UserInfo,
    indicator: &str,
    #[arg(default = 30)] days: i64,
    tags: Option<Vec<String>>,
    #[arg(default = "metric")] unit: Unit,
    threshold: f64,
    exact: Option<bool>,
    filters: Option<HashMap<String, Value>>,
    weights: &[f64],
    _ctx: &ToolContext<'_>,
    #[arg(one_of = ["asc", "desc"])] order: Option<&str>,
) -> Value {
    json!({
        "user": user.user_id(), "indicator": indicator, "days": days, "tags": tags, "unit": format!("{unit:?}"),
        "threshold": threshold, "exact": exact, "filters": filters, "weights": weights, "order": order,
    })
}

#[test]
fn every_table_feature_matches_its_hand_written_twin() {
    let by_macro = query_readings_tool();
    assert_eq!(by_macro.spec(), readings_by_hand().spec());
    assert!(by_macro.is_auth());
}

#[test]
fn optional_vec_of_strings_is_an_optional_array_of_strings() {
    let schema = query_readings_tool().spec().input_schema();
    assert_eq!(
        schema["properties"]["tags"],
        json!({"type": "array", "items": {"type": "string"}, "description": "Only readings with these tags."})
    );
    let required = schema["required"].as_array().unwrap();
    assert!(!required.contains(&json!("tags")));
    assert_eq!(*required, [json!("indicator"), json!("threshold"), json!("weights")]);
    // No null anywhere, and hidden parameters never appear.
    let text = schema.to_string();
    assert!(!text.contains("null"), "{text}");
    assert!(!text.contains("user") && !text.contains("ctx"), "{text}");
}

// ---- Options. ----

fn widget_meta() -> serde_json::Map<String, Value> {
    json!({"openai/outputTemplate": "ui://widget/chart.html"}).as_object().unwrap().clone()
}

fn never() -> bool {
    false
}

/// Draw a chart from a nested description.
/// This second line is not part of the description with a verbatim schema.
///
/// Args:
///     spec: ignored with a verbatim schema, as upstream.
#[tool(
    input_schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"title": {"type": "string"}}}},
        "required": ["spec"],
    },
    meta = { "openai/outputTemplate": "ui://widget/chart.html" },
    annotations(additive, open_world = false, title = "Chart"),
    scopes = ["mcp:write"],
    register = false,
)]
fn chart(spec: Value) -> Value {
    spec
}

/// Hidden unless enabled.
#[tool(enabled = never, meta = widget_meta(), auth, register = false)]
fn disabled() -> String {
    String::new()
}

#[test]
fn a_verbatim_schema_is_used_as_written_with_the_first_doc_line() {
    let tool = chart_tool();
    let spec = tool.spec();
    assert_eq!(spec.description(), "Draw a chart from a nested description.");
    assert_eq!(spec.input_schema()["required"], json!(["spec"]));
    assert!(spec.param_list().is_empty());
    assert_eq!(spec.meta_value(), Some(&widget_meta()));
    assert_eq!(spec.annotation_hints(), &Annotations::additive().open_world(false).title("Chart"));
    assert_eq!(tool.scopes(), ["mcp:write"]);
    assert!(tool.is_auth());
}

#[test]
fn enabled_auth_and_meta_expressions() {
    let tool = disabled_tool();
    assert!(tool.is_auth());
    assert_eq!(tool.spec().meta_value(), Some(&widget_meta()));
    let registry = registry([tool, echo_macro_tool()]);
    assert_eq!(registry.names().collect::<Vec<_>>(), ["echo"]);
}

/// Imports a large archive.
#[tool(task_support = "optional", register = false)]
async fn import_archive(path: String) -> String {
    path
}

#[test]
fn task_support_is_the_hand_written_setter() {
    let by_hand = Tool::new("import_archive", "Imports a large archive.")
        .param(Param::required("path", Type::String, ""))
        .task_support(TaskSupport::Optional);
    let tool = import_archive_tool();
    assert_eq!(tool.spec(), by_hand.spec());
    assert_eq!(tool.spec().render(Format::Mcp)["execution"], json!({"taskSupport": "optional"}));
    assert!(described_tool().spec().render(Format::Mcp).get("execution").is_none(), "forbidden is not rendered");
}

/// Shows a trend.
#[tool(view = "ui://charts/trend.html", register = false)]
fn trend() -> String {
    String::new()
}

#[test]
fn a_view_is_the_hand_written_link() {
    let by_hand = Tool::new("trend", "Shows a trend.").view("ui://charts/trend.html");
    assert_eq!(trend_tool().spec(), by_hand.spec());
    assert_eq!(trend_tool().spec().render(Format::Mcp)["_meta"]["ui"]["resourceUri"], "ui://charts/trend.html");
}

/// Where a view lives, named once for every tool that links to it.
const TREND_VIEW: &str = "ui://charts/trend.html";

/// Shows a trend, drawn within a second.
#[tool(view = TREND_VIEW, time_limit = std::time::Duration::from_secs(1), register = false)]
fn timed_trend() -> String {
    String::new()
}

#[test]
fn a_view_constant_and_a_time_limit_are_the_hand_written_setters() {
    let by_hand = Tool::new("timed_trend", "Shows a trend, drawn within a second.")
        .view(TREND_VIEW)
        .time_limit(std::time::Duration::from_secs(1));
    let tool = timed_trend_tool();
    assert_eq!(tool.spec(), by_hand.spec());
    assert_eq!(tool.spec().render(Format::Mcp)["_meta"]["ui"]["resourceUri"], TREND_VIEW);
    assert_eq!(tool.declared_time_limit(), Some(std::time::Duration::from_secs(1)));
    assert_eq!(trend_tool().declared_time_limit(), None, "no limit unless one is given");
}

// ---- Descriptions. ----

/// First line,
///   wrapped.
///
/// Second paragraph.
///
/// Parameters:
///     a (int): The a,
///         continued.
///     b: The b.
/// Raises:
///     ValueError: this must not bleed into b.
#[tool(register = false)]
fn described(a: i32, b: Option<u8>) -> i32 {
    a + i32::from(b.unwrap_or_default())
}

#[test]
fn descriptions_are_joined_and_sections_end_at_any_header() {
    let tool = described_tool();
    let spec = tool.spec();
    assert_eq!(spec.description(), "First line, wrapped. Second paragraph.");
    assert_eq!(spec.param_list()[0].description(), "The a, continued.");
    assert_eq!(spec.param_list()[1].description(), "The b.");
    assert_eq!(spec.param_list()[1].ty(), Type::Integer);
    assert_eq!(spec.annotation_hints(), &Annotations::default());
}

/// Raw names and renames.
///
/// Args:
///     type: The kind.
///     limit: How many.
#[tool(register = false)]
fn r#match(r#type: String, #[arg(name = "max-count")] limit: usize, payload: serde_json::Map<String, Value>) -> usize {
    let _ = (r#type, payload);
    limit
}

#[test]
fn raw_identifiers_and_renamed_arguments() {
    let tool = match_tool();
    assert_eq!(tool.name(), "match");
    let names: Vec<&str> = tool.spec().param_list().iter().map(|p| p.name()).collect();
    assert_eq!(names, ["type", "max-count", "payload"]);
    assert_eq!(tool.spec().param_list()[1].description(), "How many.");
    assert_eq!(tool.spec().param_list()[2].ty(), Type::Object);
}
