use mirobody_core::{ToolEnum, tool};
use serde_json::json;

use crate::{registry, run};

#[derive(ToolEnum, Debug)]
enum AsWritten {
    Daily,
    WeeklyTotal,
}

#[derive(ToolEnum, Debug)]
#[tool_enum(rename_all = "SCREAMING-KEBAB-CASE")]
enum Kebab {
    DailyTotal,
    #[tool_enum(rename = "w")]
    Weekly,
}

#[derive(ToolEnum, serde::Deserialize, Debug)]
#[serde(rename_all = "camelCase")]
enum FromSerde {
    DailyTotal,
    #[serde(skip)]
    #[allow(dead_code)]
    Internal,
    #[serde(rename(serialize = "ser", deserialize = "weekly"))]
    Weekly,
}

/// Echo the enums.
///
/// Args:
///     a: As written.
///     b: Kebab.
///     c: Renamed by serde's attributes.
#[tool(register = false)]
fn enums(a: AsWritten, #[arg(default = "w")] b: Kebab, c: Vec<FromSerde>) -> String {
    format!("{a:?} {b:?} {c:?}")
}

#[test]
fn enum_values_follow_the_rename_rules() {
    let schema = enums_tool().spec().input_schema();
    assert_eq!(schema["properties"]["a"]["enum"], json!(["Daily", "WeeklyTotal"]));
    assert_eq!(schema["properties"]["b"]["enum"], json!(["DAILY-TOTAL", "w"]));
    assert_eq!(schema["properties"]["b"]["default"], "w");
    assert_eq!(schema["properties"]["c"]["items"], json!({"type": "string", "enum": ["dailyTotal", "weekly"]}));

    let registry = registry([enums_tool()]);
    let result = run(&registry, "enums", json!({"a": "WeeklyTotal", "c": ["weekly", "dailyTotal"]}));
    assert_eq!(result.first_text(), Some("WeeklyTotal Weekly [Weekly, DailyTotal]"));
}
