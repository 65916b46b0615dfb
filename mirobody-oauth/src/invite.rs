//! Sign-up links for people invited by email: an invitation to an address with no account
//! gives the inviter a link (`<issuer>/signup/<token>`) that makes the account of that address.
//! Nothing is sent: the inviter hands the link over. The pages are `web/invited.rs`.

use std::time::Duration;

use mirobody_core::backend::BackendError;
use mirobody_ports::SignupToken;

use crate::random::{self, RandomError};
use crate::server::OAuthServer;
use crate::web::forms::normal_email;

/// How long a sign-up link works.
pub const SIGNUP_LINK_TTL: Duration = Duration::from_secs(14 * 24 * 3600);
/// The most links one person may have live (unused, unexpired) at once.
pub const MAX_LIVE_SIGNUP_LINKS: u32 = 50;

/// Why no sign-up link was made.
#[derive(Debug, thiserror::Error)]
pub enum InviteLinkError {
    /// The address does not have an email address's shape.
    #[error("that email address does not look right")]
    Email,
    /// The inviter already has [`MAX_LIVE_SIGNUP_LINKS`] links waiting.
    #[error("you have {MAX_LIVE_SIGNUP_LINKS} sign-up links waiting; more can be made once some are used or expire")]
    TooMany,
    /// No random token could be made.
    #[error(transparent)]
    Random(#[from] RandomError),
    /// The store failed.
    #[error("the account store failed: {0}")]
    Store(#[from] BackendError),
}

impl OAuthServer {
    /// A sign-up link for `email`, on behalf of the user `invited_by`: `Some(url)` when no
    /// account has that email, `None` when one does (they sign in instead). The link makes one
    /// account with exactly that email, once, within [`SIGNUP_LINK_TTL`], whether or not
    /// `open_signup` is on; only its token's SHA-256 is stored. Refused
    /// ([`InviteLinkError::TooMany`]) beyond [`MAX_LIVE_SIGNUP_LINKS`] live links of one
    /// inviter.
    pub async fn invite_link(&self, email: &str, invited_by: &str) -> Result<Option<String>, InviteLinkError> {
        let email = normal_email(email).ok_or(InviteLinkError::Email)?;
        let accounts = &self.inner.stores.accounts;
        if accounts.account_by_email(&email).await?.is_some() {
            return Ok(None);
        }
        let token = random::token(32)?;
        let now = mirobody_core::clock::now_ms();
        let ttl = i64::try_from(SIGNUP_LINK_TTL.as_millis()).unwrap_or(i64::MAX);
        let record =
            SignupToken { email, invited_by: invited_by.to_owned(), created_at_ms: now, expires_at_ms: now + ttl };
        if !accounts.create_signup_token(&mirobody_auth::hash_secret(&token), &record, MAX_LIVE_SIGNUP_LINKS).await? {
            return Err(InviteLinkError::TooMany);
        }
        tracing::info!(invited_by, "sign-up link made");
        Ok(Some(self.url(&format!("/signup/{token}"))))
    }
}
