//! The `metrics` settings: where Prometheus reads the server's metrics, and the token it
//! shows.

use std::net::SocketAddr;

use mirobody_auth::{ExposeSecret, SecretString};
use serde::Deserialize;

/// The shortest `metrics.token` accepted: a guessable token would show anyone the server's
/// traffic.
pub const MIN_METRICS_TOKEN_CHARS: usize = 16;

/// The `metrics` section. Off unless `listen` or `token` is set: then the server records
/// Prometheus metrics and serves them at `GET /metrics`, on a listener of their own at
/// `listen`, and on the main listener too when `token` is set. With a token, every scrape must
/// carry it (`Authorization: Bearer <token>`), on either listener; without the token, or with
/// a wrong one, the answer is 401 and no metric.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct MetricsSettings {
    /// A separate address to serve `/metrics` on (such as `127.0.0.1:9090`, reachable by the
    /// scraper only).
    pub listen: Option<SocketAddr>,
    /// The bearer token a scrape must carry; with it, `/metrics` is served on the main
    /// listener too.
    pub token: Option<SecretString>,
}

impl MetricsSettings {
    /// Whether metrics are recorded and served.
    pub fn enabled(&self) -> bool {
        self.listen.is_some() || self.token.is_some()
    }

    /// Why the settings cannot be used, if they cannot.
    pub(crate) fn check(&self) -> Result<(), String> {
        match &self.token {
            Some(token) if token.expose_secret().chars().count() < MIN_METRICS_TOKEN_CHARS => Err(format!(
                "metrics.token must be at least {MIN_METRICS_TOKEN_CHARS} characters (make one with `openssl rand -hex 32`)"
            )),
            _ => Ok(()),
        }
    }
}
