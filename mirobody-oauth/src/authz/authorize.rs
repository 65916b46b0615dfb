//! The authorization endpoint and its consent page: the client and its redirect URI are
//! checked before anything is redirected (an error about either is shown, never sent to an
//! unchecked address), PKCE S256 is required, the `resource` must be this server's MCP URL,
//! and the answer carries `iss` (RFC 9207).

// A refusal here is the HTTP answer itself, made once per request on its way out: boxing it
// would cost an allocation to save a copy.
#![allow(clippy::result_large_err)]

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::response::Response;
use axum::routing::get;
use http::{HeaderMap, StatusCode};
use mirobody_ports::{AuthorizationCode, Grant, OAuthClient};
use url::Url;

use super::cimd::{Lookup, document_host};
use super::clients::{display_domain, matching_redirect_uri};
use crate::page::{self, escape};
use crate::random;
use crate::server::OAuthServer;
use crate::web::session::{self, SignedIn};

/// The longest authorization request read (its query, or the consent form).
const MAX_REQUEST_BYTES: usize = 8 * 1024;

pub(super) fn routes(server: &OAuthServer) -> Router {
    Router::new()
        .route(&server.path("/authorize"), get(show).post(decide))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_REQUEST_BYTES * 2))
        .with_state(server.clone())
}

/// An authorization request whose client and redirect URI are known good: from here on,
/// errors go back to the client.
struct Checked {
    client: OAuthClient,
    redirect_uri: String,
    state: Option<String>,
    code_challenge: String,
    scopes: Vec<String>,
    resource: String,
    /// The request's query, carried through the consent form and checked again there.
    query: String,
}

/// Why a request cannot go on: shown on a page (the client or redirect URI is in doubt), or
/// sent back to the client's redirect URI.
enum Refusal {
    Page(StatusCode, String),
    Redirect(Response),
}

fn param<'a>(params: &'a [(String, String)], name: &str) -> Result<Option<&'a str>, String> {
    let mut found = params.iter().filter(|(key, _)| key == name);
    let first = found.next().map(|(_, value)| value.as_str());
    if found.next().is_some() {
        return Err(format!("'{name}' is given more than once"));
    }
    Ok(first)
}

/// `uri` with `pairs` added to its query.
fn with_query(uri: &str, pairs: &[(&str, &str)]) -> String {
    let Ok(mut url) = Url::parse(uri) else { return uri.to_owned() };
    {
        let mut query = url.query_pairs_mut();
        for (key, value) in pairs {
            query.append_pair(key, value);
        }
    }
    url.into()
}

impl OAuthServer {
    /// Checks an authorization request's query (RFC 6749 §4.1.1 with OAuth 2.1's rules).
    async fn check(&self, query: &str) -> Result<Checked, Refusal> {
        let page = |message: String| Refusal::Page(StatusCode::BAD_REQUEST, message);
        if query.len() > MAX_REQUEST_BYTES {
            return Err(page("The authorization request is too long.".into()));
        }
        let params: Vec<(String, String)> =
            form_urlencoded::parse(query.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        let get = |name: &str| param(&params, name).map_err(page);
        let client_id = get("client_id")?.ok_or_else(|| page("The request names no client (client_id).".into()))?;
        let client = match self.find_client(client_id).await {
            Lookup::Found(client) => client,
            Lookup::Unknown(None) => {
                return Err(page("The app asking for access is not registered with this server.".into()));
            }
            // Never sent to the document's redirect URIs: they are what could not be checked.
            Lookup::Unknown(Some(why)) => {
                return Err(page(format!("The app's metadata document ({client_id}) cannot be used: {why}.")));
            }
            Lookup::Unavailable(e) => {
                tracing::warn!(error = %e, "client lookup failed");
                return Err(Refusal::Page(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "The server cannot look the app up now; try again.".into(),
                ));
            }
        };
        let redirect_uri = match get("redirect_uri")? {
            Some(requested) => match matching_redirect_uri(&client, requested) {
                Some(_) => requested.to_owned(),
                None => return Err(page("The app's return address (redirect_uri) is not one it registered.".into())),
            },
            None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
            None => return Err(page("The request names no return address (redirect_uri).".into())),
        };
        // From here the redirect URI is the client's own: errors go back to it.
        let state = get("state")?.map(str::to_owned);
        let issuer = self.inner.issuer.clone();
        let back = |error: &str, description: &str| {
            let mut pairs = vec![("error", error), ("error_description", description)];
            if let Some(state) = &state {
                pairs.push(("state", state));
            }
            pairs.push(("iss", &issuer));
            Refusal::Redirect(page::see_other(&with_query(&redirect_uri, &pairs)))
        };
        let get = |name: &str| param(&params, name).map_err(|e| back("invalid_request", &e));
        if get("response_type")? != Some("code") {
            return Err(back("unsupported_response_type", "only response_type=code is supported"));
        }
        let Some(code_challenge) = get("code_challenge")? else {
            return Err(back(
                "invalid_request",
                "PKCE is required: send code_challenge with code_challenge_method=S256",
            ));
        };
        if get("code_challenge_method")? != Some("S256") {
            return Err(back("invalid_request", "only code_challenge_method=S256 is supported"));
        }
        // The SHA-256 of a verifier, base64url without padding.
        if code_challenge.len() != 43
            || !code_challenge.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(back("invalid_request", "code_challenge is not an S256 challenge"));
        }
        let mcp_url = self.inner.endpoint.mcp_url();
        let resource = match get("resource")? {
            Some(resource) if resource.trim_end_matches('/') == mcp_url => mcp_url,
            Some(_) => return Err(back("invalid_target", "the resource is not this server's MCP endpoint")),
            None => mcp_url,
        };
        let scopes = match get("scope")? {
            Some(scope) => {
                let scopes: Vec<String> = scope.split_whitespace().map(str::to_owned).collect();
                if let Some(unknown) = scopes.iter().find(|s| !self.inner.scopes.contains(s)) {
                    return Err(back("invalid_scope", &format!("the scope '{unknown}' is not supported")));
                }
                scopes
            }
            None => self.default_scopes(),
        };
        Ok(Checked {
            client,
            redirect_uri,
            state,
            code_challenge: code_challenge.to_owned(),
            scopes,
            resource,
            query: query.to_owned(),
        })
    }

