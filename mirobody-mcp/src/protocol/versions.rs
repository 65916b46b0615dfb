//! The protocol revisions this server speaks, in one place both revisions' modules and the
//! transports read.

/// The protocol revisions served with the `initialize` handshake and sessions, newest first.
pub(crate) const SUPPORTED_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The newest revision served with the `initialize` handshake.
pub(crate) const LATEST_VERSION: &str = SUPPORTED_VERSIONS[0];

/// The revisions served statelessly, with per-request `_meta`, newest first.
pub(crate) const VERSIONS_WITHOUT_INITIALIZE: [&str; 1] = ["2026-07-28"];

/// Every revision this server speaks, for `server/discover` and -32022 errors: the stateless
/// ones first, then those served with the `initialize` handshake.
pub(crate) fn supported_versions() -> Vec<&'static str> {
    VERSIONS_WITHOUT_INITIALIZE.iter().chain(SUPPORTED_VERSIONS.iter()).copied().collect()
}
