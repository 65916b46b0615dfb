//! Talking to the providers: one HTTP client with bounded time and size, and each provider's
//! discovery document (with its keys) kept for a while.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use openidconnect::core::{CoreClient, CoreProviderMetadata};
use openidconnect::{
    ClientId, ClientSecret, EndpointMaybeSet, EndpointNotSet, EndpointSet, HttpRequest, HttpResponse, IssuerUrl,
    RedirectUrl,
};

use super::settings::ProviderSettings;
use crate::error_chain::chain;
use mirobody_auth::ExposeSecret;

/// The whole of one request to a provider, connection to last byte, at most.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer read from a provider (a discovery document, its keys, a token).
pub(crate) const MAX_RESPONSE_BYTES: usize = 256 * 1024;
/// How long a discovery document and its keys are used before they are fetched again.
const METADATA_TTL: Duration = Duration::from_secs(3600);

/// The client of one provider, its endpoints as discovery gave them.
pub(crate) type Client =
    CoreClient<EndpointSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointMaybeSet, EndpointMaybeSet>;

/// Why a provider could not be asked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    #[error("the provider did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the provider's answer is larger than {MAX_RESPONSE_BYTES} bytes")]
    TooLarge,
    #[error("the provider could not be reached: {0}")]
    Http(String),
}

/// One configured provider and its discovery document, if fetched lately.
pub(crate) struct Provider {
    pub(crate) settings: ProviderSettings,
    /// Held across the fetch, so concurrent sign-ins wait for one fetch rather than each make one.
    metadata: tokio::sync::Mutex<Option<(Instant, Arc<CoreProviderMetadata>)>>,
}

/// Sign-ins one client address may start at once; then one more every [`START_INTERVAL`].
const START_BURST: u32 = 10;
const START_INTERVAL: Duration = Duration::from_secs(6);
/// Addresses whose starts are tracked before the idle ones are dropped.
const MAX_ADDRESSES_KEPT: usize = 4096;

/// The providers, the HTTP client they are reached with, and the bound on sign-ins started
/// per address (each stores a row until it expires).
pub(crate) struct Upstream {
    pub(crate) providers: Vec<Provider>,
    pub(crate) http: reqwest::Client,
    starts: DefaultKeyedRateLimiter<IpAddr>,
}

impl Upstream {
    /// The providers whose settings are valid (an invalid one is logged and left out: the
    /// server's configuration check refuses it before this).
    pub(crate) fn new(settings: &[ProviderSettings]) -> Self {
        let providers = settings
            .iter()
            .filter(|provider| match provider.validate() {
                Ok(()) => true,
                Err(e) => {
                    tracing::error!(error = %e, "an OpenID provider is left out");
                    false
                }
            })
            .map(|settings| Provider { settings: settings.clone(), metadata: tokio::sync::Mutex::new(None) })
            .collect();
        // No redirects: discovery, keys and tokens are answered where the documents say.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(FETCH_TIMEOUT)
            .timeout(FETCH_TIMEOUT)
            .build()
            .unwrap_or_default();
        let quota = Quota::with_period(START_INTERVAL)
            .unwrap_or_else(|| Quota::per_minute(NonZeroU32::MIN))
            .allow_burst(NonZeroU32::new(START_BURST).unwrap_or(NonZeroU32::MIN));
        Upstream { providers, http, starts: RateLimiter::dashmap(quota) }
    }

    /// Whether `address` may start one more sign-in now; else how long until it may.
    pub(crate) fn may_start(&self, address: Option<IpAddr>) -> Result<(), Duration> {
        let Some(address) = address else { return Ok(()) };
        if self.starts.len() > MAX_ADDRESSES_KEPT {
            self.starts.retain_recent();
        }
        self.starts.check_key(&address).map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }

    /// The provider with this id.
    pub(crate) fn provider(&self, id: &str) -> Option<&Provider> {
        self.providers.iter().find(|provider| provider.settings.id == id)
    }

    /// The provider's discovery document (and keys), fetched when not kept or older than an
    /// hour, or when `fresh` (a token signed by a key it did not have).
    pub(crate) async fn metadata(&self, provider: &Provider, fresh: bool) -> Result<Arc<CoreProviderMetadata>, String> {
        let mut kept = provider.metadata.lock().await;
        if let Some((at, metadata)) = kept.as_ref()
            && !fresh
            && at.elapsed() < METADATA_TTL
        {
            return Ok(metadata.clone());
        }
        let issuer = IssuerUrl::new(provider.settings.issuer.clone()).map_err(|e| e.to_string())?;
        let http = self.http.clone();
        let send = move |request| send(http.clone(), request);
        // The document's issuer must be the one configured (discovery checks it), and the
        // keys are fetched from its jwks_uri.
        let metadata = CoreProviderMetadata::discover_async(issuer, &send).await.map_err(|e| chain(&e))?;
        let metadata = Arc::new(metadata);
        *kept = Some((Instant::now(), metadata.clone()));
        Ok(metadata)
    }

    /// The provider's client, returning to `redirect_uri`.
    pub(crate) fn client(
        &self,
        provider: &Provider,
        metadata: &CoreProviderMetadata,
        redirect_uri: &str,
    ) -> Result<Client, String> {
        let secret = provider.settings.client_secret()?.map(|s| ClientSecret::new(s.expose_secret().to_owned()));
        let redirect = RedirectUrl::new(redirect_uri.to_owned()).map_err(|e| e.to_string())?;
        let client_id = ClientId::new(provider.settings.client_id.clone());
        Ok(CoreClient::from_provider_metadata(metadata.clone(), client_id, secret).set_redirect_uri(redirect))
    }
}

/// Sends one request for openidconnect, reading at most [`MAX_RESPONSE_BYTES`]. The client is
/// owned, so the future borrows nothing (axum's handlers must be `Send` for any lifetime).
pub(crate) async fn send(http: reqwest::Client, request: HttpRequest) -> Result<HttpResponse, FetchError> {
    let request = reqwest::Request::try_from(request).map_err(|e| FetchError::Http(e.to_string()))?;
    let failed = |e: reqwest::Error| {
        if e.is_timeout() { FetchError::Timeout(FETCH_TIMEOUT) } else { FetchError::Http(e.to_string()) }
    };
    let mut response = http.execute(request).await.map_err(failed)?;
    if response.content_length().is_some_and(|n| n > MAX_RESPONSE_BYTES as u64) {
        return Err(FetchError::TooLarge);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(failed)? {
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(FetchError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    let mut answer = http::Response::builder().status(response.status().as_u16());
    for (name, value) in response.headers() {
        answer = answer.header(name.as_str(), value.as_bytes());
    }
    answer.body(body).map_err(|e| FetchError::Http(e.to_string()))
}
