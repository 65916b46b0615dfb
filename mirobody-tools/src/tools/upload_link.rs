//! `upload_link`: a link to a page where the user uploads a file (a lab report, a letter, a
//! FHIR, CSV or Apple Health export, which is imported as their data) from any browser, a phone's included; or, with `revoke_all`, the end of
//! every link of theirs that still works.
//!
//! A link is made per call, for the signed-in caller only, when the person asks for one: it
//! stores one file (or `uploads.link_uses`), works for a short while, reads nothing and lists
//! nothing. The server makes links only when it serves the page ([`UploadLinks`] in the
//! context's extensions).

use mirobody_core::{ToolContext, ToolError, ToolResult, UserInfo, tool};
use serde_json::json;

use super::caller;
use crate::upload_links::UploadLinks;
use mirobody_health::text::rfc3339;

/// When the user asks to upload health documents or data (lab reports, letters, FHIR, CSV or Apple
/// Health exports): a new link to a page where they upload from any browser or phone. Give the user
/// the url; it works for uses files and expires soon. Documents (PDF, Word, text, images): then
/// list_files and read_file see them. Health data (FHIR JSON or NDJSON, a CSV of measurements with
/// columns time, indicator, value and unit, the iPhone Health app's export.zip) is imported as
/// theirs, which the health tools then read. With revoke_all: true, ends every link of theirs that
/// still works instead.
///
/// Args:
///     revoke_all: End every upload link of the user's that still works.
// Hosts that render MCP Apps views show an upload box in the conversation instead.
#[tool(annotations(additive, idempotent = false), view = crate::views::UPLOAD_VIEW)]
async fn upload_link(
    user: &UserInfo,
    ctx: &ToolContext<'_>,
    #[arg(default = false)] revoke_all: bool,
) -> Result<ToolResult, ToolError> {
    let me = caller(user)?;
    let links =
        ctx.extension::<UploadLinks>().ok_or_else(|| ToolError::new("This server does not serve an upload page."))?;
    if revoke_all {
        let revoked = links.revoke_all(me).await.map_err(|e| ToolError::new(e.to_string()))?;
        return Ok(ToolResult::ok(json!({"revoked": revoked})));
    }
    let link = links.mint(me).await.map_err(|e| ToolError::new(e.to_string()))?;
    let expires_in = links.settings().lifetime.as_secs().max(1);
    Ok(ToolResult::ok(json!({
        "url": link.url,
        "uses": link.uses,
        "expires_in": expires_in,
        "expires_at": rfc3339(link.expires_at_ms),
    })))
}
