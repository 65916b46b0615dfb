//! `remember`: saves a fact, preference or episode to the caller's long-term memory. It
//! answers only once the memory is durable.

use mirobody_core::backend::NewMemory;
use mirobody_core::{
    Annotations, Args, Param, Tool, ToolContext, ToolError, ToolResult, Type, UserInfo, register_tool,
};
use serde_json::json;

use super::{caller, fail, required_text};

/// The most characters in one memory.
pub const MAX_TEXT_CHARS: usize = 2000;
/// The kinds of memory.
pub const KINDS: [&str; 3] = ["fact", "preference", "episode"];

/// The declaration of `remember`.
pub fn tool() -> Tool {
    Tool::new(
        "remember",
        "Save something worth knowing about the user in later conversations to their long-term memory: \
         a fact (\"allergic to penicillin\"), a preference (\"prefers metric units\") or an episode \
         (\"ran a 10k on 2026-03-01\"). One self-contained statement per call.",
    )
    .param(Param::required("text", Type::String, "The memory, one self-contained statement."))
    .param(
        Param::optional("kind", Type::String, "fact | preference | episode (default fact).")
            .one_of(KINDS)
            .default("fact"),
    )
    .annotations(Annotations::additive())
    .auth(true)
    .handler(remember)
}

async fn remember(args: Args, user: &UserInfo, ctx: &ToolContext<'_>) -> Result<ToolResult, ToolError> {
    let owner = caller(user)?;
    let memory = ctx.memory().map_err(fail)?;
    let text = required_text(&args, "text", MAX_TEXT_CHARS, "the statement to remember")?;
    let kind = args.str_or("kind", "fact");
    let new =
        NewMemory { text: text.to_owned(), kind: kind.to_owned(), session_id: user.session_id().map(str::to_owned) };
    let id = memory.remember(owner, new).await.map_err(fail)?;
    Ok(ToolResult::ok(json!({"id": id, "stored": true})))
}

register_tool!(tool);
