//! The token endpoint (authorization code with PKCE, refresh tokens rotated on each use) and
//! revocation (RFC 7009).

// A refusal here is the HTTP answer itself, made once per request on its way out: boxing it
// would cost an allocation to save a copy.
#![allow(clippy::result_large_err)]

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{HeaderMap, StatusCode};
use mirobody_ports::{CodeUse, Grant, RefreshUse};
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::cimd::Lookup;
use super::clients::{ClientCredentials, InvalidClient};
use super::{json_response, oauth_error, preflight};
use crate::random;
use crate::server::OAuthServer;

/// The largest token or revocation request read.
const MAX_BODY_BYTES: usize = 16 * 1024;

pub(super) fn routes(server: &OAuthServer) -> Router {
    Router::new()
        .route(&server.path("/token"), post(token).options(preflight))
        .route(&server.path("/revoke"), post(revoke).options(preflight))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(server.clone())
}

type Form = Vec<(String, String)>;

fn read_form(body: &[u8]) -> Result<Form, Response> {
    let form: Form = form_urlencoded::parse(body).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    let mut names: Vec<&str> = form.iter().map(|(k, _)| k.as_str()).collect();
    names.sort_unstable();
    if names.windows(2).any(|pair| pair[0] == pair[1]) {
        return Err(invalid_request("a parameter is given more than once"));
    }
    Ok(form)
}

fn field<'a>(form: &'a Form, name: &str) -> Option<&'a str> {
    form.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

fn invalid_request(description: &str) -> Response {
    oauth_error(StatusCode::BAD_REQUEST, "invalid_request", description)
}

fn invalid_grant(description: &str) -> Response {
    oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", description)
}

fn unavailable(error: impl std::fmt::Display) -> Response {
    tracing::warn!(error = %error, "the OAuth store failed");
    oauth_error(StatusCode::SERVICE_UNAVAILABLE, "temporarily_unavailable", "the store is unavailable; try again")
}

fn invalid_client(why: InvalidClient) -> Response {
    oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", why.0)
}

/// The client of a token or revocation request, authenticated.
async fn client_of(server: &OAuthServer, headers: &HeaderMap, form: &Form) -> Result<String, Response> {
    let credentials = ClientCredentials::read(headers, field(form, "client_id"), field(form, "client_secret"))
        .map_err(invalid_client)?;
    let Some(client_id) = credentials.client_id.clone() else {
        return Err(invalid_client(InvalidClient("the request names no client")));
    };
    let client = match server.find_client(&client_id).await {
        Lookup::Found(client) => client,
        Lookup::Unknown(None) => return Err(invalid_client(InvalidClient("unknown client"))),
        Lookup::Unknown(Some(why)) => {
            let description = format!("the client's metadata document cannot be used: {why}");
            return Err(oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", &description));
        }
        Lookup::Unavailable(e) => return Err(unavailable(e)),
    };
    credentials.authenticate(&client).map_err(invalid_client)?;
    Ok(client.client_id)
}

async fn token(State(server): State<OAuthServer>, headers: HeaderMap, body: Bytes) -> Response {
    let form = match read_form(&body) {
        Ok(form) => form,
        Err(refusal) => return refusal,
    };
    let client_id = match client_of(&server, &headers, &form).await {
        Ok(id) => id,
        Err(refusal) => return refusal,
    };
    match field(&form, "grant_type") {
        Some("authorization_code") => redeem_code(&server, &client_id, &form).await,
        Some("refresh_token") => refresh(&server, &client_id, &form).await,
        Some(_) => {
            oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type", "use authorization_code or refresh_token")
        }
        None => invalid_request("grant_type is missing"),
    }
}

/// Whether `verifier` is a PKCE verifier (RFC 7636 §4.1) whose S256 is `challenge`.
fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    well_formed && bool::from(computed.as_bytes().ct_eq(challenge.as_bytes()))
}

