//! Who is calling: filled by the server from verified credentials, never from arguments.

use std::sync::Arc;

/// The caller of a tool.
///
/// A server fills it from a verified bearer token or personal MCP secret; an application that
/// embeds the registry fills it from its own session. Tool arguments never set it: a parameter
/// named `user_id` is refused when a tool is registered.
///
/// ```
/// use mirobody_core::UserInfo;
///
/// assert!(!UserInfo::anonymous().authed());
/// let user = UserInfo::authenticated("42").with_session("chat-7").with_scopes(["mcp:read"]);
/// assert_eq!(user.user_id(), Some("42"));
/// assert!(user.has_scope("mcp:read"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    user_id: Option<String>,
    // Shared: a server gives every call in an MCP session the session's id.
    session_id: Option<Arc<str>>,
    subject_user_id: Option<String>,
    scopes: Vec<String>,
    agent: Option<String>,
}

impl UserInfo {
    /// A caller with no verified identity.
    pub fn anonymous() -> Self {
        UserInfo::default()
    }

    /// A caller whose identity was verified (an empty id counts as anonymous).
    pub fn authenticated(user_id: impl Into<String>) -> Self {
        let id = user_id.into();
        UserInfo { user_id: (!id.is_empty()).then_some(id), ..UserInfo::default() }
    }

    /// Sets the conversation or MCP session the call belongs to. An `Arc<str>` is shared as
    /// it is, not copied.
    pub fn with_session(mut self, session_id: impl Into<Arc<str>>) -> Self {
        self.session_id = Some(session_id.into());
        self
    }

    /// Sets the care-circle member the caller is acting for (already access-checked by whoever
    /// sets it; tools re-check before reading health data).
    pub fn with_subject(mut self, subject_user_id: impl Into<String>) -> Self {
        self.subject_user_id = Some(subject_user_id.into());
        self
    }

    /// Sets the OAuth scopes the caller's token grants.
    pub fn with_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the agent the call comes through (for per-agent tool lists).
    pub fn with_agent(mut self, agent: impl Into<String>) -> Self {
        self.agent = Some(agent.into());
        self
    }

    /// Whether the caller has a verified identity.
    pub fn authed(&self) -> bool {
        self.user_id.is_some()
    }

    /// The verified user id; `None` for an anonymous caller.
    pub fn user_id(&self) -> Option<&str> {
        self.user_id.as_deref()
    }

    /// The session id, if any.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The care-circle member the caller acts for, if any.
    pub fn subject_user_id(&self) -> Option<&str> {
        self.subject_user_id.as_deref()
    }

    /// The granted scopes.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// Whether a scope was granted.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// The agent name, if any.
    pub fn agent(&self) -> Option<&str> {
        self.agent.as_deref()
    }
}
