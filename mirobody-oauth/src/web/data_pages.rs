//! The access page's "Your health data" section and its forms: download everything (one FHIR
//! R4 Bundle), delete a file or an import, and delete the account after a confirmation page
//! where the person types their email. Every form is a POST carrying the session's CSRF token;
//! everything is scoped to the signed-in account.

use axum::Router;
use axum::body::Body;
use axum::extract::rejection::FormRejection;
use axum::extract::{Form, State};
use axum::response::Response;
use axum::routing::post;
use futures::StreamExt;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde::Deserialize;

use crate::data::{AccountData, DataItemKind};
use crate::page::{escape, page};
use crate::server::OAuthServer;
use crate::web::account::{done, form_session};
use crate::web::forms::{failed, message, unreadable, with_cookies};
use crate::web::signin::CsrfForm;

/// Files and imports listed at most, each; a person with more deletes some to see the rest.
pub(crate) const ITEMS_LISTED: usize = 200;
/// The longest id a delete form may name.
const MAX_ITEM_ID_BYTES: usize = 512;

pub(crate) fn routes(server: &OAuthServer) -> Router {
    Router::new()
        .route(&server.path("/account/export"), post(export))
        .route(&server.path("/account/files/delete"), post(delete_file))
        .route(&server.path("/account/imports/delete"), post(delete_import))
        .route(&server.path("/account/delete"), post(confirm_deletion))
        .route(&server.path("/account/delete/confirmed"), post(delete_account))
        .with_state(server.clone())
}

#[derive(Deserialize)]
struct ItemForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    id: String,
}

#[derive(Deserialize)]
struct ConfirmForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    confirm: String,
}

fn data(server: &OAuthServer) -> Option<&dyn AccountData> {
    server.inner.account_data.get().map(|data| data.as_ref())
}

fn not_offered(server: &OAuthServer) -> Response {
    message(
        StatusCode::NOT_FOUND,
        "Not offered here",
        "This server keeps no health data on this page.",
        (&server.path("/account"), "Back to your account"),
    )
}

/// The section, or nothing when the server gave no [`AccountData`].
pub(crate) async fn account_section(
    server: &OAuthServer,
    account_id: &str,
    hidden: &str,
) -> Result<String, mirobody_core::BackendError> {
    let Some(data) = data(server) else { return Ok(String::new()) };
    let files = data.items(account_id, DataItemKind::File, ITEMS_LISTED + 1).await?;
    let imports = data.items(account_id, DataItemKind::Import, ITEMS_LISTED + 1).await?;
    let list = |items: &[crate::DataItem], action: &str, button: &str, none: &str, what: &str| {
        if items.is_empty() {
            return format!("<p class=\"muted\">{none}</p>");
        }
        let mut out = format!("<ul class=\"plain\" id=\"{what}\">\n");
        for item in items.iter().take(ITEMS_LISTED) {
            out.push_str(&format!(
                "<li><strong>{label}</strong> <span class=\"muted\">{at}</span> \
                 <form method=\"post\" action=\"{action}\" class=\"inline\">{hidden}\
                 <input type=\"hidden\" name=\"id\" value=\"{id}\">\
                 <button type=\"submit\" class=\"secondary\">{button}</button></form></li>\n",
                label = escape(&item.label),
                at = escape(&item.at),
                action = escape(action),
                id = escape(&item.id),
            ));
        }
        out.push_str("</ul>\n");
        if items.len() > ITEMS_LISTED {
            out.push_str("<p class=\"muted\">And more: delete some to see them.</p>\n");
        }
        out
    };
    let files =
        list(&files, &server.path("/account/files/delete"), "Delete the file", "You have no files.", "data-files");
    let imports = list(
        &imports,
        &server.path("/account/imports/delete"),
        "Delete the import",
        "You have no imports.",
        "data-imports",
    );
    Ok(format!(
        "<h2>Your health data</h2>\n<div class=\"card\"><p>Everything you keep here, as one FHIR R4 file that \
         other health apps read.</p>\n<form method=\"post\" action=\"{export}\" id=\"data-export\">{hidden}\
         <button type=\"submit\">Download everything</button></form></div>\n\
         <div class=\"card\"><h3>Files</h3>\n<p class=\"muted\">Deleting a file deletes the values read from it \
         too.</p>\n{files}<h3>Imports</h3>\n<p class=\"muted\">Deleting an import deletes the values it brought.\
         </p>\n{imports}</div>\n<div class=\"card\"><h3>Delete your account</h3>\n<p>Your account, your data, \
         your files and every app's access go, for good.</p>\n\
         <form method=\"post\" action=\"{delete}\" id=\"account-delete\">{hidden}\
         <button type=\"submit\" class=\"secondary\">Delete my account…</button></form></div>\n",
        export = escape(&server.path("/account/export")),
        delete = escape(&server.path("/account/delete")),
    ))
}

async fn export(
    State(server): State<OAuthServer>,
    headers: HeaderMap,
    form: Result<Form<CsrfForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else { return unreadable(&server) };
    let signed_in = match form_session(&server, &headers, &form.csrf).await {
        Ok(signed_in) => signed_in,
        Err(response) => return response,
    };
    let Some(data) = data(&server) else { return not_offered(&server) };
    tracing::info!(account = %signed_in.account.id, "export from the access page");
    let chunks = data.export(&signed_in.account.id).map(|chunk| chunk.map_err(std::io::Error::other));
    let mut response = Response::new(Body::from_stream(chunks));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/fhir+json"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers
        .insert(header::CONTENT_DISPOSITION, HeaderValue::from_static("attachment; filename=\"mirobody-export.json\""));
    response
}

