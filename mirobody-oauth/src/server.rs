//! The sign-in pages and the authorization server as one value: its stores, settings and keys.

use std::sync::Arc;

use axum::Router;
use mirobody_auth::{McpEndpoint, RevokedGrants};
use mirobody_ports::{AccessLog, AccountStore, IdentityStore, OAuthStore, PasskeyStore, SecretStore, WebSessionStore};

use crate::authz::cimd::Resolver;
use crate::authz::keys::SigningKey;
use crate::settings::OAuthSettings;
use crate::upstream::client::Upstream;
use crate::web::throttle::SignInThrottle;

/// Every store the sign-in pages and the authorization server keep state in. One
/// `mirobody_store::SqlStore` is all of them.
#[derive(Clone)]
pub struct OAuthStores {
    /// Accounts.
    pub accounts: Arc<dyn AccountStore>,
    /// Browsers signed in.
    pub sessions: Arc<dyn WebSessionStore>,
    /// Clients, grants, codes and refresh tokens.
    pub oauth: Arc<dyn OAuthStore>,
    /// Personal MCP URLs, which the access page mints and revokes; `None` hides that part.
    pub secrets: Option<Arc<dyn SecretStore>>,
    /// Passkeys and their ceremonies; `None` hides passkeys (so does a public URL whose host
    /// is not a domain name, which WebAuthn refuses).
    pub passkeys: Option<Arc<dyn PasskeyStore>>,
    /// Links to the operator's OpenID providers and sign-ins in flight to them; `None` hides
    /// the providers' buttons.
    pub identities: Option<Arc<dyn IdentityStore>>,
    /// The access log, from which the access page lists who read the person's data; `None`
    /// hides that part.
    pub access_log: Option<Arc<dyn AccessLog>>,
}

impl std::fmt::Debug for OAuthStores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthStores")
            .field("secrets", &self.secrets.is_some())
            .field("passkeys", &self.passkeys.is_some())
            .field("identities", &self.identities.is_some())
            .field("access_log", &self.access_log.is_some())
            .finish_non_exhaustive()
    }
}

/// The sign-in pages, the access page and the OAuth 2.1 authorization server of one MCP
/// endpoint. Cheap to clone. Mount [`router`](OAuthServer::router) beside the MCP endpoint,
/// and let the auth layer pass its [`open_paths`](OAuthServer::open_paths) untouched.
#[derive(Clone)]
pub struct OAuthServer {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) stores: OAuthStores,
    pub(crate) endpoint: McpEndpoint,
    pub(crate) settings: OAuthSettings,
    pub(crate) key: SigningKey,
    /// Keys that signed before a rotation: published, never used to sign.
    pub(crate) previous_keys: std::sync::OnceLock<Vec<SigningKey>>,
    /// The person's health data, for the access page's export and delete; unset hides them.
    pub(crate) account_data: std::sync::OnceLock<Arc<dyn crate::data::AccountData>>,
    pub(crate) revoked: RevokedGrants,
    pub(crate) throttle: SignInThrottle,
    /// Sign-up tries, bounded per address as failed sign-ins are (each is counted).
    pub(crate) signups: SignInThrottle,
    /// Client metadata documents being fetched, and those that failed lately.
    pub(crate) cimd: Resolver,
    /// The operator's OpenID providers.
    pub(crate) upstream: Upstream,
    /// The issuer: the public base URL and the path prefix.
    pub(crate) issuer: String,
    /// Whether cookies are marked `Secure` (the public URL is https).
    pub(crate) secure: bool,
    /// The scopes clients may ask for.
    pub(crate) scopes: Vec<String>,
    /// The passkey relying party, when passkeys are on.
    pub(crate) passkeys: Option<crate::web::passkeys::Passkeys>,
}

impl std::fmt::Debug for OAuthServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthServer").field("issuer", &self.inner.issuer).finish_non_exhaustive()
    }
}

