//! Resolving the caller of one request from its credentials.

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use http::{HeaderMap, HeaderName, Request, Response, Uri, header};
use mirobody_core::UserInfo;
use mirobody_ports::{ClientAddr, SecretStore};
use serde_json::{Value, json};
use subtle::ConstantTimeEq;

use crate::config::{AuthConfig, McpEndpoint};
use crate::error::{AuthConfigError, AuthError};
use crate::failures::FailureLimiter;
use crate::jwt::{JwtVerifier, TokenError};
use crate::layer::AuthService;
use crate::permission::Permissions;
use crate::secret::{SECRET_HEADER, hash_secret, looks_like_secret};

// Parsed once: a `&str` name is parsed again on every lookup.
const SECRET: HeaderName = HeaderName::from_static(SECRET_HEADER);

/// Query parameters that would carry a credential; a request naming any of them is refused
/// (400), whatever its value.
pub const QUERY_CREDENTIAL_PARAMS: [&str; 4] = ["token", "access_token", "secret", "mcp_secret"];

/// How the caller of a request was identified; the layer inserts it into the request
/// extensions beside the [`UserInfo`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthMethod {
    /// No credentials: an anonymous caller.
    Anonymous,
    /// A verified bearer token (possibly with a personal secret of the same user).
    Bearer,
    /// A personal MCP secret, in the path or the `X-MCP-Secret` header.
    Secret,
}

/// Identifies callers: verifies bearer JWTs, looks up personal MCP secrets, and answers the
/// refusals. Cheap to clone; build one at start and share it.
#[derive(Clone)]
pub struct Authenticator {
    inner: Arc<Inner>,
    // Beside `inner`, not in it: the server adds the tools' declared scopes once its registry
    // is built (`with_permissions`), after the authenticator.
    permissions: Permissions,
    // Paths whose requests carry credentials of their own (an OAuth client's Basic auth at a
    // token endpoint): admitted as anonymous without a look at them.
    open_paths: Arc<[String]>,
}

struct Inner {
    verifier: JwtVerifier,
    secrets: Option<Arc<dyn SecretStore>>,
    endpoint: McpEndpoint,
    mcp_path_slash: String,
    metadata_url: String,
    metadata_paths: Vec<String>,
    secret_scopes: Vec<String>,
    personal_url_scope: String,
    scopes_supported: Vec<String>,
    authorization_servers: Vec<String>,
    /// Credentials that failed, per client network.
    failures: FailureLimiter,
}

impl fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authenticator")
            .field("endpoint", &self.inner.endpoint)
            .field("verifier", &self.inner.verifier)
            .field("secrets", &self.inner.secrets.is_some())
            .finish()
    }
}

impl Authenticator {
    /// Loads the keys (fetching a JWKS URL) and serves `endpoint`. Without a `secrets` store,
    /// personal MCP secrets are refused and `/personal/mcp` answers 503.
    pub async fn new(
        config: &AuthConfig,
        endpoint: McpEndpoint,
        secrets: Option<Arc<dyn SecretStore>>,
    ) -> Result<Self, AuthConfigError> {
        config.validate()?;
        let verifier = JwtVerifier::load(config, &endpoint.mcp_url()).await?;
        Ok(Self::with_verifier(config, verifier, endpoint, secrets))
    }

    /// Like [`new`](Authenticator::new) with a verifier built elsewhere. An empty
    /// `personal_url_scope` is taken as [`PERSONAL_URL_SCOPE`](crate::PERSONAL_URL_SCOPE): the
    /// scope is never waived.
    pub fn with_verifier(
        config: &AuthConfig,
        verifier: JwtVerifier,
        endpoint: McpEndpoint,
        secrets: Option<Arc<dyn SecretStore>>,
    ) -> Self {
        if verifier.has_keys() && config.authorization_servers.is_empty() {
            tracing::warn!(
                "auth.authorization_servers is empty: the protected resource metadata cannot tell clients where to sign in"
            );
        }
        Authenticator {
            permissions: Permissions::from_config(config),
            open_paths: Arc::new([]),
            inner: Arc::new(Inner {
                verifier,
                secrets,
                mcp_path_slash: format!("{}/", endpoint.mcp_path()),
                metadata_url: endpoint.resource_metadata_url(),
                metadata_paths: endpoint.resource_metadata_paths(),
                endpoint,
                secret_scopes: config.secret_scopes.clone(),
                personal_url_scope: match config.personal_url_scope.trim() {
                    "" => crate::PERSONAL_URL_SCOPE.to_owned(),
                    scope => scope.to_owned(),
                },
                scopes_supported: config.scopes_supported.clone(),
                authorization_servers: config.authorization_servers.clone(),
                failures: FailureLimiter::new(config.failed_credentials_burst, config.failed_credentials_interval),
            }),
        }
    }

