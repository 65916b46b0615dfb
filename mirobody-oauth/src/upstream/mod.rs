//! Sign-in through the operator's OpenID providers (`oauth.providers`): `GET
//! <prefix>/signin/with/{provider}` sends the browser to the provider (authorization code
//! with PKCE S256, a state and a nonce), and `…/callback` takes its answer, verifies the ID
//! token and signs in the account the provider's subject is linked to.

mod callback;
pub(crate) mod client;
pub(crate) mod linked;
pub(crate) mod settings;

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::response::Response;
use axum::routing::{get, post};
use http::{HeaderMap, HeaderValue, StatusCode};
use mirobody_ports::UpstreamLogin;
use openidconnect::core::{CoreAuthenticationFlow, CoreJwsSigningAlgorithm};
use openidconnect::{CsrfToken, Nonce, PkceCodeChallenge, Scope};

use self::client::Client;
use crate::page::{escape, see_other};
use crate::random;
use crate::server::OAuthServer;
use crate::web::forms::{ClientAddress, failed, message, retry_after, safe_next, with_cookies};
use crate::web::signin::{Next, next_of};

/// How long a sign-in may stay at the provider.
const LOGIN_TTL_MS: i64 = 10 * 60 * 1000;
/// Sign-ins in flight kept at most, over all providers and instances: each start stores one.
pub(crate) const MAX_LIVE_LOGINS: u32 = 10_000;
/// The signature algorithms an ID token may use: the asymmetric ones, so neither `none` nor
/// a MAC keyed with the client secret is accepted, whatever discovery lists.
const ID_TOKEN_ALGORITHMS: [CoreJwsSigningAlgorithm; 10] = [
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha384,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha512,
    CoreJwsSigningAlgorithm::RsaSsaPssSha256,
    CoreJwsSigningAlgorithm::RsaSsaPssSha384,
    CoreJwsSigningAlgorithm::RsaSsaPssSha512,
    CoreJwsSigningAlgorithm::EcdsaP256Sha256,
    CoreJwsSigningAlgorithm::EcdsaP384Sha384,
    CoreJwsSigningAlgorithm::EcdsaP521Sha512,
    CoreJwsSigningAlgorithm::EdDsa,
];

pub(crate) fn routes(server: &OAuthServer) -> Router {
    Router::new()
        .route(&server.path("/signin/with/{provider}"), get(start))
        .route(&server.path("/signin/with/{provider}/callback"), get(callback::finish))
        .route(&server.path("/account/identities/unlink"), post(linked::unlink))
        .layer(DefaultBodyLimit::max(crate::web::forms::MAX_FORM_BYTES))
        .with_state(server.clone())
}

/// Whether providers can be used: some are configured and a store keeps the links.
fn enabled(server: &OAuthServer) -> bool {
    server.inner.stores.identities.is_some() && !server.inner.upstream.providers.is_empty()
}

/// The sign-in page's block of provider buttons, each returning to `next`; empty when there
/// are none.
pub(crate) fn sign_in_buttons(server: &OAuthServer, next: &str) -> String {
    if !enabled(server) {
        return String::new();
    }
    let next: String = form_urlencoded::byte_serialize(next.as_bytes()).collect();
    let buttons: String = server
        .inner
        .upstream
        .providers
        .iter()
        .map(|provider| {
            let href = format!("{}?next={next}", server.path(&format!("/signin/with/{}", provider.settings.id)));
            format!(
                "<a class=\"button secondary\" href=\"{}\">Sign in with {}</a>\n",
                escape(&href),
                escape(&provider.settings.name)
            )
        })
        .collect();
    format!(
        "<div class=\"card providers\">\n\
         <p class=\"muted\">Or use an account you have elsewhere:</p>\n{buttons}</div>\n"
    )
}

/// The page answering a sign-in through a provider that could not go on.
pub(crate) fn refused(server: &OAuthServer, status: StatusCode, title: &str, text: &str) -> Response {
    message(status, title, text, (&server.path("/signin"), "Back to sign-in"))
}

fn no_such_provider(server: &OAuthServer) -> Response {
    refused(server, StatusCode::NOT_FOUND, "No such sign-in", "This server has no such identity provider.")
}

/// The URL the provider returns the browser to: it must be registered there as is.
pub(crate) fn redirect_uri(server: &OAuthServer, provider: &str) -> String {
    server.url(&format!("/signin/with/{provider}/callback"))
}

/// The cookie binding a sign-in to the browser that started it: without it, someone could
/// send another person's browser to the callback with their own code and state, and sign
/// them in as themselves (login CSRF).
fn state_cookie_name(server: &OAuthServer) -> &'static str {
    if server.inner.secure { "__Host-mirobody_oidc_state" } else { "mirobody_oidc_state" }
}

