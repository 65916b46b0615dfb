//! `list_files`: the files the caller uploaded, newest first.
//!
//! Fixes upstream: the result is an object (`{"files": [...]}`, as MCP requires of structured
//! content), each file keeps its own key and real MIME type, and `has_text` says whether text
//! was extracted from it (upstream promised that flag, never sent it, and swapped in the text's
//! key and `text/plain`). The index lives in the database, not only in the cache.

use mirobody_core::{ToolContext, ToolError, ToolResult, UserInfo, tool};
use serde_json::{Value, json};

use super::{caller, fail};

use mirobody_health::{TextState, health_store};

/// The most files listed.
pub(crate) const MAX_FILES: usize = 200;

/// List the files the user uploaded, newest first: name, file_key, MIME type, size, upload time,
/// and has_text (text was extracted from it). Pass a file_key to read_file to read one.
#[tool(annotations(read_only, idempotent))]
async fn list_files(user: &UserInfo, ctx: &ToolContext<'_>) -> Result<ToolResult, ToolError> {
    let owner = caller(user)?;
    let files = health_store(ctx).map_err(fail)?.files(owner).await.map_err(fail)?;
    let total = files.len();
    let listed: Vec<Value> = files
        .into_iter()
        .take(MAX_FILES)
        .map(|f| {
            let mut file = json!({
                "filename": f.filename,
                "file_key": f.file_key,
                "mime": f.mime_type,
                "size": f.size,
                "uploaded_at": f.uploaded_at,
                "has_text": f.text_key.is_some(),
            });
            match f.text_state {
                TextState::Waiting => file["text"] = json!("still being read"),
                TextState::Unreadable(why) => file["text_error"] = json!(why),
                _ => {}
            }
            file
        })
        .collect();
    let mut out = json!({"files": listed});
    if total > MAX_FILES {
        out["total"] = json!(total);
    }
    Ok(ToolResult::ok(out))
}
