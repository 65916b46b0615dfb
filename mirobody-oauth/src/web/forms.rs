//! What the pages share: the client's address, the CSRF token of a browser not yet signed in,
//! the `next` a form returns to, field checks, dates, and the plain answer pages.

use std::net::{IpAddr, SocketAddr};

use axum::extract::FromRequestParts;
use axum::extract::connect_info::ConnectInfo;
use axum::response::Response;
use http::request::Parts;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use mirobody_ports::ClientAddr;
use subtle::ConstantTimeEq;

use crate::page::{escape, page};
use crate::random::{self, RandomError};
use crate::server::OAuthServer;
use crate::web::password::{self, PasswordError};

/// The largest form body a page accepts.
pub(crate) const MAX_FORM_BYTES: usize = 16 * 1024;
/// The longest email address (RFC 5321's path limit).
pub(crate) const MAX_EMAIL_BYTES: usize = 254;
/// The longest display name, in characters.
pub(crate) const MAX_NAME_CHARS: usize = 100;
/// The longest `next` path kept.
const MAX_NEXT_BYTES: usize = 8192;
/// How long a pre-session CSRF cookie lasts: long enough to fill a form in.
const CSRF_COOKIE_SECS: u64 = 3600;

/// The client's address, as mirobody-mcp's server tells each request ([`ClientAddr`]), or the
/// connection's peer when the application serves with axum's `ConnectInfo`; `None` when
/// neither is there.
pub(crate) struct ClientAddress(pub(crate) Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let extensions = &parts.extensions;
        let address = match extensions.get::<ClientAddr>() {
            Some(ClientAddr(address)) => Some(*address),
            None => extensions.get::<ConnectInfo<SocketAddr>>().map(|info| info.0.ip()),
        };
        Ok(ClientAddress(address))
    }
}

/// The value of cookie `name` in the request, if it is there, not empty and not over-long.
pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim())
        .filter(|value| !value.is_empty() && value.len() <= 128)
}

/// The pre-session CSRF cookie's name (`__Host-` behind https, as the session cookie's).
fn csrf_cookie_name(server: &OAuthServer) -> &'static str {
    if server.inner.secure { "__Host-mirobody_csrf" } else { "mirobody_csrf" }
}

fn csrf_cookie(server: &OAuthServer, value: &str, max_age: u64) -> HeaderValue {
    let path = if server.inner.secure { "/".to_owned() } else { server.path("/") };
    let secure = if server.inner.secure { "; Secure" } else { "" };
    let text = format!(
        "{}={value}; Path={path}; Max-Age={max_age}; HttpOnly; SameSite=Strict{secure}",
        csrf_cookie_name(server)
    );
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static("mirobody_csrf=; Max-Age=0"))
}

/// The double-submit token of a browser not yet signed in: the one its cookie holds, or a
/// new one with the `Set-Cookie` that gives it.
pub(crate) struct PreSession {
    pub(crate) token: String,
    pub(crate) set_cookie: Option<HeaderValue>,
}

impl PreSession {
    /// The request's token, or a new one.
    pub(crate) fn of(server: &OAuthServer, headers: &HeaderMap) -> Result<PreSession, RandomError> {
        match cookie(headers, csrf_cookie_name(server)) {
            Some(token) => Ok(PreSession { token: token.to_owned(), set_cookie: None }),
            None => PreSession::fresh(server),
        }
    }

    /// A new token, whatever the request holds.
    pub(crate) fn fresh(server: &OAuthServer) -> Result<PreSession, RandomError> {
        let token = random::token(32)?;
        let set_cookie = Some(csrf_cookie(server, &token, CSRF_COOKIE_SECS));
        Ok(PreSession { token, set_cookie })
    }

    /// Whether a form's token is the one in the request's cookie (compared in constant time);
    /// false when either is missing.
    pub(crate) fn matches(server: &OAuthServer, headers: &HeaderMap, submitted: &str) -> bool {
        match cookie(headers, csrf_cookie_name(server)) {
            Some(token) if !submitted.is_empty() => bool::from(token.as_bytes().ct_eq(submitted.as_bytes())),
            _ => false,
        }
    }

    /// The `Set-Cookie` that clears the token once a session holds its own.
    pub(crate) fn clear(server: &OAuthServer) -> HeaderValue {
        csrf_cookie(server, "", 0)
    }

    /// Adds the `Set-Cookie`, if any, to a response.
    pub(crate) fn apply(&self, response: Response) -> Response {
        with_cookies(response, self.set_cookie.clone())
    }
}

