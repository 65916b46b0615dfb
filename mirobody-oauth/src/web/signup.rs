//! `GET`/`POST <prefix>/signup`: anyone makes an account, when the operator allows it
//! (`open_signup`); otherwise the page does not exist. The form, its checks and the session
//! that follows are shared with the sign-up links' pages (`invited.rs`).

use axum::Router;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Form, Query, State};
use axum::response::Response;
use axum::routing::get;
use http::{HeaderMap, StatusCode, header};
use mirobody_ports::Account;
use serde::Deserialize;

use crate::page::{escape, page, see_other};
use crate::random;
use crate::server::OAuthServer;
use crate::web::forms::{
    ClientAddress, PreSession, display_name, failed, message, new_password_hash, normal_email, retry_after, safe_next,
    unreadable, with_cookies,
};
use crate::web::session;
use crate::web::signin::{Next, next_of};

pub(crate) fn routes(server: &OAuthServer) -> Router {
    Router::new().route(&server.path("/signup"), get(show).post(submit)).with_state(server.clone())
}

#[derive(Deserialize)]
struct SignUpForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    again: String,
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    next: String,
}

/// The refusal of a form whose CSRF token is not the browser's.
pub(super) const EXPIRED: &str = "This form has expired. Please send it again.";

fn not_found(server: &OAuthServer) -> Response {
    message(
        StatusCode::NOT_FOUND,
        "No such page",
        "This server does not let people make their own accounts. Ask its operator for one.",
        (&server.path("/signin"), "Sign in"),
    )
}

async fn show(
    State(server): State<OAuthServer>,
    headers: HeaderMap,
    query: Result<Query<Next>, QueryRejection>,
) -> Response {
    if !server.inner.settings.open_signup {
        return not_found(&server);
    }
    let next = safe_next(&server, &next_of(query));
    match PreSession::of(&server, &headers) {
        Ok(pre) => {
            let view = SignUpPage { csrf: &pre.token, next: &next, email: "", email_fixed: false, name: "" };
            pre.apply(sign_up_page(&server, StatusCode::OK, &view, None))
        }
        Err(e) => failed(&server, "cannot make a CSRF token", &e),
    }
}

async fn submit(
    State(server): State<OAuthServer>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    form: Result<Form<SignUpForm>, FormRejection>,
) -> Response {
    if !server.inner.settings.open_signup {
        return not_found(&server);
    }
    let Ok(Form(form)) = form else { return unreadable(&server) };
    let next = safe_next(&server, &form.next);
    // The form again, as typed.
    let view = |csrf| SignUpPage { csrf, next: &next, email: &form.email, email_fixed: false, name: &form.name };
    if !PreSession::matches(&server, &headers, &form.csrf) {
        return match PreSession::fresh(&server) {
            Ok(pre) => pre.apply(sign_up_page(&server, StatusCode::FORBIDDEN, &view(&pre.token), Some(EXPIRED))),
            Err(e) => failed(&server, "cannot make a CSRF token", &e),
        };
    }
    let refuse = |text: &str| sign_up_page(&server, StatusCode::BAD_REQUEST, &view(&form.csrf), Some(text));
    let Some(email) = normal_email(&form.email) else {
        return refuse("That email address does not look right.");
    };
    // Every try that gets this far hashes a password and may make an account: bounded per
    // address (and per email), as failed sign-ins are, before any of that work.
    let signups = &server.inner.signups;
    if let Err(wait) = signups.check(&email, address) {
        tracing::warn!(address = ?address, "sign-up refused: too many from the address");
        let minutes = wait.as_secs().div_ceil(60).max(1);
        let text = format!("Too many sign-ups from here. Please wait {minutes} minute(s) and try again.");
        let mut response = sign_up_page(&server, StatusCode::TOO_MANY_REQUESTS, &view(&form.csrf), Some(&text));
        response.headers_mut().insert(header::RETRY_AFTER, retry_after(wait));
        return response;
    }
    signups.failed(&email, address);
    let account = match new_account(&server, email, &form.name, &form.password, &form.again).await {
        Ok(account) => account,
        Err(Refused::Form(text)) => return refuse(text),
        Err(Refused::Failed(response)) => return response,
    };
    match server.inner.stores.accounts.create_account(&account).await {
        Ok(true) => {}
        Ok(false) => return sign_up_page(&server, StatusCode::CONFLICT, &view(&form.csrf), Some(TAKEN)),
        Err(e) => return failed(&server, "cannot store an account", &e),
    }
    tracing::info!(account = %account.id, "account made at sign-up");
    signed_up(&server, &account.id, &next).await
}

