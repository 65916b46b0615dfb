//! The HTTP routes this crate serves: the protected resource metadata and `/personal/mcp`.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use serde_json::{Value, json};

use crate::authenticator::Authenticator;
use crate::error::AuthError;
use crate::secret::{SecretAdminError, create_secret, revoke_secret, rotate_secret};

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
/// Every call needs a valid bearer token (a personal secret is not enough: a leaked URL must
/// not be able to replace itself); without one the answer is 401 with a challenge.
///
/// - `POST`: when the caller has no personal MCP URL, creates one and answers
///   `200 {"code":0,"msg":"ok","data":{"url":"<base><prefix>/mcp/<secret>"}}`. When they have
///   one, answers `409`: only its hash is stored, so it cannot be shown again.
/// - `POST ?rotate=true`: replaces the URL (or creates it) and answers `200` with the new one;
///   the old URL stops working at once.
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
    let rotate = match query_flag(&uri, "rotate") {
        Ok(rotate) => rotate,
        Err(message) => return envelope(StatusCode::BAD_REQUEST, message, None),
    };
    let user = match auth.bearer_user(&headers).await {
        Ok(user) => user,
        Err(e) => return refusal(&auth, &e),
    };
    let Some(store) = auth.secret_store() else { return disabled() };
    let user_id = user.user_id().unwrap_or_default();
    let result = if rotate {
        rotate_secret(store.as_ref(), auth.endpoint(), user_id, user.agent()).await
    } else {
        create_secret(store.as_ref(), auth.endpoint(), user_id, user.agent()).await
    };
    match result {
        Ok(url) => {
            tracing::info!(user = user_id, rotated = rotate, "personal MCP URL issued");
            envelope(StatusCode::OK, "ok".into(), Some(json!({"url": url.expose()})))
        }
        Err(e) => admin_error(e),
    }
}

async fn revoke(State(auth): State<Authenticator>, headers: HeaderMap) -> Response {
    let user = match auth.bearer_user(&headers).await {
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
