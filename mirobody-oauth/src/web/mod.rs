//! The pages people use in a browser: sign-in, sign-up, and their access page.

pub(crate) mod password;
pub(crate) mod session;
pub(crate) mod throttle;

use axum::Router;

use crate::server::OAuthServer;

/// The pages' routes.
pub(crate) fn routes(_server: &OAuthServer) -> Router {
    Router::new()
}
