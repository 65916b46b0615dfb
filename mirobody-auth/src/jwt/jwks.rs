//! Keys from a JWKS document (a file, or a URL fetched and refreshed): bounded in size, time
//! and redirects, over https (plain http only from a loopback host).

use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;
use serde_json::Value;

use super::{VerifyKey, public_components, read_file};
use crate::config::AuthConfig;
use crate::error::AuthConfigError;

/// The largest JWKS document read, in bytes: a fetch stops reading at this size, whatever the
/// server announces or keeps sending.
const MAX_JWKS_BYTES: usize = 1024 * 1024;

/// The most redirects a JWKS fetch follows.
const MAX_JWKS_REDIRECTS: usize = 3;

/// A JWKS source, its keys as last fetched, and when to fetch again.
pub(super) struct JwksCache {
    pub(super) source: String,
    pub(super) client: Option<reqwest::Client>,
    // The whole fetch, connecting, waiting and reading the body included.
    timeout: Duration,
    keys: RwLock<Arc<Vec<VerifyKey>>>,
    loaded_at: RwLock<Option<Instant>>,
    // Held while refreshing; the time of the last refresh attempt (not of the first load).
    refresh: tokio::sync::Mutex<Option<Instant>>,
    min_interval: Duration,
    max_age: Duration,
}

// Whether a JWKS may be fetched from `url`: over https, or over plain http from a loopback host
// only (a local issuer or a test), since anyone on the path of a plain http fetch could hand
// the server keys of their own.
fn jwks_url_allowed(url: &reqwest::Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => is_loopback(url),
        _ => false,
    }
}

fn is_loopback(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else { return false };
    // An IPv6 host comes bracketed; the parser has already normalised the forms of an address.
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

// Redirects are followed (an issuer may move its keys), at most `MAX_JWKS_REDIRECTS`, but only
// to a URL the configuration itself would accept, and never from https down to http: a
// redirect to plain http would give the keys to whoever is on the path, and one from a remote
// https server to a loopback http URL would turn the fetch against this host's own services.
// So plain http is followed only from a loopback http URL to another.
fn jwks_redirect_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        if attempt.previous().len() > MAX_JWKS_REDIRECTS {
            return attempt.error("too many redirects");
        }
        let to = attempt.url();
        let from_plain_http = attempt.previous().iter().all(|url| url.scheme() == "http");
        let allowed = match to.scheme() {
            "https" => true,
            "http" => from_plain_http && is_loopback(to),
            _ => false,
        };
        if allowed {
            attempt.follow()
        } else {
            let refused = format!("a redirect to {}://{} is not followed", to.scheme(), to.host_str().unwrap_or(""));
            attempt.error(refused)
        }
    })
}

impl JwksCache {
    pub(super) fn new(source: &str, config: &AuthConfig) -> Result<Self, AuthConfigError> {
        let lower = source.get(..8).unwrap_or(source).to_ascii_lowercase();
        let is_url = lower.starts_with("https://") || lower.starts_with("http://");
        if config.jwks_timeout < Duration::from_secs(1) {
            return Err(AuthConfigError::key("jwks_timeout", "must be at least 1s"));
        }
        let timeout = config.jwks_timeout;
        let client = if is_url {
            let url = reqwest::Url::parse(source)
                .map_err(|e| AuthConfigError::key("jwks", format!("not a valid URL ({e})")))?;
            if !jwks_url_allowed(&url) {
                return Err(AuthConfigError::key(
                    "jwks",
                    "a JWKS URL must use https; plain http is allowed only for a loopback host \
                     (localhost, 127.0.0.0/8, [::1])",
                ));
            }
            let client = reqwest::Client::builder()
                .connect_timeout(timeout)
                .timeout(timeout)
                .redirect(jwks_redirect_policy())
                .build()
                .map_err(|e| AuthConfigError::key("jwks", format!("cannot build the HTTP client: {e}")))?;
            Some(client)
        } else {
            None
        };
        let cache = JwksCache {
            source: source.to_owned(),
            client,
            timeout,
            keys: RwLock::new(Arc::new(Vec::new())),
            loaded_at: RwLock::new(None),
            refresh: tokio::sync::Mutex::new(None),
            min_interval: config.jwks_refresh,
            max_age: config.jwks_max_age.max(config.jwks_refresh),
        };
        if !is_url {
            // A file is read now, and a bad one stops the server.
            let bytes = read_file(Path::new(source), "jwks")?;
            let keys = parse_jwks(&bytes).map_err(|e| AuthConfigError::key("jwks", e))?;
            if keys.is_empty() {
                return Err(AuthConfigError::key("jwks", format!("{source} has no RS256 or ES256 signing key")));
            }
            cache.store(keys);
        }
        Ok(cache)
    }

