//! Personal MCP secrets: made from the OS CSPRNG, stored only as SHA-256 hashes, and the
//! admin operations behind `POST`/`DELETE /personal/mcp` and `mirobody-server secret ...`.

use std::fmt;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mirobody_core::BackendError;
use mirobody_ports::SecretStore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::McpEndpoint;

/// The header a client that can send headers may carry its personal secret in.
pub const SECRET_HEADER: &str = "x-mcp-secret";

/// The random bytes in a secret: 256 bits.
pub const SECRET_BYTES: usize = 32;

/// The length of a secret's text: 32 bytes in unpadded base64url.
pub const SECRET_LEN: usize = 43;

/// The scope a bearer token needs, by default, to mint, rotate or revoke a personal MCP URL
/// over HTTP (`POST`/`DELETE /personal/mcp`); `auth.personal_url_scope` names another.
pub const PERSONAL_URL_SCOPE: &str = "mcp:personal_url";

/// The shortest lifetime a personal MCP URL may be given: one minute.
pub const MIN_SECRET_LIFETIME: Duration = Duration::from_secs(60);

/// The longest lifetime a personal MCP URL may be given: 365 days (without one, it lasts until
/// rotated or revoked).
pub const MAX_SECRET_LIFETIME: Duration = Duration::from_secs(365 * 24 * 3600);

/// A personal MCP secret. `Debug` prints `[redacted]`; there is no `Display`, so it cannot be
/// formatted into a log line by accident: [`expose`](PersonalSecret::expose) is the only way
/// to the text.
#[derive(Clone, PartialEq, Eq)]
pub struct PersonalSecret(String);

impl PersonalSecret {
    /// The secret's text (43 base64url characters).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Its SHA-256, the only form a store keeps.
    pub fn hash(&self) -> [u8; 32] {
        hash_secret(&self.0)
    }
}

impl fmt::Debug for PersonalSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PersonalSecret([redacted])")
    }
}

/// A personal MCP URL, `<public base URL><uri_prefix>/mcp/<secret>/mcp`: ending in `/mcp`, so
/// clients that infer the transport from the path (the MCP Inspector) take it without flags.
/// The older `…/mcp/<secret>` is still accepted. Like [`PersonalSecret`], its `Debug` hides
/// the secret and it has no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct PersonalUrl(String);

impl PersonalUrl {
    /// The URL for `secret` at `endpoint`.
    pub fn new(endpoint: &McpEndpoint, secret: &PersonalSecret) -> Self {
        PersonalUrl(format!("{}/{}/mcp", endpoint.mcp_url(), secret.expose()))
    }

    /// The URL's text, secret included: hand it to the user, never to a log.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The secret in a personal URL of either shape (`…/mcp/<secret>/mcp` or `…/mcp/<secret>`).
    ///
    /// ```
    /// let url = "https://mcp.example.com/mcp/abc/mcp";
    /// assert_eq!(mirobody_auth::PersonalUrl::secret_of(url), Some("abc"));
    /// assert_eq!(mirobody_auth::PersonalUrl::secret_of("https://mcp.example.com/mcp/abc"), Some("abc"));
    /// ```
    pub fn secret_of(url: &str) -> Option<&str> {
        let url = url.trim();
        let rest = url.strip_suffix("/mcp").filter(|rest| rest.contains("/mcp/")).unwrap_or(url);
        rest.rsplit_once('/').map(|(_, secret)| secret).filter(|secret| !secret.is_empty())
    }
}

impl fmt::Debug for PersonalUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match PersonalUrl::secret_of(&self.0) {
            Some(secret) => write!(f, "PersonalUrl({})", self.0.replacen(secret, "[redacted]", 1)),
            None => f.write_str("PersonalUrl([redacted])"),
        }
    }
}

/// The OS random number generator failed (it practically never does).
#[derive(Debug, thiserror::Error)]
#[error("the operating system's random number generator failed")]
pub struct RngError;

/// A new secret: 32 bytes from the operating system's CSPRNG, as 43 unpadded base64url
/// characters.
///
/// ```
/// let secret = mirobody_auth::generate_secret().unwrap();
/// assert_eq!(secret.expose().len(), 43);
/// assert!(mirobody_auth::looks_like_secret(secret.expose()));
/// assert_eq!(format!("{secret:?}"), "PersonalSecret([redacted])");
/// ```
pub fn generate_secret() -> Result<PersonalSecret, RngError> {
    let mut bytes = [0u8; SECRET_BYTES];
    getrandom::fill(&mut bytes).map_err(|_| RngError)?;
    Ok(PersonalSecret(URL_SAFE_NO_PAD.encode(bytes)))
}