impl OAuthServer {
    /// The server for `endpoint`, signing with `key`. `scopes` are those clients may ask
    /// for (the protected resource's `scopes_supported`); `revoked` is the list the resource
    /// side checks access tokens against (share it with the `Authenticator`).
    pub fn new(
        stores: OAuthStores,
        endpoint: McpEndpoint,
        settings: OAuthSettings,
        key: SigningKey,
        scopes: Vec<String>,
        revoked: RevokedGrants,
    ) -> Self {
        let issuer = Self::issuer_for(&endpoint);
        let secure = endpoint.base_url().starts_with("https://");
        let throttle = SignInThrottle::new(settings.sign_in_burst, settings.sign_in_interval);
        let signups = SignInThrottle::new(settings.sign_in_burst, settings.sign_in_interval);
        let passkeys = stores.passkeys.clone().and_then(|store| crate::web::passkeys::Passkeys::new(&endpoint, store));
        let upstream = Upstream::new(&settings.providers);
        if !upstream.providers.is_empty() && stores.identities.is_none() {
            tracing::warn!("oauth.providers are configured, but no identity store is given: their buttons are hidden");
        }
        OAuthServer {
            inner: Arc::new(Inner {
                stores,
                endpoint,
                settings,
                key,
                previous_keys: std::sync::OnceLock::new(),
                account_data: std::sync::OnceLock::new(),
                revoked,
                throttle,
                signups,
                cimd: Resolver::new(),
                upstream,
                issuer,
                secure,
                scopes,
                passkeys,
            }),
        }
    }

    /// The issuer identifier (RFC 8414) of the server for `endpoint`: its public base URL and
    /// path prefix. Its tokens' `iss`; verify them with
    /// `JwtVerifier::with_issuer_jwk(key.public_jwk(), &OAuthServer::issuer_for(&endpoint))`.
    pub fn issuer_for(endpoint: &McpEndpoint) -> String {
        format!("{}{}", endpoint.base_url(), endpoint.uri_prefix())
    }

    /// The issuer identifier (RFC 8414): the public base URL and the path prefix.
    pub fn issuer(&self) -> &str {
        &self.inner.issuer
    }

    /// The settings.
    pub fn settings(&self) -> &OAuthSettings {
        &self.inner.settings
    }

    /// The key tokens are signed with.
    pub fn signing_key(&self) -> &SigningKey {
        &self.inner.key
    }

    /// This server, also publishing `previous` at the JWKS URL: keys that signed tokens before
    /// a rotation ([`SigningKey::rotate`]), kept so those tokens verify until they expire
    /// (give them to the resource side's verifier too). They never sign.
    /// Set once, before [`router`](Self::router): a later call changes nothing.
    pub fn with_previous_keys(self, previous: Vec<SigningKey>) -> Self {
        let _ = self.inner.previous_keys.set(previous);
        self
    }

    /// This server, its access page offering `data`: the download of everything, and the
    /// deletion of a file, an import or the whole account. Set once, before
    /// [`router`](Self::router): a later call changes nothing.
    pub fn with_account_data(self, data: Arc<dyn crate::data::AccountData>) -> Self {
        let _ = self.inner.account_data.set(data);
        self
    }

    /// The public keys tokens of this server may be signed with: the current one first.
    pub fn public_jwks(&self) -> Vec<&jsonwebtoken::jwk::Jwk> {
        let previous = self.inner.previous_keys.get().into_iter().flatten();
        std::iter::once(&self.inner.key).chain(previous).map(SigningKey::public_jwk).collect()
    }

    /// Every route: the metadata, `/authorize`, `/token`, `/register`, `/revoke`, the JWKS,
    /// the pages (`/signin`, `/signup`, `/signup/{token}`, `/account`) and, with passkeys, their
    /// JSON routes and script, and sign-in through the configured OpenID providers
    /// (`/signin/with/{provider}` and its `/callback`).
    pub fn router(&self) -> Router {
        crate::authz::routes(self).merge(crate::web::routes(self)).merge(crate::upstream::routes(self))
    }

    /// The paths whose requests carry credentials of their own (a client's `Authorization:
    /// Basic` at the token endpoint): the auth layer must pass them untouched.
    pub fn open_paths(&self) -> Vec<String> {
        crate::authz::open_paths(self)
    }

    /// A path under the prefix: `path("/signin")` is `<uri_prefix>/signin`.
    pub(crate) fn path(&self, path: &str) -> String {
        format!("{}{path}", self.inner.endpoint.uri_prefix())
    }

    /// A full URL under the issuer.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.inner.issuer)
    }
}
