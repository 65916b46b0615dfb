//! How much of some things one person may keep in the store, and the refusal when they would
//! keep more. Each bound is checked and taken in one step where the row is written
//! (`memory.rs`, `circle.rs`, and `import.rs` for observations: there the count kept by
//! triggers is read in the import's own transaction, whose row lock on it orders imports made
//! at once): the insert carries its own count, on SQLite in one statement
//! (one writer at a time), on PostgreSQL after a lock on the owner held to the end of the
//! transaction, so writes made at once cannot together pass the bound.

use super::SqlStore;

/// Per-person bounds of a [`SqlStore`] ([`with_quotas`](SqlStore::with_quotas)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreQuotas {
    /// The most memories one person keeps (`remember`). Default: 10,000.
    pub max_memories_per_user: u64,
    /// The most care-circle invitations one person has waiting for an answer. Default: 50.
    pub max_pending_invitations_per_user: u64,
    /// The most FHIR Observations one person keeps (imports). Default: 2,000,000.
    pub max_observations_per_user: u64,
}

impl Default for StoreQuotas {
    fn default() -> Self {
        StoreQuotas {
            max_memories_per_user: 10_000,
            max_pending_invitations_per_user: 50,
            max_observations_per_user: 2_000_000,
        }
    }
}

impl SqlStore {
    /// This store, bounding what one person keeps by `quotas`.
    pub fn with_quotas(mut self, quotas: StoreQuotas) -> Self {
        self.quotas = quotas;
        self
    }

    /// The bounds on what one person keeps.
    pub fn quotas(&self) -> StoreQuotas {
        self.quotas
    }
}

/// The per-owner lock of a quota on PostgreSQL, for the transaction that counts and inserts:
/// `$1` is the owner. Each kind of row has its own key space (the second argument), so a
/// person's memories never wait for their invitations.
pub(super) const PG_OWNER_LOCK: &str = "SELECT pg_advisory_xact_lock(hashtextextended($1, $2))";
/// The key space of memories' quota locks.
pub(super) const MEMORY_LOCK_SPACE: i64 = 41_001;
/// The key space of invitations' quota locks.
pub(super) const INVITATION_LOCK_SPACE: i64 = 41_002;

/// A bound as an SQL integer (a bound past `i64::MAX` is no bound).
pub(super) fn sql_bound(max: u64) -> i64 {
    i64::try_from(max).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_past_i64_is_no_bound() {
        assert_eq!(sql_bound(u64::MAX), i64::MAX);
    }
}
