//! Time limits on tool calls: a call past its tool's limit answers an error result and its
//! handler is dropped; the engine's default applies to tools that declare none and its
//! per-tool overrides to any; a fast call is untouched. (Time spent waiting for the client's
//! answers does not count: see `rev_2026_07_28/tasks.rs`.)

use std::sync::Arc;
use std::time::Duration;

use mirobody_core::{Args, Registry, Tool, ToolContext, ToolResult, UserInfo};
use mirobody_mcp::McpEngine;
use mirobody_mcp::McpOptions;
use mirobody_mcp::http::HttpOptions;
use serde_json::json;

use crate::support::{TestServer, stopped, with, within};

async fn sleep_for(args: Args, _: &UserInfo, _: &ToolContext<'_>) -> ToolResult {
    let _signal = Dropped(args.str_or("tag", "").to_owned());
    tokio::time::sleep(Duration::from_millis(args.integer("ms", 0) as u64)).await;
    ToolResult::text("slept")
}

// Fires `stopped(tag)` when the handler's future is dropped, however it ends.
struct Dropped(String);

impl Drop for Dropped {
    fn drop(&mut self) {
        stopped(&self.0).notify_one();
    }
}

fn server(options: McpOptions) -> TestServer {
    let params = [
        mirobody_core::Param::optional("ms", mirobody_core::Type::Integer, "How long."),
        mirobody_core::Param::optional("tag", mirobody_core::Type::String, "Names the call."),
    ];
    let registry = Registry::builder()
        .tool(
            Tool::new("declared", "Sleeps, within 300 ms.")
                .params(params.clone())
                .time_limit(Duration::from_millis(300))
                .handler(sleep_for),
        )
        .tool(Tool::new("undeclared", "Sleeps.").params(params.clone()).handler(sleep_for))
        .tool(
            Tool::new("lifted", "Sleeps, with a limit the engine lifts.")
                .params(params)
                .time_limit(Duration::from_millis(100))
                .handler(sleep_for),
        )
        .build()
        .unwrap();
    TestServer::of(McpEngine::builder(Arc::new(registry)).options(options).build(), HttpOptions::default())
}

#[tokio::test]
async fn a_call_past_its_declared_time_limit_answers_an_error_result_and_is_dropped() {
    let server = server(McpOptions::default());
    let client = server.initialized(json!({})).await;
    let dropped = stopped("past-the-declared-limit");
    let reply =
        within("the limit", client.call_tool("declared", json!({"ms": 60_000, "tag": "past-the-declared-limit"})))
            .await;
    let result = reply.result();
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("took longer than its time limit of 0.3 s"), "{text}");
    within("the handler to be dropped", dropped.notified()).await;

    // Within the limit, and with no limit at all, calls answer as before.
    let fast = client.call_tool("declared", json!({"ms": 10})).await;
    assert_eq!(fast.result()["content"][0]["text"], "slept", "{}", fast.body);
    let unlimited = client.call_tool("undeclared", json!({"ms": 600})).await;
    assert_eq!(unlimited.result()["content"][0]["text"], "slept", "no limit by default: {}", unlimited.body);
}

#[tokio::test]
async fn the_services_default_and_overrides_set_the_limit() {
    let options = with(|o: &mut McpOptions| {
        o.tool_time_limit = Some(Duration::from_millis(200));
        o.tool_time_limits.insert("declared".into(), Some(Duration::from_secs(5)));
        o.tool_time_limits.insert("lifted".into(), None);
    });
    let client = server(options).initialized(json!({})).await;
    let undeclared = within("the default", client.call_tool("undeclared", json!({"ms": 60_000}))).await;
    let text = undeclared.result()["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(text.contains("time limit of 0.2 s"), "the default applies to a tool that declares none: {text}");
    // The override (5 s) replaces the declared 300 ms.
    let declared = client.call_tool("declared", json!({"ms": 600})).await;
    assert_eq!(declared.result()["content"][0]["text"], "slept", "{}", declared.body);
    // `None` lifts a tool's own limit.
    let lifted = client.call_tool("lifted", json!({"ms": 400})).await;
    assert_eq!(lifted.result()["content"][0]["text"], "slept", "{}", lifted.body);
}
