//! `remember`: saves a fact, preference or episode to the caller's long-term memory. It
//! answers only once the memory is durable.

use mirobody_core::backend::NewMemory;
use mirobody_core::{ToolContext, ToolError, ToolResult, UserInfo, tool};
use serde_json::json;

use super::{caller, fail, required_text};

/// The most characters in one memory.
pub(crate) const MAX_TEXT_CHARS: usize = 2000;

/// Save something worth knowing about the user in later conversations to their long-term memory:
/// a fact ("allergic to penicillin"), a preference ("prefers metric units") or an episode
/// ("ran a 10k on 2026-03-01"). One self-contained statement per call.
///
/// Args:
///     text: The memory, one self-contained statement.
///     kind: fact | preference | episode (default fact).
#[tool(annotations(additive))]
async fn remember(
    user: &UserInfo,
    ctx: &ToolContext<'_>,
    text: &str,
    #[arg(default = "fact", one_of = ["fact", "preference", "episode"])] kind: &str,
) -> Result<ToolResult, ToolError> {
    let owner = caller(user)?;
    let memory = ctx.memory().map_err(fail)?;
    let text = required_text(text, "text", MAX_TEXT_CHARS, "the statement to remember")?;
    let new =
        NewMemory { text: text.to_owned(), kind: kind.to_owned(), session_id: user.session_id().map(str::to_owned) };
    let id = memory.remember(owner, new).await.map_err(fail)?;
    Ok(ToolResult::ok(json!({"id": id, "stored": true})))
}
