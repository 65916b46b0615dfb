//! Sign-in attempts, bounded per account and per client address.

use std::time::Duration;

/// Failed sign-ins, bounded per account and per address.
pub(crate) struct SignInThrottle {}

impl SignInThrottle {
    pub(crate) fn new(_burst: u32, _interval: Duration) -> Self {
        SignInThrottle {}
    }
}
