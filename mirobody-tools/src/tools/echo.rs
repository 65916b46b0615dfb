//! `echo`: the reference tool. Copy this file to write a new one.
//!
//! A tool is one function with `#[tool]`, in a file of its own:
//! 1. its name is the tool's name, its doc comment the description the model reads, and the
//!    `Args:` section describes each parameter;
//! 2. its parameters' types are the schema: `String` is a required string, `Option<T>` an
//!    optional one, `#[arg(default = ..)]` a default. The registry has already validated the
//!    arguments when the function runs;
//! 3. `annotations(...)` say what the tool does to data. The attribute registers the tool, so
//!    adding the module to the list in `tools/mod.rs` is the only other line; rebuild and it is
//!    served, and `cargo test` shows where the generated tool tables in the docs changed.
//!
//! A tool that touches a user's data takes `user: &UserInfo`, which makes it require a signed-in
//! caller, reads the caller from `user.user_id()` (never from an argument), and reaches backends
//! through `ctx: &ToolContext<'_>` (`health_store(ctx)?`, `ctx.memory()?`), which answer with a
//! clean error when not configured.

use mirobody_core::{Json, tool};
use serde::Serialize;

/// What `echo` returns: its structured content, and the same JSON as text.
#[derive(Serialize)]
struct Echoed {
    echo: String,
}

/// Echo back the provided text.
///
/// Args:
///     text: The text to echo back.
#[tool(annotations(read_only, idempotent))]
async fn echo(text: String) -> Json<Echoed> {
    // A typed result: it is written straight to JSON, with no map built on the way.
    Json(Echoed { echo: text })
}

#[cfg(test)]
mod tests {
    use futures::executor::block_on;
    use mirobody_core::{Registry, ToolContext, UserInfo};
    use serde_json::json;

    fn registry() -> Registry {
        Registry::builder().tool(super::echo_tool()).build().unwrap()
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
        let mcp = super::echo_tool().spec().render(mirobody_core::Format::Mcp);
        assert_eq!(mcp["annotations"]["readOnlyHint"], true);
        assert_eq!(mcp["annotations"]["idempotentHint"], true);
    }
}
