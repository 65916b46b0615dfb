//! The HTTP routes this crate serves: the protected resource metadata and `/personal/mcp`.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use serde_json::{Value, json};

use crate::authenticator::Authenticator;
use crate::error::AuthError;
use crate::secret::{
    MAX_SECRET_LIFETIME, MIN_SECRET_LIFETIME, SecretAdminError, create_secret, revoke_secret, rotate_secret,
};

/// An axum router serving the RFC 9728 protected resource metadata at
/// `/.well-known/oauth-protected-resource`, at the path-inserted form for the MCP endpoint
/// (`/.well-known/oauth-protected-resource<uri_prefix>/mcp`), and under a prefix at
/// `<uri_prefix>/.well-known/oauth-protected-resource[/mcp]`. Merge it into the server's
/// router. The document is public (`Access-Control-Allow-Origin: *`) and the auth layer lets
/// these paths through without looking at credentials.
pub fn protected_resource_metadata(auth: &Authenticator) -> Router {
    let body: Arc<str> = auth.protected_resource_metadata().to_string().into();
    let mut router = Router::new();
    for path in auth.metadata_paths() {
        let body = Arc::clone(&body);
        router = router.route(
            path,
            get(move || {
                let body = Arc::clone(&body);
                async move {
                    let mut response = Response::new(Body::from(body.to_string()));
                    let headers = response.headers_mut();
                    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
                    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600"));
                    response
                }
            }),
        );
    }
    router
}

/// An axum router serving `<uri_prefix>/personal/mcp`. Merge it into the server's router.
///
/// Every call needs a valid bearer token (a personal secret is not enough, whatever scopes
/// `secret_scopes` gives it: a leaked URL must not be able to replace itself); without one the
/// answer is 401 with a challenge. The token must carry the personal URL scope
/// ([`Authenticator::personal_url_scope`], `mcp:personal_url` by default), since a personal
/// URL is a credential that outlives the token; without it the answer is 403 with
/// `WWW-Authenticate: Bearer …, scope="mcp:personal_url", error="insufficient_scope"`, and
/// nothing is stored.
///
/// - `POST`: when the caller has no live personal MCP URL, creates one and answers
///   `200 {"code":0,"msg":"ok","data":{"url":"<base><prefix>/mcp/<secret>/mcp"}}`. When they have
///   one, answers `409`: only its hash is stored, so it cannot be shown again.
/// - `POST ?rotate=true`: replaces the URL (or creates it) and answers `200` with the new one;
///   the old URL stops working at once.
/// - `POST ?expires_in=<seconds>` (with or without `rotate`): the new URL stops working after
///   that many seconds, from 60 to 31536000 (365 days); anything else is a `400`. Without it,
///   the URL lasts until rotated or revoked.
/// - `DELETE`: revokes it: `200 {"code":0,"msg":"ok","data":{"revoked":true|false}}`.
///
/// The new secret is bound to the token's agent, if it names one. Errors use the same
/// envelope with `code` set to the HTTP status and `data: null`; without a secret store every
/// call answers `503`. Replies carry `Cache-Control: no-store`.
pub fn personal_router(auth: &Authenticator) -> Router {
    Router::new()
        .route(&auth.endpoint().personal_path(), axum::routing::post(create).delete(revoke))
        .with_state(auth.clone())
}

async fn create(State(auth): State<Authenticator>, headers: HeaderMap, uri: Uri) -> Response {
    let (rotate, expires_in) = match query_flag(&uri, "rotate").and_then(|r| Ok((r, query_lifetime(&uri)?))) {
        Ok(query) => query,
        Err(message) => return envelope(StatusCode::BAD_REQUEST, message, None),
    };
    let user = match scoped_user(&auth, &headers).await {
        Ok(user) => user,
        Err(e) => return refusal(&auth, &e),
    };
    let Some(store) = auth.secret_store() else { return disabled() };
    let user_id = user.user_id().unwrap_or_default();
    let result = if rotate {
        rotate_secret(store.as_ref(), auth.endpoint(), user_id, user.agent(), expires_in).await
    } else {
        create_secret(store.as_ref(), auth.endpoint(), user_id, user.agent(), expires_in).await
    };
    match result {
        Ok(url) => {
            let expires_in = expires_in.map(|d| d.as_secs());
            tracing::info!(user = user_id, rotated = rotate, expires_in, "personal MCP URL issued");
            envelope(StatusCode::OK, "ok".into(), Some(json!({"url": url.expose()})))
        }
        Err(e) => admin_error(e),
    }
}

