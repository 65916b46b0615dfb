//! The access page's list of the identity providers an account is linked to, and
//! `POST <prefix>/account/identities/unlink`, which removes one of them.

use axum::extract::rejection::FormRejection;
use axum::extract::{Form, State};
use axum::response::Response;
use http::HeaderMap;
use mirobody_core::backend::BackendResult;
use serde::Deserialize;

use crate::page::{escape, see_other};
use crate::server::OAuthServer;
use crate::web::forms::{date, failed, forbidden, unreadable};
use crate::web::session::{self, sign_in_url};

/// The longest provider id or subject a form may name.
const MAX_FIELD_BYTES: usize = 255;

#[derive(Deserialize)]
pub(super) struct UnlinkForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    provider: String,
    #[serde(default)]
    subject: String,
}

/// The section listing the account's links, each with its unlink button (`hidden` is the
/// form's CSRF field); empty when no provider is configured and none is linked.
pub(crate) async fn account_section(server: &OAuthServer, account_id: &str, hidden: &str) -> BackendResult<String> {
    let Some(identities) = &server.inner.stores.identities else { return Ok(String::new()) };
    let links = identities.identities_of(account_id).await?;
    if links.is_empty() && server.inner.upstream.providers.is_empty() {
        return Ok(String::new());
    }
    let action = escape(&server.path("/account/identities/unlink"));
    let items: String = links
        .iter()
        .map(|link| {
            // A provider taken out of the settings still shows, by its id.
            let name = server.inner.upstream.provider(&link.provider).map_or(&link.provider, |p| &p.settings.name);
            let email = link.email.as_deref().map(|e| format!(" as {}", escape(e))).unwrap_or_default();
            format!(
                "<li class=\"card\"><strong>{name}</strong>{email}<br><span class=\"muted\">Linked {at}</span>\n\
                 <form method=\"post\" action=\"{action}\">{hidden}\
                 <input type=\"hidden\" name=\"provider\" value=\"{provider}\">\
                 <input type=\"hidden\" name=\"subject\" value=\"{subject}\">\
                 <button type=\"submit\" class=\"secondary\">Unlink</button></form></li>\n",
                name = escape(name),
                at = date(link.created_at_ms),
                provider = escape(&link.provider),
                subject = escape(&link.subject),
            )
        })
        .collect();
    let list = if links.is_empty() {
        "<p class=\"muted\">No identity provider is linked: sign in with one to link it.</p>\n".to_owned()
    } else {
        format!("<ul class=\"plain\">\n{items}</ul>\n")
    };
    Ok(format!(
        "<h2>Sign-in with other accounts</h2>\n\
         <p class=\"muted\">These sign you in here without a password.</p>\n{list}"
    ))
}

pub(super) async fn unlink(
    State(server): State<OAuthServer>,
    headers: HeaderMap,
    form: Result<Form<UnlinkForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else { return unreadable(&server) };
    let account_page = server.path("/account");
    let Some(signed_in) = session::signed_in(&server, &headers).await else {
        return see_other(&sign_in_url(&server, &account_page));
    };
    if !signed_in.csrf_matches(&form.csrf) {
        return forbidden(&server);
    }
    let Some(identities) = &server.inner.stores.identities else { return see_other(&account_page) };
    if form.provider.len() > MAX_FIELD_BYTES || form.subject.len() > MAX_FIELD_BYTES {
        return see_other(&account_page);
    }
    // Scoped to the account: another person's link is left alone.
    let account = &signed_in.account.id;
    match identities.unlink_identity(account, &form.provider, &form.subject).await {
        Ok(true) => {
            tracing::info!(account = %account, provider = %form.provider, "identity unlinked on the access page");
            see_other(&account_page)
        }
        Ok(false) => see_other(&account_page),
        Err(e) => failed(&server, "cannot unlink an identity", &e),
    }
}
