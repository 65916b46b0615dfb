//! What the OAuth 2.1 authorization server keeps: clients, the grants people consent to,
//! authorization codes and refresh tokens. Codes and refresh tokens are stored only as
//! SHA-256 hashes. `mirobody-store` keeps them; `mirobody-oauth` serves them.

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;

/// An OAuth client: registered dynamically (RFC 7591) or known by its metadata document
/// (its `client_id` is then the document's https URL).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthClient {
    /// The client id.
    pub client_id: String,
    /// The name it gave, shown on the consent and access pages beside its redirect domain.
    pub client_name: Option<String>,
    /// Its home page, if it gave one.
    pub client_uri: Option<String>,
    /// The redirect URIs it registered; `/authorize` takes only these (loopback ones with any
    /// port).
    pub redirect_uris: Vec<String>,
    /// The SHA-256 of its secret, for a confidential client; `None` for a public one.
    pub secret_hash: Option<[u8; 32]>,
    /// Who registered it (a client address, or `metadata` for a document), for the bound on
    /// registrations.
    pub registered_from: String,
    /// When it was stored, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
}

/// The bound on dynamic registrations a store checks atomically with the insert.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegistrationBound {
    /// Count the registrations made since this time (milliseconds since the Unix epoch).
    pub since_ms: i64,
    /// At most this many from the new client's `registered_from` since then.
    pub max_from_one: u32,
    /// At most this many clients in all.
    pub max_total: u64,
}

/// What a person consented to: one client's access to their data, for some scopes, at one
/// resource (the MCP URL). Revoking it ends its refresh tokens and, at the resource server,
/// its access tokens (which name it in their `gid` claim).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// A random id.
    pub id: String,
    /// The account that consented.
    pub account_id: String,
    /// The client.
    pub client_id: String,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// The resource (RFC 8707) the tokens are for.
    pub resource: String,
    /// When it was made, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// When a token was last issued for it.
    pub last_used_at_ms: Option<i64>,
    /// When it was revoked.
    pub revoked_at_ms: Option<i64>,
}

/// An authorization code, as stored under its hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthorizationCode {
    /// The grant it redeems into.
    pub grant_id: String,
    /// The client it was issued to.
    pub client_id: String,
    /// The redirect URI of the request, which the token request must repeat.
    pub redirect_uri: String,
    /// The PKCE S256 challenge.
    pub code_challenge: String,
    /// When it stops working, in milliseconds since the Unix epoch.
    pub expires_at_ms: i64,
}

/// What taking a code found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CodeUse {
    /// The code was live and unused; it is now used.
    Fresh(AuthorizationCode),
    /// The code was used before: the caller revokes its grant (RFC 6749 §4.1.2).
    Replayed {
        /// The grant the first use redeemed into.
        grant_id: String,
    },
    /// No such code, or it expired.
    Unknown,
}

/// What rotating a refresh token found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RefreshUse {
    /// The token was live; it is now used and the new one stored. The grant is as stored.
    Rotated(Grant),
    /// The token was used before: a copy is in someone else's hands, and the caller revokes
    /// the grant (OAuth 2.1 §4.3.1).
    Reused {
        /// The token's grant.
        grant_id: String,
    },
    /// No such token, or it expired, or its grant is revoked or its account disabled.
    Unknown,
}

/// Where the authorization server keeps its state. Every write that must happen once (a code
/// taken, a refresh token rotated, a registration within its bound) is atomic: of two
/// concurrent calls, one wins.
#[async_trait]
pub trait OAuthStore: Send + Sync {
    /// Stores a client if the bound allows; false, storing nothing, when it does not.
    async fn register_client(&self, client: &OAuthClient, bound: RegistrationBound) -> BackendResult<bool>;
    /// Stores or replaces a client known by its metadata document (no bound: the document's
    /// fetch is bounded instead).
    async fn put_client(&self, client: &OAuthClient) -> BackendResult<()>;
    /// The client with this id.
    async fn client(&self, client_id: &str) -> BackendResult<Option<OAuthClient>>;
    /// Deletes the clients made before `before_ms` that no grant names; how many.
    async fn sweep_unused_clients(&self, before_ms: i64) -> BackendResult<u64>;

    /// Stores a new grant.
    async fn create_grant(&self, grant: &Grant) -> BackendResult<()>;
    /// The grant with this id, revoked or not.
    async fn grant(&self, id: &str) -> BackendResult<Option<Grant>>;
    /// The account's grants that are not revoked, newest first.
    async fn grants_of(&self, account_id: &str) -> BackendResult<Vec<Grant>>;
    /// Revokes a grant (and its refresh tokens), only if it is `account_id`'s when that is
    /// given; whether a live grant was revoked.
    async fn revoke_grant(&self, id: &str, account_id: Option<&str>, now_ms: i64) -> BackendResult<bool>;
    /// Revokes every live grant of an account; how many.
    async fn revoke_grants_of(&self, account_id: &str, now_ms: i64) -> BackendResult<u64>;
    /// The ids of grants revoked at or after `since_ms`, for the resource server's list of
    /// revoked access tokens.
    async fn revoked_grants_since(&self, since_ms: i64) -> BackendResult<Vec<String>>;

    /// Stores a code under its hash.
    async fn put_code(&self, code_hash: &[u8; 32], code: &AuthorizationCode) -> BackendResult<()>;
    /// Takes a code: marks it used and returns it the first time, names its grant after.
    async fn take_code(&self, code_hash: &[u8; 32], now_ms: i64) -> BackendResult<CodeUse>;

    /// Stores a refresh token of a grant under its hash.
    async fn put_refresh_token(&self, token_hash: &[u8; 32], grant_id: &str, expires_at_ms: i64) -> BackendResult<()>;
    /// Rotates a refresh token: marks `old_hash` used and stores `new_hash` for the same
    /// grant, and stamps the grant's last use.
    async fn rotate_refresh_token(
        &self,
        old_hash: &[u8; 32],
        new_hash: &[u8; 32],
        new_expires_at_ms: i64,
        now_ms: i64,
    ) -> BackendResult<RefreshUse>;
    /// The grant of a refresh token (used or not), for revocation by token (RFC 7009).
    async fn refresh_token_grant(&self, token_hash: &[u8; 32]) -> BackendResult<Option<String>>;
    /// Stamps a grant's last use.
    async fn touch_grant(&self, id: &str, now_ms: i64) -> BackendResult<()>;

    /// Deletes codes and refresh tokens that expired before `now_ms`; how many.
    async fn sweep_oauth(&self, now_ms: i64) -> BackendResult<u64>;
}
