//! What the sign-in pages and the authorization server are configured with.

use std::path::PathBuf;
use std::time::Duration;

use mirobody_core::human_duration;
use serde::Deserialize;

use crate::upstream::settings::{ProviderSettings, validate_all};

/// The `[oauth]` settings. Every key is optional.
///
/// ```
/// use mirobody_oauth::OAuthSettings;
///
/// let settings: OAuthSettings = serde_json::from_value(serde_json::json!({"access_token_ttl": "5m"})).unwrap();
/// assert!(settings.enabled);
/// assert_eq!(settings.access_token_ttl, std::time::Duration::from_secs(300));
/// assert!(!settings.open_signup);
/// ```
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct OAuthSettings {
    /// Whether the server signs people in and issues tokens. An operator who signs people in
    /// elsewhere (their own identity provider's JWTs) turns it off. Default: on.
    pub enabled: bool,
    /// Whether anyone may make an account at `/signup`. Default: off (the operator adds
    /// people with `mirobody-server user add`, or a care-circle invitation does).
    pub open_signup: bool,
    /// How long an access token works. Default: 15 minutes.
    #[serde(deserialize_with = "human_duration::deserialize")]
    pub access_token_ttl: Duration,
    /// How long a refresh token works (each use replaces it). Default: 30 days.
    #[serde(deserialize_with = "human_duration::deserialize")]
    pub refresh_token_ttl: Duration,
    /// How long an authorization code works. Default: 60 s.
    #[serde(deserialize_with = "human_duration::deserialize")]
    pub code_ttl: Duration,
    /// How long a browser stays signed in. Default: 14 days.
    #[serde(deserialize_with = "human_duration::deserialize")]
    pub session_ttl: Duration,
    /// The ES256 private key (PKCS#8 PEM) tokens are signed with. Default: `oauth-es256.pem`
    /// in the data folder, made at first start. Instances behind one address share one file.
    pub signing_key_file: Option<PathBuf>,
    /// Dynamic registrations one client address may make per hour. Default: 20.
    pub registrations_per_hour: u32,
    /// Registered clients kept at most. Default: 10,000.
    pub max_clients: u64,
    /// A registered client no grant names is deleted after this long. Default: 7 days.
    #[serde(deserialize_with = "human_duration::deserialize")]
    pub unused_client_ttl: Duration,
    /// Failed sign-ins allowed per account, and per client address, before each further try
    /// waits; sign-ups (with `open_signup`) are bounded per address and per email alike,
    /// counting every try. Default: 5.
    pub sign_in_burst: u32,
    /// How often one more try is allowed after the burst. Default: 1 minute.
    #[serde(deserialize_with = "human_duration::deserialize")]
    pub sign_in_interval: Duration,
    /// How long a client's metadata document (a `client_id` that is an https URL) is used
    /// before it is fetched again. Default: 1 hour.
    #[serde(deserialize_with = "human_duration::deserialize")]
    pub cimd_cache_ttl: Duration,
    /// How long a metadata document that could not be used is not fetched again. Default:
    /// 1 minute.
    #[serde(deserialize_with = "human_duration::deserialize")]
    pub cimd_failure_ttl: Duration,
    /// How long past [`cimd_cache_ttl`](Self::cimd_cache_ttl) the last copy of a metadata
    /// document is still used while its host cannot be reached (or answers 5xx or 429), so
    /// an outage there does not lock the client's users out; a document that is fetched and
    /// found wrong, or gone (4xx), is never covered. Default: 24 hours.
    #[serde(deserialize_with = "human_duration::deserialize")]
    pub cimd_stale_grace: Duration,
    /// The whole fetch of a metadata document, name lookup to last byte, at most. Default: 5 s.
    #[serde(deserialize_with = "human_duration::deserialize")]
    pub cimd_fetch_timeout: Duration,
    /// Whether a metadata document may be fetched from this host (`http://` or `https://` to
    /// 127.0.0.1, [::1] or localhost). Only for tests and local development: it lets anyone
    /// who can start an authorization make this server fetch from its own loopback services.
    /// Default: off.
    pub cimd_allow_loopback_http: bool,
    /// The OpenID providers people may sign in with besides a password (a button each on
    /// the sign-in page). Default: none.
    pub providers: Vec<ProviderSettings>,
}

impl Default for OAuthSettings {
    fn default() -> Self {
        OAuthSettings {
            enabled: true,
            open_signup: false,
            access_token_ttl: Duration::from_secs(15 * 60),
            refresh_token_ttl: Duration::from_secs(30 * 24 * 3600),
            code_ttl: Duration::from_secs(60),
            session_ttl: Duration::from_secs(14 * 24 * 3600),
            signing_key_file: None,
            registrations_per_hour: 20,
            max_clients: 10_000,
            unused_client_ttl: Duration::from_secs(7 * 24 * 3600),
            sign_in_burst: 5,
            sign_in_interval: Duration::from_secs(60),
            cimd_cache_ttl: Duration::from_secs(3600),
            cimd_failure_ttl: Duration::from_secs(60),
            cimd_stale_grace: Duration::from_secs(24 * 3600),
            cimd_fetch_timeout: Duration::from_secs(5),
            cimd_allow_loopback_http: false,
            providers: Vec::new(),
        }
    }
}

impl OAuthSettings {
    /// What is wrong with the settings, if anything: for now, the providers' (see
    /// [`ProviderSettings::validate`]; ids are unique besides).
    pub fn validate(&self) -> Result<(), String> {
        validate_all(&self.providers)
    }
}