/// The SHA-256 of a secret's text: what [`SecretStore`] keeps and looks up. A secret has 256
/// bits of entropy, so a plain hash (no salt, no stretching) cannot be reversed, and a store
/// may index it.
pub fn hash_secret(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// Whether `secret` hashes to `hash`, compared in constant time (for stores that compare
/// hashes themselves rather than look them up by index).
pub fn secret_matches(secret: &str, hash: &[u8; 32]) -> bool {
    hash_secret(secret).ct_eq(hash).into()
}

/// Whether `text` has a secret's shape: 43 base64url characters. Anything else cannot be a
/// secret, and is refused without asking the store.
pub fn looks_like_secret(text: &str) -> bool {
    text.len() == SECRET_LEN && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Why a secret could not be created, rotated or revoked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecretAdminError {
    /// The user already has a secret, which cannot be shown again (only its hash is kept).
    #[error(
        "user '{0}' already has a personal MCP URL; it cannot be shown again because only its hash is stored. \
         Rotate it (POST /personal/mcp?rotate=true, or `mirobody-server secret rotate --user <id>`) to get a new \
         one; the old URL then stops working"
    )]
    Exists(String),
    /// The user id is empty.
    #[error("the user id must not be empty")]
    NoUser,
    /// The lifetime asked for is shorter than [`MIN_SECRET_LIFETIME`] or longer than
    /// [`MAX_SECRET_LIFETIME`] (in whole seconds).
    #[error(
        "a personal MCP URL's lifetime must be from {min} to {max} seconds (365 days), not {0} seconds",
        min = MIN_SECRET_LIFETIME.as_secs(),
        max = MAX_SECRET_LIFETIME.as_secs()
    )]
    Lifetime(u64),
    /// The secret store failed.
    #[error("the secret store failed: {0}")]
    Store(#[from] BackendError),
    /// No randomness.
    #[error(transparent)]
    Rng(#[from] RngError),
}

/// When a secret made now with lifetime `expires_in` expires, in milliseconds since the Unix
/// epoch (`None` for never). Refuses a lifetime outside [`MIN_SECRET_LIFETIME`] ..=
/// [`MAX_SECRET_LIFETIME`].
pub fn secret_expiry(expires_in: Option<Duration>) -> Result<Option<u64>, SecretAdminError> {
    let Some(lifetime) = expires_in else { return Ok(None) };
    if !(MIN_SECRET_LIFETIME..=MAX_SECRET_LIFETIME).contains(&lifetime) {
        return Err(SecretAdminError::Lifetime(lifetime.as_secs()));
    }
    let lifetime = u64::try_from(lifetime.as_millis()).unwrap_or(u64::MAX);
    Ok(Some(mirobody_core::clock::now_ms().unsigned_abs().saturating_add(lifetime)))
}

/// Creates `user_id`'s personal MCP URL, bound to `agent` if given, and expiring after
/// `expires_in` if given (from [`MIN_SECRET_LIFETIME`] to [`MAX_SECRET_LIFETIME`]). Refuses
/// with [`SecretAdminError::Exists`] when the user already has a live one: its URL cannot be
/// shown again, so the caller must [`rotate_secret`] instead.
pub async fn create_secret(
    store: &dyn SecretStore,
    endpoint: &McpEndpoint,
    user_id: &str,
    agent: Option<&str>,
    expires_in: Option<Duration>,
) -> Result<PersonalUrl, SecretAdminError> {
    if user_id.is_empty() {
        return Err(SecretAdminError::NoUser);
    }
    let expires_at_ms = secret_expiry(expires_in)?;
    let secret = generate_secret()?;
    // Checked and stored in one step: of two concurrent creations, one gets `Exists`.
    if !store.add_secret(user_id, &secret.hash(), agent, expires_at_ms).await? {
        return Err(SecretAdminError::Exists(user_id.to_owned()));
    }
    Ok(PersonalUrl::new(endpoint, &secret))
}

/// Replaces `user_id`'s personal MCP URL with a new one (creating it if there was none),
/// expiring after `expires_in` if given: the old URL stops working at once.
pub async fn rotate_secret(
    store: &dyn SecretStore,
    endpoint: &McpEndpoint,
    user_id: &str,
    agent: Option<&str>,
    expires_in: Option<Duration>,
) -> Result<PersonalUrl, SecretAdminError> {
    if user_id.is_empty() {
        return Err(SecretAdminError::NoUser);
    }
    let expires_at_ms = secret_expiry(expires_in)?;
    let secret = generate_secret()?;
    store.put_secret(user_id, &secret.hash(), agent, expires_at_ms).await?;
    Ok(PersonalUrl::new(endpoint, &secret))
}

/// Revokes `user_id`'s personal MCP URL; whether there was one.
pub async fn revoke_secret(store: &dyn SecretStore, user_id: &str) -> Result<bool, SecretAdminError> {
    if user_id.is_empty() {
        return Err(SecretAdminError::NoUser);
    }
    Ok(store.revoke_secret(user_id).await?)
}