async fn redeem_code(server: &OAuthServer, client_id: &str, form: &Form) -> Response {
    let (Some(code), Some(verifier)) = (field(form, "code"), field(form, "code_verifier")) else {
        return invalid_request("code and code_verifier are required");
    };
    let store = &server.inner.stores.oauth;
    let now = mirobody_core::clock::now_ms();
    let record = match store.take_code(&mirobody_auth::hash_secret(code), now).await {
        Ok(CodeUse::Fresh(record)) => record,
        Ok(CodeUse::Replayed { grant_id }) => {
            // Someone holds a copy of a code already redeemed: whatever it gave stops now.
            tracing::warn!(grant = %grant_id, "an authorization code was used twice; its grant is revoked");
            server.revoke(&grant_id, None).await;
            return invalid_grant("the code was already used");
        }
        Ok(_) => return invalid_grant("the code is unknown or expired"),
        Err(e) => return unavailable(e),
    };
    // The code is used up whatever follows: a wrong verifier cannot be retried.
    if record.client_id != client_id {
        return invalid_grant("the code was issued to another client");
    }
    if field(form, "redirect_uri").is_some_and(|uri| uri != record.redirect_uri) {
        return invalid_grant("redirect_uri differs from the authorization request's");
    }
    if !pkce_matches(verifier, &record.code_challenge) {
        return invalid_grant("the code_verifier does not match the code_challenge");
    }
    let grant = match store.grant(&record.grant_id).await {
        Ok(Some(grant)) if grant.revoked_at_ms.is_none() => grant,
        Ok(_) => return invalid_grant("the grant was revoked"),
        Err(e) => return unavailable(e),
    };
    if let Some(refusal) = resource_refusal(&grant, form) {
        return refusal;
    }
    match server.account_active(&grant.account_id).await {
        Ok(true) => {}
        Ok(false) => return invalid_grant("the account is disabled"),
        Err(refusal) => return refusal,
    }
    let refresh = match random::token(32) {
        Ok(token) => token,
        Err(e) => return unavailable(e),
    };
    if let Err(e) =
        store.put_refresh_token(&mirobody_auth::hash_secret(&refresh), &grant.id, now + server.refresh_ttl_ms()).await
    {
        return unavailable(e);
    }
    if let Err(e) = store.touch_grant(&grant.id, now).await {
        tracing::debug!(error = %e, "cannot stamp a grant's last use");
    }
    tokens(server, &grant, &grant.scopes, &refresh)
}

// `resource` at the token endpoint (RFC 8707), when given, must be the grant's.
fn resource_refusal(grant: &Grant, form: &Form) -> Option<Response> {
    field(form, "resource")
        .filter(|resource| resource.trim_end_matches('/') != grant.resource)
        .map(|_| oauth_error(StatusCode::BAD_REQUEST, "invalid_target", "the resource is not the one granted"))
}

async fn refresh(server: &OAuthServer, client_id: &str, form: &Form) -> Response {
    let Some(old) = field(form, "refresh_token") else { return invalid_request("refresh_token is required") };
    let new = match random::token(32) {
        Ok(token) => token,
        Err(e) => return unavailable(e),
    };
    let store = &server.inner.stores.oauth;
    let now = mirobody_core::clock::now_ms();
    let rotated = store
        .rotate_refresh_token(
            &mirobody_auth::hash_secret(old),
            &mirobody_auth::hash_secret(&new),
            now + server.refresh_ttl_ms(),
            now,
        )
        .await;
    let grant = match rotated {
        Ok(RefreshUse::Rotated(grant)) => grant,
        Ok(RefreshUse::Reused { grant_id }) => {
            // Two holders of one refresh token: one of them is not the client. End them both.
            tracing::warn!(grant = %grant_id, "a refresh token was used twice; its grant is revoked");
            server.revoke(&grant_id, None).await;
            return invalid_grant("the refresh token was already used");
        }
        Ok(_) => return invalid_grant("the refresh token is unknown, expired or revoked"),
        Err(e) => return unavailable(e),
    };
    if grant.client_id != client_id {
        // Stolen by another client: the grant is not safe any more.
        server.revoke(&grant.id, None).await;
        return invalid_grant("the refresh token was issued to another client");
    }
    if let Some(refusal) = resource_refusal(&grant, form) {
        return refusal;
    }
    // A refresh may narrow the scopes, never widen them.
    let scopes = match field(form, "scope") {
        Some(scope) => {
            let asked: Vec<String> = scope.split_whitespace().map(str::to_owned).collect();
            if asked.iter().any(|s| !grant.scopes.contains(s)) {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_scope", "a refresh cannot add scopes");
            }
            asked
        }
        None => grant.scopes.clone(),
    };
    tokens(server, &grant, &scopes, &new)
}

