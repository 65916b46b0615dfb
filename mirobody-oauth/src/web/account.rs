//! `<prefix>/account`: who is signed in, the apps they let in (and revoking them), their
//! personal MCP URL, the identity providers they sign in with, who read their data lately,
//! their health data (download everything, delete a file, an import or the account: see
//! `data_pages`), their password, and signing out everywhere.

use axum::Router;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Form, Query, State};
use axum::response::Response;
use axum::routing::{get, post};
use http::{HeaderMap, StatusCode, header};
use mirobody_ports::Grant;
use serde::Deserialize;

use crate::page::{escape, page, see_other};
use crate::server::OAuthServer;
use crate::web::forms::{
    ClientAddress, date, failed, forbidden, message, new_password_hash, retry_after, unreadable, verify_password,
    with_cookies,
};
use crate::web::session::{self, SignedIn, sign_in_url};
use crate::web::signin::CsrfForm;

/// Connected apps listed at most; a person with more revokes some to see the rest.
const MAX_LISTED: usize = 200;
/// Reads of a person's data by others listed at most, the newest.
const READS_LISTED: u32 = 20;
/// The longest grant id a form may name.
const MAX_GRANT_ID_BYTES: usize = 200;

pub(crate) fn routes(server: &OAuthServer) -> Router {
    Router::new()
        .route(&server.path("/account"), get(show))
        .route(&server.path("/account/apps/revoke"), post(revoke_app))
        .route(&server.path("/account/personal-url"), post(rotate_url))
        .route(&server.path("/account/personal-url/revoke"), post(revoke_url))
        .route(&server.path("/account/password"), post(change_password))
        .route(&server.path("/account/signout-everywhere"), post(sign_out_everywhere))
        .with_state(server.clone())
}

#[derive(Deserialize)]
struct Done {
    #[serde(default)]
    done: String,
}

#[derive(Deserialize)]
struct RevokeForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    grant: String,
}

#[derive(Deserialize)]
struct PasswordForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    current: String,
    #[serde(default)]
    new: String,
    #[serde(default)]
    again: String,
}

// What a redirect back to the page says happened: fixed texts, so the query carries no markup.
fn notice(done: &str) -> Option<&'static str> {
    match done {
        "app-revoked" => Some("The app no longer has access to your data."),
        "url-revoked" => Some("Your personal MCP URL no longer works."),
        "password" => Some("Your password is changed. Other browsers were signed out."),
        "passkey-added" => Some("The passkey is added: you can sign in with it."),
        "passkey-removed" => Some("The passkey is removed: it no longer signs you in."),
        "file-deleted" => Some("The file is deleted, with the values read from it."),
        "import-deleted" => Some("The import is deleted, with the values it brought."),
        _ => None,
    }
}

fn to_sign_in(server: &OAuthServer) -> Response {
    see_other(&sign_in_url(server, &server.path("/account")))
}

// The session of a form's request, if its CSRF token is the session's; else the answer.
pub(super) async fn form_session(server: &OAuthServer, headers: &HeaderMap, csrf: &str) -> Result<SignedIn, Response> {
    let Some(signed_in) = session::signed_in(server, headers).await else { return Err(to_sign_in(server)) };
    if signed_in.csrf_matches(csrf) { Ok(signed_in) } else { Err(forbidden(server)) }
}

pub(super) fn done(server: &OAuthServer, what: &str) -> Response {
    see_other(&format!("{}?done={what}", server.path("/account")))
}

async fn show(
    State(server): State<OAuthServer>,
    headers: HeaderMap,
    query: Result<Query<Done>, QueryRejection>,
) -> Response {
    let Some(signed_in) = session::signed_in(&server, &headers).await else { return to_sign_in(&server) };
    let notice = query.ok().and_then(|Query(query)| notice(&query.done));
    account_page(&server, &signed_in, StatusCode::OK, notice, None).await
}

async fn revoke_app(
    State(server): State<OAuthServer>,
    headers: HeaderMap,
    form: Result<Form<RevokeForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else { return unreadable(&server) };
    let signed_in = match form_session(&server, &headers, &form.csrf).await {
        Ok(signed_in) => signed_in,
        Err(response) => return response,
    };
    if form.grant.is_empty() || form.grant.len() > MAX_GRANT_ID_BYTES {
        return see_other(&server.path("/account"));
    }
    // Scoped to the account: another person's grant id revokes nothing.
    let account = &signed_in.account.id;
    match server.inner.stores.oauth.revoke_grant(&form.grant, Some(account), mirobody_core::clock::now_ms()).await {
        Ok(true) => {
            // Its access tokens stop now, not when they expire.
            server.inner.revoked.revoke(&form.grant);
            tracing::info!(account = %account, grant = %form.grant, "grant revoked on the access page");
            done(&server, "app-revoked")
        }
        Ok(false) => see_other(&server.path("/account")),
        Err(e) => failed(&server, "cannot revoke a grant", &e),
    }
}

