//! `GET`/`POST <prefix>/signin` and `POST <prefix>/signout`.

use axum::Router;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Form, Query, State};
use axum::response::Response;
use axum::routing::{get, post};
use http::{HeaderMap, StatusCode, header};
use serde::Deserialize;

use crate::page::{escape, see_other};
use crate::server::OAuthServer;
use crate::web::forms::{
    ClientAddress, PreSession, failed, forbidden, retry_after, safe_next, unreadable, verify_password, with_cookies,
};
use crate::web::session;

/// The one answer to a wrong password and an unknown (or disabled) account alike.
const WRONG: &str = "Email or password is wrong.";

pub(crate) fn routes(server: &OAuthServer) -> Router {
    Router::new()
        .route(&server.path("/signin"), get(show).post(submit))
        .route(&server.path("/signout"), post(sign_out))
        .with_state(server.clone())
}

#[derive(Deserialize)]
pub(crate) struct Next {
    #[serde(default)]
    next: String,
}

#[derive(Deserialize)]
struct SignInForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    next: String,
}

#[derive(Deserialize)]
pub(crate) struct CsrfForm {
    #[serde(default)]
    pub(crate) csrf: String,
}

/// The `next` of a query, empty when there is none or it cannot be read.
pub(crate) fn next_of(query: Result<Query<Next>, QueryRejection>) -> String {
    query.map(|Query(query)| query.next).unwrap_or_default()
}

async fn show(
    State(server): State<OAuthServer>,
    headers: HeaderMap,
    query: Result<Query<Next>, QueryRejection>,
) -> Response {
    let next = safe_next(&server, &next_of(query));
    if session::signed_in(&server, &headers).await.is_some() {
        return see_other(&next);
    }
    match PreSession::of(&server, &headers) {
        Ok(pre) => pre.apply(sign_in_page(&server, StatusCode::OK, &pre.token, &next, "", None)),
        Err(e) => failed(&server, "cannot make a CSRF token", &e),
    }
}

async fn submit(
    State(server): State<OAuthServer>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    form: Result<Form<SignInForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else { return unreadable(&server) };
    let next = safe_next(&server, &form.next);
    if !PreSession::matches(&server, &headers, &form.csrf) {
        // A form from elsewhere, or one older than its cookie: offer a fresh one.
        return match PreSession::fresh(&server) {
            Ok(pre) => {
                let expired = "This form has expired. Please sign in again.";
                pre.apply(sign_in_page(&server, StatusCode::FORBIDDEN, &pre.token, &next, &form.email, Some(expired)))
            }
            Err(e) => failed(&server, "cannot make a CSRF token", &e),
        };
    }
    let email = form.email.trim().to_lowercase();
    let throttle = &server.inner.throttle;
    if let Err(wait) = throttle.check(&email, address) {
        tracing::warn!(address = ?address, "sign-in refused: too many failures for the account or the address");
        let minutes = wait.as_secs().div_ceil(60).max(1);
        let text = format!("Too many failed sign-ins. Please wait {minutes} minute(s) and try again.");
        let mut response =
            sign_in_page(&server, StatusCode::TOO_MANY_REQUESTS, &form.csrf, &next, &form.email, Some(&text));
        response.headers_mut().insert(header::RETRY_AFTER, retry_after(wait));
        return response;
    }
    let account = if email.len() <= crate::web::forms::MAX_EMAIL_BYTES {
        match server.inner.stores.accounts.account_by_email(&email).await {
            Ok(account) => account.filter(|account| !account.disabled),
            Err(e) => return failed(&server, "account lookup failed", &e),
        }
    } else {
        None
    };
    // An unknown or disabled account is checked against the decoy hash: the same work, and
    // the same answer, as a wrong password.
    let hash = account.as_ref().and_then(|account| account.password_hash.as_deref());
    let verified = verify_password(&form.password, hash).await;
    let Some(account) = account.filter(|_| verified) else {
        throttle.failed(&email, address);
        return sign_in_page(&server, StatusCode::UNAUTHORIZED, &form.csrf, &next, &form.email, Some(WRONG));
    };
    match session::start(&server, &account.id).await {
        Ok(cookie) => with_cookies(see_other(&next), [cookie, PreSession::clear(&server)]),
        Err(e) => failed(&server, "cannot start a web session", &e),
    }
}

async fn sign_out(
    State(server): State<OAuthServer>,
    headers: HeaderMap,
    form: Result<Form<CsrfForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else { return unreadable(&server) };
    if let Some(signed_in) = session::signed_in(&server, &headers).await
        && !signed_in.csrf_matches(&form.csrf)
    {
        return forbidden(&server);
    }
    // Without a live session there is nothing another site could end: clear the cookie.
    let cookie = session::end(&server, &headers).await;
    with_cookies(see_other(&server.path("/signin")), [cookie])
}

fn sign_in_page(
    server: &OAuthServer,
    status: StatusCode,
    csrf: &str,
    next: &str,
    email: &str,
    error: Option<&str>,
) -> Response {
    let error =
        error.map(|text| format!("<p class=\"error\" role=\"alert\">{}</p>\n", escape(text))).unwrap_or_default();
    let signup = if server.inner.settings.open_signup {
        let next: String = form_urlencoded::byte_serialize(next.as_bytes()).collect();
        format!(
            "<p class=\"muted\">No account yet? <a href=\"{}?next={}\">Make one</a>.</p>\n",
            escape(&server.path("/signup")),
            escape(&next)
        )
    } else {
        String::new()
    };
    let body = format!(
        "<h1>Sign in</h1>\n{error}<form method=\"post\" action=\"{action}\" class=\"card\">\n\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\n\
         <input type=\"hidden\" name=\"next\" value=\"{next}\">\n\
         <label for=\"email\">Email</label>\n\
         <input id=\"email\" type=\"email\" name=\"email\" value=\"{email}\" maxlength=\"254\" \
         autocomplete=\"username\" required autofocus>\n\
         <label for=\"password\">Password</label>\n\
         <input id=\"password\" type=\"password\" name=\"password\" autocomplete=\"current-password\" required>\n\
         <button type=\"submit\">Sign in</button>\n</form>\n{passkey}{providers}{signup}",
        passkey = crate::web::passkey_pages::sign_in_block(server, csrf, next),
        providers = crate::upstream::sign_in_buttons(server, next),
        action = escape(&server.path("/signin")),
        csrf = escape(csrf),
        next = escape(next),
        email = escape(email.trim()),
    );
    crate::web::passkey_pages::page_for(server, status, "Sign in", &body)
}