async fn delete_file(
    State(server): State<OAuthServer>,
    headers: HeaderMap,
    form: Result<Form<ItemForm>, FormRejection>,
) -> Response {
    delete_item(server, headers, form, DataItemKind::File).await
}

async fn delete_import(
    State(server): State<OAuthServer>,
    headers: HeaderMap,
    form: Result<Form<ItemForm>, FormRejection>,
) -> Response {
    delete_item(server, headers, form, DataItemKind::Import).await
}

async fn delete_item(
    server: OAuthServer,
    headers: HeaderMap,
    form: Result<Form<ItemForm>, FormRejection>,
    kind: DataItemKind,
) -> Response {
    let Ok(Form(form)) = form else { return unreadable(&server) };
    let signed_in = match form_session(&server, &headers, &form.csrf).await {
        Ok(signed_in) => signed_in,
        Err(response) => return response,
    };
    let Some(data) = data(&server) else { return not_offered(&server) };
    let what = if kind == DataItemKind::File { "file" } else { "import" };
    if form.id.trim().is_empty() || form.id.len() > MAX_ITEM_ID_BYTES {
        return gone(&server, what);
    }
    let account = &signed_in.account.id;
    match data.delete(account, kind, &form.id).await {
        Ok(true) => {
            tracing::info!(account = %account, what, "deleted on the access page");
            done(&server, if kind == DataItemKind::File { "file-deleted" } else { "import-deleted" })
        }
        Ok(false) => gone(&server, what),
        Err(e) => failed(&server, "cannot delete a person's data", &e),
    }
}

// Another person's id reads as one that does not exist.
fn gone(server: &OAuthServer, what: &str) -> Response {
    message(
        StatusCode::NOT_FOUND,
        "Nothing to delete",
        &format!("You have no such {what}: it may be deleted already."),
        (&server.path("/account"), "Back to your account"),
    )
}

async fn confirm_deletion(
    State(server): State<OAuthServer>,
    headers: HeaderMap,
    form: Result<Form<CsrfForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else { return unreadable(&server) };
    let signed_in = match form_session(&server, &headers, &form.csrf).await {
        Ok(signed_in) => signed_in,
        Err(response) => return response,
    };
    if data(&server).is_none() {
        return not_offered(&server);
    }
    confirmation_page(&server, &signed_in, StatusCode::OK, None)
}

// The second step: the person types their email to delete the account.
fn confirmation_page(
    server: &OAuthServer,
    signed_in: &crate::web::session::SignedIn,
    status: StatusCode,
    error: Option<&str>,
) -> Response {
    let error = error.map(|text| format!("<p class=\"error\" role=\"alert\">{}</p>\n", escape(text)));
    let body = format!(
        "<h1>Delete your account?</h1>\n{error}<div class=\"card\"><p>Your account <strong>{email}</strong>, \
         all your health data and files, and every app's access are deleted for good. Download everything \
         first if you want to keep a copy.</p>\n\
         <form method=\"post\" action=\"{action}\" id=\"account-delete-confirm\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\n\
         <label for=\"confirm\">Type your email to confirm</label>\n\
         <input id=\"confirm\" type=\"text\" name=\"confirm\" autocomplete=\"off\" required>\n\
         <button type=\"submit\">Delete my account and all my data</button></form></div>\n\
         <p><a href=\"{back}\">Keep my account</a></p>",
        error = error.unwrap_or_default(),
        email = escape(&signed_in.account.email),
        action = escape(&server.path("/account/delete/confirmed")),
        csrf = escape(&signed_in.csrf()),
        back = escape(&server.path("/account")),
    );
    page(status, "Delete your account?", &body)
}

async fn delete_account(
    State(server): State<OAuthServer>,
    headers: HeaderMap,
    form: Result<Form<ConfirmForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else { return unreadable(&server) };
    let signed_in = match form_session(&server, &headers, &form.csrf).await {
        Ok(signed_in) => signed_in,
        Err(response) => return response,
    };
    let Some(data) = data(&server) else { return not_offered(&server) };
    if !form.confirm.trim().eq_ignore_ascii_case(&signed_in.account.email) {
        let text = "That is not your account's email: nothing was deleted.";
        return confirmation_page(&server, &signed_in, StatusCode::BAD_REQUEST, Some(text));
    }
    let account = signed_in.account.id.clone();
    if let Err(e) = data.erase_account(&account).await {
        return failed(&server, "cannot delete an account", &e);
    }
    tracing::info!(account = %account, "account deleted on the access page");
    let cookie = crate::web::session::end(&server, &headers).await;
    let body = format!(
        "<h1>Your account is deleted</h1>\n<p role=\"status\">Your account and everything in it are gone.</p>\n\
         <p><a href=\"{signin}\">Sign in page</a></p>",
        signin = escape(&server.path("/signin")),
    );
    with_cookies(page(StatusCode::OK, "Your account is deleted", &body), [cookie])
}
