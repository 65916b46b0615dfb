//! `GET <prefix>/signin/with/{provider}/callback`: the provider's answer. The state is taken
//! once, the code exchanged with the PKCE verifier, the ID token verified (signature, issuer,
//! audience, expiry, nonce), and the provider's subject mapped to an account.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use mirobody_ports::{Account, IdentityLink, IdentityStore};
use openidconnect::core::CoreIdTokenClaims;
use openidconnect::{AuthorizationCode, Nonce, PkceCodeVerifier, TokenResponse};
use serde::Deserialize;
use subtle::ConstantTimeEq;

use super::{ID_TOKEN_ALGORITHMS, redirect_uri, refused, take_state_cookie};
use crate::error_chain::chain;
use crate::page::see_other;
use crate::random;
use crate::server::OAuthServer;
use crate::web::forms::{PreSession, display_name, failed, normal_email, with_cookies};
use crate::web::session;

/// The longest `state`, `code`, `error` or `error_description` read; a longer one is refused.
const MAX_PARAM_BYTES: usize = 2048;
/// The most of a provider's `error_description` shown.
const MAX_DESCRIPTION_CHARS: usize = 300;
/// The longest subject kept (OpenID Connect: at most 255 ASCII characters).
const MAX_SUBJECT_BYTES: usize = 255;

#[derive(Deserialize)]
pub(super) struct Answer {
    #[serde(default)]
    state: String,
    #[serde(default)]
    code: String,
    #[serde(default)]
    error: String,
    #[serde(default)]
    error_description: String,
}

/// Who the provider says the person is, from a verified ID token.
struct Person {
    subject: String,
    /// The email, when the provider says it verified it.
    verified_email: Option<String>,
    name: Option<String>,
}

pub(super) async fn finish(
    State(server): State<OAuthServer>,
    Path(provider_id): Path<String>,
    headers: HeaderMap,
    query: Result<Query<Answer>, QueryRejection>,
) -> Response {
    let (cookie, clear) = take_state_cookie(&server, &headers);
    with_cookies(answer(&server, &provider_id, cookie, query).await, [clear])
}

async fn answer(
    server: &OAuthServer,
    provider_id: &str,
    cookie: Option<&str>,
    query: Result<Query<Answer>, QueryRejection>,
) -> Response {
    let upstream = &server.inner.upstream;
    let (Some(identities), Some(provider)) = (&server.inner.stores.identities, upstream.provider(provider_id)) else {
        return super::no_such_provider(server);
    };
    let name = &provider.settings.name;
    let bad = |text: &str| refused(server, StatusCode::BAD_REQUEST, "Sign-in could not be completed", text);
    let Ok(Query(answer)) = query else { return bad("The answer from the identity provider could not be read.") };
    let params = [&answer.state, &answer.code, &answer.error, &answer.error_description];
    if params.iter().any(|p| p.len() > MAX_PARAM_BYTES) {
        return bad("The answer from the identity provider is too long.");
    }
    // The browser that started this sign-in holds its state: another's is not taken.
    let ours =
        cookie.is_some_and(|c| !answer.state.is_empty() && bool::from(c.as_bytes().ct_eq(answer.state.as_bytes())));
    if !ours {
        return bad("This sign-in was not started in this browser, or it expired. Please start again.");
    }
    let now = mirobody_core::clock::now_ms();
    let login = match identities.take_upstream_login(&mirobody_auth::hash_secret(&answer.state), now).await {
        Ok(Some(login)) if login.provider == provider.settings.id => login,
        Ok(_) => return bad("This sign-in has expired or was used already. Please start again."),
        Err(e) => return failed(server, "cannot read a sign-in in flight", &e),
    };
    if !answer.error.is_empty() {
        let description: String = answer.error_description.chars().take(MAX_DESCRIPTION_CHARS).collect();
        let why = if description.trim().is_empty() {
            answer.error.clone()
        } else {
            format!("{} ({description})", answer.error)
        };
        let text = format!("{name} did not sign you in: {why}.");
        return refused(server, StatusCode::FORBIDDEN, "Sign-in was not completed", &text);
    }
    if answer.code.is_empty() {
        return bad("The answer from the identity provider has no code.");
    }
    let person = match verified_person(server, provider, &answer.code, &login.pkce_verifier, &login.nonce).await {
        Ok(person) => person,
        Err(Failure::Unreachable(e)) => {
            tracing::warn!(provider = %provider.settings.id, error = %e, "OpenID provider sign-in failed");
            let text = format!("{name} could not complete the sign-in. Please try again.");
            return refused(server, StatusCode::BAD_GATEWAY, "Sign-in could not be completed", &text);
        }
        Err(Failure::Untrusted(e)) => {
            tracing::warn!(provider = %provider.settings.id, error = %e, "an ID token was refused");
            let text = format!("The answer from {name} could not be verified, so you are not signed in.");
            return refused(server, StatusCode::FORBIDDEN, "Sign-in refused", &text);
        }
    };
    let account = match account_of(server, identities.as_ref(), &provider.settings, &person).await {
        Ok(account) => account,
        Err(response) => return *response,
    };
    tracing::info!(account = %account.id, provider = %provider.settings.id, "signed in through an OpenID provider");
    match session::start(server, &account.id).await {
        Ok(cookie) => with_cookies(see_other(&login.next), [cookie, PreSession::clear(server)]),
        Err(e) => failed(server, "cannot start a web session", &e),
    }
}