fn state_cookie(server: &OAuthServer, value: &str, max_age: i64) -> HeaderValue {
    let path = if server.inner.secure { "/".to_owned() } else { server.path("/") };
    let secure = if server.inner.secure { "; Secure" } else { "" };
    // Lax: the provider's return is a top-level navigation from its site.
    let text = format!(
        "{}={value}; Path={path}; Max-Age={max_age}; HttpOnly; SameSite=Lax{secure}",
        state_cookie_name(server)
    );
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static("mirobody_oidc_state=; Max-Age=0"))
}

async fn start(
    State(server): State<OAuthServer>,
    ClientAddress(address): ClientAddress,
    Path(provider_id): Path<String>,
    query: Result<Query<Next>, QueryRejection>,
) -> Response {
    let upstream = &server.inner.upstream;
    let (Some(identities), Some(provider)) = (&server.inner.stores.identities, upstream.provider(&provider_id)) else {
        return no_such_provider(&server);
    };
    if let Err(wait) = upstream.may_start(address) {
        tracing::warn!(address = ?address, "sign-in through a provider refused: too many started from the address");
        let text = "Too many sign-ins were started from here. Please wait a minute and try again.";
        let mut response = refused(&server, StatusCode::TOO_MANY_REQUESTS, "Please wait", text);
        response.headers_mut().insert(http::header::RETRY_AFTER, retry_after(wait));
        return response;
    }
    let next = safe_next(&server, &next_of(query));
    let name = &provider.settings.name;
    let client = match upstream.metadata(provider, false).await {
        Ok(metadata) => upstream.client(provider, &metadata, &redirect_uri(&server, &provider.settings.id)),
        Err(e) => Err(e),
    };
    let client = match client {
        Ok(client) => client,
        Err(e) => {
            tracing::warn!(provider = %provider.settings.id, error = %e, "OpenID provider discovery failed");
            let text = format!("{name} could not be reached just now. Please try again in a moment.");
            return refused(&server, StatusCode::BAD_GATEWAY, "Sign-in is unavailable", &text);
        }
    };
    let (state, nonce) = match (random::token(32), random::token(32)) {
        (Ok(state), Ok(nonce)) => (state, nonce),
        (Err(e), _) | (_, Err(e)) => return failed(&server, "cannot make a sign-in state", &e),
    };
    let (url, verifier) = authorize_url(&client, &provider.settings.scopes, &state, &nonce);
    let now = mirobody_core::clock::now_ms();
    let login = UpstreamLogin {
        provider: provider.settings.id.clone(),
        pkce_verifier: verifier,
        nonce,
        next,
        created_at_ms: now,
        expires_at_ms: now + LOGIN_TTL_MS,
    };
    match identities.create_upstream_login(&mirobody_auth::hash_secret(&state), &login, MAX_LIVE_LOGINS).await {
        Ok(true) => with_cookies(see_other(&url), [state_cookie(&server, &state, LOGIN_TTL_MS / 1000)]),
        Ok(false) => {
            tracing::warn!("sign-in through a provider refused: too many sign-ins in flight");
            let text = "Too many sign-ins are in progress. Please try again in a few minutes.";
            refused(&server, StatusCode::SERVICE_UNAVAILABLE, "Sign-in is busy", text)
        }
        Err(e) => failed(&server, "cannot store a sign-in in flight", &e),
    }
}

/// The provider's authorization URL (PKCE S256, the state, the nonce, the scopes), and the
/// PKCE verifier. Not async: the request borrows the client.
fn authorize_url(client: &Client, scopes: &[String], state: &str, nonce: &str) -> (String, String) {
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (state, nonce) = (state.to_owned(), nonce.to_owned());
    let mut request = client.authorize_url(
        CoreAuthenticationFlow::AuthorizationCode,
        move || CsrfToken::new(state),
        move || Nonce::new(nonce),
    );
    // openidconnect asks for `openid` itself.
    for scope in scopes.iter().filter(|scope| *scope != "openid") {
        request = request.add_scope(Scope::new(scope.clone()));
    }
    let (url, _, _) = request.set_pkce_challenge(challenge).url();
    (url.to_string(), verifier.secret().clone())
}

/// The request's state cookie, and the `Set-Cookie` that clears it.
fn take_state_cookie<'a>(server: &OAuthServer, headers: &'a HeaderMap) -> (Option<&'a str>, HeaderValue) {
    (crate::web::forms::cookie(headers, state_cookie_name(server)), state_cookie(server, "", 0))
}

/// Deletes sign-ins in flight that expired.
pub(crate) async fn sweep(server: &OAuthServer, now_ms: i64) -> Option<mirobody_core::backend::BackendResult<u64>> {
    match &server.inner.stores.identities {
        Some(identities) => Some(identities.sweep_upstream_logins(now_ms).await),
        None => None,
    }
}
