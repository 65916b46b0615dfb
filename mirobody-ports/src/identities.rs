//! Sign-in through an operator's OpenID provider: which account a provider's subject is, and
//! the short-lived state of a sign-in between the redirect to the provider and its return.

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;

/// One provider's subject, linked to an account. A (provider, subject) pair names at most one
/// account; an account may have several.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityLink {
    /// The provider's id in the operator's settings (`oauth.providers[].id`).
    pub provider: String,
    /// The provider's `sub` claim: stable and unique within the provider.
    pub subject: String,
    /// The account signed in as.
    pub account_id: String,
    /// The email the provider gave when the link was made, shown to the person.
    pub email: Option<String>,
    /// When it was made, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
}

/// A sign-in sent to a provider and not yet back, kept under the SHA-256 of its `state`.
#[derive(Clone, PartialEq, Eq)]
pub struct UpstreamLogin {
    /// The provider's id.
    pub provider: String,
    /// The PKCE code verifier the token request proves the code with.
    pub pkce_verifier: String,
    /// The nonce the ID token must carry.
    pub nonce: String,
    /// The path on this server the browser goes to once signed in.
    pub next: String,
    /// When it was made, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// When it stops working.
    pub expires_at_ms: i64,
}

// Hand-written so the verifier and nonce never reach a log line.
impl std::fmt::Debug for UpstreamLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamLogin")
            .field("provider", &self.provider)
            .field("next", &self.next)
            .field("expires_at_ms", &self.expires_at_ms)
            .finish_non_exhaustive()
    }
}

/// Where identity links and sign-ins in flight are kept.
#[async_trait]
pub trait IdentityStore: Send + Sync {
    /// Links a provider's subject to an account; false, storing nothing, when the pair is
    /// linked already (to this account or another).
    async fn link_identity(&self, link: &IdentityLink) -> BackendResult<bool>;
    /// The account the provider's subject is linked to.
    async fn identity_account(&self, provider: &str, subject: &str) -> BackendResult<Option<String>>;
    /// An account's links, oldest first.
    async fn identities_of(&self, account_id: &str) -> BackendResult<Vec<IdentityLink>>;
    /// Removes one link of `account_id` (another account's link is left alone); whether there
    /// was one.
    async fn unlink_identity(&self, account_id: &str, provider: &str, subject: &str) -> BackendResult<bool>;

    /// Stores a sign-in in flight under the SHA-256 of its `state`, unless `max_live` unexpired
    /// ones are kept already: then false, storing nothing.
    async fn create_upstream_login(
        &self,
        state_hash: &[u8; 32],
        login: &UpstreamLogin,
        max_live: u32,
    ) -> BackendResult<bool>;
    /// Takes (removes and returns) the sign-in with this state hash if it has not expired:
    /// of several takes, at once or in turn, at most one gets it.
    async fn take_upstream_login(&self, state_hash: &[u8; 32], now_ms: i64) -> BackendResult<Option<UpstreamLogin>>;
    /// Deletes sign-ins expired by `now_ms`; how many.
    async fn sweep_upstream_logins(&self, now_ms: i64) -> BackendResult<u64>;
}
