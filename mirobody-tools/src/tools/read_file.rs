//! `read_file`: one of the caller's files: its extracted text or text-like content inline,
//! otherwise a signed URL that expires.
//!
//! Fixes upstream: ownership is checked against the caller's own index (another user's key is
//! "not found", the same as a key that does not exist); content is read through the store's
//! decrypting `get` and URLs through its signer, never raw ciphertext; inline text is capped
//! on a character boundary.

use std::time::Duration;

use mirobody_core::{ToolContext, ToolError, ToolResult, UserInfo, tool};
use serde_json::json;

use super::{caller, fail};
use mirobody_health::text::{cap_chars, is_text_like};

#[cfg(feature = "uploads")]
use crate::uploads::Uploader;
use mirobody_health::{TextState, health_store};

/// The most characters returned inline.
pub(crate) const MAX_INLINE_CHARS: usize = 50_000;
/// How long a signed URL works.
pub(crate) const URL_LIFETIME: Duration = Duration::from_secs(3600);
/// How long a read waits for the text of a document still being read.
#[cfg(feature = "uploads")]
const TEXT_WAIT: Duration = Duration::from_secs(10);
/// The longest file key accepted.
pub(crate) const MAX_KEY_LEN: usize = 512;

/// The original key for a key that names one of its sidecars (`.trans` text, `.meta`).
pub(crate) fn original_key(key: &str) -> &str {
    key.strip_suffix(".trans").or_else(|| key.strip_suffix(".meta")).unwrap_or(key)
}

/// Read one of the user's uploaded files by its file_key (from list_files). Returns the text
/// extracted from it, or its content when it is text, 50,000 characters at a time (pass the
/// answer's next_offset as offset to read on); for other files, a link that works for an hour.
///
/// Args:
///     file_key: The file_key from list_files.
///     offset: Where to start reading, in characters (next_offset of the last page).
// Extracting a long PDF may take a while: a task then.
#[tool(annotations(read_only, idempotent), task_support = "optional")]
async fn read_file(
    user: &UserInfo,
    ctx: &ToolContext<'_>,
    file_key: &str,
    #[arg(default = 0)] offset: i64,
) -> Result<ToolResult, ToolError> {
    let owner = caller(user)?;
    let key = file_key.trim();
    if key.is_empty() {
        return Err(ToolError::new("read_file requires a 'file_key' (see list_files)."));
    }
    if key.len() > MAX_KEY_LEN || !mirobody_health::valid_key(key) {
        return Err(ToolError::new("That is not a file_key this server uses; call list_files for the keys."));
    }
    let offset = usize::try_from(offset)
        .map_err(|_| ToolError::new("'offset' must be 0 or more (the next_offset of the last page)."))?;
    let db = health_store(ctx).map_err(fail)?;
    let storage = ctx.storage().map_err(fail)?;
    let file = db
        .file(owner, original_key(key))
        .await
        .map_err(fail)?
        .ok_or_else(|| ToolError::new("File not found. Call list_files for the user's files."))?;
    // A document uploaded a moment ago is usually read within seconds: wait that long (when
    // this program reads documents; without the uploads feature another one does).
    #[cfg(feature = "uploads")]
    let file = match ctx.extension::<Uploader>().and_then(Uploader::reader) {
        Some(reader) if file.text_state == TextState::Waiting => {
            reader.settled(owner, &file.file_key, TEXT_WAIT).await.unwrap_or(file)
        }
        _ => file,
    };
    if file.text_state == TextState::Waiting {
        return Err(ToolError::new(format!(
            "The text of {} is still being read; try again in a minute.",
            file.filename
        )));
    }
    let text = if let Some(text_key) = &file.text_key {
        let bytes = storage.get(text_key).await.map_err(fail)?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    } else if is_text_like(&file.mime_type) {
        // Text that is not valid UTF-8 is served as a binary file.
        String::from_utf8(storage.get(&file.file_key).await.map_err(fail)?).ok()
    } else {
        None
    };
    if let Some(text) = text {
        return page(&file.filename, &file.mime_type, &text, offset);
    }
    let url = storage.signed_url(&file.file_key, URL_LIFETIME).await.map_err(fail)?;
    let mut out = json!({
        "filename": file.filename,
        "mime": file.mime_type,
        "url": url,
        "expires_in": URL_LIFETIME.as_secs(),
        "note": "Binary file; not inlined. Fetch it from the url.",
    });
    if let TextState::Unreadable(why) = file.text_state {
        out["text_error"] = json!(why);
    }
    Ok(ToolResult::ok(out))
}

/// One page of a text: `MAX_INLINE_CHARS` characters from `offset`, with where the next starts.
fn page(filename: &str, mime: &str, text: &str, offset: usize) -> Result<ToolResult, ToolError> {
    let total = text.chars().count();
    if offset > total || (offset == total && total > 0) {
        return Err(ToolError::new(format!("'offset' {offset} is past the end: the text has {total} characters.")));
    }
    let start = text.char_indices().nth(offset).map_or(text.len(), |(i, _)| i);
    let (content, truncated) = cap_chars(&text[start..], MAX_INLINE_CHARS);
    let mut out = json!({"filename": filename, "mime": mime, "content": content, "total_chars": total});
    if offset > 0 {
        out["offset"] = json!(offset);
    }
    if truncated {
        out["truncated"] = json!(true);
        out["next_offset"] = json!(offset + MAX_INLINE_CHARS);
    }
    Ok(ToolResult::ok(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_read_page_by_page_without_splitting_a_character() {
        let text: String = "é".repeat(MAX_INLINE_CHARS) + "tail😀";
        let first = page("a.txt", "text/plain", &text, 0)
            .unwrap()
            .structured_content()
            .cloned()
            .map(serde_json::Value::Object)
            .unwrap();
        assert_eq!(first["content"].as_str().unwrap().chars().count(), MAX_INLINE_CHARS);
        assert_eq!((first["truncated"].clone(), first["next_offset"].clone()), (json!(true), json!(MAX_INLINE_CHARS)));
        assert_eq!(first["total_chars"], MAX_INLINE_CHARS + 5);
        let second = page("a.txt", "text/plain", &text, MAX_INLINE_CHARS)
            .unwrap()
            .structured_content()
            .cloned()
            .map(serde_json::Value::Object)
            .unwrap();
        assert_eq!(second["content"], "tail😀");
        assert_eq!(second.get("next_offset"), None);
        let past = page("a.txt", "text/plain", &text, MAX_INLINE_CHARS + 5).unwrap_err().to_string();
        assert!(past.contains("past the end") && past.contains("50005"), "{past}");
        let empty = page("e.txt", "text/plain", "", 0)
            .unwrap()
            .structured_content()
            .cloned()
            .map(serde_json::Value::Object)
            .unwrap();
        assert_eq!(empty["content"], "");
    }

    #[test]
    fn sidecar_keys_name_their_file() {
        assert_eq!(super::original_key("f1.trans"), "f1");
        assert_eq!(super::original_key("f1.meta"), "f1");
        assert_eq!(super::original_key("f1.pdf"), "f1.pdf");
    }
}
