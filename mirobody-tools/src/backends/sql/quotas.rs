//! How much of some things one person may keep in the store, and the refusal when they would
//! keep more. Each bound is checked and taken in one step where the row is written
//! (`memory.rs`, `circle.rs`, and `import.rs` for observations: there the count kept by
//! triggers is read in the import's own transaction, whose row lock on it orders imports made
//! at once): the insert carries its own count, on SQLite in one statement
//! (one writer at a time), on PostgreSQL after a lock on the owner held to the end of the
//! transaction, so writes made at once cannot together pass the bound.

use std::fmt;

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

/// A write refused because its owner already keeps the most a person may.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QuotaExceeded {
    /// Too many memories.
    #[error(
        "You have {} memories, the most this server keeps per person; forget some you no longer need \
         before remembering more.",
        Count(*max)
    )]
    Memories {
        /// The bound.
        max: u64,
    },
    /// Too many invitations waiting.
    #[error(
        "You have {} invitations waiting for an answer, the most this server keeps per person; withdraw one \
         before inviting someone else.",
        Count(*max)
    )]
    Invitations {
        /// The bound.
        max: u64,
    },
    /// An import would take its owner past the most observations a person keeps.
    #[error(
        "This import would take your health data past {} observations, the most this server keeps per \
         person; nothing of it was stored.",
        Count(*max)
    )]
    Observations {
        /// The bound.
        max: u64,
    },
}

// A count with thousands separators ("10,000"), as people read it; a formatting crate for
// one message would be more than the six lines it takes.
struct Count(u64);

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = self.0.to_string();
        for (i, digit) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                f.write_str(",")?;
            }
            write!(f, "{digit}")?;
        }
        Ok(())
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
    fn the_refusals_say_how_many_and_what_to_do() {
        let memories = QuotaExceeded::Memories { max: 10_000 }.to_string();
        assert!(memories.starts_with("You have 10,000 memories, the most this server keeps per person;"), "{memories}");
        assert!(memories.contains("forget"), "{memories}");
        let invitations = QuotaExceeded::Invitations { max: 50 }.to_string();
        assert!(invitations.starts_with("You have 50 invitations waiting"), "{invitations}");
        assert_eq!(Count(1_234_567).to_string(), "1,234,567");
        assert_eq!(Count(999).to_string(), "999");
        assert_eq!(Count(0).to_string(), "0");
        assert_eq!(sql_bound(u64::MAX), i64::MAX);
    }
}