/// `response` with `Set-Cookie` headers added.
pub(crate) fn with_cookies(mut response: Response, cookies: impl IntoIterator<Item = HeaderValue>) -> Response {
    for value in cookies {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

/// Where a form returns to: `next` when it is a path on this server (`/`, not `//`, no
/// backslash, no space or control character, which browsers may strip or read as `/`),
/// else the access page.
pub(crate) fn safe_next(server: &OAuthServer, next: &str) -> String {
    let local = next.starts_with('/')
        && !next.starts_with("//")
        && next.len() <= MAX_NEXT_BYTES
        && next.bytes().all(|b| b.is_ascii_graphic() && b != b'\\');
    if local { next.to_owned() } else { server.path("/account") }
}

/// An email address as accounts keep it (trimmed, lower-cased), if it has an address's
/// shape: one `@` with text on both sides, no space or control character, at most
/// [`MAX_EMAIL_BYTES`]. Whether it reaches anyone is not checked: nothing is sent to it.
pub(crate) fn normal_email(email: &str) -> Option<String> {
    let email = email.trim().to_lowercase();
    let (local, domain) = email.split_once('@')?;
    let fine = email.len() <= MAX_EMAIL_BYTES
        && !local.is_empty()
        && !domain.is_empty()
        && !domain.contains('@')
        && !email.chars().any(|c| c.is_whitespace() || c.is_control());
    fine.then_some(email)
}

/// A display name as kept: trimmed, `None` when empty; `Err` when over [`MAX_NAME_CHARS`] or
/// holding a control character.
pub(crate) fn display_name(name: &str) -> Result<Option<String>, &'static str> {
    let name = name.trim();
    if name.chars().count() > MAX_NAME_CHARS {
        return Err("A name may have at most 100 characters.");
    }
    if name.chars().any(char::is_control) {
        return Err("A name may not hold control characters.");
    }
    Ok((!name.is_empty()).then(|| name.to_owned()))
}

/// What a new password's fields say: the hash, or the message that refuses them. Hashing runs
/// off the async threads (argon2 is made to be slow).
pub(crate) async fn new_password_hash(password: &str, again: &str) -> Result<String, &'static str> {
    if password != again {
        return Err("The two new passwords differ.");
    }
    let password = password.to_owned();
    match tokio::task::spawn_blocking(move || password::hash_password(&password)).await {
        Ok(Ok(hash)) => Ok(hash),
        Ok(Err(PasswordError::TooShort)) => Err("A password needs at least 10 characters."),
        Ok(Err(PasswordError::TooLong)) => Err("A password may have at most 1024 bytes."),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "cannot hash a password");
            Err("The password could not be stored; try again.")
        }
        Err(e) => {
            tracing::error!(error = %e, "password hashing stopped");
            Err("The password could not be stored; try again.")
        }
    }
}

/// [`password::verify_password`] off the async threads.
pub(crate) async fn verify_password(password: &str, hash: Option<&str>) -> bool {
    let (password, hash) = (password.to_owned(), hash.map(str::to_owned));
    tokio::task::spawn_blocking(move || password::verify_password(&password, hash.as_deref())).await.unwrap_or(false)
}

/// A date and time in UTC, to the minute: `2026-12-06 08:24 UTC` (`-` for a time out of range).
pub(crate) fn date(ms: i64) -> String {
    match time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000) {
        Ok(at) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02} UTC",
            at.year(),
            u8::from(at.month()),
            at.day(),
            at.hour(),
            at.minute()
        ),
        Err(_) => "-".into(),
    }
}

/// A page with a heading, a message and a link.
pub(crate) fn message(status: StatusCode, title: &str, text: &str, link: (&str, &str)) -> Response {
    let body = format!(
        "<h1>{title}</h1>\n<p>{text}</p>\n<p><a href=\"{href}\">{label}</a></p>",
        title = escape(title),
        text = escape(text),
        href = escape(link.0),
        label = escape(link.1),
    );
    page(status, title, &body)
}

/// The answer when a store or the random generator fails: the cause is logged, not shown.
pub(crate) fn failed(server: &OAuthServer, what: &str, error: &dyn std::fmt::Display) -> Response {
    tracing::error!(error = %error, "{what}");
    message(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Something went wrong",
        "The server could not do that just now. Please try again in a moment.",
        (&server.path("/account"), "Back to your account"),
    )
}

/// The answer to a form that cannot be read (not a form, or too large).
pub(crate) fn unreadable(server: &OAuthServer) -> Response {
    message(
        StatusCode::BAD_REQUEST,
        "That form could not be read",
        "The form was not sent whole. Please go back and try again.",
        (&server.path("/account"), "Back to your account"),
    )
}

/// The answer to a signed-in form whose CSRF token is not the session's.
pub(crate) fn forbidden(server: &OAuthServer) -> Response {
    message(
        StatusCode::FORBIDDEN,
        "That form has expired",
        "The form did not come from this page, or it is too old. Open the page again and retry.",
        (&server.path("/account"), "Back to your account"),
    )
}

/// A `Retry-After` value in whole seconds, at least one.
pub(crate) fn retry_after(wait: std::time::Duration) -> HeaderValue {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    HeaderValue::from(secs.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_calendar_dates() {
        assert_eq!(date(0), "1970-01-01 00:00 UTC");
        assert_eq!(date(951_782_400_000), "2000-02-29 00:00 UTC");
        assert_eq!(date(1_796_545_486_000), "2026-12-06 08:24 UTC");
        assert_eq!(date(-60_000), "1969-12-31 23:59 UTC");
    }

    #[test]
    fn emails_are_lower_cased_and_shaped() {
        assert_eq!(normal_email("  Alice@Example.COM ").as_deref(), Some("alice@example.com"));
        for bad in ["", "alice", "@example.com", "alice@", "a b@example.com", "a@b@c", "a\u{0}@b"] {
            assert_eq!(normal_email(bad), None, "{bad:?}");
        }
        assert_eq!(normal_email(&format!("{}@example.com", "a".repeat(250))), None);
    }

    #[test]
    fn names_are_bounded() {
        assert_eq!(display_name("  Ada  "), Ok(Some("Ada".to_owned())));
        assert_eq!(display_name("   "), Ok(None));
        assert!(display_name(&"é".repeat(101)).is_err());
        assert!(display_name(&"é".repeat(100)).is_ok());
        assert!(display_name("a\u{7}b").is_err());
    }

    #[test]
    fn retry_after_rounds_up() {
        assert_eq!(retry_after(std::time::Duration::from_millis(1500)), "2");
        assert_eq!(retry_after(std::time::Duration::ZERO), "1");
    }
}
