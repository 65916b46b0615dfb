//! `summarize_conversation`: sets the short title of the current conversation.
//!
//! Fixes upstream: the summary is cut at 200 characters, never inside a character (upstream cut
//! at 200 bytes and could store invalid UTF-8), and it is written to the conversation of this
//! session, not to whichever conversation of the caller's was the latest (which let an
//! external MCP client retitle the chat open in the app).

use mirobody_core::{ToolContext, ToolError, ToolResult, UserInfo, tool};
use serde_json::json;

use super::{caller, fail};
use mirobody_health::text::cap_chars;

use mirobody_health::health_store;

/// The most characters kept.
pub(crate) const MAX_SUMMARY_CHARS: usize = 200;
/// The most characters accepted before cutting (anything longer is a mistake, not a title).
pub(crate) const MAX_INPUT_CHARS: usize = 10_000;

/// Set a short title for the current conversation, shown in the user's chat history.
/// At most 200 characters; longer text is cut.
///
/// Args:
///     summary: The title, a few words (at most 200 characters).
#[tool(session_required, annotations(destructive, idempotent))]
async fn summarize_conversation(
    user: &UserInfo,
    ctx: &ToolContext<'_>,
    summary: &str,
) -> Result<ToolResult, ToolError> {
    let owner = caller(user)?;
    let db = health_store(ctx).map_err(fail)?;
    let summary = summary.trim();
    if summary.is_empty() {
        return Err(ToolError::new("'summary' is required: a short title for the conversation."));
    }
    if summary.chars().count() > MAX_INPUT_CHARS {
        return Err(ToolError::new(format!("'summary' is far too long; send at most {MAX_SUMMARY_CHARS} characters.")));
    }
    let session = user
        .session_id()
        .ok_or_else(|| ToolError::new("No active conversation to summarize: this call is not part of a session."))?;
    let (summary, truncated) = cap_chars(summary, MAX_SUMMARY_CHARS);
    db.set_conversation_summary(owner, session, summary).await.map_err(fail)?;
    let mut out = json!({"updated": true});
    if truncated {
        out["summary"] = json!(summary);
        out["truncated"] = json!(true);
    }
    Ok(ToolResult::ok(out))
}
