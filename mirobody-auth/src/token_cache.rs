//! Tokens already verified: a client sends the same access token with every request, and
//! checking it again (base64, JSON, a signature) costs far more than finding it here (the
//! figures are in `benches/README.md`, "Sign-in").

use std::collections::HashMap;
use std::sync::RwLock;

use mirobody_core::UserInfo;

/// Verified tokens kept at most: a full cache is emptied of expired entries, then
/// of everything. Only tokens whose signature verified get in, so filling it takes that many
/// valid tokens.
const MAX_ENTRIES: usize = 4096;

struct Entry {
    user: UserInfo,
    /// `exp` plus the leeway, in seconds since the Unix epoch: past it the token is refused.
    valid_until: u64,
    /// The `gid` claim, checked against the revoked grants on every use.
    grant: Option<Box<str>>,
}

/// Verified tokens by their full text (keyed by the text itself, not a hash of it, so no
/// collision can hand one caller another's identity).
#[derive(Default)]
pub(crate) struct TokenCache {
    entries: RwLock<HashMap<Box<str>, Entry, foldhash::fast::RandomState>>,
}

impl TokenCache {
    /// The caller of a token verified before, while it is unexpired; with its grant id.
    pub(crate) fn get(&self, token: &str, now: u64) -> Option<(UserInfo, Option<Box<str>>)> {
        let entries = self.entries.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let entry = entries.get(token).filter(|entry| now <= entry.valid_until)?;
        Some((entry.user.clone(), entry.grant.clone()))
    }

    /// Keeps a verified token.
    pub(crate) fn put(&self, token: &str, user: &UserInfo, valid_until: u64, grant: Option<&str>, now: u64) {
        let mut entries = self.entries.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, entry| now <= entry.valid_until);
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        let entry = Entry { user: user.clone(), valid_until, grant: grant.map(Box::from) };
        entries.insert(Box::from(token), entry);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.read().unwrap_or_else(|poisoned| poisoned.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_ends_with_its_token_and_the_cache_stays_bounded() {
        let cache = TokenCache::default();
        let user = UserInfo::authenticated("u1");
        cache.put("t1", &user, 100, Some("g1"), 50);
        let (found, grant) = cache.get("t1", 100).unwrap();
        assert_eq!(found.user_id(), Some("u1"));
        assert_eq!(grant.as_deref(), Some("g1"));
        assert!(cache.get("t1", 101).is_none(), "expired");
        assert!(cache.get("t2", 50).is_none());
        for i in 0..MAX_ENTRIES + 10 {
            cache.put(&format!("token {i}"), &user, 1000, None, 50);
        }
        assert!(cache.len() <= MAX_ENTRIES);
    }
}