async fn rotate_url(
    State(server): State<OAuthServer>,
    headers: HeaderMap,
    form: Result<Form<CsrfForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else { return unreadable(&server) };
    let signed_in = match form_session(&server, &headers, &form.csrf).await {
        Ok(signed_in) => signed_in,
        Err(response) => return response,
    };
    let Some(store) = &server.inner.stores.secrets else { return no_personal_urls(&server) };
    let endpoint = &server.inner.endpoint;
    let url = match mirobody_auth::rotate_secret(store.as_ref(), endpoint, &signed_in.account.id, None, None).await {
        Ok(url) => url,
        Err(e) => return failed(&server, "cannot make a personal MCP URL", &e),
    };
    let body = format!(
        "<h1>Your personal MCP URL</h1>\n\
         <p class=\"error\">Copy it now: it is shown only this once.</p>\n\
         <div class=\"card\"><label for=\"url\">URL</label>\n\
         <input id=\"url\" type=\"text\" readonly value=\"{url}\">\n<p><code>{url}</code></p></div>\n\
         <p>Anyone who has this URL can reach your data through MCP: keep it like a password. \
         Any URL you made before no longer works.</p>\n<p><a href=\"{back}\">Back to your account</a></p>",
        url = escape(url.expose()),
        back = escape(&server.path("/account")),
    );
    page(StatusCode::OK, "Your personal MCP URL", &body)
}

async fn revoke_url(
    State(server): State<OAuthServer>,
    headers: HeaderMap,
    form: Result<Form<CsrfForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else { return unreadable(&server) };
    let signed_in = match form_session(&server, &headers, &form.csrf).await {
        Ok(signed_in) => signed_in,
        Err(response) => return response,
    };
    let Some(store) = &server.inner.stores.secrets else { return no_personal_urls(&server) };
    match mirobody_auth::revoke_secret(store.as_ref(), &signed_in.account.id).await {
        Ok(_) => done(&server, "url-revoked"),
        Err(e) => failed(&server, "cannot revoke a personal MCP URL", &e),
    }
}

fn no_personal_urls(server: &OAuthServer) -> Response {
    message(
        StatusCode::NOT_FOUND,
        "No personal MCP URLs here",
        "This server does not give out personal MCP URLs.",
        (&server.path("/account"), "Back to your account"),
    )
}

async fn change_password(
    State(server): State<OAuthServer>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    form: Result<Form<PasswordForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else { return unreadable(&server) };
    let signed_in = match form_session(&server, &headers, &form.csrf).await {
        Ok(signed_in) => signed_in,
        Err(response) => return response,
    };
    let account = &signed_in.account;
    // Guessing the current password from a session left open is bounded like signing in.
    let throttle = &server.inner.throttle;
    if let Err(wait) = throttle.check(&account.email, address) {
        let text = "Too many wrong passwords. Please wait a while and try again.";
        let mut response = account_page(&server, &signed_in, StatusCode::TOO_MANY_REQUESTS, None, Some(text)).await;
        response.headers_mut().insert(header::RETRY_AFTER, retry_after(wait));
        return response;
    }
    if !verify_password(&form.current, account.password_hash.as_deref()).await {
        throttle.failed(&account.email, address);
        let text = "The current password is wrong.";
        return account_page(&server, &signed_in, StatusCode::BAD_REQUEST, None, Some(text)).await;
    }
    let hash = match new_password_hash(&form.new, &form.again).await {
        Ok(hash) => hash,
        Err(text) => return account_page(&server, &signed_in, StatusCode::BAD_REQUEST, None, Some(text)).await,
    };
    let stores = &server.inner.stores;
    match stores.accounts.set_password_hash(&account.id, Some(&hash)).await {
        Ok(true) => {}
        Ok(false) => return to_sign_in(&server),
        Err(e) => return failed(&server, "cannot store a password", &e),
    }
    tracing::info!(account = %account.id, "password changed on the access page");
    // Whoever knew the old password may hold a session: every one ends, this browser gets a
    // new one.
    if let Err(e) = stores.sessions.end_web_sessions_of(&account.id).await {
        return failed(&server, "cannot end web sessions", &e);
    }
    match session::start(&server, &account.id).await {
        Ok(cookie) => with_cookies(done(&server, "password"), [cookie]),
        Err(e) => failed(&server, "cannot start a web session", &e),
    }
}

