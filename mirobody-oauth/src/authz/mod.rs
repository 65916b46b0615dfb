//! The OAuth 2.1 authorization server: metadata (RFC 8414), registration (RFC 7591) and
//! client ID metadata documents, the authorization endpoint with its consent page, the token
//! endpoint, revocation (RFC 7009) and the JWKS.

mod authorize;
pub(crate) mod cimd;
pub(crate) mod clients;
pub(crate) mod keys;
mod register;
mod token;

pub use authorize::DEFAULT_SCOPE;

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use axum::routing::get;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use crate::server::OAuthServer;

/// The RFC 8414 well-known path.
const WELL_KNOWN_AS: &str = "/.well-known/oauth-authorization-server";

/// The JWKS path, under the prefix.
pub(crate) const JWKS_PATH: &str = "/oauth/jwks.json";

/// The authorization server's routes.
pub(crate) fn routes(server: &OAuthServer) -> Router {
    let metadata = document(&server.metadata());
    let jwks = document(&json!({"keys": server.public_jwks()}));
    let mut router = Router::new();
    for path in metadata_paths(server) {
        let metadata = metadata.clone();
        router = router.route(&path, get(move || async move { public_json(&metadata) }).options(preflight));
    }
    router
        .route(&server.path(JWKS_PATH), get(move || async move { public_json(&jwks) }).options(preflight))
        .merge(authorize::routes(server))
        .merge(register::routes(server))
        .merge(token::routes(server))
}

/// The paths the auth layer must pass untouched: where `Authorization: Basic` is a
/// client's credential.
pub(crate) fn open_paths(server: &OAuthServer) -> Vec<String> {
    vec![server.path("/token"), server.path("/revoke")]
}

/// Where the metadata is served: the RFC 8414 form (the well-known segment before the
/// issuer's path) and, under a prefix, the form clients that append it use.
fn metadata_paths(server: &OAuthServer) -> Vec<String> {
    let prefix = server.inner.endpoint.uri_prefix();
    let mut paths = vec![format!("{WELL_KNOWN_AS}{prefix}")];
    if !prefix.is_empty() {
        paths.push(format!("{prefix}{WELL_KNOWN_AS}"));
    }
    paths
}

impl OAuthServer {
    /// The authorization server metadata (RFC 8414): exactly what this server supports.
    pub fn metadata(&self) -> Value {
        json!({
            "issuer": self.inner.issuer,
            "authorization_endpoint": self.url("/authorize"),
            "token_endpoint": self.url("/token"),
            "registration_endpoint": self.url("/register"),
            "revocation_endpoint": self.url("/revoke"),
            "jwks_uri": self.url(JWKS_PATH),
            "scopes_supported": self.inner.scopes,
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            "revocation_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": true,
            "client_id_metadata_document_supported": true,
        })
    }
}

fn document(value: &Value) -> std::sync::Arc<str> {
    value.to_string().into()
}

// A public JSON document: any origin may read it (browser-based clients discover the server).
fn public_json(body: &str) -> Response {
    let mut response = Response::new(Body::from(body.to_owned()));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600"));
    response
}

/// The answer to a CORS preflight for the endpoints browser-based clients call.
pub(crate) async fn preflight() -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::NO_CONTENT;
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, POST, OPTIONS"));
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("authorization, content-type, mcp-protocol-version"),
    );
    headers.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("86400"));
    response
}

/// An OAuth error answer (RFC 6749 §5.2): `{"error", "error_description"}`, never cached.
pub(crate) fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    let body = json!({"error": error, "error_description": description});
    let mut response = json_response(status, &body);
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"mirobody\""));
    }
    response
}

/// A JSON answer from the token, registration or revocation endpoint: never cached, readable
/// from any origin (browser-based clients call them; they carry no cookie).
pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    response
}
