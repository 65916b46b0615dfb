//! Links to the upload page, made when a person asks for one (the `upload_link` tool, the CLI,
//! the demo): whoever holds one may upload a file as that person, and do nothing else.
//!
//! A link is `<base>/<id>`, the id 192 random bits in base64url: it says nothing about whose it
//! is. The store keeps the id's SHA-256 beside its user, its expiry, the uses it has left
//! (one by default: a link stores one file) and whether it was revoked. An upload takes a use
//! before it is stored and gives it back when nothing was stored, so a refused file does not
//! burn the link and two uploads racing on its last use store one file.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use mirobody_health::text::now_ms;
use mirobody_health::{LinkInsert, UploadLinkRow, UploadLinkStore};

/// Random bytes in a link's id (192 bits).
const ID_BYTES: usize = 24;
/// Characters of a link's id in base64url.
const ID_CHARS: usize = 32;
/// The longest user id a link is made for.
const MAX_LINK_USER_BYTES: usize = 256;

/// How links are made.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LinkSettings {
    /// How long a link works (default 15 minutes).
    pub lifetime: Duration,
    /// How many files one link stores (default 1).
    pub uses: u32,
    /// How many links that still work one person may have at once (default 20).
    pub max_live_per_user: u32,
    /// The longest an upload through a link takes, from taking its use to storing the file
    /// or giving the use back (default 10 minutes; a server sets its body deadline and a
    /// margin). A used-up link is kept at least this long after its last use, so that an
    /// upload still in progress finds its link to give the use back to.
    pub upload_time: Duration,
}

impl Default for LinkSettings {
    fn default() -> Self {
        LinkSettings {
            lifetime: Duration::from_secs(900),
            uses: 1,
            max_live_per_user: 20,
            upload_time: Duration::from_secs(600),
        }
    }
}

/// A link just made.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NewLink {
    /// The page's address, to give to the person.
    pub url: String,
    /// When it stops working, in unix milliseconds.
    pub expires_at_ms: i64,
    /// How many files it stores.
    pub uses: u32,
}

/// Why a link was not made, or does not work.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// No such link (or one expired long enough ago to be forgotten).
    #[error("This upload link is not valid or has expired; ask for a new one.")]
    NotValid,
    /// The link expired.
    #[error("This upload link has expired; ask for a new one.")]
    Expired,
    /// The link has stored all the files it may.
    #[error("This upload link has been used; ask for a new one.")]
    UsedUp,
    /// The link was revoked.
    #[error("This upload link was revoked; ask for a new one.")]
    Revoked,
    /// The person already has as many links as they may.
    #[error(
        "You already have {live} upload links that still work, the most this server allows; use or revoke them \
         before asking for another."
    )]
    TooMany {
        /// Their links that still work.
        live: u64,
    },
    /// Links cannot be made for this user id.
    #[error("Upload links cannot be made for this user id.")]
    BadUser,
    /// The store failed; the message is safe to show.
    #[error("{0}")]
    Backend(String),
}

impl LinkError {
    /// The HTTP status a route answers with.
    pub fn status(&self) -> u16 {
        match self {
            LinkError::NotValid | LinkError::Expired | LinkError::UsedUp | LinkError::Revoked => 403,
            LinkError::TooMany { .. } => 429,
            LinkError::BadUser => 400,
            LinkError::Backend(_) => 503,
        }
    }
}

fn backend(e: mirobody_core::backend::BackendError) -> LinkError {
    LinkError::Backend(e.to_string())
}

/// The links to the upload page, kept in an [`UploadLinkStore`]. Cheap to clone.
#[derive(Clone)]
pub struct UploadLinks {
    store: Arc<dyn UploadLinkStore>,
    base: String,
    settings: LinkSettings,
}

impl std::fmt::Debug for UploadLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UploadLinks").field("base", &self.base).field("settings", &self.settings).finish()
    }
}

// The key a link is stored and found by. Found by an index lookup on this hash rather than
// compared in constant time: the timing of a lookup tells at most something about the hash of
// a guess, which says nothing about any stored id, and 192 random bits are not guessed.
fn id_hash(id: &str) -> [u8; 32] {
    Sha256::digest(id.as_bytes()).into()
}

