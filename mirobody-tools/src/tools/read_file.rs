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
/// A PDF's text has a line "--- page N ---" before each page (cite pages by it); the answer
/// then says how many pages there are, and page reads one of them.
///
/// Args:
///     file_key: The file_key from list_files.
///     offset: Where to start reading, in characters (next_offset of the last page).
///     page: A page of a PDF's text to read, from 1 (instead of offset).
// Extracting a long PDF may take a while: a task then.
#[tool(annotations(read_only, idempotent), task_support = "optional")]
async fn read_file(
    user: &UserInfo,
    ctx: &ToolContext<'_>,
    file_key: &str,
    #[arg(default = 0)] offset: i64,
    page: Option<i64>,
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
    let page = match page {
        Some(_) if offset > 0 => {
            return Err(ToolError::new("Give 'page' or 'offset', not both: 'page' reads from the start of a page."));
        }
        Some(number) => Some(
            usize::try_from(number)
                .ok()
                .filter(|number| *number >= 1)
                .ok_or_else(|| ToolError::new("'page' must be 1 or more (pages are counted from 1)."))?,
        ),
        None => None,
    };
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
        return match page {
            Some(number) => read_page(&file.filename, &file.mime_type, &text, number),
            None => self::page(&file.filename, &file.mime_type, &text, offset),
        };
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
    Ok(ToolResult::ok(window(filename, mime, text, total, offset, start..text.len())))
}

/// Page `number` of a text with page markers, from its marker line to the next one (at most
/// `MAX_INLINE_CHARS` characters, then `next_offset` reads on by offset).
fn read_page(filename: &str, mime: &str, text: &str, number: usize) -> Result<ToolResult, ToolError> {
    let pages = crate::pages::pages(text);
    if pages.is_empty() {
        return Err(ToolError::new(format!(
            "{filename} has no pages: only the text of a PDF is read page by page. Read it by 'offset'."
        )));
    }
    let Some((_, range)) = pages.iter().find(|(marked, _)| *marked == number) else {
        return Err(ToolError::new(format!("{filename} has no page {number}: its text has {} pages.", pages.len())));
    };
    let total = text.chars().count();
    let offset = text[..range.start].chars().count();
    let mut out = window(filename, mime, text, total, offset, range.clone());
    out["page"] = json!(number);
    Ok(ToolResult::ok(out))
}

/// The answer for `text[range]`, `offset` characters into a text of `total`: at most
/// `MAX_INLINE_CHARS` characters of it, and how many pages the text has when it has pages.
fn window(
    filename: &str,
    mime: &str,
    text: &str,
    total: usize,
    offset: usize,
    range: std::ops::Range<usize>,
) -> serde_json::Value {
    let (content, truncated) = cap_chars(&text[range], MAX_INLINE_CHARS);
    let mut out = json!({"filename": filename, "mime": mime, "content": content, "total_chars": total});
    if offset > 0 {
        out["offset"] = json!(offset);
    }
    if truncated {
        out["truncated"] = json!(true);
        out["next_offset"] = json!(offset + MAX_INLINE_CHARS);
    }
    let pages = crate::pages::pages(text).len();
    if pages > 0 {
        out["pages"] = json!(pages);
    }
    out
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

    fn answer(result: Result<ToolResult, ToolError>) -> serde_json::Value {
        result.unwrap().structured_content().cloned().map(serde_json::Value::Object).unwrap()
    }

    #[test]
    fn a_paged_text_is_read_by_page_and_says_how_many_pages_it_has() {
        let text = "--- page 1 ---\nGlucose 5.4\n\n--- page 2 ---\nHbA1c 5.9 %\n\n--- page 3 ---\nLDL 2.1\n";
        let second = answer(read_page("r.pdf", "application/pdf", text, 2));
        assert_eq!(second["content"], "--- page 2 ---\nHbA1c 5.9 %\n\n");
        assert_eq!((second["page"].clone(), second["pages"].clone()), (json!(2), json!(3)));
        // The offset is where the page starts in the whole text: offset reads go on from it.
        assert_eq!(second["offset"], json!(text.find("--- page 2").unwrap()));
        assert_eq!(answer(read_page("r.pdf", "application/pdf", text, 3))["content"], "--- page 3 ---\nLDL 2.1\n");
        // Offset reads still work, and say the text has pages.
        let whole = answer(page("r.pdf", "application/pdf", text, 0));
        assert_eq!((whole["content"].as_str(), whole["pages"].clone()), (Some(text), json!(3)));
        let past = read_page("r.pdf", "application/pdf", text, 4).unwrap_err().to_string();
        assert!(past.contains("no page 4") && past.contains("3 pages"), "{past}");
        let unpaged = read_page("n.txt", "text/plain", "Glucose 5.4", 1).unwrap_err().to_string();
        assert!(unpaged.contains("no pages") && unpaged.contains("offset"), "{unpaged}");
        assert_eq!(answer(page("n.txt", "text/plain", "Glucose 5.4", 0)).get("pages"), None);
    }

    #[test]
    fn a_long_page_is_cut_and_read_on_by_offset() {
        let text = format!("--- page 1 ---\n{}\n--- page 2 ---\nend\n", "é".repeat(MAX_INLINE_CHARS + 10));
        let first = answer(read_page("r.pdf", "application/pdf", &text, 1));
        assert_eq!(first["content"].as_str().unwrap().chars().count(), MAX_INLINE_CHARS);
        assert_eq!((first["truncated"].clone(), first["next_offset"].clone()), (json!(true), json!(MAX_INLINE_CHARS)));
        let rest = answer(page("r.pdf", "application/pdf", &text, MAX_INLINE_CHARS));
        assert!(rest["content"].as_str().unwrap().ends_with("--- page 2 ---\nend\n"));
    }

    #[test]
    fn sidecar_keys_name_their_file() {
        assert_eq!(super::original_key("f1.trans"), "f1");
        assert_eq!(super::original_key("f1.meta"), "f1");
        assert_eq!(super::original_key("f1.pdf"), "f1.pdf");
    }
}