    /// The scopes granted when a client asks for none: every supported one but the personal
    /// URL scope, which mints a credential that outlives the grant.
    fn default_scopes(&self) -> Vec<String> {
        self.inner.scopes.iter().filter(|s| s.as_str() != mirobody_auth::PERSONAL_URL_SCOPE).cloned().collect()
    }
}

/// The scope a deployment's tools are used under when it names none of its own.
pub const DEFAULT_SCOPE: &str = "mcp";

// What a scope lets the app do, in words a person reads on the consent page (HTML).
fn scope_text(scope: &str) -> String {
    match scope {
        DEFAULT_SCOPE => {
            "Use this server's tools as you: read and add to your health records, files and memories".into()
        }
        mirobody_auth::PERSONAL_URL_SCOPE => {
            "Make personal MCP URLs, which work without signing in until you revoke them".into()
        }
        other => format!("<code>{}</code>", escape(other)),
    }
}

fn refused(refusal: Refusal) -> Response {
    match refusal {
        Refusal::Page(status, message) => page::page(
            status,
            "Cannot connect the app",
            &format!("<h1>Cannot connect the app</h1>\n<p class=\"error\">{}</p>", escape(&message)),
        ),
        Refusal::Redirect(response) => response,
    }
}

// GET: checks the request, then the person: signed out, to the sign-in page and back; signed
// in, the consent page.
async fn show(State(server): State<OAuthServer>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    let query = query.unwrap_or_default();
    let checked = match server.check(&query).await {
        Ok(checked) => checked,
        Err(refusal) => return refused(refusal),
    };
    let Some(signed_in) = session::signed_in(&server, &headers).await else {
        let here = format!("{}?{query}", server.path("/authorize"));
        return page::see_other(&session::sign_in_url(&server, &here));
    };
    consent(&server, &checked, &signed_in)
}

