//! `upload_file`: the upload view's way in. A person picks a file in the view (MCP Apps), the
//! view calls this tool through the host, and the file is stored exactly as one posted to
//! `/files` is (size, quota, type sniffed from the content, text extracted; health data
//! imported, its `import` saying what was imported, skipped and refused). Declared for the
//! view only (`_meta.ui.visibility: ["app"]`), so hosts keep it off the model's tool list;
//! a model that calls it anyway can only store a file as the signed-in caller.
//!
//! The file travels base64 in the call, so it is bounded below the endpoint's body limit;
//! larger files go through `upload_link`.

use base64::Engine;
use mirobody_core::{ToolContext, ToolError, ToolResult, UserInfo, tool};
use serde_json::Value;

use super::caller;
use crate::uploads::Uploader;

/// The largest file the view uploads through the tool, in bytes (its base64 fits the default
/// 4 MiB request body with room for the envelope).
pub(crate) const MAX_INLINE_BYTES: usize = 2_900_000;

/// Stores a file the user picked in the upload view (called by the view, not by the model).
///
/// Health data (FHIR JSON or NDJSON, a CSV of measurements, an Apple Health export.zip) is imported
/// as the user's, and the answer's import says what was imported, skipped and refused.
///
/// Args:
///     filename: The file's name.
///     content_base64: The file's bytes, base64.
#[tool(annotations(additive), meta = { "ui": { "visibility": ["app"] } })]
async fn upload_file(
    user: &UserInfo,
    ctx: &ToolContext<'_>,
    filename: &str,
    content_base64: &str,
) -> Result<ToolResult, ToolError> {
    let me = caller(user)?;
    let uploader = ctx.extension::<Uploader>().ok_or_else(|| ToolError::new("This server does not take uploads."))?;
    let encoded = content_base64;
    if encoded.len() > MAX_INLINE_BYTES.div_ceil(3) * 4 {
        return Err(ToolError::new(format!(
            "The file is larger than {MAX_INLINE_BYTES} bytes: upload it through the page upload_link gives."
        )));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| ToolError::new("content_base64 is not valid base64."))?;
    let uploaded =
        uploader.store_and_import(me, filename, None, bytes).await.map_err(|e| ToolError::new(e.to_string()))?;
    let value: Value = serde_json::to_value(&uploaded).map_err(|e| ToolError::new(e.to_string()))?;
    Ok(ToolResult::ok(value))
}
