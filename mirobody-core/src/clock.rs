//! The wall clock, read one way by every crate: milliseconds since the Unix epoch.
//!
//! Expiries, timestamps kept in stores and the times written on the wire all come from
//! [`now_ms`], so that no two parts of the engine disagree on the unit or on what a clock
//! before 1970 reads as.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch by the system clock: 0 for a clock set before 1970,
/// `i64::MAX` for one past the year 292 million.
///
/// ```
/// let now = mirobody_core::clock::now_ms();
/// assert!(now > 1_700_000_000_000, "after November 2023");
/// ```
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| i64::try_from(since.as_millis()).unwrap_or(i64::MAX))
}

/// Whole seconds since the Unix epoch by the same clock as [`now_ms`].
pub fn now_secs() -> u64 {
    now_ms().max(0).unsigned_abs() / 1_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_and_milliseconds_read_the_same_clock() {
        let (before, secs, after) = (now_ms(), now_secs(), now_ms());
        assert!(before <= after);
        assert!((before / 1_000) as u64 <= secs && secs <= (after / 1_000) as u64);
    }
}
