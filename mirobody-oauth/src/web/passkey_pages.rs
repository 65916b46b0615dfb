//! The passkey parts of the pages: the sign-in page's button, the access page's "Passkeys"
//! section, and its remove form (a plain form, which works without script). Only adding a
//! passkey and signing in with one need `assets/passkey.js`; without it their controls stay
//! hidden.

use axum::Router;
use axum::extract::rejection::FormRejection;
use axum::extract::{Form, State};
use axum::response::Response;
use axum::routing::post;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{HeaderMap, StatusCode};
use mirobody_ports::{MAX_CREDENTIAL_ID_BYTES, MAX_PASSKEYS_PER_ACCOUNT};
use serde::Deserialize;

use crate::page::{escape, page, script_page, see_other};
use crate::server::OAuthServer;
use crate::web::forms::{date, failed, forbidden, unreadable};
use crate::web::passkeys::MAX_PASSKEY_NAME_CHARS;
use crate::web::session::{self, sign_in_url};

pub(crate) fn routes(server: &OAuthServer) -> Router {
    if server.inner.passkeys.is_none() {
        return Router::new();
    }
    Router::new().route(&server.path("/account/passkeys/remove"), post(remove)).with_state(server.clone())
}

/// A page, with the policy that lets the passkey script run when passkeys are on.
pub(crate) fn page_for(server: &OAuthServer, status: StatusCode, title: &str, body: &str) -> Response {
    if server.inner.passkeys.is_some() { script_page(status, title, body) } else { page(status, title, body) }
}

fn script_tag(server: &OAuthServer) -> String {
    format!("<script src=\"{}\" defer></script>\n", escape(&server.path("/assets/passkey.js")))
}

/// The sign-in page's passkey button (empty when passkeys are off). `csrf` is the
/// pre-session token the JSON requests carry in a header.
pub(crate) fn sign_in_block(server: &OAuthServer, csrf: &str, next: &str) -> String {
    if server.inner.passkeys.is_none() {
        return String::new();
    }
    format!(
        "<div id=\"passkey-signin\" class=\"card\" hidden data-begin=\"{begin}\" data-finish=\"{finish}\" \
         data-csrf=\"{csrf}\" data-next=\"{next}\">\n\
         <button type=\"button\" class=\"secondary\">Sign in with a passkey</button>\n\
         <p class=\"error\" role=\"alert\" hidden></p>\n</div>\n{script}",
        begin = escape(&server.path("/signin/passkey/begin")),
        finish = escape(&server.path("/signin/passkey/finish")),
        csrf = escape(csrf),
        next = escape(next),
        script = script_tag(server),
    )
}

/// The access page's "Passkeys" section: the account's passkeys with a remove button each, and
/// the form that adds one (empty when passkeys are off).
pub(crate) async fn account_section(
    server: &OAuthServer,
    account_id: &str,
    csrf: &str,
) -> Result<String, mirobody_core::BackendError> {
    let Some(passkeys) = &server.inner.passkeys else { return Ok(String::new()) };
    let stored = passkeys.store.passkeys_of(account_id, MAX_PASSKEYS_PER_ACCOUNT).await?;
    let csrf = escape(csrf);
    let mut items = String::new();
    for passkey in &stored {
        let last = passkey.last_used_at_ms.map_or_else(|| "never".to_owned(), date);
        items.push_str(&format!(
            "<li class=\"card\"><p><strong>{name}</strong></p>\n\
             <p class=\"muted\">Added {added}. Last used {last}.</p>\n\
             <form method=\"post\" action=\"{action}\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <input type=\"hidden\" name=\"credential\" value=\"{id}\">\
             <button type=\"submit\" class=\"secondary\">Remove</button></form></li>\n",
            name = escape(&passkey.name),
            added = escape(&date(passkey.created_at_ms)),
            last = escape(&last),
            action = escape(&server.path("/account/passkeys/remove")),
            id = URL_SAFE_NO_PAD.encode(&passkey.credential_id),
        ));
    }
    let list = if stored.is_empty() {
        "<p class=\"muted\">You have no passkey.</p>\n".to_owned()
    } else {
        format!("<ul class=\"plain\" id=\"passkeys\">\n{items}</ul>\n")
    };
    let add = if stored.len() >= MAX_PASSKEYS_PER_ACCOUNT as usize {
        "<p class=\"muted\">You have as many passkeys as an account may keep: remove one to add another.</p>\n"
            .to_owned()
    } else {
        format!(
            "<form id=\"passkey-add\" class=\"card\" hidden data-begin=\"{begin}\" data-finish=\"{finish}\" \
             data-csrf=\"{csrf}\">\n<label for=\"passkey-name\">Name of a new passkey</label>\n\
             <input id=\"passkey-name\" type=\"text\" name=\"name\" maxlength=\"{MAX_PASSKEY_NAME_CHARS}\" \
             placeholder=\"This laptop\">\n<button type=\"submit\">Add a passkey</button>\n\
             <p class=\"error\" role=\"alert\" hidden></p>\n</form>\n\
             <p class=\"muted\" id=\"passkey-needs-script\">Adding a passkey needs a browser that runs this \
             page's script.</p>\n",
            begin = escape(&server.path("/account/passkeys/begin")),
            finish = escape(&server.path("/account/passkeys/finish")),
        )
    };
    Ok(format!(
        "<h2>Passkeys</h2>\n<p class=\"muted\">A passkey signs you in with this device's screen lock or a \
         security key, without your password.</p>\n{list}{add}{script}",
        script = script_tag(server)
    ))
}

#[derive(Deserialize)]
struct RemoveForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    credential: String,
}

async fn remove(
    State(server): State<OAuthServer>,
    headers: HeaderMap,
    form: Result<Form<RemoveForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else { return unreadable(&server) };
    let Some(signed_in) = session::signed_in(&server, &headers).await else {
        return see_other(&sign_in_url(&server, &server.path("/account")));
    };
    if !signed_in.csrf_matches(&form.csrf) {
        return forbidden(&server);
    }
    let Some(passkeys) = &server.inner.passkeys else { return see_other(&server.path("/account")) };
    let credential_id = match URL_SAFE_NO_PAD.decode(form.credential.as_bytes()) {
        Ok(id) if !id.is_empty() && id.len() <= MAX_CREDENTIAL_ID_BYTES => id,
        _ => return see_other(&server.path("/account")),
    };
    // Scoped to the account: another person's credential id removes nothing.
    match passkeys.store.delete_passkey(&signed_in.account.id, &credential_id).await {
        Ok(true) => {
            tracing::info!(account = %signed_in.account.id, "passkey removed");
            see_other(&format!("{}?done=passkey-removed", server.path("/account")))
        }
        Ok(false) => see_other(&server.path("/account")),
        Err(e) => failed(&server, "cannot remove a passkey", &e),
    }
}
