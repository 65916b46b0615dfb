//! The refusal of a write that would take a person past what the store keeps for one person.

use std::fmt;

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
    }
}