/// The refusal of an email that has an account.
pub(super) const TAKEN: &str = "An account with this email exists; sign in instead.";

/// Why [`new_account`] made no account.
pub(super) enum Refused {
    /// The form's fields: the message to show beside it.
    Form(&'static str),
    /// The server: the answer to give.
    Failed(Response),
}

/// The account a sign-up form describes, with a new id (`u_` and 16 hex digits) and its
/// password hashed; not stored yet.
pub(super) async fn new_account(
    server: &OAuthServer,
    email: String,
    name: &str,
    password: &str,
    again: &str,
) -> Result<Account, Refused> {
    let display_name = display_name(name).map_err(Refused::Form)?;
    let hash = new_password_hash(password, again).await.map_err(Refused::Form)?;
    let id = match random::hex(8) {
        Ok(hex) => format!("u_{hex}"),
        Err(e) => return Err(Refused::Failed(failed(server, "cannot make an account id", &e))),
    };
    Ok(Account {
        id,
        email,
        display_name,
        password_hash: Some(hash),
        disabled: false,
        created_at_ms: mirobody_core::clock::now_ms(),
    })
}

/// The answer once a new account is stored: its session starts, and the browser goes on to
/// `next` with the form's CSRF cookie cleared.
pub(super) async fn signed_up(server: &OAuthServer, account_id: &str, next: &str) -> Response {
    match session::start(server, account_id).await {
        Ok(cookie) => with_cookies(see_other(next), [cookie, PreSession::clear(server)]),
        Err(e) => failed(server, "cannot start a web session", &e),
    }
}

/// What a sign-up page shows besides its status and error.
pub(super) struct SignUpPage<'a> {
    pub(super) csrf: &'a str,
    pub(super) next: &'a str,
    /// The email typed, or a sign-up link's.
    pub(super) email: &'a str,
    /// A sign-up link's email: shown read-only and not sent (the link's token says it), the
    /// form posted back to the link.
    pub(super) email_fixed: bool,
    pub(super) name: &'a str,
}

/// The sign-up form: to `/signup`, or, with the email fixed, to the link it came from (a
/// relative action, so the token is never written into the page).
pub(super) fn sign_up_page(
    server: &OAuthServer,
    status: StatusCode,
    view: &SignUpPage<'_>,
    error: Option<&str>,
) -> Response {
    let error =
        error.map(|text| format!("<p class=\"error\" role=\"alert\">{}</p>\n", escape(text))).unwrap_or_default();
    let sign_in: String = form_urlencoded::byte_serialize(view.next.as_bytes()).collect();
    let (action, email_field) = if view.email_fixed {
        (
            String::new(),
            format!(
                "<input id=\"email\" type=\"email\" value=\"{}\" readonly aria-readonly=\"true\">\n\
                 <p class=\"muted\">You were invited with this address.</p>\n",
                escape(view.email)
            ),
        )
    } else {
        (
            format!(" action=\"{}\"", escape(&server.path("/signup"))),
            format!(
                "<input id=\"email\" type=\"email\" name=\"email\" value=\"{}\" maxlength=\"254\" \
                 autocomplete=\"email\" required autofocus>\n",
                escape(view.email.trim())
            ),
        )
    };
    let body = format!(
        "<h1>Make an account</h1>\n{error}<form method=\"post\"{action} class=\"card\">\n\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\n\
         <input type=\"hidden\" name=\"next\" value=\"{next}\">\n\
         <label for=\"email\">Email</label>\n{email_field}\
         <label for=\"name\">Your name</label>\n\
         <input id=\"name\" type=\"text\" name=\"name\" value=\"{name}\" maxlength=\"100\" autocomplete=\"name\">\n\
         <label for=\"password\">Password</label>\n\
         <input id=\"password\" type=\"password\" name=\"password\" minlength=\"10\" \
         autocomplete=\"new-password\" required>\n\
         <p class=\"muted\">At least 10 characters.</p>\n\
         <label for=\"again\">Password again</label>\n\
         <input id=\"again\" type=\"password\" name=\"again\" minlength=\"10\" autocomplete=\"new-password\" required>\n\
         <button type=\"submit\">Make the account</button>\n</form>\n\
         <p class=\"muted\">Have an account? <a href=\"{signin}?next={sign_in}\">Sign in</a>.</p>\n",
        csrf = escape(view.csrf),
        next = escape(view.next),
        name = escape(view.name.trim()),
        signin = escape(&server.path("/signin")),
        sign_in = escape(&sign_in),
    );
    page(status, "Make an account", &body)
}