    /// This authenticator with `permissions` (by default those of the configuration it was
    /// made from; a server adds its tools' declared scopes with [`Permissions::with_tools`]).
    pub fn with_permissions(mut self, permissions: Permissions) -> Self {
        self.permissions = permissions;
        self
    }

    /// This authenticator admitting requests to `paths` as anonymous without looking at their
    /// credentials: an authorization server's token and revocation endpoints, where
    /// `Authorization: Basic` is a client's credential, not a caller's.
    pub fn with_open_paths(mut self, paths: impl IntoIterator<Item = String>) -> Self {
        self.open_paths = paths.into_iter().collect();
        self
    }

    /// The permission model every route and tool is checked against.
    pub fn permissions(&self) -> &Permissions {
        &self.permissions
    }

    /// Whether the caller the auth layer put in `request` holds `permission` (see
    /// [`Permissions::check`]): `Missing` (401) for a request with no caller,
    /// [`AuthError::Forbidden`] (403) for one without the permission. Refuse with
    /// [`reject`](Self::reject).
    pub fn authorize<B>(&self, request: &Request<B>, permission: &str) -> Result<(), AuthError> {
        let Some(user) = request.extensions().get::<UserInfo>().filter(|u| u.authed()) else {
            return Err(AuthError::Missing);
        };
        self.permissions.check(user, permission).map_err(|denied| {
            tracing::debug!(user = user.user_id().unwrap_or("-"), permission, "permission refused");
            AuthError::Forbidden(denied)
        })
    }

    /// The endpoint served.
    pub fn endpoint(&self) -> &McpEndpoint {
        &self.inner.endpoint
    }

    /// The protected resource metadata URL, for `HttpOptions::resource_metadata_url` so that
    /// the MCP endpoint's own 401 and 403 challenges point at the same document.
    pub fn resource_metadata_url(&self) -> &str {
        &self.inner.metadata_url
    }

    /// The token verifier.
    pub fn verifier(&self) -> &JwtVerifier {
        &self.inner.verifier
    }

    /// The scope a bearer token needs to mint, rotate or revoke a personal MCP URL over HTTP.
    pub fn personal_url_scope(&self) -> &str {
        &self.inner.personal_url_scope
    }

    /// The secret store, if personal secrets are enabled.
    pub fn secret_store(&self) -> Option<&Arc<dyn SecretStore>> {
        self.inner.secrets.as_ref()
    }

    /// Wraps a service (an axum `Router`, say) in the auth layer. Wrap the whole router, not
    /// a route: the layer rewrites `/mcp/<secret>` to `/mcp`, which must happen before routing.
    pub fn wrap<S>(&self, service: S) -> AuthService<S> {
        AuthService::new(self.clone(), service)
    }

    /// Verifies a bearer token (without `Bearer `).
    pub async fn verify_bearer(&self, token: &str) -> Result<UserInfo, TokenError> {
        self.inner.verifier.verify(token).await
    }

    /// The caller a personal MCP secret identifies.
    pub async fn user_for_secret(&self, secret: &str) -> Result<UserInfo, AuthError> {
        let Some(store) = &self.inner.secrets else { return Err(AuthError::SecretsDisabled) };
        // Anything without a secret's shape is no secret: refuse it without a lookup.
        if !looks_like_secret(secret) {
            return Err(AuthError::InvalidSecret);
        }
        match store.secret_owner(&hash_secret(secret)).await {
            Ok(Some(owner)) if !owner.user_id.is_empty() => {
                let mut user = UserInfo::authenticated(owner.user_id);
                if !self.inner.secret_scopes.is_empty() {
                    user = user.with_scopes(self.inner.secret_scopes.iter().cloned());
                }
                if let Some(agent) = owner.agent.filter(|a| !a.trim().is_empty()) {
                    user = user.with_agent(agent);
                }
                Ok(user)
            }
            Ok(_) => Err(AuthError::InvalidSecret),
            Err(e) => {
                tracing::warn!(error = %e, "secret store lookup failed");
                Err(AuthError::StoreUnavailable)
            }
        }
    }

    /// The caller of a request that must carry a bearer token (as `/personal/mcp` does): a
    /// personal secret is not enough, and is not even looked at.
    pub async fn bearer_user(&self, headers: &HeaderMap) -> Result<UserInfo, AuthError> {
        match single_header(headers, &header::AUTHORIZATION, "Authorization")? {
            None => Err(AuthError::Missing),
            Some(value) => {
                let token = bearer_token(value)?;
                self.verify_bearer(token).await.map_err(AuthError::InvalidToken)
            }
        }
    }

