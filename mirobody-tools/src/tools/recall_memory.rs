//! `recall_memory`: the caller's long-term memories most relevant to a query, ranked by the
//! database's full-text search (SQLite FTS5 bm25, PostgreSQL `ts_rank_cd`).
//!
//! Fixes upstream: `top_k` has a default (5) and an upper bound (50).

use mirobody_core::{ToolContext, ToolError, ToolResult, UserInfo, tool};
use serde_json::json;

use super::{caller, fail, required_text};

/// The default number of memories.
const DEFAULT_TOP_K: i64 = 5;
/// The most memories one call returns.
pub(crate) const MAX_TOP_K: i64 = 50;
/// The most characters in a query.
pub(crate) const MAX_QUERY_CHARS: usize = 1000;

/// Search the user's long-term memory (facts, preferences and past episodes saved with remember)
/// for what is relevant to a query, best match first. Call it before answering when earlier
/// context about the user could matter.
///
/// Args:
///     query: What to look for, in a few words.
///     top_k: How many memories to return (1-50, default 5).
#[tool(annotations(read_only, idempotent))]
async fn recall_memory(
    user: &UserInfo,
    ctx: &ToolContext<'_>,
    query: &str,
    #[arg(default = DEFAULT_TOP_K)] top_k: i64,
) -> Result<ToolResult, ToolError> {
    let owner = caller(user)?;
    let memory = ctx.memory().map_err(fail)?;
    let query = required_text(query, "query", MAX_QUERY_CHARS, "what to look for in the user's memories")?;
    if top_k < 1 {
        return Err(ToolError::new(format!("'top_k' must be between 1 and {MAX_TOP_K}.")));
    }
    let top_k = top_k.min(MAX_TOP_K) as usize;
    let found = memory.recall(owner, query, top_k).await.map_err(fail)?;
    let memories: Vec<_> = found
        .into_iter()
        .map(|m| json!({"id": m.id, "text": m.text, "kind": m.kind, "score": m.score, "created_at": m.created_at}))
        .collect();
    Ok(ToolResult::ok(json!({"memories": memories})))
}
