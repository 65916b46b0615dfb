//! Dynamic client registration (RFC 7591), bounded per client address and in all.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use http::{Extensions, StatusCode};
use mirobody_ports::{ClientAddr, OAuthClient, RegistrationBound};
use serde::Deserialize;
use serde_json::json;

use super::clients::acceptable_redirect_uri;
use super::{json_response, preflight};
use crate::random;
use crate::server::OAuthServer;

/// The largest registration request read.
const MAX_BODY_BYTES: usize = 16 * 1024;
/// Redirect URIs one client may register.
pub(super) const MAX_REDIRECT_URIS: usize = 10;
/// The longest client name kept, in characters.
pub(super) const MAX_NAME_CHARS: usize = 200;

pub(super) fn routes(server: &OAuthServer) -> Router {
    Router::new()
        .route(&server.path("/register"), post(register).options(preflight))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(server.clone())
}

// The metadata a client sends; fields this server does not use are ignored (RFC 7591 §2).
#[derive(Deserialize)]
struct Request {
    #[serde(default)]
    redirect_uris: Vec<String>,
    client_name: Option<String>,
    client_uri: Option<String>,
    token_endpoint_auth_method: Option<String>,
    grant_types: Option<Vec<String>>,
    response_types: Option<Vec<String>>,
    scope: Option<String>,
}

fn invalid(error: &str, description: &str) -> Response {
    super::oauth_error(StatusCode::BAD_REQUEST, error, description)
}

async fn register(State(server): State<OAuthServer>, extensions: Extensions, body: Bytes) -> Response {
    let request: Request = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return invalid("invalid_client_metadata", &format!("the body is not client metadata: {e}")),
    };
    if request.redirect_uris.is_empty() || request.redirect_uris.len() > MAX_REDIRECT_URIS {
        return invalid("invalid_redirect_uri", &format!("give from 1 to {MAX_REDIRECT_URIS} redirect_uris"));
    }
    for uri in &request.redirect_uris {
        if let Err(why) = acceptable_redirect_uri(uri) {
            return invalid("invalid_redirect_uri", &why);
        }
    }
    let method = request.token_endpoint_auth_method.as_deref().unwrap_or("client_secret_basic");
    if !["none", "client_secret_basic", "client_secret_post"].contains(&method) {
        return invalid(
            "invalid_client_metadata",
            "token_endpoint_auth_method must be none, client_secret_basic or client_secret_post",
        );
    }
    let grant_types = request.grant_types.unwrap_or_else(|| vec!["authorization_code".into()]);
    if grant_types.iter().any(|g| g != "authorization_code" && g != "refresh_token") {
        return invalid("invalid_client_metadata", "grant_types may hold only authorization_code and refresh_token");
    }
    let response_types = request.response_types.unwrap_or_else(|| vec!["code".into()]);
    if response_types.iter().any(|r| r != "code") {
        return invalid("invalid_client_metadata", "response_types may hold only code");
    }
    if let Some(scope) = &request.scope
        && let Some(unknown) = scope.split_whitespace().find(|s| !server.inner.scopes.iter().any(|k| k == s))
    {
        return invalid("invalid_client_metadata", &format!("the scope '{unknown}' is not supported"));
    }
    let client_name = request.client_name.map(|name| name.trim().chars().take(MAX_NAME_CHARS).collect::<String>());
    let client_uri = match request.client_uri {
        Some(uri) if uri.len() > 2000 || !uri.starts_with("https://") => {
            return invalid("invalid_client_metadata", "client_uri must be an https URL of at most 2000 bytes");
        }
        other => other,
    };
    let (client_id, secret) = match (random::token(16), random::token(32)) {
        (Ok(id), Ok(secret)) => (id, (method != "none").then_some(secret)),
        _ => return invalid("server_error", "no random id could be made"),
    };
    let now = mirobody_core::clock::now_ms();
    let from = extensions.get::<ClientAddr>().map_or_else(|| "unknown".to_owned(), |addr| addr.0.to_string());
    let client = OAuthClient {
        client_id: client_id.clone(),
        client_name: client_name.clone().filter(|n| !n.is_empty()),
        client_uri: client_uri.clone(),
        redirect_uris: request.redirect_uris.clone(),
        secret_hash: secret.as_deref().map(mirobody_auth::hash_secret),
        registered_from: from,
        created_at_ms: now,
    };
    let settings = &server.inner.settings;
    let bound = RegistrationBound {
        since_ms: now - 3_600_000,
        max_from_one: settings.registrations_per_hour,
        max_total: settings.max_clients,
    };
    match server.inner.stores.oauth.register_client(&client, bound).await {
        Ok(true) => {}
        Ok(false) => {
            tracing::info!(from = %client.registered_from, "client registration refused: bound reached");
            let mut response = super::oauth_error(
                StatusCode::TOO_MANY_REQUESTS,
                "temporarily_unavailable",
                "too many clients registered; try again later",
            );
            response.headers_mut().insert(http::header::RETRY_AFTER, http::HeaderValue::from_static("3600"));
            return response;
        }
        Err(e) => {
            tracing::warn!(error = %e, "client registration failed");
            return super::oauth_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                "the store is unavailable",
            );
        }
    }
    tracing::info!(client_id = %client_id, name = client_name.as_deref().unwrap_or("-"), "client registered");
    let mut body = json!({
        "client_id": client_id,
        "client_id_issued_at": now / 1000,
        "redirect_uris": request.redirect_uris,
        "token_endpoint_auth_method": method,
        "grant_types": grant_types,
        "response_types": response_types,
    });
    if let Some(name) = client.client_name {
        body["client_name"] = json!(name);
    }
    if let Some(uri) = client_uri {
        body["client_uri"] = json!(uri);
    }
    if let Some(scope) = request.scope {
        body["scope"] = json!(scope);
    }
    if let Some(secret) = secret {
        body["client_secret"] = json!(secret);
        body["client_secret_expires_at"] = json!(0);
    }
    json_response(StatusCode::CREATED, &body)
}
