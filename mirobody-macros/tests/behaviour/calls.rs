use std::collections::BTreeSet;
use std::fmt;

use mirobody_core::{Content, Json, ToolContext, ToolEnum, ToolResult, UserInfo, tool};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{registry, run, run_as};

/// Report the arguments as received.
///
/// Args:
///     days: How far back.
///     label: A label.
///     ratio: A ratio.
///     tags: Tags.
#[tool(register = false)]
fn defaults(
    #[arg(default = 30)] days: u32,
    #[arg(default = "none")] label: String,
    #[arg(default = 0.5)] ratio: f64,
    #[arg(default = ["a", "b"])] tags: Vec<String>,
) -> Value {
    json!({"days": days, "label": label, "ratio": ratio, "tags": tags})
}

#[test]
fn defaults_are_applied_when_arguments_are_absent() {
    let registry = registry([defaults_tool()]);
    let result = run(&registry, "defaults", json!({}));
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(
        result.structured_content().unwrap(),
        json!({"days": 30, "label": "none", "ratio": 0.5, "tags": ["a", "b"]}).as_object().unwrap()
    );
    let result = run(&registry, "defaults", json!({"days": 7, "tags": []}));
    assert_eq!(result.structured_content().unwrap()["days"], 7);
    assert_eq!(result.structured_content().unwrap()["tags"], json!([]));
    // Null means absent, as the registry reads it.
    let result = run(&registry, "defaults", json!({"label": null}));
    assert_eq!(result.structured_content().unwrap()["label"], "none");
    let schema = defaults_tool().spec().input_schema();
    assert_eq!(schema["properties"]["days"]["default"], 30);
    assert_eq!(schema["properties"]["tags"]["default"], json!(["a", "b"]));
    assert!(schema.get("required").is_none());
}

#[test]
fn a_value_out_of_the_rust_types_range_is_an_error_result_not_a_panic() {
    let registry = registry([defaults_tool()]);
    let result = run(&registry, "defaults", json!({"days": -1}));
    assert!(result.is_error());
    let text = result.first_text().unwrap();
    assert!(text.starts_with("Invalid argument 'days': "), "{text}");
    assert!(text.contains("u32"), "{text}");
}

/// Who is calling.
#[tool(register = false)]
async fn whoami(user: &UserInfo) -> String {
    user.user_id().unwrap_or("nobody").to_owned()
}

/// Who is calling, if anyone.
#[tool(register = false)]
fn maybe_whoami(user: Option<&UserInfo>) -> String {
    user.and_then(UserInfo::user_id).unwrap_or("anonymous").to_owned()
}

#[test]
fn a_user_info_parameter_makes_an_auth_tool_that_sees_the_caller() {
    let registry = registry([whoami_tool(), maybe_whoami_tool()]);
    assert!(registry.get("whoami").unwrap().is_auth());
    assert!(!registry.get("maybe_whoami").unwrap().is_auth());

    let refused = run(&registry, "whoami", json!({}));
    assert!(refused.is_error());
    assert!(refused.first_text().unwrap().starts_with("Authentication required"));

    let ada = UserInfo::authenticated("ada");
    assert_eq!(run_as(&registry, "whoami", json!({}), &ada).first_text(), Some("ada"));
    assert_eq!(run_as(&registry, "maybe_whoami", json!({}), &ada).first_text(), Some("ada"));
    assert_eq!(run(&registry, "maybe_whoami", json!({})).first_text(), Some("anonymous"));
    // The identity cannot be passed as an argument.
    let forged = run(&registry, "whoami", json!({"user": "eve"}));
    assert!(forged.is_error());
}

#[derive(Debug)]
struct NotFound(String);

impl fmt::Display for NotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "No file named '{}'. Call list_files to see the names.", self.0)
    }
}

#[derive(Serialize)]
struct FileInfo {
    name: String,
    size: u64,
}

/// Look a file up.
///
/// Args:
///     name: The file name.
#[tool(register = false)]
async fn find_file(name: String) -> Result<FileInfo, NotFound> {
    if name == "report.pdf" { Ok(FileInfo { name, size: 1024 }) } else { Err(NotFound(name)) }
}

#[test]
fn a_result_error_is_an_error_result_with_its_message() {
    let registry = registry([find_file_tool()]);
    let missing = run(&registry, "find_file", json!({"name": "x.txt"}));
    assert!(missing.is_error());
    assert_eq!(missing.first_text(), Some("No file named 'x.txt'. Call list_files to see the names."));
    assert!(missing.structured_content().is_none());

    let found = run(&registry, "find_file", json!({"name": "report.pdf"}));
    assert!(!found.is_error());
    assert_eq!(found.structured_content().unwrap(), json!({"name": "report.pdf", "size": 1024}).as_object().unwrap());
}

#[derive(Serialize)]
struct Summary {
    count: usize,
}

/// Count items.
///
/// Args:
///     items: The items.
#[tool(register = false)]
fn count(items: BTreeSet<String>) -> Summary {
    Summary { count: items.len() }
}

/// List numbers.
#[tool(register = false)]
fn numbers() -> Vec<i32> {
    vec![1, 2, 3]
}

