//! `delete_health_data`: deletes one thing the person holds (a file with the values imported
//! from it, one value, one import's values), only after the person confirms it in their client (elicitation). A
//! model cannot delete on its own: a client that cannot ask is refused, and a declined or
//! unanswered question deletes nothing. Deleting the whole account is not a tool: it ends
//! the very access the model uses, and is done on the account page, over HTTP or the CLI.

use mirobody_core::{PeerError, ToolContext, ToolError, ToolResult, UserInfo, tool};
use serde_json::json;

use super::{caller, fail};
use crate::erasure::{DeleteKind, delete_one, personal_data};

const CONFIRM: &str = "confirm";

/// Delete one thing the user holds, for good, only after they confirm it in their client: an
/// uploaded file (kind "file", by its file_key from list_files, with the values imported from
/// it), one value (kind "value", one observation or chart record by its id as in the user's
/// export, like Observation/abc) or every value of one import (kind "import", by the import_id
/// record_health_data answered). Call it only when the user asks; nothing is deleted if they
/// decline.
///
/// Args:
///     kind: What to delete: "file", "value" or "import".
///     id: The file_key, the value's id, or the import_id.
#[tool(annotations(destructive, idempotent, title = "Delete health data"), output_schema = crate::tools::output_schemas::delete_health_data())]
async fn delete_health_data(
    user: &UserInfo,
    ctx: &ToolContext<'_>,
    kind: &str,
    id: &str,
) -> Result<ToolResult, ToolError> {
    let owner = caller(user)?;
    let kind = match DeleteKind::parse(kind.trim()) {
        Some(kind) => kind,
        None => return Err(ToolError::new("'kind' must be \"file\", \"value\" or \"import\".")),
    };
    let id = id.trim();
    if id.is_empty() || id.chars().count() > crate::erasure::MAX_ID_CHARS {
        return Err(ToolError::new(format!(
            "'id' is required: the file_key, the value's id or the import_id, at most {} characters.",
            crate::erasure::MAX_ID_CHARS
        )));
    }
    let store = personal_data(ctx).ok_or_else(|| ToolError::new("This server cannot delete health data."))?;
    let Some(client) = ctx.client().filter(|c| c.supports("elicitation")) else {
        return Err(ToolError::new(
            "Nothing was deleted: this client cannot ask the user to confirm a deletion. The user can delete it \
             on their account page or with a client that supports confirmations (elicitation).",
        ));
    };
    let message = format!("Delete this {} for good: {id}? This cannot be undone.", kind.as_str());
    let schema = json!({
        "type": "object",
        "properties": {CONFIRM: {"type": "boolean", "title": "Yes, delete it", "default": false}},
        "required": [CONFIRM],
    });
    let reply = match client.request("elicitation/create", json!({"message": message, "requestedSchema": schema})).await
    {
        Ok(reply) => reply,
        Err(PeerError::Unsupported(_)) => {
            return Err(ToolError::new("Nothing was deleted: this client cannot ask the user to confirm a deletion."));
        }
        Err(_) => return Ok(not_deleted("The user did not answer.")),
    };
    let confirmed = reply["action"] == "accept" && reply["content"][CONFIRM] == json!(true);
    if !confirmed {
        return Ok(not_deleted("The user did not confirm."));
    }
    let found = delete_one(store, ctx.storage().ok(), owner, kind, id).await.map_err(fail)?;
    if !found {
        return Err(ToolError::new(format!("The user has no {} '{id}': nothing was deleted.", kind.as_str())));
    }
    tracing::info!(owner, kind = kind.as_str(), "deleted on the user's confirmation");
    Ok(ToolResult::ok(json!({"deleted": true, "kind": kind.as_str(), "id": id})))
}

fn not_deleted(reason: &str) -> ToolResult {
    ToolResult::ok(json!({"deleted": false, "reason": reason}))
}
