//! An error with its causes on one line, for logs: reqwest's and openidconnect's own messages
//! leave out why a connection or a fetch failed.

/// `error: cause: cause …`.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
