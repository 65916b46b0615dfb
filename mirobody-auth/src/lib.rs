//! Who is calling a mirobody server: callers from bearer JWTs and personal MCP secrets, as a
//! tower layer, with the MCP authorization rules (RFC 9728 protected resource metadata, 401
//! challenges, per-agent tool lists).
//!
//! - [`JwtVerifier`]: HS256, RS256 and ES256 tokens against configured keys, verify-only
//!   previous keys and a JWKS document; the algorithm is the key's, never the header's.
//! - Personal MCP secrets: 256 random bits, stored as SHA-256 hashes through
//!   [`mirobody_ports::SecretStore`], accepted in the path (`/mcp/<secret>/mcp`, or the older
//!   `/mcp/<secret>`) or the `X-MCP-Secret` header, never in a query string, optionally expiring; [`create_secret`],
//!   [`rotate_secret`] and [`revoke_secret`] for the CLI, [`personal_router`] for
//!   `POST`/`DELETE /personal/mcp` (which needs a bearer token with the
//!   [`PERSONAL_URL_SCOPE`] scope, or the configured `personal_url_scope`).
//! - [`AuthLayer`] / [`Authenticator::wrap`]: puts the caller in the request extensions as a
//!   [`UserInfo`](mirobody_core::UserInfo), or answers 401/400 itself
//!   ([`AuthService::unmarked_anonymous_at`] leaves anonymous requests to one path unmarked).
//! - [`protected_resource_metadata`]: the `/.well-known/oauth-protected-resource` routes.
//! - [`visibility`]: per-agent allow and deny lists as a tool visibility predicate.
//! - [`Permissions`]: one permission model for tools and routes (per-agent lists and the
//!   scopes each permission needs); [`Authenticator::authorize`] checks a request against it.
//!
//! Tokens and secrets never reach a log line, an error message or a `Debug` output.
//!
//! ```
//! use axum::routing::post;
//! use axum::{Extension, Router};
//! use mirobody_auth::{AuthConfig, Authenticator, McpEndpoint, protected_resource_metadata};
//! use mirobody_core::UserInfo;
//! use tower::ServiceExt;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! const KEY: &str = "an example HS256 key, 32 bytes or more";
//! let config: AuthConfig = serde_json::from_value(serde_json::json!({
//!     "hs256_secret": KEY,
//!     "authorization_servers": ["https://auth.example.com"],
//! }))
//! .unwrap();
//! let auth = Authenticator::new(&config, McpEndpoint::new("https://mcp.example.com", ""), None).await.unwrap();
//!
//! // The routes (a stand-in for the MCP endpoint, and the metadata), then the layer around
//! // them all.
//! let whoami = |Extension(user): Extension<UserInfo>| async move { user.user_id().unwrap_or("anonymous").to_owned() };
//! let routes = Router::new().route("/mcp", post(whoami)).merge(protected_resource_metadata(&auth));
//! let app = Router::new().fallback_service(auth.wrap(routes));
//!
//! // A token signed with the server's key, for the server's canonical MCP URL.
//! let claims = serde_json::json!({
//!     "sub": "42",
//!     "aud": "https://mcp.example.com/mcp",
//!     "exp": jsonwebtoken::get_current_timestamp() + 600,
//! });
//! let key = jsonwebtoken::EncodingKey::from_secret(KEY.as_bytes()).unwrap();
//! let token = jsonwebtoken::encode(&jsonwebtoken::Header::default(), &claims, &key).unwrap();
//!
//! let request = |auth: &str| {
//!     http::Request::post("/mcp").header("authorization", auth).body(axum::body::Body::empty()).unwrap()
//! };
//! let response = app.clone().oneshot(request(&format!("Bearer {token}"))).await.unwrap();
//! assert_eq!(response.status(), 200);
//! let response = app.oneshot(request("Bearer not.a.token")).await.unwrap();
//! assert_eq!(response.status(), 401);
//! assert!(response.headers()["www-authenticate"].to_str().unwrap().contains(r#"error="invalid_token""#));
//! # }
//! ```

mod authenticator;
mod config;
mod error;
mod failures;
mod jwt;
mod jwt_crypto;
mod layer;
mod permission;
mod revoked;
mod routes;
mod secret;
mod token_cache;
mod visibility;

pub use authenticator::{AuthMethod, Authenticator, QUERY_CREDENTIAL_PARAMS};
pub use config::{
    AuthConfig, ExposeSecret, KeyAlgorithm, McpEndpoint, PemKeyConfig, PreviousKey, SecretString, ToolList,
    ToolListKind, flat_tool_list_key,
};
pub use error::{AuthConfigError, AuthError};
pub use failures::FailureLimiter;
pub use jwt::{ACCESS_TOKEN_TYPES, JwtVerifier, MAX_TOKEN_BYTES, TokenError};
pub use jwt_crypto::install_jwt_crypto;
pub use layer::{AuthLayer, AuthService};
pub use permission::{
    CARE_CIRCLE, DELETE_HEALTH_DATA, EXPORT_HEALTH_DATA, IMPORT_HEALTH_DATA, PermissionDenied, Permissions,
    ROUTE_PERMISSIONS, UPLOAD_FILE, UPLOAD_LINK, implied_by,
};
pub use revoked::RevokedGrants;
pub use routes::{personal_router, protected_resource_metadata};
pub use secret::{
    MAX_SECRET_LIFETIME, MIN_SECRET_LIFETIME, PERSONAL_URL_SCOPE, PersonalSecret, PersonalUrl, RngError, SECRET_BYTES,
    SECRET_HEADER, SECRET_LEN, SecretAdminError, create_secret, generate_secret, hash_secret, looks_like_secret,
    revoke_secret, rotate_secret, secret_expiry, secret_matches,
};
pub use visibility::{ToolFilter, ToolVisibilityFn, visibility};