// The token answer: a signed access token for the grant's resource, and the refresh token.
fn tokens(server: &OAuthServer, grant: &Grant, scopes: &[String], refresh: &str) -> Response {
    let now = jsonwebtoken::get_current_timestamp();
    let ttl = server.inner.settings.access_token_ttl.as_secs().max(1);
    let jti = random::token(16).unwrap_or_default();
    let claims = json!({
        "iss": server.inner.issuer,
        "sub": grant.account_id,
        "aud": grant.resource,
        "iat": now,
        "exp": now + ttl,
        "jti": jti,
        "client_id": grant.client_id,
        "scope": scopes.join(" "),
        "gid": grant.id,
    });
    let access = match server.inner.key.sign(&claims) {
        Ok(token) => token,
        Err(e) => return unavailable(e),
    };
    json_response(
        StatusCode::OK,
        &json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": ttl,
            "refresh_token": refresh,
            "scope": scopes.join(" "),
        }),
    )
}

// RFC 7009: the answer is 200 whether or not the token was known; a client can only revoke
// its own grants.
async fn revoke(State(server): State<OAuthServer>, headers: HeaderMap, body: Bytes) -> Response {
    let form = match read_form(&body) {
        Ok(form) => form,
        Err(refusal) => return refusal,
    };
    let client_id = match client_of(&server, &headers, &form).await {
        Ok(id) => id,
        Err(refusal) => return refusal,
    };
    let Some(token) = field(&form, "token") else { return invalid_request("token is required") };
    let grant_id = match server.inner.stores.oauth.refresh_token_grant(&mirobody_auth::hash_secret(token)).await {
        Ok(Some(grant_id)) => Some(grant_id),
        Ok(None) => server.access_token_grant(token),
        Err(e) => return unavailable(e),
    };
    if let Some(grant_id) = grant_id {
        match server.inner.stores.oauth.grant(&grant_id).await {
            Ok(Some(grant)) if grant.client_id == client_id => {
                server.revoke(&grant.id, None).await;
            }
            Ok(_) => {}
            Err(e) => return unavailable(e),
        }
    }
    json_response(StatusCode::OK, &json!({}))
}

impl OAuthServer {
    fn refresh_ttl_ms(&self) -> i64 {
        i64::try_from(self.inner.settings.refresh_token_ttl.as_millis()).unwrap_or(i64::MAX / 2)
    }

    // The grant an access token this server signed names (expired or not).
    fn access_token_grant(&self, token: &str) -> Option<String> {
        let key = jsonwebtoken::DecodingKey::from_jwk(self.inner.key.public_jwk()).ok()?;
        let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
        validation.validate_exp = false;
        validation.validate_aud = false;
        validation.required_spec_claims.clear();
        let data = jsonwebtoken::decode::<serde_json::Value>(token, &key, &validation).ok()?;
        data.claims.get("gid")?.as_str().map(str::to_owned)
    }

    async fn account_active(&self, account_id: &str) -> Result<bool, Response> {
        match self.inner.stores.accounts.account(account_id).await {
            Ok(account) => Ok(account.is_some_and(|a| !a.disabled)),
            Err(e) => Err(unavailable(e)),
        }
    }

    /// Revokes a grant (only `account_id`'s, when given): its refresh tokens stop working,
    /// and its access tokens at once on this instance (others learn it from the store within
    /// the sweep interval). Whether a live grant was revoked.
    pub(crate) async fn revoke(&self, grant_id: &str, account_id: Option<&str>) -> bool {
        match self.inner.stores.oauth.revoke_grant(grant_id, account_id, mirobody_core::clock::now_ms()).await {
            Ok(revoked) => {
                if revoked {
                    self.inner.revoked.revoke(grant_id);
                    tracing::info!(grant = %grant_id, "grant revoked");
                }
                revoked
            }
            Err(e) => {
                tracing::warn!(error = %e, grant = %grant_id, "cannot revoke a grant");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_takes_only_the_verifier_of_the_challenge() {
        // RFC 7636 appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(pkce_matches(verifier, challenge));
        assert!(!pkce_matches("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXl", challenge));
        assert!(!pkce_matches(challenge, challenge), "the challenge itself (plain) is no verifier");
        assert!(!pkce_matches("short", challenge));
    }
}
