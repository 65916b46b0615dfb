//! A tool is one file: a `#[tool]` function in a crate that links mirobody-tools is served
//! beside the built-ins with nothing else named anywhere (no list, no registration call).

use mirobody_core::{ToolContext, UserInfo, tool};
use serde_json::{Value, json};

/// Current weather for a city. Call it when the user asks about the weather.
///
/// Args:
///     city: City name, e.g. "Boston"
#[tool(annotations(read_only))]
async fn weather(city: String) -> Value {
    json!({"city": city, "temperature_c": 22})
}

#[test]
fn a_tool_written_in_one_file_is_listed_and_called_beside_the_builtins() {
    let registry = mirobody_tools::builtin_registry().expect("the tools register");
    assert!(registry.get("echo").is_some(), "the built-ins are there");
    let listed: Value = serde_json::from_str(registry.mcp_tools_json(true)).unwrap();
    let entry = listed.as_array().unwrap().iter().find(|t| t["name"] == "weather").expect("weather is in tools/list");
    assert_eq!(entry["inputSchema"]["required"], json!(["city"]));
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let result = runtime
        .block_on(registry.call("weather", json!({"city": "Boston"}), &UserInfo::anonymous(), &ToolContext::new()))
        .unwrap();
    assert_eq!(result.structured_content().unwrap()["city"], "Boston");
}
