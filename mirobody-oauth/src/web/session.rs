//! Signed-in browsers: a random token in a cookie, its SHA-256 in the store, and a CSRF token
//! derived from it for every form.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{HeaderMap, HeaderValue};
use mirobody_ports::{Account, WebSession};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::random::{self, RandomError};
use crate::server::OAuthServer;

/// The cookie's name: with the `__Host-` prefix behind https (the browser then refuses it
/// from any other host or path, or without `Secure`), plain over http (local use).
pub(crate) fn cookie_name(server: &OAuthServer) -> &'static str {
    if server.inner.secure { "__Host-mirobody_session" } else { "mirobody_session" }
}

/// A browser that is signed in.
#[derive(Debug)]
pub(crate) struct SignedIn {
    pub(crate) account: Account,
    pub(crate) token_hash: [u8; 32],
}

impl SignedIn {
    /// The CSRF token every form of this session carries: derived from the session token, so
    /// a page on another site, which cannot read the cookie, cannot make it.
    pub(crate) fn csrf(&self) -> String {
        let mut digest = Sha256::new();
        digest.update(b"mirobody csrf v1\0");
        digest.update(self.token_hash);
        URL_SAFE_NO_PAD.encode(digest.finalize())
    }

    /// Whether a form's CSRF token is this session's (compared in constant time).
    pub(crate) fn csrf_matches(&self, submitted: &str) -> bool {
        bool::from(self.csrf().as_bytes().ct_eq(submitted.as_bytes()))
    }
}

/// The session token in the request's cookie, if any.
fn cookie_token<'a>(server: &OAuthServer, headers: &'a HeaderMap) -> Option<&'a str> {
    crate::web::forms::cookie(headers, cookie_name(server))
}

/// The account signed in by the request's cookie: its session is live, and the account exists
/// and is not disabled. A store failure counts as signed out (and is logged).
pub(crate) async fn signed_in(server: &OAuthServer, headers: &HeaderMap) -> Option<SignedIn> {
    let token = cookie_token(server, headers)?;
    let token_hash = mirobody_auth::hash_secret(token);
    let stores = &server.inner.stores;
    let session = match stores.sessions.web_session(&token_hash, mirobody_core::clock::now_ms()).await {
        Ok(session) => session?,
        Err(e) => {
            tracing::warn!(error = %e, "web session lookup failed");
            return None;
        }
    };
    match stores.accounts.account(&session.account_id).await {
        Ok(Some(account)) if !account.disabled => Some(SignedIn { account, token_hash }),
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(error = %e, "account lookup failed");
            None
        }
    }
}

/// Starts a session for `account_id`: stores it and returns the `Set-Cookie` value.
pub(crate) async fn start(server: &OAuthServer, account_id: &str) -> Result<HeaderValue, StartError> {
    let token = random::token(32)?;
    let now = mirobody_core::clock::now_ms();
    let ttl = server.inner.settings.session_ttl;
    let session = WebSession {
        account_id: account_id.to_owned(),
        created_at_ms: now,
        expires_at_ms: now.saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)),
    };
    server.inner.stores.sessions.create_web_session(&mirobody_auth::hash_secret(&token), &session).await?;
    Ok(cookie(server, &token, ttl.as_secs()))
}

/// Ends the request's session, if any, and returns the `Set-Cookie` value that clears it.
pub(crate) async fn end(server: &OAuthServer, headers: &HeaderMap) -> HeaderValue {
    if let Some(token) = cookie_token(server, headers)
        && let Err(e) = server.inner.stores.sessions.end_web_session(&mirobody_auth::hash_secret(token)).await
    {
        tracing::warn!(error = %e, "cannot end a web session");
    }
    cookie(server, "", 0)
}

fn cookie(server: &OAuthServer, value: &str, max_age: u64) -> HeaderValue {
    // `__Host-` needs `Path=/`; over http the cookie is scoped to the prefix.
    let path = if server.inner.secure { "/".to_owned() } else { server.path("/") };
    let secure = if server.inner.secure { "; Secure" } else { "" };
    let text =
        format!("{}={value}; Path={path}; Max-Age={max_age}; HttpOnly; SameSite=Lax{secure}", cookie_name(server));
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static("mirobody_session=; Max-Age=0"))
}

/// The sign-in page's URL, returning to `next` (a path on this server) afterwards.
pub(crate) fn sign_in_url(server: &OAuthServer, next: &str) -> String {
    let next: String = form_urlencoded::byte_serialize(next.as_bytes()).collect();
    format!("{}?next={next}", server.path("/signin"))
}

/// Why a session could not be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    #[error(transparent)]
    Random(#[from] RandomError),
    #[error("the session store failed: {0}")]
    Store(#[from] mirobody_core::backend::BackendError),
}