    pub(super) fn snapshot(&self) -> Arc<Vec<VerifyKey>> {
        Arc::clone(&self.keys.read().unwrap_or_else(|p| p.into_inner()))
    }

    pub(super) fn store(&self, keys: Vec<VerifyKey>) {
        *self.keys.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(keys);
        *self.loaded_at.write().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
    }

    pub(super) fn is_stale(&self) -> bool {
        match *self.loaded_at.read().unwrap_or_else(|p| p.into_inner()) {
            None => true,
            Some(at) => at.elapsed() >= self.max_age,
        }
    }

    // At most one refresh per `min_interval`, whoever asks. With `wait`, a caller that arrives
    // during a refresh waits for it and then uses its keys; without, it goes on with the keys
    // it has.
    pub(super) async fn refresh(&self, wait: bool) {
        let mut last = if wait {
            self.refresh.lock().await
        } else {
            match self.refresh.try_lock() {
                Ok(guard) => guard,
                Err(_) => return,
            }
        };
        if last.is_some_and(|at| at.elapsed() < self.min_interval) {
            return;
        }
        *last = Some(Instant::now());
        match self.fetch().await {
            Ok(keys) if !keys.is_empty() => {
                tracing::debug!(source = %self.source, keys = keys.len(), "JWKS refreshed");
                self.store(keys);
            }
            Ok(_) => {
                tracing::warn!(source = %self.source, "JWKS has no RS256 or ES256 signing key; keeping the old keys")
            }
            Err(e) => tracing::warn!(source = %self.source, error = %e, "JWKS refresh failed; keeping the old keys"),
        }
    }

    pub(super) async fn fetch(&self) -> Result<Vec<VerifyKey>, String> {
        let bytes = match &self.client {
            None => tokio::fs::read(&self.source).await.map_err(|e| format!("cannot read {}: {e}", self.source))?,
            // The client's own timeout covers the body too; this one bounds the whole fetch
            // whatever the client does.
            Some(client) => match tokio::time::timeout(self.timeout, fetch_capped(client, &self.source)).await {
                Ok(result) => result?,
                Err(_) => return Err(format!("fetch timed out after {} s", self.timeout.as_secs())),
            },
        };
        parse_jwks(&bytes)
    }
}

// GETs `url` and reads its body chunk by chunk, giving up as soon as it passes `MAX_JWKS_BYTES`
// (an announced length over the cap is refused before any of the body is read).
async fn fetch_capped(client: &reqwest::Client, url: &str) -> Result<Vec<u8>, String> {
    let failed = |e: reqwest::Error| format!("fetch failed: {}", error_chain(&e));
    let mut response = client.get(url).send().await.map_err(failed)?;
    if !response.status().is_success() {
        return Err(format!("fetch answered {}", response.status()));
    }
    let too_large = || format!("the document is larger than {MAX_JWKS_BYTES} bytes");
    if response.content_length().is_some_and(|n| n > MAX_JWKS_BYTES as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(failed)? {
        if body.len() + chunk.len() > MAX_JWKS_BYTES {
            // Dropping the response closes the connection: nothing more is read.
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

// An error and its causes, `: `-separated (reqwest's own message leaves out the cause, such as
// which redirect was refused).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

// The RS256 and ES256 signing keys of a JWKS document. Keys for encryption, of other types or
// algorithms, and symmetric keys (which have no place in a published document) are skipped.

fn parse_jwks(bytes: &[u8]) -> Result<Vec<VerifyKey>, String> {
    #[derive(Deserialize)]
    struct Document {
        keys: Vec<Value>,
    }
    let document: Document = serde_json::from_slice(bytes).map_err(|e| format!("not a JWKS document: {e}"))?;
    let mut keys = Vec::new();
    for raw in document.keys {
        let Ok(jwk) = serde_json::from_value::<Jwk>(raw) else { continue };
        if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
            continue;
        }
        let alg = match (&jwk.algorithm, jwk.common.key_algorithm.map(|a| a.to_string())) {
            (AlgorithmParameters::RSA(_), None) => Algorithm::RS256,
            (AlgorithmParameters::RSA(_), Some(a)) if a == "RS256" => Algorithm::RS256,
            (AlgorithmParameters::EllipticCurve(ec), None) if ec.curve == EllipticCurve::P256 => Algorithm::ES256,
            (AlgorithmParameters::EllipticCurve(ec), Some(a)) if a == "ES256" && ec.curve == EllipticCurve::P256 => {
                Algorithm::ES256
            }
            _ => continue,
        };
        let Ok(key) = DecodingKey::from_jwk(&jwk) else { continue };
        if public_components(&key, alg).is_none() {
            continue;
        }
        keys.push(VerifyKey { alg, kid: jwk.common.key_id.clone(), key, origin: "jwks", own_rules: None });
    }
    Ok(keys)
}