enum Failure {
    /// The provider could not be asked, or answered with an error.
    Unreachable(String),
    /// Its ID token is not one to trust.
    Untrusted(String),
}

/// Exchanges the code and verifies the ID token; who it names.
async fn verified_person(
    server: &OAuthServer,
    provider: &super::client::Provider,
    code: &str,
    verifier: &str,
    nonce: &str,
) -> Result<Person, Failure> {
    let upstream = &server.inner.upstream;
    let metadata = upstream.metadata(provider, false).await.map_err(Failure::Unreachable)?;
    let client = upstream
        .client(provider, &metadata, &redirect_uri(server, &provider.settings.id))
        .map_err(Failure::Unreachable)?;
    let http = upstream.http.clone();
    let send = move |request| super::client::send(http.clone(), request);
    let request =
        client.exchange_code(AuthorizationCode::new(code.to_owned())).map_err(|e| Failure::Unreachable(chain(&e)))?;
    let token = request
        .set_pkce_verifier(PkceCodeVerifier::new(verifier.to_owned()))
        .request_async(&send)
        .await
        .map_err(|e| Failure::Unreachable(chain(&e)))?;
    let id_token = token.id_token().ok_or_else(|| Failure::Untrusted("the token answer has no ID token".into()))?;
    let nonce = Nonce::new(nonce.to_owned());
    let check = |client: &super::client::Client| {
        let verifier = client.id_token_verifier().set_allowed_algs(ID_TOKEN_ALGORITHMS);
        id_token.claims(&verifier, &nonce).cloned().map_err(|e| chain(&e))
    };
    let claims: CoreIdTokenClaims = match check(&client) {
        Ok(claims) => claims,
        Err(first) => {
            // The provider may have rotated its keys since discovery: fetch them once more.
            let metadata = upstream.metadata(provider, true).await.map_err(Failure::Unreachable)?;
            let client = upstream
                .client(provider, &metadata, &redirect_uri(server, &provider.settings.id))
                .map_err(Failure::Unreachable)?;
            check(&client).map_err(|again| Failure::Untrusted(format!("{first}; with fresh keys: {again}")))?
        }
    };
    let subject = claims.subject().as_str();
    if subject.is_empty() || subject.len() > MAX_SUBJECT_BYTES {
        return Err(Failure::Untrusted(format!("the subject must have 1 to {MAX_SUBJECT_BYTES} bytes")));
    }
    let verified_email =
        claims.email().filter(|_| claims.email_verified() == Some(true)).and_then(|email| normal_email(email.as_str()));
    let name =
        claims.name().and_then(|name| name.get(None)).and_then(|name| display_name(name.as_str()).ok().flatten());
    Ok(Person { subject: subject.to_owned(), verified_email, name })
}