fn consent(server: &OAuthServer, checked: &Checked, signed_in: &SignedIn) -> Response {
    let client = &checked.client;
    let domain = display_domain(client, Some(&checked.redirect_uri));
    // A client known by its metadata document: the host that publishes it vouches for it.
    let verified = match document_host(client) {
        Some(host) => format!(" (verified by <span class=\"domain\">{}</span>)", escape(&host)),
        None => String::new(),
    };
    let name = client.client_name.as_deref().unwrap_or("An app");
    let scopes = if checked.scopes.is_empty() {
        format!("<li>{}</li>", scope_text(DEFAULT_SCOPE))
    } else {
        checked.scopes.iter().map(|s| format!("<li>{}</li>", scope_text(s))).collect::<String>()
    };
    let account = &signed_in.account;
    let who = match &account.display_name {
        Some(name) => format!("{} ({})", escape(name), escape(&account.email)),
        None => escape(&account.email),
    };
    let body = format!(
        "<h1>Allow {name} to use your health data?</h1>\n\
         <div class=\"card\">\n<p><strong>{name}</strong> at <span class=\"domain\">{domain}</span>{verified} asks to act as you \
         on <span class=\"domain\">{issuer}</span>.</p>\n\
         <p class=\"muted\">Only allow it if you started this from that app. It will be able to:</p>\n<ul>{scopes}</ul>\n\
         <p class=\"muted\">Signed in as {who}. You can take access back at any time on your <a href=\"{account_page}\">account page</a>.</p>\n</div>\n\
         <form method=\"post\" action=\"{action}\">\n\
         <input type=\"hidden\" name=\"request\" value=\"{request}\">\n\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\n\
         <button type=\"submit\" name=\"decision\" value=\"allow\">Allow</button>\n\
         <button type=\"submit\" name=\"decision\" value=\"deny\" class=\"secondary\">Deny</button>\n</form>",
        name = escape(name),
        domain = escape(&domain),
        issuer = escape(&server.inner.issuer),
        account_page = escape(&server.path("/account")),
        action = escape(&server.path("/authorize")),
        request = escape(&checked.query),
        csrf = escape(&signed_in.csrf()),
    );
    page::consent_page("Allow access?", &body)
}

// POST: the consent form. Everything is checked again from the carried request; the form
// must carry the session's CSRF token.
async fn decide(State(server): State<OAuthServer>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let form: Vec<(String, String)> =
        form_urlencoded::parse(&body).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    let field = |name: &str| param(&form, name).ok().flatten().unwrap_or_default().to_owned();
    let Some(signed_in) = session::signed_in(&server, &headers).await else {
        return refused(Refusal::Page(
            StatusCode::UNAUTHORIZED,
            "Your session ended; start again from the app.".into(),
        ));
    };
    if !signed_in.csrf_matches(&field("csrf")) {
        return refused(Refusal::Page(StatusCode::FORBIDDEN, "This form did not come from this server's page.".into()));
    }
    let checked = match server.check(&field("request")).await {
        Ok(checked) => checked,
        Err(refusal) => return refused(refusal),
    };
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    if let Some(state) = &checked.state {
        pairs.push(("state", state));
    }
    let issuer = server.inner.issuer.clone();
    if field("decision") != "allow" {
        let mut denied = vec![("error", "access_denied"), ("error_description", "the person did not allow access")];
        denied.extend(pairs);
        denied.push(("iss", &issuer));
        return page::see_other(&with_query(&checked.redirect_uri, &denied));
    }
    match server.issue_code(&checked, &signed_in).await {
        Ok(code) => {
            let mut granted = vec![("code", code.as_str())];
            granted.extend(pairs);
            granted.push(("iss", &issuer));
            page::see_other(&with_query(&checked.redirect_uri, &granted))
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot issue an authorization code");
            refused(Refusal::Page(
                StatusCode::SERVICE_UNAVAILABLE,
                "The server cannot finish this now; try again.".into(),
            ))
        }
    }
}

impl OAuthServer {
    // Records the grant the person consented to and a code that redeems into it.
    async fn issue_code(&self, checked: &Checked, signed_in: &SignedIn) -> Result<String, String> {
        let now = mirobody_core::clock::now_ms();
        let grant = Grant {
            id: random::token(16).map_err(|e| e.to_string())?,
            account_id: signed_in.account.id.clone(),
            client_id: checked.client.client_id.clone(),
            scopes: checked.scopes.clone(),
            resource: checked.resource.clone(),
            created_at_ms: now,
            last_used_at_ms: None,
            revoked_at_ms: None,
        };
        let code = random::token(32).map_err(|e| e.to_string())?;
        let record = AuthorizationCode {
            grant_id: grant.id.clone(),
            client_id: grant.client_id.clone(),
            redirect_uri: checked.redirect_uri.clone(),
            code_challenge: checked.code_challenge.clone(),
            expires_at_ms: now + i64::try_from(self.inner.settings.code_ttl.as_millis()).unwrap_or(60_000),
        };
        let store = &self.inner.stores.oauth;
        store.create_grant(&grant).await.map_err(|e| e.to_string())?;
        store.put_code(&mirobody_auth::hash_secret(&code), &record).await.map_err(|e| e.to_string())?;
        tracing::info!(account = %grant.account_id, client = %grant.client_id, grant = %grant.id, "access granted");
        Ok(code)
    }
}