    /// Resolves the caller of `request` and records it in the request's extensions (a
    /// [`UserInfo`], anonymous when there are no credentials, and an [`AuthMethod`]).
    ///
    /// - A query string naming `token`, `access_token`, `secret` or `mcp_secret` is refused.
    /// - `<uri_prefix>/mcp/<secret>/mcp` and `<uri_prefix>/mcp/<secret>` are rewritten to
    ///   `<uri_prefix>/mcp` with the secret taken out of the URI; `X-MCP-Secret: <secret>` is the same credential in a header.
    /// - `Authorization: Bearer <token>` is verified; a token and a secret must name the same
    ///   user, and the token's identity (scopes, session, agent) is used.
    /// - The protected resource metadata paths, and the [open paths](Self::with_open_paths),
    ///   are served to anyone, credentials or not.
    pub async fn authenticate<B>(&self, request: &mut Request<B>) -> Result<AuthMethod, AuthError> {
        if self.is_anonymous(request) {
            self.admit_anonymous(request);
            return Ok(AuthMethod::Anonymous);
        }
        let network = client_network(request.extensions());
        let result = self.resolve(request, network).await;
        if let (Some(network), Err(AuthError::InvalidToken(_) | AuthError::InvalidSecret)) = (network, &result) {
            self.inner.failures.fail(&network);
        }
        match &result {
            Ok((user, method)) => {
                tracing::trace!(user = user.user_id().unwrap_or("-"), method = ?method, "caller resolved");
            }
            Err(e) => tracing::debug!(status = e.status().as_u16(), reason = %e, "request refused by the auth layer"),
        }
        let (user, method) = result?;
        request.extensions_mut().insert(user);
        request.extensions_mut().insert(method);
        Ok(method)
    }

    /// Whether `request` is anonymous at a glance: it is for a protected resource metadata
    /// path, or carries nothing that could be a credential (no query string, no
    /// `Authorization` or `X-MCP-Secret` header, no `<mcp path>/<secret>` path). Such a request
    /// needs no lookup, so [`AuthService`] answers it without boxing a future.
    pub fn is_anonymous<B>(&self, request: &Request<B>) -> bool {
        let (uri, headers) = (request.uri(), request.headers());
        let path = uri.path();
        self.inner.metadata_paths.iter().any(|p| p == path)
            || self.open_paths.iter().any(|p| p == path)
            || (uri.query().is_none()
                && !path.starts_with(self.inner.mcp_path_slash.as_str())
                // One walk over the headers rather than two lookups by name, which hash the
                // name and probe the map: this runs on every request.
                && !headers.keys().any(|name| name == header::AUTHORIZATION || name == SECRET))
    }

    /// Records an anonymous caller in the extensions of a request [`is_anonymous`] accepts.
    ///
    /// [`is_anonymous`]: Authenticator::is_anonymous
    pub fn admit_anonymous<B>(&self, request: &mut Request<B>) {
        tracing::trace!(user = "-", method = ?AuthMethod::Anonymous, "caller resolved");
        request.extensions_mut().insert(UserInfo::anonymous());
        request.extensions_mut().insert(AuthMethod::Anonymous);
    }

    async fn resolve<B>(
        &self,
        request: &mut Request<B>,
        network: Option<IpAddr>,
    ) -> Result<(UserInfo, AuthMethod), AuthError> {
        if let Some(query) = request.uri().query() {
            check_query(query)?;
        }
        let path_secret = self.take_path_secret(request);
        let headers = request.headers();
        let header_secret = single_header(headers, &SECRET, "X-MCP-Secret")?.map(str::trim);
        let secret = match (path_secret.as_deref(), header_secret) {
            (Some(a), Some(b)) if !bool::from(hash_secret(a).ct_eq(&hash_secret(b))) => {
                return Err(AuthError::ConflictingCredentials);
            }
            (a, b) => a.or(b),
        };
        let token = match single_header(headers, &header::AUTHORIZATION, "Authorization")? {
            Some(value) => Some(bearer_token(value)?),
            None => None,
        };
        // An address whose credentials failed too often gets no fresh check, only the answer
        // for a token verified before: forging tokens or guessing secrets costs it nothing
        // more. A token verified before is answered first, so the common path asks no bound.
        let held_back = || network.and_then(|network| self.inner.failures.check(&network).err());
        let token_user = match token {
            Some(token) => Some(match self.inner.verifier.cached(token) {
                Some(known) => known,
                None => match held_back() {
                    Some(wait) => return Err(AuthError::TooManyFailures(wait)),
                    None => self.verify_bearer(token).await,
                },
            }),
            None => None,
        };
        let token_user = token_user.transpose().map_err(AuthError::InvalidToken)?;
        let secret_user = match secret {
            Some(secret) => match held_back() {
                Some(wait) => return Err(AuthError::TooManyFailures(wait)),
                None => Some(self.user_for_secret(secret).await?),
            },
            None => None,
        };
        Ok(match (token_user, secret_user) {
            (Some(user), Some(by_secret)) => {
                if user.user_id() != by_secret.user_id() {
                    return Err(AuthError::ConflictingCredentials);
                }
                // An agent-bound secret keeps its agent's limits even beside a token.
                match (user.agent(), by_secret.agent()) {
                    (None, Some(agent)) => (user.clone().with_agent(agent), AuthMethod::Bearer),
                    _ => (user, AuthMethod::Bearer),
                }
            }
            (Some(user), None) => (user, AuthMethod::Bearer),
            (None, Some(user)) => (user, AuthMethod::Secret),
            (None, None) => (UserInfo::anonymous(), AuthMethod::Anonymous),
        })
    }