/// The account the person signs in as: the one their subject is linked to; else the one of
/// the email the provider verified, which is linked now; else, when the provider allows it,
/// a new one. Disabled accounts are refused.
async fn account_of(
    server: &OAuthServer,
    identities: &dyn IdentityStore,
    provider: &super::settings::ProviderSettings,
    person: &Person,
) -> Result<Account, Box<Response>> {
    let accounts = &server.inner.stores.accounts;
    let store_failed = |e: &dyn std::fmt::Display| Box::new(failed(server, "cannot look up an account", e));
    let linked = identities.identity_account(&provider.id, &person.subject).await.map_err(|e| store_failed(&e))?;
    if let Some(id) = linked
        && let Some(account) = accounts.account(&id).await.map_err(|e| store_failed(&e))?
    {
        return usable(server, account);
    }
    // Only an email the provider says it verified is matched: an unverified one is whatever
    // the person typed at the provider, and would let anyone claim an account here by
    // writing its owner's address.
    let Some(email) = &person.verified_email else { return Err(Box::new(no_account(server, provider, None))) };
    let account = match accounts.account_by_email(email).await.map_err(|e| store_failed(&e))? {
        Some(account) => usable(server, account)?,
        None if provider.allow_signup => {
            let account = new_account(server, email, person.name.clone())?;
            if !accounts.create_account(&account).await.map_err(|e| store_failed(&e))? {
                return Err(Box::new(no_account(server, provider, Some(email))));
            }
            let (id, provider) = (&account.id, &provider.id);
            tracing::info!(account = %id, provider = %provider, "account made at sign-in through a provider");
            account
        }
        None => return Err(Box::new(no_account(server, provider, Some(email)))),
    };
    let link = IdentityLink {
        provider: provider.id.clone(),
        subject: person.subject.clone(),
        account_id: account.id.clone(),
        email: Some(email.clone()),
        created_at_ms: mirobody_core::clock::now_ms(),
    };
    // False: a concurrent sign-in linked it first, to this account (the email is unique).
    identities.link_identity(&link).await.map_err(|e| store_failed(&e))?;
    Ok(account)
}

fn usable(server: &OAuthServer, account: Account) -> Result<Account, Box<Response>> {
    if account.disabled {
        let text = "This account is disabled. Ask the server's operator.";
        return Err(Box::new(refused(server, StatusCode::FORBIDDEN, "Sign-in refused", text)));
    }
    Ok(account)
}

/// A new account with no password, as sign-up makes one.
fn new_account(server: &OAuthServer, email: &str, display_name: Option<String>) -> Result<Account, Box<Response>> {
    let hex = random::hex(8).map_err(|e| Box::new(failed(server, "cannot make an account id", &e)))?;
    Ok(Account {
        id: format!("u_{hex}"),
        email: email.to_owned(),
        display_name,
        password_hash: None,
        disabled: false,
        created_at_ms: mirobody_core::clock::now_ms(),
    })
}

fn no_account(server: &OAuthServer, provider: &super::settings::ProviderSettings, email: Option<&str>) -> Response {
    let text = match email {
        Some(email) => format!(
            "{} signed you in as {email}, but this server has no account for that address. \
             Ask its operator for one.",
            provider.name
        ),
        None => format!(
            "{} did not give a verified email address, and this server knows no account for you. \
             Ask its operator for one.",
            provider.name
        ),
    };
    refused(server, StatusCode::FORBIDDEN, "No account here", &text)
}
