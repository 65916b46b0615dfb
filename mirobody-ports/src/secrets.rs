//! Personal MCP secrets, kept as hashes: what the auth layer looks a caller up in.

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;
use serde::{Deserialize, Serialize};

/// Who a personal MCP secret belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretOwner {
    /// The user the secret identifies.
    pub user_id: String,
    /// The agent the secret is bound to, for per-agent tool lists.
    pub agent: Option<String>,
}

/// Personal MCP secrets, stored only as hashes: the server never keeps a secret it could leak.
///
/// Not for tools: the server's auth layer uses it. Every method takes the SHA-256 of the
/// secret, never the secret.
///
/// A secret may expire: `expires_at_ms` is the time (milliseconds since the Unix epoch) from
/// which it identifies nobody, `None` for never. An expired secret is treated as absent by
/// every method: its lookup finds no owner, `has_secret` is false, and `add_secret` replaces it.
#[async_trait]
pub trait SecretStore: Send + Sync {
    /// The owner of the secret with this hash, if it exists, is not revoked and has not
    /// expired.
    async fn secret_owner(&self, secret_hash: &[u8; 32]) -> BackendResult<Option<SecretOwner>>;
    /// Stores the hash of `user_id`'s new secret, replacing any earlier one (so the old secret
    /// stops working).
    async fn put_secret(
        &self,
        user_id: &str,
        secret_hash: &[u8; 32],
        agent: Option<&str>,
        expires_at_ms: Option<u64>,
    ) -> BackendResult<()>;
    /// Stores the hash of `user_id`'s first secret: false, storing nothing, when they already
    /// have a live one (an expired one is replaced). Atomic: of two concurrent calls for one
    /// user, one stores and one gets false.
    async fn add_secret(
        &self,
        user_id: &str,
        secret_hash: &[u8; 32],
        agent: Option<&str>,
        expires_at_ms: Option<u64>,
    ) -> BackendResult<bool>;
    /// Whether `user_id` has a live (stored, unexpired) secret.
    async fn has_secret(&self, user_id: &str) -> BackendResult<bool>;
    /// Revokes `user_id`'s secret; whether there was one (an expired one counts).
    async fn revoke_secret(&self, user_id: &str) -> BackendResult<bool>;
}
