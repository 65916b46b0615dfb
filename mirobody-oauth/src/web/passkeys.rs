//! Passkeys (WebAuthn, through `webauthn-rs`): adding one on the access page, and signing in
//! with one, usernameless. Each ceremony is two JSON requests from `assets/passkey.js`: begin
//! (the options for `navigator.credentials`) and finish (the authenticator's answer). Between
//! them the ceremony's state waits in the store under the hash of a random id the browser
//! holds, so any instance can finish it, once, within [`CEREMONY_TTL`].

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Json, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use mirobody_ports::{MAX_PASSKEYS_PER_ACCOUNT, PasskeyCeremony, PasskeyStore};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use webauthn_rs::prelude::{
    DiscoverableAuthentication, Passkey, PasskeyRegistration, PublicKeyCredential, RegisterPublicKeyCredential, Url,
    Uuid, Webauthn, WebauthnBuilder,
};

use crate::random;
use crate::server::OAuthServer;
use crate::web::forms::{ClientAddress, PreSession, safe_next, with_cookies};
use crate::web::session::{self, SignedIn};

/// How long a begun ceremony can be finished: WebAuthn's own recommended timeout.
pub(crate) const CEREMONY_TTL: Duration = Duration::from_secs(300);
/// Ceremonies one account (adding passkeys) or one address (signing in) may have under way at
/// once; more wait until some finish or expire.
pub(crate) const MAX_LIVE_CEREMONIES: u32 = 10;
/// The longest passkey name, in characters.
pub(crate) const MAX_PASSKEY_NAME_CHARS: usize = 64;
/// The longest ceremony id accepted (ours are 43 characters).
const MAX_CEREMONY_ID_BYTES: usize = 128;
/// The header a JSON request carries its CSRF token in.
const CSRF_HEADER: &str = "x-csrf-token";
/// The one answer to an unknown passkey and a signature that does not verify alike.
const NOT_VERIFIED: &str = "That passkey could not be verified here.";

/// The relying party: this server's WebAuthn settings and the store.
#[derive(Clone)]
pub(crate) struct Passkeys {
    webauthn: Arc<Webauthn>,
    pub(crate) store: Arc<dyn PasskeyStore>,
    /// The origin requests must come from (`scheme://host[:port]`).
    origin: String,
}

impl Passkeys {
    /// The relying party of the public base URL: its host is the RP id, its origin the only
    /// one allowed. `None` (logged) when WebAuthn refuses it, as for an IP address.
    pub(crate) fn new(endpoint: &mirobody_auth::McpEndpoint, store: Arc<dyn PasskeyStore>) -> Option<Passkeys> {
        let url = match Url::parse(endpoint.base_url()) {
            Ok(url) => url,
            Err(e) => {
                tracing::warn!(error = %e, "passkeys are off: the public base URL cannot be read");
                return None;
            }
        };
        let origin = url.origin().ascii_serialization();
        let Some(rp_id) = url.domain() else {
            tracing::warn!(url = %url, "passkeys are off: WebAuthn needs the public URL's host to be a domain name");
            return None;
        };
        let built = WebauthnBuilder::new(rp_id, &url).and_then(|b| b.rp_name(rp_id).timeout(CEREMONY_TTL).build());
        match built {
            Ok(webauthn) => Some(Passkeys { webauthn: Arc::new(webauthn), store, origin }),
            Err(e) => {
                tracing::warn!(error = %e, "passkeys are off: WebAuthn refused the public URL");
                None
            }
        }
    }
}

/// The WebAuthn user handle of an account: a hash of its id, not the id. The authenticator
/// keeps the handle beside the credential and gives it back to whoever asks with it, and the
/// account id is also the `users` id and tokens' `sub`; WebAuthn asks that the handle reveal
/// nothing. Stable, so an authenticator asked again for one account replaces its passkey
/// instead of keeping two.
pub(crate) fn user_handle(account_id: &str) -> Uuid {
    let digest = Sha256::new_with_prefix(b"mirobody passkey user handle v1\0").chain_update(account_id).finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    Uuid::from_bytes(bytes)
}

pub(crate) fn routes(server: &OAuthServer) -> Router {
    if server.inner.passkeys.is_none() {
        return Router::new();
    }
    Router::new()
        .route(&server.path("/assets/passkey.js"), get(script))
        .route(&server.path("/account/passkeys/begin"), post(register_begin))
        .route(&server.path("/account/passkeys/finish"), post(register_finish))
        .route(&server.path("/signin/passkey/begin"), post(sign_in_begin))
        .route(&server.path("/signin/passkey/finish"), post(sign_in_finish))
        .with_state(server.clone())
}

