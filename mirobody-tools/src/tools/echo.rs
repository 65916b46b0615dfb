//! `echo`: the reference tool. Copy this file to write a new one.
//!
//! A tool is three things in one file:
//! 1. a declaration, `fn tool() -> Tool`: the name and description the model reads, a
//!    parameter table, and annotations that say what the tool does to data;
//! 2. a handler: `async fn(Args, &UserInfo, &ToolContext) -> ToolResult`. The registry has
//!    already checked the caller and validated the arguments, so `text` is a string here;
//! 3. one `register_tool!` line, which makes the tool appear in every registry built from
//!    the registered tools. Add the module to `tools/mod.rs`, rebuild, and it is served.
//!
//! A tool that touches a user's data adds `.auth(true)`, reads the caller from
//! `user.user_id()` (never from an argument), and reaches backends through `ctx`
//! (`health_store(ctx)?`, `ctx.memory()?`), which answer with a clean error when not configured.

use mirobody_core::{Annotations, Args, Param, Tool, ToolContext, ToolResult, Type, UserInfo, register_tool};
use serde::Serialize;

/// The declaration of `echo`.
pub fn tool() -> Tool {
    Tool::new("echo", "Echo back the provided text.")
        .param(Param::required("text", Type::String, "The text to echo back."))
        .annotations(Annotations::read_only().idempotent(true))
        .handler(echo)
}

/// What `echo` returns: its structured content, and the same JSON as text.
#[derive(Serialize)]
struct Echoed<'a> {
    echo: &'a str,
}

async fn echo(args: Args, _user: &UserInfo, _ctx: &ToolContext<'_>) -> ToolResult {
    // A typed result: `ok` writes it straight to JSON, with no map built on the way.
    ToolResult::ok(Echoed { echo: args.str("text").unwrap_or_default() })
}

register_tool!(tool);

#[cfg(test)]
mod tests {
    use futures::executor::block_on;
    use mirobody_core::{Registry, ToolContext, UserInfo};
    use serde_json::json;

    fn registry() -> Registry {
        Registry::builder().tool(super::tool()).build().unwrap()
    }

    #[test]
    fn echoes_text_as_structured_content_and_text() {
        let result =
            block_on(registry().call("echo", json!({"text": "héllo"}), &UserInfo::anonymous(), &ToolContext::new()))
                .unwrap();
        assert!(!result.is_error());
        assert_eq!(result.structured_content().unwrap()["echo"], "héllo");
        assert_eq!(result.first_text(), Some(r#"{"echo":"héllo"}"#));
    }

    #[test]
    fn missing_text_is_an_error_the_model_can_fix() {
        // Upstream answered {"echo":""} with success; the registry now refuses the call.
        let err =
            block_on(registry().call("echo", json!({}), &UserInfo::anonymous(), &ToolContext::new())).unwrap_err();
        assert!(err.to_string().contains("missing required argument 'text'"), "{err}");
    }

    #[test]
    fn is_declared_read_only() {
        let mcp = super::tool().spec().render(mirobody_core::Format::Mcp);
        assert_eq!(mcp["annotations"]["readOnlyHint"], true);
        assert_eq!(mcp["annotations"]["idempotentHint"], true);
    }
}
