//! The built-in resources: `info://server`, and the caller's uploads as `file://{file_key}`.
//!
//! Both self-register, so a server that builds its resources with
//! `ResourceRegistry::from_registered` serves them. Reading `file://` needs an authenticated
//! caller and reads only the caller's own files (as `read_file` does). Listing each caller's
//! uploads in `resources/list` needs a per-caller listing, which [`list_uploads`] provides for
//! the server to append.

use std::borrow::Cow;
use std::sync::Arc;

use base64::Engine;
use mirobody_core::{
    Resource, ResourceContents, ResourceError, ResourceInfo, ResourceTemplate, TemplateReadFn, ToolContext, UserInfo,
    register_resource, register_resource_template,
};
use serde_json::json;

use crate::tools::{MAX_INLINE_CHARS, original_key};
use mirobody_health::text::{cap_chars, is_text_like};

use mirobody_health::health_store;

/// The largest file returned as a base64 `blob` by `resources/read`; larger ones are refused
/// with a pointer to `read_file`, which gives a signed URL.
pub const MAX_BLOB_BYTES: usize = 8 * 1024 * 1024;

fn server_info() -> String {
    json!({
        "name": "mirobody",
        "version": env!("CARGO_PKG_VERSION"),
        "description": "An MCP tool engine for personal health data: observations shared in a care circle, \
                        uploaded files, long-term memory and charts.",
        "capabilities": ["tools", "resources", "prompts"],
    })
    .to_string()
}

/// `info://server`: what this server is (no auth).
pub fn info_resource() -> Resource {
    Resource::text("info://server", "server", "application/json", server_info)
        .description("What this server is and what it offers.")
}

/// `file://{file_key}`: one of the caller's uploads (auth). Extracted text is preferred; text
/// content is returned as text, capped; other content as a base64 blob.
pub fn file_template() -> ResourceTemplate {
    let read: TemplateReadFn = Arc::new(|uri, vars, user, ctx| {
        let key = vars.get("file_key").cloned().unwrap_or_default();
        Box::pin(async move { read_upload(uri, &key, user, ctx).await })
    });
    ResourceTemplate::new("file://{file_key}", "upload", read)
        .description("A file you uploaded, by its file_key (see list_files).")
        .auth(true)
}

async fn read_upload(
    uri: &str,
    key: &str,
    user: &UserInfo,
    ctx: &ToolContext<'_>,
) -> Result<Vec<ResourceContents>, ResourceError> {
    let owner = user.user_id().ok_or_else(|| ResourceError::Unauthenticated(uri.to_owned()))?;
    let not_found = || ResourceError::NotFound(uri.to_owned());
    if !mirobody_health::valid_key(key) {
        return Err(not_found());
    }
    let db = health_store(ctx).map_err(|e| ResourceError::Failed(e.to_string()))?;
    let storage = ctx.storage().map_err(|e| ResourceError::Failed(e.to_string()))?;
    let file = db
        .file(owner, original_key(key))
        .await
        .map_err(|e| ResourceError::Failed(e.to_string()))?
        .ok_or_else(not_found)?;
    let text_contents = |text: &str, mime: &str| {
        let (text, _) = cap_chars(text, MAX_INLINE_CHARS);
        Ok(vec![ResourceContents {
            uri: uri.to_owned(),
            mime_type: Some(mime.to_owned()),
            text: Some(text.to_owned()),
            blob: None,
            meta: None,
        }])
    };
    if let Some(text_key) = &file.text_key {
        let bytes = storage.get(text_key).await.map_err(|e| ResourceError::Failed(e.to_string()))?;
        return text_contents(&String::from_utf8_lossy(&bytes), "text/plain");
    }
    if file.size > MAX_BLOB_BYTES as u64 {
        return Err(ResourceError::Failed(format!(
            "The file is larger than {} MiB; use the read_file tool for a download link.",
            MAX_BLOB_BYTES / (1024 * 1024)
        )));
    }
    let bytes = storage.get(&file.file_key).await.map_err(|e| ResourceError::Failed(e.to_string()))?;
    if is_text_like(&file.mime_type)
        && let Ok(text) = std::str::from_utf8(&bytes)
    {
        return text_contents(text, &file.mime_type);
    }
    Ok(vec![ResourceContents {
        uri: uri.to_owned(),
        mime_type: Some(file.mime_type),
        text: None,
        blob: Some(base64::engine::general_purpose::STANDARD.encode(&bytes)),
        meta: None,
    }])
}

/// The caller's uploads as `resources/list` entries (`file://<file_key>`), newest first; empty
/// for an anonymous caller or without a database.
pub async fn list_uploads(user: &UserInfo, ctx: &ToolContext<'_>) -> Result<Vec<ResourceInfo>, ResourceError> {
    let (Some(owner), Ok(db)) = (user.user_id(), health_store(ctx)) else { return Ok(Vec::new()) };
    let files = db.files(owner).await.map_err(|e| ResourceError::Failed(e.to_string()))?;
    Ok(files
        .into_iter()
        .map(|f| {
            let description = if f.text_key.is_some() {
                "A file you uploaded. Text was extracted from it; reading this resource returns that text."
            } else {
                "A file you uploaded."
            };
            ResourceInfo {
                uri: Cow::Owned(format!("file://{}", f.file_key)),
                name: Cow::Owned(f.filename),
                title: None,
                description: Some(Cow::Borrowed(description)),
                mime_type: Some(Cow::Owned(if f.text_key.is_some() { "text/plain".into() } else { f.mime_type })),
                meta: None,
            }
        })
        .collect())
}

register_resource!(info_resource);
register_resource_template!(file_template);
