//! Grants revoked at the authorization server: the access tokens naming them (in their `gid`
//! claim) stop working at once, not when they expire.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// The ids of revoked grants, shared by the authorization server (which adds to it) and the
/// token verifier (which refuses a token naming one). An id is kept for `retention`, the
/// access tokens' lifetime: after that every token naming it has expired anyway, so the set
/// stays as small as the revocations of one token lifetime. Cheap to clone (one set).
///
/// ```
/// use std::time::Duration;
/// use mirobody_auth::RevokedGrants;
///
/// let revoked = RevokedGrants::new(Duration::from_secs(900));
/// revoked.revoke("g1");
/// assert!(revoked.contains("g1"));
/// assert!(!revoked.contains("g2"));
/// ```
#[derive(Clone, Debug)]
pub struct RevokedGrants {
    inner: Arc<RwLock<HashMap<String, Instant>>>,
    retention: Duration,
}

impl RevokedGrants {
    /// An empty set keeping each id for `retention`.
    pub fn new(retention: Duration) -> Self {
        RevokedGrants { inner: Arc::default(), retention }
    }

    /// Adds a revoked grant (again, if it is there: its time restarts).
    pub fn revoke(&self, grant_id: &str) {
        self.extend([grant_id]);
    }

    /// Adds revoked grants, and forgets those older than the retention.
    pub fn extend<'a>(&self, grant_ids: impl IntoIterator<Item = &'a str>) {
        let now = Instant::now();
        let mut set = self.inner.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        for id in grant_ids {
            set.insert(id.to_owned(), now);
        }
        set.retain(|_, at| now.duration_since(*at) < self.retention);
    }

    /// Whether the grant is revoked.
    pub fn contains(&self, grant_id: &str) -> bool {
        let set = self.inner.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        set.contains_key(grant_id)
    }

    /// How many ids are kept.
    pub fn len(&self) -> usize {
        self.inner.read().unwrap_or_else(|poisoned| poisoned.into_inner()).len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_forgotten_after_the_retention() {
        let revoked = RevokedGrants::new(Duration::from_millis(30));
        revoked.revoke("old");
        std::thread::sleep(Duration::from_millis(60));
        revoked.revoke("new");
        assert!(!revoked.contains("old"), "kept past its retention");
        assert!(revoked.contains("new"));
        assert_eq!(revoked.len(), 1);
    }
}