/// Nothing to say; takes the context by value (it is `Copy`).
#[tool(register = false)]
fn nothing(ctx: ToolContext<'_>) {
    assert!(ctx.client().is_none());
}

/// A hand-made result.
#[tool(register = false)]
fn rich() -> ToolResult {
    ToolResult::text("Here:").with(Content::image("iVBORw0KGgo=", "image/png"))
}

/// Wrapped JSON, with text.
#[tool(register = false)]
fn wrapped() -> Result<Json<Summary>, String> {
    Ok(Json(Summary { count: 1 }))
}

/// A plain text error.
#[tool(register = false)]
fn fails() -> Result<String, String> {
    Err("It did not work: try again later.".into())
}

#[test]
fn serializable_returns_are_structured_content() {
    let registry = registry([count_tool(), numbers_tool(), nothing_tool(), rich_tool(), wrapped_tool(), fails_tool()]);
    let counted = run(&registry, "count", json!({"items": ["a", "b", "a"]}));
    assert_eq!(counted.structured_content().unwrap()["count"], 2);
    assert_eq!(counted.first_text(), Some("{\"count\":2}"));
    assert_eq!(run(&registry, "numbers", json!({})).structured_content().unwrap()["result"], json!([1, 2, 3]));
    assert_eq!(run(&registry, "nothing", json!({})).structured_content().unwrap()["result"], Value::Null);
    assert_eq!(run(&registry, "rich", json!({})).content().len(), 2);
    assert_eq!(run(&registry, "wrapped", json!({})).structured_content().unwrap()["count"], 1);
    let failed = run(&registry, "fails", json!({}));
    assert!(failed.is_error());
    assert_eq!(failed.first_text(), Some("It did not work: try again later."));
}

#[derive(ToolEnum, Deserialize, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
enum Metric {
    Steps,
    #[serde(rename = "hr")]
    HeartRate,
}

/// Borrowed and optional forms.
///
/// Args:
///     text: Text.
///     numbers: Numbers.
///     note: A note.
///     metric: One metric.
///     metrics: Several metrics.
///     extra: Anything.
#[tool(register = false)]
async fn borrowed(
    text: &str,
    numbers: &[i64],
    note: Option<&str>,
    metric: Metric,
    metrics: Option<Vec<Metric>>,
    extra: Option<&Value>,
    ctx: &ToolContext<'_>,
) -> Value {
    let db = mirobody_health::health_store(ctx).err().map(|e| e.to_string());
    json!({
        "text": text, "sum": numbers.iter().sum::<i64>(), "note": note, "metric": format!("{metric:?}"),
        "metrics": metrics.map(|m| m.iter().map(|m| format!("{m:?}")).collect::<Vec<_>>()),
        "extra": extra, "db": db,
    })
}

#[test]
fn references_options_enums_and_the_context_reach_the_function() {
    let registry = registry([borrowed_tool()]);
    let result = run(
        &registry,
        "borrowed",
        json!({"text": "hi", "numbers": [1, 2, 3], "metric": "hr", "metrics": ["steps", "hr"], "extra": {"k": 1}}),
    );
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(
        result.structured_content().unwrap(),
        json!({
            "text": "hi", "sum": 6, "note": null, "metric": "HeartRate", "metrics": ["Steps", "HeartRate"],
            "extra": {"k": 1}, "db": "The database is not configured on this server.",
        })
        .as_object()
        .unwrap()
    );
    let wrong = run(&registry, "borrowed", json!({"text": "hi", "numbers": [], "metric": "weight"}));
    assert!(wrong.is_error());
    assert!(wrong.first_text().unwrap().contains("must be one of \"steps\", \"hr\""), "{wrong:?}");
}

#[derive(Deserialize, Serialize)]
struct Section {
    title: String,
    indicators: Vec<String>,
}

/// Build a report from a nested section tree.
#[tool(
    input_schema = {
        "type": "object",
        "properties": {
            "sections": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "title": {"type": "string"},
                        "indicators": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["title", "indicators"],
                },
            },
            "depth": {"type": "integer"},
        },
        "required": ["sections"],
    },
    register = false,
)]
fn build_report(sections: Vec<Section>, #[arg(default = 2)] depth: u8) -> Value {
    json!({"titles": sections.iter().map(|s| s.title.as_str()).collect::<Vec<_>>(), "depth": depth})
}

#[test]
fn a_verbatim_schema_reads_nested_arguments_with_serde() {
    let registry = registry([build_report_tool()]);
    let result = run(&registry, "build_report", json!({"sections": [{"title": "Sleep", "indicators": ["hr"]}]}));
    assert_eq!(result.structured_content().unwrap(), json!({"titles": ["Sleep"], "depth": 2}).as_object().unwrap());
    let invalid = run(&registry, "build_report", json!({"sections": [{"indicators": []}]}));
    assert!(invalid.is_error());
}

/// Registered with the rest of the program's tools.
#[tool]
fn registered_ping() -> &'static str {
    "pong"
}

#[test]
fn tools_register_themselves_unless_told_not_to() {
    let registry = mirobody_core::Registry::from_registered().unwrap();
    assert!(registry.get("registered_ping").is_some());
    assert!(registry.get("defaults").is_none());
    assert_eq!(run(&registry, "registered_ping", json!({})).first_text(), Some("pong"));
}
