//! `upload_link`: a short-lived link to a page where the user uploads files (lab reports,
//! letters, a wearable's export) from any browser, a phone's included.
//!
//! Whoever holds the link may upload as the user until it expires, and do nothing else: it
//! reads nothing and lists nothing. The server makes links only when it is set up to serve
//! the page ([`UploadLinks`] in the context's extensions).

use mirobody_core::{Annotations, Args, Tool, ToolContext, ToolError, ToolResult, UserInfo, register_tool};
use serde_json::json;

use super::caller;
use crate::text::rfc3339;
use crate::upload_links::UploadLinks;

/// The declaration of `upload_link`.
pub fn tool() -> Tool {
    Tool::new(
        "upload_link",
        "A link, valid for a short while, to a page where the user can upload health documents (PDF or \
         Word lab reports and letters, text, CSV or JSON exports, images) from any browser or phone. Give \
         the user the url; then list_files and read_file see what they uploaded.",
    )
    .annotations(Annotations::read_only().idempotent(false))
    .auth(true)
    // Hosts that render MCP Apps views show an upload box in the conversation instead.
    .view(crate::views::UPLOAD_VIEW)
    .handler(upload_link)
}

async fn upload_link(_args: Args, user: &UserInfo, ctx: &ToolContext<'_>) -> Result<ToolResult, ToolError> {
    let me = caller(user)?;
    let links =
        ctx.extension::<UploadLinks>().ok_or_else(|| ToolError::new("This server does not serve an upload page."))?;
    let (url, expires) =
        links.link(me).ok_or_else(|| ToolError::new("Upload links cannot be made for this user id."))?;
    Ok(ToolResult::ok(json!({
        "url": url,
        "expires_in": links.lifetime().as_secs(),
        "expires_at": rfc3339(i64::try_from(expires).unwrap_or(i64::MAX).saturating_mul(1000)),
    })))
}

register_tool!(tool);
