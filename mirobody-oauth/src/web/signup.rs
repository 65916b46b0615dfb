//! `GET`/`POST <prefix>/signup`: anyone makes an account, when the operator allows it
//! (`open_signup`); otherwise the page does not exist.

use axum::Router;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Form, Query, State};
use axum::response::Response;
use axum::routing::get;
use http::{HeaderMap, StatusCode};
use mirobody_ports::Account;
use serde::Deserialize;

use crate::page::{escape, page, see_other};
use crate::random;
use crate::server::OAuthServer;
use crate::web::forms::{
    PreSession, display_name, failed, message, new_password_hash, normal_email, safe_next, unreadable, with_cookies,
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
        Ok(pre) => pre.apply(sign_up_page(&server, StatusCode::OK, &pre.token, &next, ("", ""), None)),
        Err(e) => failed(&server, "cannot make a CSRF token", &e),
    }
}

async fn submit(
    State(server): State<OAuthServer>,
    headers: HeaderMap,
    form: Result<Form<SignUpForm>, FormRejection>,
) -> Response {
    if !server.inner.settings.open_signup {
        return not_found(&server);
    }
    let Ok(Form(form)) = form else { return unreadable(&server) };
    let next = safe_next(&server, &form.next);
    let typed = (form.email.as_str(), form.name.as_str());
    if !PreSession::matches(&server, &headers, &form.csrf) {
        return match PreSession::fresh(&server) {
            Ok(pre) => {
                let expired = Some("This form has expired. Please send it again.");
                pre.apply(sign_up_page(&server, StatusCode::FORBIDDEN, &pre.token, &next, typed, expired))
            }
            Err(e) => failed(&server, "cannot make a CSRF token", &e),
        };
    }
    let refuse = |text: &str| sign_up_page(&server, StatusCode::BAD_REQUEST, &form.csrf, &next, typed, Some(text));
    let Some(email) = normal_email(&form.email) else {
        return refuse("That email address does not look right.");
    };
    let name = match display_name(&form.name) {
        Ok(name) => name,
        Err(text) => return refuse(text),
    };
    let hash = match new_password_hash(&form.password, &form.again).await {
        Ok(hash) => hash,
        Err(text) => return refuse(text),
    };
    let id = match random::hex(8) {
        Ok(hex) => format!("u_{hex}"),
        Err(e) => return failed(&server, "cannot make an account id", &e),
    };
    let account = Account {
        id,
        email,
        display_name: name,
        password_hash: Some(hash),
        disabled: false,
        created_at_ms: random::now_ms(),
    };
    match server.inner.stores.accounts.create_account(&account).await {
        Ok(true) => {}
        Ok(false) => {
            return sign_up_page(
                &server,
                StatusCode::CONFLICT,
                &form.csrf,
                &next,
                typed,
                Some("An account with this email exists; sign in instead."),
            );
        }
        Err(e) => return failed(&server, "cannot store an account", &e),
    }
    tracing::info!(account = %account.id, "account made at sign-up");
    match session::start(&server, &account.id).await {
        Ok(cookie) => with_cookies(see_other(&next), [cookie, PreSession::clear(&server)]),
        Err(e) => failed(&server, "cannot start a web session", &e),
    }
}

fn sign_up_page(
    server: &OAuthServer,
    status: StatusCode,
    csrf: &str,
    next: &str,
    (email, name): (&str, &str),
    error: Option<&str>,
) -> Response {
    let error =
        error.map(|text| format!("<p class=\"error\" role=\"alert\">{}</p>\n", escape(text))).unwrap_or_default();
    let sign_in: String = form_urlencoded::byte_serialize(next.as_bytes()).collect();
    let body = format!(
        "<h1>Make an account</h1>\n{error}<form method=\"post\" action=\"{action}\" class=\"card\">\n\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\n\
         <input type=\"hidden\" name=\"next\" value=\"{next}\">\n\
         <label for=\"email\">Email</label>\n\
         <input id=\"email\" type=\"email\" name=\"email\" value=\"{email}\" maxlength=\"254\" \
         autocomplete=\"email\" required autofocus>\n\
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
        action = escape(&server.path("/signup")),
        csrf = escape(csrf),
        next = escape(next),
        email = escape(email.trim()),
        name = escape(name.trim()),
        signin = escape(&server.path("/signin")),
        sign_in = escape(&sign_in),
    );
    page(status, "Make an account", &body)
}
