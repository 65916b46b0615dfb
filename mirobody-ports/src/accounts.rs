//! People who sign in: accounts (an email and a password hash over a `users` row) and their
//! web sessions. The sign-in pages and the authorization server use these; `mirobody-store`
//! keeps them.

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;

/// A person who can sign in. `id` is the `users` id their health data is kept under, so an
/// account made for an existing user (the demo's, one created by token) keeps that user's data.
#[derive(Clone, PartialEq, Eq)]
pub struct Account {
    /// The user id (`users.id`, a token's `sub`).
    pub id: String,
    /// The email address, lower-cased; unique across accounts.
    pub email: String,
    /// The name shown on pages.
    pub display_name: Option<String>,
    /// The argon2id PHC string, `None` for an account that cannot sign in with a password
    /// (not yet set, or reset by the operator).
    pub password_hash: Option<String>,
    /// A disabled account cannot sign in, and its sessions and apps stop working.
    pub disabled: bool,
    /// When it was made, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
}

// Hand-written so the password hash never reaches a log line.
impl std::fmt::Debug for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account")
            .field("id", &self.id)
            .field("email", &self.email)
            .field("display_name", &self.display_name)
            .field("has_password", &self.password_hash.is_some())
            .field("disabled", &self.disabled)
            .finish()
    }
}

/// Where accounts are kept. Emails are compared lower-cased; callers pass them lower-cased.
#[async_trait]
pub trait AccountStore: Send + Sync {
    /// Stores a new account, and the `users` row of its id when there is none (an existing
    /// user keeps their row and data). False, storing nothing, when the email or the id
    /// already has an account.
    async fn create_account(&self, account: &Account) -> BackendResult<bool>;
    /// The account with this id.
    async fn account(&self, id: &str) -> BackendResult<Option<Account>>;
    /// The account with this (lower-cased) email.
    async fn account_by_email(&self, email: &str) -> BackendResult<Option<Account>>;
    /// Accounts in order of email, at most `limit`, after the email `after` when given.
    async fn list_accounts(&self, after: Option<&str>, limit: u32) -> BackendResult<Vec<Account>>;
    /// Replaces (or, with `None`, removes) the password hash; false when there is no such
    /// account.
    async fn set_password_hash(&self, id: &str, password_hash: Option<&str>) -> BackendResult<bool>;
    /// Disables or enables the account; false when there is no such account.
    async fn set_account_disabled(&self, id: &str, disabled: bool) -> BackendResult<bool>;

    /// Stores a sign-up token under the SHA-256 of its value, unless `token.invited_by`
    /// already has `max_live_per_inviter` live ones (unused, expiring after
    /// `token.created_at_ms`): then false, storing nothing. Checked and stored at once, so
    /// concurrent calls cannot pass the bound together.
    async fn create_signup_token(
        &self,
        token_hash: &[u8; 32],
        token: &SignupToken,
        max_live_per_inviter: u32,
    ) -> BackendResult<bool>;
    /// The email of the live (unused, unexpired) sign-up token with this hash.
    async fn signup_token_email(&self, token_hash: &[u8; 32], now_ms: i64) -> BackendResult<Option<String>>;
    /// Marks the live sign-up token with this hash used and returns its email: of several
    /// uses, at once or in turn, exactly one gets it. `None` for a used, expired or unknown
    /// token.
    async fn use_signup_token(&self, token_hash: &[u8; 32], now_ms: i64) -> BackendResult<Option<String>>;
    /// Deletes sign-up tokens expired by `now_ms`, used or not; how many.
    async fn sweep_signup_tokens(&self, now_ms: i64) -> BackendResult<u64>;
}

/// A sign-up link's token: made when someone is invited by an email that has no account, it
/// lets one person make the account of that email. Only the SHA-256 of its value is stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignupToken {
    /// The (lower-cased) email the account will have; the person signing up cannot change it.
    pub email: String,
    /// The user who invited them.
    pub invited_by: String,
    /// When it was made, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// When it stops working.
    pub expires_at_ms: i64,
}

/// A signed-in browser. The cookie holds a random token; only its SHA-256 is stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebSession {
    /// The account signed in.
    pub account_id: String,
    /// When it was made, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// When it stops working.
    pub expires_at_ms: i64,
}

/// Where web sessions are kept.
#[async_trait]
pub trait WebSessionStore: Send + Sync {
    /// Stores a session under the hash of its token.
    async fn create_web_session(&self, token_hash: &[u8; 32], session: &WebSession) -> BackendResult<()>;
    /// The live (unexpired) session with this token hash, whose account exists and is not
    /// disabled.
    async fn web_session(&self, token_hash: &[u8; 32], now_ms: i64) -> BackendResult<Option<WebSession>>;
    /// Ends one session; whether it existed.
    async fn end_web_session(&self, token_hash: &[u8; 32]) -> BackendResult<bool>;
    /// Ends every session of an account; how many there were.
    async fn end_web_sessions_of(&self, account_id: &str) -> BackendResult<u64>;
    /// Deletes expired sessions; how many.
    async fn sweep_web_sessions(&self, now_ms: i64) -> BackendResult<u64>;
}
