//! The built-in tools: one private module each, holding the `#[tool]` function (its declaration
//! and handler) and its tests; `member.rs` and `query.rs` hold what the health tools share.
//!
//! A tool registers itself, so the list below is the only place a new one is named, and no
//! tool adds to the crate's public API. The table of tools in the READMEs is generated from the
//! registry (`tests/builtins/tool_docs.rs`; `UPDATE_DOCS=1` rewrites it).

use std::fmt::Display;

use mirobody_core::{ToolError, UserInfo};

mod ask_user;
mod delete_health_data;
mod echo;
mod family_health;
mod fetch_health_data;
mod fetch_health_trends;
mod get_user_health_profile;
mod list_data_access;
mod list_files;
mod member;
mod output_schemas;
mod query;
mod read_file;
mod recall_memory;
mod record_health_data;
mod recorded_value;
mod remember;
#[cfg(feature = "charts")]
mod render_chart;
mod search_health_indicators;
mod series;
mod summarize_conversation;
mod trends;
#[cfg(feature = "uploads")]
mod upload_file;
#[cfg(feature = "uploads")]
mod upload_link;
mod whoami;

// `file://` resources read a file as read_file does.
pub(crate) use read_file::{MAX_INLINE_CHARS, original_key};

/// The caller's verified id. The registry refuses anonymous callers of auth tools before the
/// handler runs; this answers the same way if a handler is ever reached without one.
pub(crate) fn caller(user: &UserInfo) -> Result<&str, ToolError> {
    user.user_id().ok_or_else(|| ToolError::new("Authentication required: sign in and call the tool again."))
}

/// Any backend or peer error as the tool's error message (backend messages are written to be
/// shown).
pub(crate) fn fail(e: impl Display) -> ToolError {
    ToolError::new(e.to_string())
}

/// A required string argument `name`, trimmed, non-empty and at most `max_chars` characters.
pub(crate) fn required_text<'a>(
    value: &'a str,
    name: &str,
    max_chars: usize,
    what: &str,
) -> Result<&'a str, ToolError> {
    let text = value.trim();
    if text.is_empty() {
        return Err(ToolError::new(format!("'{name}' is required: {what}.")));
    }
    if text.chars().count() > max_chars {
        return Err(ToolError::new(format!(
            "'{name}' is too long: at most {max_chars} characters. Shorten it and call the tool again."
        )));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    /// A new tool is its file and one private `mod` line here: no module of this folder is
    /// public, so adding a tool leaves the crate's public API as it was, and every file in the
    /// folder is named (a file left out would compile to nothing, silently).
    #[test]
    fn every_tool_file_is_named_here_and_none_is_public() {
        let list = include_str!("mod.rs");
        let named: Vec<&str> = list.lines().filter_map(|line| line.strip_prefix("mod ")?.strip_suffix(';')).collect();
        assert!(!list.lines().any(|line| line.starts_with("pub mod") || line.starts_with("pub(crate) mod")));
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tools");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter_map(|file| Some(file.strip_suffix(".rs")?.to_owned()))
            .filter(|name| name != "mod")
            .collect();
        files.sort();
        assert_eq!(named, files, "each file in src/tools/ has one `mod name;` line, in order");
    }
}