async fn revoke(State(auth): State<Authenticator>, headers: HeaderMap) -> Response {
    let user = match scoped_user(&auth, &headers).await {
        Ok(user) => user,
        Err(e) => return refusal(&auth, &e),
    };
    let Some(store) = auth.secret_store() else { return disabled() };
    let user_id = user.user_id().unwrap_or_default();
    match revoke_secret(store.as_ref(), user_id).await {
        Ok(revoked) => {
            tracing::info!(user = user_id, revoked, "personal MCP URL revoked");
            envelope(StatusCode::OK, "ok".into(), Some(json!({"revoked": revoked})))
        }
        Err(e) => admin_error(e),
    }
}

// The caller, from a bearer token (never a personal secret) that carries the personal URL scope.
async fn scoped_user(auth: &Authenticator, headers: &HeaderMap) -> Result<mirobody_core::UserInfo, AuthError> {
    let user = auth.bearer_user(headers).await?;
    if !user.has_scope(auth.personal_url_scope()) {
        tracing::debug!(user = user.user_id().unwrap_or("-"), "personal MCP URL refused: scope missing");
        return Err(AuthError::InsufficientScope(auth.personal_url_scope().to_owned()));
    }
    Ok(user)
}

// `expires_in=<seconds>`, within the allowed lifetimes; absent is no expiry.
fn query_lifetime(uri: &Uri) -> Result<Option<Duration>, String> {
    const NAME: &str = "expires_in";
    let Some(query) = uri.query() else { return Ok(None) };
    let mut lifetime = None;
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        if key == NAME {
            let (min, max) = (MIN_SECRET_LIFETIME.as_secs(), MAX_SECRET_LIFETIME.as_secs());
            let secs =
                value.parse::<u64>().ok().filter(|s| (min..=max).contains(s)).ok_or_else(|| {
                    format!("'{NAME}' must be a whole number of seconds from {min} to {max} (365 days)")
                })?;
            lifetime = Some(Duration::from_secs(secs));
        }
    }
    Ok(lifetime)
}

fn query_flag(uri: &Uri, name: &str) -> Result<bool, String> {
    let Some(query) = uri.query() else { return Ok(false) };
    let mut flag = false;
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        if key == name {
            flag = match value.as_ref() {
                "true" | "1" | "" => true,
                "false" | "0" => false,
                _ => return Err(format!("'{name}' must be true or false")),
            };
        }
    }
    Ok(flag)
}

fn admin_error(error: SecretAdminError) -> Response {
    match error {
        SecretAdminError::Exists(_) => envelope(StatusCode::CONFLICT, error.to_string(), None),
        SecretAdminError::NoUser => envelope(StatusCode::UNAUTHORIZED, error.to_string(), None),
        SecretAdminError::Lifetime(_) => envelope(StatusCode::BAD_REQUEST, error.to_string(), None),
        SecretAdminError::Store(e) => {
            tracing::warn!(error = %e, "secret store failed");
            envelope(StatusCode::SERVICE_UNAVAILABLE, "The secret store is unavailable; try again later.".into(), None)
        }
        other => {
            tracing::error!(error = %other, "cannot make a personal secret");
            envelope(StatusCode::INTERNAL_SERVER_ERROR, "Cannot make a personal secret now.".into(), None)
        }
    }
}

fn disabled() -> Response {
    envelope(
        StatusCode::SERVICE_UNAVAILABLE,
        "Personal MCP URLs are not enabled on this server (no secret store is configured).".into(),
        None,
    )
}

fn refusal(auth: &Authenticator, error: &AuthError) -> Response {
    let mut response = envelope(error.status(), error.to_string(), None);
    let challenge: Response<Body> = auth.reject(error);
    if let Some(value) = challenge.headers().get(header::WWW_AUTHENTICATE) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value.clone());
    }
    response
}

fn envelope(status: StatusCode, msg: String, data: Option<Value>) -> Response {
    let code = if status.is_success() { 0 } else { i64::from(status.as_u16()) };
    let body = json!({"code": code, "msg": msg, "data": data});
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
