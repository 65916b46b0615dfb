//! `GET`/`POST <prefix>/signup/{token}`: a sign-up link (`OAuthServer::invite_link`) makes
//! the account of the email it was made for, once, whether or not `open_signup` is on. The
//! email comes from the token, never from the form.

use axum::Router;
use axum::extract::rejection::FormRejection;
use axum::extract::{Form, Path, State};
use axum::response::Response;
use axum::routing::get;
use http::{HeaderMap, StatusCode};
use serde::Deserialize;

use crate::server::OAuthServer;
use crate::web::forms::{PreSession, failed, message, unreadable};
use crate::web::signup::{EXPIRED, Refused, SignUpPage, TAKEN, new_account, sign_up_page, signed_up};

/// The longest token looked up: the links' tokens have 43 characters.
const MAX_TOKEN_CHARS: usize = 64;

pub(crate) fn routes(server: &OAuthServer) -> Router {
    Router::new().route(&server.path("/signup/{token}"), get(show).post(submit)).with_state(server.clone())
}

/// The fields read; an `email` sent along is ignored.
#[derive(Deserialize)]
struct InvitedForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    again: String,
    #[serde(default)]
    csrf: String,
}

/// The one answer to a used, expired or unknown link: which it is, is not told.
fn gone(server: &OAuthServer) -> Response {
    message(
        StatusCode::GONE,
        "This link does not work",
        "This sign-up link was used already, has expired, or was never made. If you have made your \
         account, sign in; otherwise ask the person who invited you for a new link.",
        (&server.path("/signin"), "Sign in"),
    )
}

/// The token's hash, when the token has a token's shape.
fn token_hash(token: &str) -> Option<[u8; 32]> {
    let shaped = !token.is_empty()
        && token.len() <= MAX_TOKEN_CHARS
        && token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    shaped.then(|| mirobody_auth::hash_secret(token))
}

/// The email of the live token, or the answer to give instead.
async fn email_of(server: &OAuthServer, token: &str) -> Result<([u8; 32], String), Response> {
    let Some(hash) = token_hash(token) else { return Err(gone(server)) };
    match server.inner.stores.accounts.signup_token_email(&hash, mirobody_core::clock::now_ms()).await {
        Ok(Some(email)) => Ok((hash, email)),
        Ok(None) => Err(gone(server)),
        Err(e) => Err(failed(server, "cannot read a sign-up link", &e)),
    }
}

async fn show(State(server): State<OAuthServer>, Path(token): Path<String>, headers: HeaderMap) -> Response {
    let email = match email_of(&server, &token).await {
        Ok((_, email)) => email,
        Err(answer) => return answer,
    };
    let next = server.path("/account");
    match PreSession::of(&server, &headers) {
        Ok(pre) => {
            let view = SignUpPage { csrf: &pre.token, next: &next, email: &email, email_fixed: true, name: "" };
            pre.apply(sign_up_page(&server, StatusCode::OK, &view, None))
        }
        Err(e) => failed(&server, "cannot make a CSRF token", &e),
    }
}

async fn submit(
    State(server): State<OAuthServer>,
    Path(token): Path<String>,
    headers: HeaderMap,
    form: Result<Form<InvitedForm>, FormRejection>,
) -> Response {
    let (hash, email) = match email_of(&server, &token).await {
        Ok(live) => live,
        Err(answer) => return answer,
    };
    let Ok(Form(form)) = form else { return unreadable(&server) };
    let next = server.path("/account");
    let view = |csrf| SignUpPage { csrf, next: &next, email: &email, email_fixed: true, name: &form.name };
    if !PreSession::matches(&server, &headers, &form.csrf) {
        return match PreSession::fresh(&server) {
            Ok(pre) => pre.apply(sign_up_page(&server, StatusCode::FORBIDDEN, &view(&pre.token), Some(EXPIRED))),
            Err(e) => failed(&server, "cannot make a CSRF token", &e),
        };
    }
    let account = match new_account(&server, email.clone(), &form.name, &form.password, &form.again).await {
        Ok(account) => account,
        Err(Refused::Form(text)) => {
            return sign_up_page(&server, StatusCode::BAD_REQUEST, &view(&form.csrf), Some(text));
        }
        Err(Refused::Failed(answer)) => return answer,
    };
    // The account first, then the link is spent: a store failure in between leaves the
    // link working rather than spent for nothing. The link makes one account all the same:
    // it is of one email, and of two forms sent at once only one stores an account by it.
    match server.inner.stores.accounts.create_account(&account).await {
        Ok(true) => {}
        Ok(false) => {
            return message(StatusCode::CONFLICT, "You have an account", TAKEN, (&server.path("/signin"), "Sign in"));
        }
        Err(e) => return failed(&server, "cannot store an account", &e),
    }
    match server.inner.stores.accounts.use_signup_token(&hash, mirobody_core::clock::now_ms()).await {
        Ok(Some(_)) => {}
        // Spent or swept meanwhile: the account is made all the same, and the link can make
        // no other (its email has an account now).
        Ok(None) => tracing::warn!(account = %account.id, "a sign-up link was spent while its account was made"),
        Err(e) => tracing::warn!(account = %account.id, error = %e, "a sign-up link could not be marked used"),
    }
    tracing::info!(account = %account.id, "account made through a sign-up link");
    signed_up(&server, &account.id, &next).await
}
