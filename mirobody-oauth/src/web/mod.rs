//! The pages people use in a browser: sign-in, sign-up, and their access page.

mod account;
mod data_pages;
pub(crate) mod forms;
mod invited;
mod passkey_pages;
pub(crate) mod passkeys;
pub(crate) mod password;
pub(crate) mod session;
pub(crate) mod signin;
mod signup;
pub(crate) mod throttle;

use axum::Router;
use axum::extract::DefaultBodyLimit;

use crate::server::OAuthServer;

/// The pages' routes: `/signin`, `/signout`, `/signup`, the sign-up links' `/signup/{token}`
/// and `/account` with its forms, and the passkey routes when passkeys are on; every body
/// bounded.
pub(crate) fn routes(server: &OAuthServer) -> Router {
    Router::new()
        .merge(signin::routes(server))
        .merge(signup::routes(server))
        .merge(invited::routes(server))
        .merge(account::routes(server))
        .merge(data_pages::routes(server))
        .merge(passkeys::routes(server))
        .merge(passkey_pages::routes(server))
        .layer(DefaultBodyLimit::max(forms::MAX_FORM_BYTES))
}