async fn sign_out_everywhere(
    State(server): State<OAuthServer>,
    headers: HeaderMap,
    form: Result<Form<CsrfForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else { return unreadable(&server) };
    let signed_in = match form_session(&server, &headers, &form.csrf).await {
        Ok(signed_in) => signed_in,
        Err(response) => return response,
    };
    match server.inner.stores.sessions.end_web_sessions_of(&signed_in.account.id).await {
        Ok(ended) => tracing::info!(account = %signed_in.account.id, ended, "signed out everywhere"),
        Err(e) => return failed(&server, "cannot end web sessions", &e),
    }
    let cookie = session::end(&server, &headers).await;
    with_cookies(see_other(&server.path("/signin")), [cookie])
}

// The page itself: `notice` says what was just done, `password_error` why a password change
// was refused.
async fn account_page(
    server: &OAuthServer,
    signed_in: &SignedIn,
    status: StatusCode,
    notice: Option<&str>,
    password_error: Option<&str>,
) -> Response {
    let account = &signed_in.account;
    let stores = &server.inner.stores;
    let grants = match stores.oauth.grants_of(&account.id).await {
        Ok(grants) => grants,
        Err(e) => return failed(server, "cannot list grants", &e),
    };
    let csrf = escape(&signed_in.csrf());
    let hidden = format!("<input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">");
    let mut apps = String::new();
    for grant in grants.iter().take(MAX_LISTED) {
        apps.push_str(&app_item(server, grant, &hidden).await);
    }
    let apps = if grants.is_empty() {
        "<p class=\"muted\">No app has access to your data.</p>".to_owned()
    } else {
        let more = if grants.len() > MAX_LISTED {
            format!("<p class=\"muted\">And {} more: revoke some to see them.</p>", grants.len() - MAX_LISTED)
        } else {
            String::new()
        };
        format!("<ul class=\"plain\">\n{apps}</ul>\n{more}")
    };
    let personal = match personal_section(server, &account.id, &hidden).await {
        Ok(section) => section,
        Err(e) => return failed(server, "cannot look up a personal MCP URL", &e),
    };
    let passkeys = match crate::web::passkey_pages::account_section(server, &account.id, &signed_in.csrf()).await {
        Ok(section) => section,
        Err(e) => return failed(server, "cannot list passkeys", &e),
    };
    let linked = match crate::upstream::linked::account_section(server, &account.id, &hidden).await {
        Ok(section) => section,
        Err(e) => return failed(server, "cannot list linked identities", &e),
    };
    let health_data = match crate::web::data_pages::account_section(server, &account.id, &hidden).await {
        Ok(section) => section,
        Err(e) => return failed(server, "cannot list a person's files and imports", &e),
    };
    let reads = match reads_section(server, &account.id).await {
        Ok(section) => section,
        Err(e) => return failed(server, "cannot list the reads of a person's data", &e),
    };
    let notice = notice.map(|text| format!("<p class=\"notice\" role=\"status\">{}</p>\n", escape(text)));
    let password_error = password_error.map(|text| format!("<p class=\"error\" role=\"alert\">{}</p>\n", escape(text)));
    let name = account.display_name.as_deref().unwrap_or(&account.email);
    let body = format!(
        "<h1>Your account</h1>\n{notice}<div class=\"card\"><p><strong>{name}</strong><br>\
         <span class=\"muted\">{email}</span></p></div>\n\
         <h2>Connected apps</h2>\n<p class=\"muted\">These apps can reach your data. Revoke one and it stops \
         at once.</p>\n{apps}\n{personal}{passkeys}{linked}{health_data}{reads}\
         <h2>Password</h2>\n{password_error}<form method=\"post\" action=\"{password}\" class=\"card\">\n{hidden}\n\
         <input type=\"text\" name=\"username\" value=\"{email}\" autocomplete=\"username\" hidden>\n\
         <label for=\"current\">Current password</label>\n\
         <input id=\"current\" type=\"password\" name=\"current\" autocomplete=\"current-password\" required>\n\
         <label for=\"new\">New password</label>\n\
         <input id=\"new\" type=\"password\" name=\"new\" minlength=\"10\" autocomplete=\"new-password\" required>\n\
         <label for=\"again\">New password again</label>\n\
         <input id=\"again\" type=\"password\" name=\"again\" minlength=\"10\" autocomplete=\"new-password\" \
         required>\n<button type=\"submit\">Change the password</button>\n</form>\n\
         <h2>Sign out</h2>\n<div class=\"card actions\">\n\
         <form method=\"post\" action=\"{signout}\" class=\"inline\">{hidden}\
         <button type=\"submit\" class=\"secondary\">Sign out</button></form>\n\
         <form method=\"post\" action=\"{everywhere}\" class=\"inline\">{hidden}\
         <button type=\"submit\" class=\"secondary\">Sign out everywhere</button></form>\n</div>",
        notice = notice.unwrap_or_default(),
        name = escape(name),
        email = escape(&account.email),
        password_error = password_error.unwrap_or_default(),
        password = escape(&server.path("/account/password")),
        signout = escape(&server.path("/signout")),
        everywhere = escape(&server.path("/account/signout-everywhere")),
    );
    crate::web::passkey_pages::page_for(server, status, "Your account", &body)
}

// One connected app: its name and the domain it sends people back to, when it was let in and
// last used, what it may do, and its revoke button.
async fn app_item(server: &OAuthServer, grant: &Grant, hidden: &str) -> String {
    let client = match server.inner.stores.oauth.client(&grant.client_id).await {
        Ok(client) => client,
        Err(e) => {
            tracing::warn!(error = %e, "client lookup failed");
            None
        }
    };
    let name = client.as_ref().and_then(|client| client.client_name.clone()).unwrap_or_else(|| "An unnamed app".into());
    let domain = client
        .as_ref()
        .and_then(|client| client.redirect_uris.first())
        .map(|uri| redirect_domain(uri))
        .unwrap_or_else(|| grant.client_id.clone());
    let last = grant.last_used_at_ms.map_or_else(|| "never".to_owned(), date);
    let scopes = if grant.scopes.is_empty() { "the default access".to_owned() } else { grant.scopes.join(", ") };
    format!(
        "<li class=\"card\"><p><strong>{name}</strong><br><span class=\"domain\">{domain}</span></p>\n\
         <p class=\"muted\">Connected {created}. Last used {last}.<br>May use: {scopes}</p>\n\
         <form method=\"post\" action=\"{action}\">{hidden}\
         <input type=\"hidden\" name=\"grant\" value=\"{id}\">\
         <button type=\"submit\" class=\"secondary\">Revoke access</button></form></li>\n",
        name = escape(&name),
        domain = escape(&domain),
        created = escape(&date(grant.created_at_ms)),
        last = escape(&last),
        scopes = escape(&scopes),
        action = escape(&server.path("/account/apps/revoke")),
        id = escape(&grant.id),
    )
}

// The host a redirect URI names (what a person recognises an app by), or for a private-use
// scheme (`com.example.app:/callback`) the scheme.
fn redirect_domain(uri: &str) -> String {
    match url::Url::parse(uri) {
        Ok(url) => match url.host_str() {
            Some(host) => host.to_owned(),
            None => format!("{}:", url.scheme()),
        },
        Err(_) => uri.chars().take(100).collect(),
    }
}

async fn personal_section(
    server: &OAuthServer,
    account_id: &str,
    hidden: &str,
) -> Result<String, mirobody_core::BackendError> {
    let Some(store) = &server.inner.stores.secrets else { return Ok(String::new()) };
    let rotate = escape(&server.path("/account/personal-url"));
    let section = if store.has_secret(account_id).await? {
        format!(
            "<p>You have a personal MCP URL. It is not shown again; make a new one if you lost it (the old one \
             then stops working).</p>\n<div class=\"actions\">\
             <form method=\"post\" action=\"{rotate}\" class=\"inline\">{hidden}\
             <button type=\"submit\">Make a new URL</button></form>\n\
             <form method=\"post\" action=\"{revoke}\" class=\"inline\">{hidden}\
             <button type=\"submit\" class=\"secondary\">Revoke the URL</button></form></div>",
            revoke = escape(&server.path("/account/personal-url/revoke")),
        )
    } else {
        format!(
            "<p>A personal MCP URL lets an app that cannot sign in reach your data: the URL itself is the key.</p>\n\
             <form method=\"post\" action=\"{rotate}\">{hidden}<button type=\"submit\">Make a URL</button></form>"
        )
    };
    Ok(format!("<h2>Personal MCP URL</h2>\n<div class=\"card\">{section}</div>\n"))
}

// Who read the person's data lately (care-circle members, through the tools), newest first:
// the reader's name or email where known, what they used, when, what came of it.
async fn reads_section(server: &OAuthServer, account_id: &str) -> Result<String, mirobody_core::BackendError> {
    let Some(log) = &server.inner.stores.access_log else { return Ok(String::new()) };
    let reads = log.reads_of(account_id, None, READS_LISTED).await?;
    let list = if reads.is_empty() {
        "<p class=\"muted\">Nobody else has read your data.</p>".to_owned()
    } else {
        let items: String = reads
            .iter()
            .map(|read| {
                format!(
                    "<li>{when}: <strong>{reader}</strong> used {what} ({outcome})</li>\n",
                    when = escape(&date(read.at_ms)),
                    reader = escape(read.reader_name.as_deref().unwrap_or(&read.reader)),
                    what = escape(&read.name),
                    outcome = escape(read.outcome.as_str()),
                )
            })
            .collect();
        format!("<ul class=\"plain\">\n{items}</ul>")
    };
    Ok(format!(
        "<h2>Who read your data</h2>\n<div class=\"card\"><p class=\"muted\">The people you share your health \
         data with, each time they read it (the newest {READS_LISTED}).</p>\n{list}</div>\n"
    ))
}
