//! The OAuth 2.1 authorization server: metadata, registration, authorization, tokens.

pub(crate) mod keys;

use axum::Router;

use crate::server::OAuthServer;

/// The authorization server's routes.
pub(crate) fn routes(_server: &OAuthServer) -> Router {
    Router::new()
}

/// The paths the auth layer must pass untouched.
pub(crate) fn open_paths(server: &OAuthServer) -> Vec<String> {
    vec![server.path("/token"), server.path("/revoke")]
}