async fn script() -> Response {
    let mut response = include_str!("../../assets/passkey.js").into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/javascript; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// A JSON answer: `{"error": text}` with `status`.
fn error(status: StatusCode, text: &str) -> Response {
    json_answer(status, json!({ "error": text }))
}

fn json_answer(status: StatusCode, body: Value) -> Response {
    let mut response = (status, Json(body)).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Why a request is refused before any work: its status and the text the script shows.
struct Refused(StatusCode, &'static str);

impl From<Refused> for Response {
    fn from(Refused(status, text): Refused) -> Response {
        error(status, text)
    }
}

fn store_failed(what: &str, e: &dyn std::fmt::Display) -> Response {
    tracing::error!(error = %e, "{what}");
    error(StatusCode::INTERNAL_SERVER_ERROR, "The server could not do that just now. Please try again.")
}

/// The request comes from a page of this server: its `Origin` is ours (browsers send it with
/// every `fetch` POST) and, when the browser says, the fetch is same-origin.
fn same_origin(passkeys: &Passkeys, headers: &HeaderMap) -> Result<(), Refused> {
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    let site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    if origin == Some(passkeys.origin.as_str()) && site.is_none_or(|site| site == "same-origin") {
        Ok(())
    } else {
        Err(Refused(StatusCode::FORBIDDEN, "This request must come from this server's own pages."))
    }
}

fn csrf_header(headers: &HeaderMap) -> &str {
    headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok()).unwrap_or("")
}

/// The JSON body, or the answer that refuses it (too large, not JSON, wrong shape).
fn body<T>(body: Result<Json<T>, JsonRejection>) -> Result<T, Refused> {
    body.map(|Json(body)| body).map_err(|rejection| {
        let status = rejection.status();
        let text = if status == StatusCode::PAYLOAD_TOO_LARGE {
            "The request is too large."
        } else {
            "The request could not be read."
        };
        Refused(status, text)
    })
}

/// The passkeys, the request's session (its CSRF header the session's), from this origin.
async fn signed_in_request(server: &OAuthServer, headers: &HeaderMap) -> Result<(Passkeys, SignedIn), Response> {
    let Some(passkeys) = server.inner.passkeys.clone() else {
        return Err(error(StatusCode::NOT_FOUND, "No passkeys here."));
    };
    same_origin(&passkeys, headers)?;
    let Some(signed_in) = session::signed_in(server, headers).await else {
        return Err(error(StatusCode::UNAUTHORIZED, "Please sign in again."));
    };
    if !signed_in.csrf_matches(csrf_header(headers)) {
        return Err(error(StatusCode::FORBIDDEN, "This page has expired. Please reload it."));
    }
    Ok((passkeys, signed_in))
}

/// Stores a ceremony's state and returns the id the browser finishes it with.
async fn put_ceremony(
    passkeys: &Passkeys,
    purpose: &str,
    owner: String,
    state: &impl serde::Serialize,
) -> Result<String, Response> {
    let state = serde_json::to_string(state).map_err(|e| store_failed("cannot serialise a passkey ceremony", &e))?;
    let id = random::token(32).map_err(|e| store_failed("cannot make a ceremony id", &e))?;
    let now = mirobody_core::clock::now_ms();
    let ttl = i64::try_from(CEREMONY_TTL.as_millis()).unwrap_or(i64::MAX);
    let ceremony =
        PasskeyCeremony { purpose: purpose.into(), owner, state, created_at_ms: now, expires_at_ms: now + ttl };
    let hash = mirobody_auth::hash_secret(&id);
    match passkeys.store.put_ceremony(&hash, &ceremony, MAX_LIVE_CEREMONIES).await {
        Ok(true) => Ok(id),
        Ok(false) => {
            Err(error(StatusCode::TOO_MANY_REQUESTS, "Too many passkey requests at once. Please wait a few minutes."))
        }
        Err(e) => Err(store_failed("cannot store a passkey ceremony", &e)),
    }
}

/// Takes the ceremony `id` names, if it is live and began as `purpose`; its state.
async fn take_ceremony<T: DeserializeOwned>(
    passkeys: &Passkeys,
    id: &str,
    purpose: &str,
) -> Result<(String, T), Response> {
    let expired = || error(StatusCode::BAD_REQUEST, "This passkey request has expired. Please try again.");
    if id.is_empty() || id.len() > MAX_CEREMONY_ID_BYTES {
        return Err(expired());
    }
    let hash = mirobody_auth::hash_secret(id);
    let ceremony = match passkeys.store.take_ceremony(&hash, mirobody_core::clock::now_ms()).await {
        Ok(Some(ceremony)) if ceremony.purpose == purpose => ceremony,
        Ok(_) => return Err(expired()),
        Err(e) => return Err(store_failed("cannot read a passkey ceremony", &e)),
    };
    let state = serde_json::from_str(&ceremony.state).map_err(|_| expired())?;
    Ok((ceremony.owner, state))
}

async fn register_begin(State(server): State<OAuthServer>, headers: HeaderMap) -> Response {
    let (passkeys, signed_in) = match signed_in_request(&server, &headers).await {
        Ok(request) => request,
        Err(response) => return response,
    };
    let account = &signed_in.account;
    let stored = match passkeys.store.passkeys_of(&account.id, MAX_PASSKEYS_PER_ACCOUNT).await {
        Ok(stored) => stored,
        Err(e) => return store_failed("cannot list passkeys", &e),
    };
    if stored.len() >= MAX_PASSKEYS_PER_ACCOUNT as usize {
        return error(StatusCode::CONFLICT, "You have as many passkeys as an account may keep: remove one first.");
    }
    // The authenticator is told which it already holds, so it does not make a second.
    let exclude = stored
        .iter()
        .filter_map(|p| serde_json::from_str::<Passkey>(&p.credential).ok())
        .map(|p| p.cred_id().clone())
        .collect();
    let name = account.display_name.as_deref().unwrap_or(&account.email);
    let started =
        passkeys.webauthn.start_passkey_registration(user_handle(&account.id), &account.email, name, Some(exclude));
    let (options, state) = match started {
        Ok(started) => started,
        Err(e) => return store_failed("cannot begin a passkey registration", &e),
    };
    // Signing in names no account, so the authenticator must keep the passkey findable by
    // itself (a discoverable credential); webauthn-rs asks for the opposite by default, and
    // its prelude does not name the type to say otherwise.
    let mut options = json!(options);
    options["publicKey"]["authenticatorSelection"]["residentKey"] = json!("required");
    options["publicKey"]["authenticatorSelection"]["requireResidentKey"] = json!(true);
    match put_ceremony(&passkeys, "register", account.id.clone(), &state).await {
        Ok(id) => json_answer(StatusCode::OK, json!({ "ceremony": id, "options": options })),
        Err(response) => response,
    }
}

#[derive(Deserialize)]
struct RegisterFinish {
    ceremony: String,
    #[serde(default)]
    name: String,
    credential: RegisterPublicKeyCredential,
}

async fn register_finish(
    State(server): State<OAuthServer>,
    headers: HeaderMap,
    request: Result<Json<RegisterFinish>, JsonRejection>,
) -> Response {
    let (passkeys, signed_in) = match signed_in_request(&server, &headers).await {
        Ok(request) => request,
        Err(response) => return response,
    };
    let request = match body(request) {
        Ok(request) => request,
        Err(refused) => return refused.into(),
    };
    let name = match passkey_name(&request.name) {
        Ok(name) => name,
        Err(text) => return error(StatusCode::BAD_REQUEST, text),
    };
    let account = &signed_in.account;
    let (owner, state): (String, PasskeyRegistration) =
        match take_ceremony(&passkeys, &request.ceremony, "register").await {
            Ok(taken) => taken,
            Err(response) => return response,
        };
    // Another session's ceremony (its id leaked somehow) adds nothing to this account.
    if owner != account.id {
        return error(StatusCode::BAD_REQUEST, "This passkey request has expired. Please try again.");
    }
    let passkey = match passkeys.webauthn.finish_passkey_registration(&request.credential, &state) {
        Ok(passkey) => passkey,
        Err(e) => {
            tracing::info!(account = %account.id, error = %e, "a passkey registration did not verify");
            return error(StatusCode::BAD_REQUEST, "The passkey could not be verified. Please try again.");
        }
    };
    let credential = match serde_json::to_string(&passkey) {
        Ok(credential) => credential,
        Err(e) => return store_failed("cannot serialise a passkey", &e),
    };
    let stored = mirobody_ports::Passkey {
        credential_id: passkey.cred_id().to_vec(),
        account_id: account.id.clone(),
        credential,
        name,
        created_at_ms: mirobody_core::clock::now_ms(),
        last_used_at_ms: None,
    };
    match passkeys.store.add_passkey(&stored, MAX_PASSKEYS_PER_ACCOUNT).await {
        Ok(true) => {
            tracing::info!(account = %account.id, "passkey added");
            json_answer(StatusCode::OK, json!({ "next": format!("{}?done=passkey-added", server.path("/account")) }))
        }
        Ok(false) => {
            error(StatusCode::CONFLICT, "That passkey is already added, or you have as many as an account may keep.")
        }
        Err(e) => store_failed("cannot store a passkey", &e),
    }
}

/// A passkey's name as kept: trimmed, "Passkey" when empty; refused when too long or holding a
/// control character.
pub(crate) fn passkey_name(name: &str) -> Result<String, &'static str> {
    let name = name.trim();
    if name.chars().count() > MAX_PASSKEY_NAME_CHARS {
        return Err("A passkey's name may have at most 64 characters.");
    }
    if name.chars().any(char::is_control) {
        return Err("A passkey's name may not hold control characters.");
    }
    Ok(if name.is_empty() { "Passkey".to_owned() } else { name.to_owned() })
}

/// Whose sign-in ceremonies a request's count among: its address's network (as the throttle
/// counts it), or one shared owner for requests with no address (an embedder that passes no
/// `ClientAddr` nor `ConnectInfo` shares one bound among all its visitors).
fn address_owner(address: Option<IpAddr>) -> String {
    match address {
        Some(address) => format!("address {}", mirobody_ports::ClientAddr(address).network()),
        None => "address unknown".into(),
    }
}

/// The passkeys, from this origin, with the pre-session CSRF token in the header.
fn signed_out_request(server: &OAuthServer, headers: &HeaderMap) -> Result<Passkeys, Refused> {
    let Some(passkeys) = server.inner.passkeys.clone() else {
        return Err(Refused(StatusCode::NOT_FOUND, "No passkeys here."));
    };
    same_origin(&passkeys, headers)?;
    if !PreSession::matches(server, headers, csrf_header(headers)) {
        return Err(Refused(StatusCode::FORBIDDEN, "This page has expired. Please reload it."));
    }
    Ok(passkeys)
}

fn too_many(wait: Duration) -> Response {
    let mut response =
        error(StatusCode::TOO_MANY_REQUESTS, "Too many failed sign-ins. Please wait a while and try again.");
    response.headers_mut().insert(header::RETRY_AFTER, crate::web::forms::retry_after(wait));
    response
}

async fn sign_in_begin(
    State(server): State<OAuthServer>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
) -> Response {
    let passkeys = match signed_out_request(&server, &headers) {
        Ok(passkeys) => passkeys,
        Err(refused) => return refused.into(),
    };
    // An address past its failures gets no new challenge.
    if let Err(wait) = server.inner.throttle.check_address(address) {
        return too_many(wait);
    }
    let (mut options, state): (_, DiscoverableAuthentication) =
        match passkeys.webauthn.start_discoverable_authentication() {
            Ok(started) => started,
            Err(e) => return store_failed("cannot begin a passkey sign-in", &e),
        };
    // webauthn-rs marks these for autofill ("conditional") use; here a button asks.
    options.mediation = None;
    match put_ceremony(&passkeys, "authenticate", address_owner(address), &state).await {
        Ok(id) => json_answer(StatusCode::OK, json!({ "ceremony": id, "options": options })),
        Err(response) => response,
    }
}

#[derive(Deserialize)]
struct SignInFinish {
    ceremony: String,
    #[serde(default)]
    next: String,
    credential: PublicKeyCredential,
}

async fn sign_in_finish(
    State(server): State<OAuthServer>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    request: Result<Json<SignInFinish>, JsonRejection>,
) -> Response {
    let passkeys = match signed_out_request(&server, &headers) {
        Ok(passkeys) => passkeys,
        Err(refused) => return refused.into(),
    };
    let request = match body(request) {
        Ok(request) => request,
        Err(refused) => return refused.into(),
    };
    // Failures count per credential (the account half of the throttle) and per address.
    let key = format!("passkey {}", hex_prefix(request.credential.get_credential_id()));
    let throttle = &server.inner.throttle;
    if let Err(wait) = throttle.check(&key, address) {
        tracing::warn!(address = ?address, "passkey sign-in refused: too many failures");
        return too_many(wait);
    }
    let account = match verify(&server, &passkeys, &request).await {
        Ok(Some(account)) => account,
        Ok(None) => {
            throttle.failed(&key, address);
            return error(StatusCode::UNAUTHORIZED, NOT_VERIFIED);
        }
        Err(response) => {
            if response.status() == StatusCode::BAD_REQUEST {
                throttle.failed(&key, address);
            }
            return response;
        }
    };
    match session::start(&server, &account).await {
        Ok(cookie) => {
            let next = safe_next(&server, &request.next);
            with_cookies(json_answer(StatusCode::OK, json!({ "next": next })), [cookie, PreSession::clear(&server)])
        }
        Err(e) => store_failed("cannot start a web session", &e),
    }
}

// The first bytes of a credential id in hex: enough to tell credentials apart in the throttle.
fn hex_prefix(bytes: &[u8]) -> String {
    bytes.iter().take(32).map(|b| format!("{b:02x}")).collect()
}

/// The account a sign-in's passkey proves, `None` when it proves none (unknown credential,
/// another account's handle, a bad signature, a disabled account): one answer for all.
async fn verify(server: &OAuthServer, passkeys: &Passkeys, request: &SignInFinish) -> Result<Option<String>, Response> {
    let (_, state): (String, DiscoverableAuthentication) =
        take_ceremony(passkeys, &request.ceremony, "authenticate").await?;
    let Ok((handle, credential_id)) = passkeys.webauthn.identify_discoverable_authentication(&request.credential)
    else {
        return Ok(None);
    };
    if credential_id.len() > mirobody_ports::MAX_CREDENTIAL_ID_BYTES {
        return Ok(None);
    }
    let stored = match passkeys.store.passkey(credential_id).await {
        Ok(Some(stored)) => stored,
        Ok(None) => return Ok(None),
        Err(e) => return Err(store_failed("cannot look up a passkey", &e)),
    };
    if user_handle(&stored.account_id) != handle {
        return Ok(None);
    }
    match server.inner.stores.accounts.account(&stored.account_id).await {
        Ok(Some(account)) if !account.disabled => {}
        Ok(_) => return Ok(None),
        Err(e) => return Err(store_failed("account lookup failed", &e)),
    }
    let Ok(mut passkey) = serde_json::from_str::<Passkey>(&stored.credential) else {
        tracing::error!(account = %stored.account_id, "a stored passkey cannot be read");
        return Ok(None);
    };
    let result =
        match passkeys.webauthn.finish_discoverable_authentication(&request.credential, state, &[(&passkey).into()]) {
            Ok(result) => result,
            Err(e) => {
                tracing::info!(account = %stored.account_id, error = %e, "a passkey sign-in did not verify");
                return Ok(None);
            }
        };
    passkey.update_credential(&result);
    let now = mirobody_core::clock::now_ms();
    let updated = match serde_json::to_string(&passkey) {
        Ok(updated) => updated,
        Err(e) => return Err(store_failed("cannot serialise a passkey", &e)),
    };
    if let Err(e) = passkeys.store.passkey_used(&stored.credential_id, &updated, now).await {
        return Err(store_failed("cannot update a passkey", &e));
    }
    tracing::info!(account = %stored.account_id, "signed in with a passkey");
    Ok(Some(stored.account_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_handle_is_stable_per_account_and_not_the_id() {
        assert_eq!(user_handle("u_alice"), user_handle("u_alice"));
        assert_ne!(user_handle("u_alice"), user_handle("u_bob"));
        assert!(!user_handle("u_alice").as_bytes().windows(7).any(|w| w == b"u_alice"));
    }

    #[test]
    fn passkey_names_are_bounded() {
        assert_eq!(passkey_name("  Laptop "), Ok("Laptop".to_owned()));
        assert_eq!(passkey_name(" "), Ok("Passkey".to_owned()));
        assert!(passkey_name(&"é".repeat(64)).is_ok());
        assert!(passkey_name(&"é".repeat(65)).is_err());
        assert!(passkey_name("a\nb").is_err());
    }
}
