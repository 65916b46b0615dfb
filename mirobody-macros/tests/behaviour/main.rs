//! What the macros generate, checked through the declarations they produce and calls through
//! a registry, the way a server or an agent loop would use them.

/// Declarations: macro tools equal to hand-written ones, and the schema each Rust type gives.
mod schema;

/// Calls: arguments read, defaults applied, the caller passed in, return values converted.
mod calls;

/// `#[tool_service]`: public methods become tools, private ones do not.
mod service;

/// `#[derive(ToolEnum)]`: values, renames, parsing.
mod enums;

use mirobody_core::{Registry, Tool, ToolContext, ToolResult, UserInfo};
use serde_json::Value;

/// A registry of exactly these tools.
fn registry(tools: impl IntoIterator<Item = Tool>) -> Registry {
    tools.into_iter().fold(Registry::builder(), |b, t| b.tool(t)).build().expect("valid tools")
}

/// Calls a tool as `user` and folds a refusal into an error result, on a tokio runtime (a
/// tool may run its CPU work on tokio's blocking threads, as `render_chart` does).
fn run_as(registry: &Registry, name: &str, args: Value, user: &UserInfo) -> ToolResult {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    runtime.block_on(registry.run(name, args, user, &ToolContext::new()))
}

/// Calls a tool anonymously.
fn run(registry: &Registry, name: &str, args: Value) -> ToolResult {
    run_as(registry, name, args, &UserInfo::anonymous())
}
