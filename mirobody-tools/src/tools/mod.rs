//! One module per built-in tool, each with its declaration, handler and tests; `member.rs`
//! and `query.rs` hold what the health tools share.
//!
//! | tool | auth | backends | writes |
//! | --- | --- | --- | --- |
//! | [`echo`] | no | - | no |
//! | [`whoami`] | yes | - | no |
//! | [`ask_user`] | no | the client (elicitation) | no |
//! | [`family_health`] | yes | db | no |
//! | [`search_health_indicators`] | yes | db | no |
//! | [`fetch_health_data`] | yes | db | no |
//! | [`get_user_health_profile`] | yes | db | no |
//! | [`upload_link`] | yes | upload links | adds a link (or revokes the caller's) |
//! | [`list_files`] | yes | db | no |
//! | [`read_file`] | yes | db, storage | no |
//! | [`recall_memory`] | yes | memory | no |
//! | [`remember`] | yes | memory | adds |
//! | [`render_chart`] | no | - | no |
//! | [`summarize_conversation`] | yes | db | overwrites |

use std::fmt::Display;

use mirobody_core::{ToolError, UserInfo};

pub mod ask_user;
pub mod echo;
pub mod family_health;
pub mod fetch_health_data;
pub mod get_user_health_profile;
pub mod list_files;
mod member;
mod query;
pub mod read_file;
pub mod recall_memory;
pub mod remember;
pub mod render_chart;
pub mod search_health_indicators;
pub mod summarize_conversation;
pub mod upload_file;
pub mod upload_link;
pub mod whoami;

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

/// A required string argument, trimmed, non-empty and at most `max_chars` characters.
pub(crate) fn required_text<'a>(
    args: &'a mirobody_core::Args,
    name: &str,
    max_chars: usize,
    what: &str,
) -> Result<&'a str, ToolError> {
    let text = args.str(name).map(str::trim).unwrap_or_default();
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