// Whether `id` is shaped as the ids this module makes; others never reach the store.
fn well_formed(id: &str) -> bool {
    id.len() == ID_CHARS && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl UploadLinks {
    /// Links to the page at `base` (for example `https://mirobody.example/upload`), kept in
    /// `store`.
    pub fn new(store: Arc<dyn UploadLinkStore>, base: impl Into<String>, settings: LinkSettings) -> Self {
        UploadLinks { store, base: base.into().trim_end_matches('/').to_owned(), settings }
    }

    /// How links are made.
    pub fn settings(&self) -> &LinkSettings {
        &self.settings
    }

    /// Makes a link for `user_id`, or [`LinkError::TooMany`] when they already have
    /// [`LinkSettings::max_live_per_user`] that still work. Expired links (anyone's) are
    /// deleted first, and at the bound the user's revoked ones and the used-up ones whose last
    /// upload must have ended ([`LinkSettings::upload_time`]).
    pub async fn mint(&self, user_id: &str) -> Result<NewLink, LinkError> {
        if user_id.is_empty() || user_id.len() > MAX_LINK_USER_BYTES {
            return Err(LinkError::BadUser);
        }
        let mut random = [0u8; ID_BYTES];
        rand::RngCore::fill_bytes(&mut rand::rng(), &mut random);
        let id = URL_SAFE_NO_PAD.encode(random);
        let now = now_ms();
        let lifetime = i64::try_from(self.settings.lifetime.as_millis()).unwrap_or(i64::MAX).max(1_000);
        let expires_at_ms = now.saturating_add(lifetime);
        let uses = self.settings.uses.max(1);
        let max_live = self.settings.max_live_per_user.max(1);
        let upload_time = i64::try_from(self.settings.upload_time.as_millis()).unwrap_or(i64::MAX);
        let settled_before = now.saturating_sub(upload_time);
        let hash = id_hash(&id);
        match self.store.insert_upload_link(&hash, user_id, now, expires_at_ms, uses, max_live, settled_before).await {
            Ok(LinkInsert::Stored) => Ok(NewLink { url: format!("{}/{id}", self.base), expires_at_ms, uses }),
            Ok(LinkInsert::TooMany(live)) => Err(LinkError::TooMany { live }),
            Err(e) => Err(backend(e)),
        }
    }

    // The stored link of `id` while it works, or why it does not.
    async fn working(&self, id: &str) -> Result<UploadLinkRow, LinkError> {
        if !well_formed(id) {
            return Err(LinkError::NotValid);
        }
        let row = self.store.upload_link(&id_hash(id)).await.map_err(backend)?.ok_or(LinkError::NotValid)?;
        if row.revoked {
            Err(LinkError::Revoked)
        } else if row.expires_ms <= now_ms() {
            Err(LinkError::Expired)
        } else if row.uses_left <= 0 {
            Err(LinkError::UsedUp)
        } else {
            Ok(row)
        }
    }

    /// Whose link `id` is, while it works (for showing the page: no use is taken).
    pub async fn check(&self, id: &str) -> Result<String, LinkError> {
        self.working(id).await.map(|row| row.user_id)
    }

    /// Takes one use of link `id` for an upload: give it back ([`LinkUse::give_back`]) when
    /// nothing was stored, keep it ([`LinkUse::keep`]) when the file was. Dropped without
    /// either (the request went away), it is given back.
    pub async fn take_use(&self, id: &str) -> Result<LinkUse, LinkError> {
        if !well_formed(id) {
            return Err(LinkError::NotValid);
        }
        let hash = id_hash(id);
        match self.store.take_upload_link_use(&hash, now_ms()).await.map_err(backend)? {
            Some((user, uses_left)) => Ok(LinkUse {
                store: Arc::clone(&self.store),
                hash,
                user,
                uses_left: u64::try_from(uses_left).unwrap_or(0),
                settled: false,
            }),
            // Only to say why: the use was refused in one statement above.
            None => Err(self.working(id).await.err().unwrap_or(LinkError::UsedUp)),
        }
    }

    /// Revokes link `id` (its holder's choice); refused as the page would be when it no
    /// longer works.
    pub async fn revoke(&self, id: &str) -> Result<(), LinkError> {
        if !well_formed(id) {
            return Err(LinkError::NotValid);
        }
        if self.store.revoke_upload_link(&id_hash(id), now_ms()).await.map_err(backend)? {
            Ok(())
        } else {
            Err(self.working(id).await.err().unwrap_or(LinkError::NotValid))
        }
    }

    /// Revokes every link of `user_id` that still works; how many.
    pub async fn revoke_all(&self, user_id: &str) -> Result<u64, LinkError> {
        self.store.revoke_upload_links(user_id, now_ms()).await.map_err(backend)
    }

    /// How many links of `user_id` still work.
    pub async fn live(&self, user_id: &str) -> Result<u64, LinkError> {
        self.store.live_upload_links(user_id, now_ms()).await.map_err(backend)
    }
}

/// One use of a link, taken for an upload in progress.
#[must_use = "keep the use when the file was stored, give it back when not"]
pub struct LinkUse {
    store: Arc<dyn UploadLinkStore>,
    hash: [u8; 32],
    user: String,
    uses_left: u64,
    settled: bool,
}

impl std::fmt::Debug for LinkUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkUse").field("uses_left", &self.uses_left).finish_non_exhaustive()
    }
}

impl LinkUse {
    /// Whose upload it is.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The uses the link has left after this one.
    pub fn uses_left(&self) -> u64 {
        self.uses_left
    }

    /// The file was stored: the use is spent.
    pub fn keep(mut self) {
        self.settled = true;
    }

    /// Nothing was stored: the link gets its use back.
    pub async fn give_back(mut self) {
        self.settled = true;
        if let Err(e) = self.store.give_back_upload_link_use(&self.hash).await {
            tracing::warn!(error = %e, "an upload link's use could not be given back");
        }
    }
}

impl Drop for LinkUse {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        // The request was dropped mid-upload: nothing was stored under this use.
        let (store, hash) = (Arc::clone(&self.store), self.hash);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if let Err(e) = store.give_back_upload_link_use(&hash).await {
                        tracing::warn!(error = %e, "an upload link's use could not be given back");
                    }
                });
            }
            Err(_) => tracing::warn!("an upload link's use could not be given back: no runtime"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ids_shaped_as_minted_ones_reach_the_store() {
        let id = URL_SAFE_NO_PAD.encode([7u8; ID_BYTES]);
        assert_eq!(id.len(), ID_CHARS);
        assert!(well_formed(&id));
        for bad in ["", "abc", &format!("{id}a"), &format!("{}.", &id[..ID_CHARS - 1]), &"é".repeat(16)] {
            assert!(!well_formed(bad), "{bad}");
        }
    }

    #[test]
    fn refusals_are_forbidden_and_a_full_hand_is_too_many() {
        for refused in [LinkError::NotValid, LinkError::Expired, LinkError::UsedUp, LinkError::Revoked] {
            assert_eq!(refused.status(), 403);
            assert!(refused.to_string().contains("ask for a new one"), "{refused}");
        }
        assert_eq!(LinkError::TooMany { live: 20 }.status(), 429);
        assert!(LinkError::Expired.to_string().contains("expired"));
    }
}
