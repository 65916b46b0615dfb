//! The rows behind the links to the upload page: one per link, keyed by the SHA-256 of its id.

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;

/// A stored upload link, as [`UploadLinkStore::upload_link`] reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct UploadLinkRow {
    /// Whose uploads it makes.
    pub user_id: String,
    /// When it stops working, in unix milliseconds.
    pub expires_ms: i64,
    /// How many more files it may store.
    pub uses_left: i64,
    /// Whether it was revoked.
    pub revoked: bool,
}

impl UploadLinkRow {
    /// A row as a store reads it back.
    pub fn new(user_id: String, expires_ms: i64, uses_left: i64, revoked: bool) -> Self {
        UploadLinkRow { user_id, expires_ms, uses_left, revoked }
    }
}

/// What [`UploadLinkStore::insert_upload_link`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkInsert {
    /// The link was stored.
    Stored,
    /// The user already has this many links that still work; nothing was stored.
    TooMany(u64),
}

/// Where the links to the upload page are kept. Every method is keyed by a link id's hash or
/// scoped to one user; a use is taken and given back in one step each, so two uploads racing
/// on a link's last use store one file.
#[async_trait]
pub trait UploadLinkStore: Send + Sync {
    /// Stores a link for `user_id` (its id's hash, when it expires, how many files it may
    /// store), unless the user already has `max_live` links that still work. Expired links,
    /// anyone's, are deleted first; and the user's revoked ones, and used-up ones whose last
    /// use was taken before `settled_before_ms`, when they would count against the bound, so
    /// no one keeps more than `max_live` rows however often they make and revoke links.
    #[allow(clippy::too_many_arguments)] // One row's values and the bounds it is stored within.
    async fn insert_upload_link(
        &self,
        token_hash: &[u8; 32],
        user_id: &str,
        now_ms: i64,
        expires_ms: i64,
        uses: u32,
        max_live: u32,
        settled_before_ms: i64,
    ) -> BackendResult<LinkInsert>;

    /// The link whose id hashes to `token_hash`, expired or not (until expired links are
    /// deleted), to tell its holder why it no longer works.
    async fn upload_link(&self, token_hash: &[u8; 32]) -> BackendResult<Option<UploadLinkRow>>;

    /// Takes one use of a link that still works, noting when: its user and the uses left
    /// after this one, or `None` (expired, revoked, used up or unknown).
    async fn take_upload_link_use(&self, token_hash: &[u8; 32], now_ms: i64) -> BackendResult<Option<(String, i64)>>;

    /// Gives back a use taken by [`take_upload_link_use`](Self::take_upload_link_use) for an
    /// upload that stored nothing.
    async fn give_back_upload_link_use(&self, token_hash: &[u8; 32]) -> BackendResult<()>;

    /// Revokes one link; whether it was one that had not expired or been revoked before.
    async fn revoke_upload_link(&self, token_hash: &[u8; 32], now_ms: i64) -> BackendResult<bool>;

    /// Revokes every link of `user_id` that still works; how many.
    async fn revoke_upload_links(&self, user_id: &str, now_ms: i64) -> BackendResult<u64>;

    /// How many links of `user_id` still work.
    async fn live_upload_links(&self, user_id: &str, now_ms: i64) -> BackendResult<u64>;
}