    // `<mcp_path>/<secret>` or `<mcp_path>/<secret>/mcp` -> the secret, and the request's path
    // becomes `<mcp_path>`.
    fn take_path_secret<B>(&self, request: &mut Request<B>) -> Option<String> {
        let rest = request.uri().path().strip_prefix(self.inner.mcp_path_slash.as_str())?;
        let rest = rest.strip_suffix("/mcp").unwrap_or(rest);
        if rest.is_empty() || rest.contains('/') {
            return None;
        }
        let secret = rest.to_owned();
        let mut path_and_query = self.inner.endpoint.mcp_path();
        if let Some(query) = request.uri().query() {
            path_and_query.push('?');
            path_and_query.push_str(query);
        }
        let mut parts = request.uri().clone().into_parts();
        parts.path_and_query = path_and_query.parse().ok();
        // The new URI is the old one with a shorter path, so it always parses; if it somehow
        // did not, the path is blanked rather than left holding the secret.
        *request.uri_mut() = Uri::from_parts(parts).unwrap_or_else(|_| Uri::from_static("/"));
        Some(secret)
    }

    /// A refusal as an HTTP response: status, challenge naming the protected resource metadata
    /// (and the supported scopes), and a JSON-RPC error body.
    pub fn reject<B: From<String>>(&self, error: &AuthError) -> Response<B> {
        error.into_response(&self.inner.metadata_url, &self.inner.scopes_supported)
    }

    /// The RFC 9728 protected resource metadata document.
    pub fn protected_resource_metadata(&self) -> Value {
        json!({
            "resource": self.inner.endpoint.mcp_url(),
            "authorization_servers": self.inner.authorization_servers,
            "scopes_supported": self.inner.scopes_supported,
            "bearer_methods_supported": ["header"],
        })
    }

    pub(crate) fn metadata_paths(&self) -> &[String] {
        &self.inner.metadata_paths
    }
}

// The network of the request's client, as `mirobody_mcp::serve` (or axum's `ConnectInfo`)
// recorded it.
fn client_network(extensions: &http::Extensions) -> Option<IpAddr> {
    let address = match extensions.get::<ClientAddr>() {
        Some(address) => *address,
        None => ClientAddr(extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()?.0.ip()),
    };
    Some(address.network())
}

fn check_query(query: &str) -> Result<(), AuthError> {
    for (key, _) in form_urlencoded::parse(query.as_bytes()) {
        if let Some(name) = QUERY_CREDENTIAL_PARAMS.iter().find(|p| key.eq_ignore_ascii_case(p)) {
            return Err(AuthError::CredentialInQuery((*name).to_owned()));
        }
    }
    Ok(())
}

// The header's value if it appears at most once, as visible ASCII.
fn single_header<'a>(
    headers: &'a HeaderMap,
    name: &HeaderName,
    display: &'static str,
) -> Result<Option<&'a str>, AuthError> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else { return Ok(None) };
    if values.next().is_some() {
        return Err(AuthError::MalformedHeader(display));
    }
    first.to_str().map(Some).map_err(|_| AuthError::MalformedHeader(display))
}

// `Bearer <token>`, the scheme in any case (RFC 7235 §2.1).
fn bearer_token(value: &str) -> Result<&str, AuthError> {
    let value = value.trim();
    let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::UnsupportedScheme);
    }
    let token = rest.trim();
    if token.is_empty() || token.contains(char::is_whitespace) {
        return Err(AuthError::InvalidToken(TokenError::Malformed));
    }
    Ok(token)
}
