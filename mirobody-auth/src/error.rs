//! Errors: a configuration that cannot be used, and a request that is refused.

use http::{HeaderValue, Response, StatusCode, header};
use serde_json::json;

use crate::jwt::TokenError;
use crate::permission::PermissionDenied;

/// A configuration the auth layer cannot use. The message names the key at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthConfigError {
    /// A key (or key file) is wrong.
    #[error("auth.{name}: {message}")]
    Key {
        /// The configuration key, such as `rs256` or `previous_keys[1]`.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// Another setting is wrong.
    #[error("auth.{0}")]
    Invalid(String),
}

impl AuthConfigError {
    pub(crate) fn key(name: &str, message: impl Into<String>) -> Self {
        AuthConfigError::Key { name: name.to_owned(), message: message.into() }
    }
}

/// Why a request was refused before it reached the service. Each variant knows its HTTP
/// status and `WWW-Authenticate` challenge; no message carries a token or a secret.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// A bearer token was sent and is not valid (401, `error="invalid_token"`).
    #[error("Invalid bearer token: {0}.")]
    InvalidToken(TokenError),
    /// A personal MCP secret was sent and names no live secret (401, `error="invalid_token"`).
    #[error("Invalid personal MCP secret: it is unknown, revoked or rotated.")]
    InvalidSecret,
    /// Personal MCP secrets are not enabled on this server (401, `error="invalid_token"`).
    #[error("Personal MCP secrets are not enabled on this server.")]
    SecretsDisabled,
    /// A bearer token and a personal secret, or two secrets, name different users (401).
    #[error("The request carries credentials for different users; send one credential.")]
    ConflictingCredentials,
    /// The `Authorization` header is not `Bearer <token>` (401, no error code: RFC 6750 §3.1).
    #[error("Unsupported authorization scheme: send 'Authorization: Bearer <token>'.")]
    UnsupportedScheme,
    /// No credentials where they are required (401, no error code).
    #[error("Authentication required: send 'Authorization: Bearer <token>'.")]
    Missing,
    /// A credential in the query string (400): it would end up in logs and browser history.
    #[error(
        "Credentials in the query string are refused ('{0}'): send the token in the Authorization header, or \
         the personal secret in the URL path or the X-MCP-Secret header."
    )]
    CredentialInQuery(String),
    /// The same credential header appears twice, or is not valid text (400).
    #[error("Malformed request: the {0} header must appear once, as text.")]
    MalformedHeader(&'static str),
    /// The secret store failed, so the caller cannot be identified now (503).
    #[error("The credential store is unavailable; try again later.")]
    StoreUnavailable,
    /// Too many credentials from the caller's address failed lately: this one is not checked
    /// (429, with `Retry-After`). A token verified before is still taken.
    #[error("Too many invalid credentials from this address; try again in {} s.", retry_after_secs(.0))]
    TooManyFailures(std::time::Duration),
    /// A valid bearer token without the scope this request needs, named here (403,
    /// `error="insufficient_scope"` with that `scope`: RFC 6750 §3.1).
    #[error("Insufficient scope: this needs a bearer token with the '{0}' scope.")]
    InsufficientScope(String),
    /// The caller may not do what the request asks: its agent's tool list leaves the
    /// permission out, or its token lacks scopes the permission needs (403; for scopes,
    /// `error="insufficient_scope"` naming them).
    #[error("{0}")]
    Forbidden(PermissionDenied),
}

impl AuthError {
    /// The HTTP status of the refusal.
    pub fn status(&self) -> StatusCode {
        match self {
            AuthError::CredentialInQuery(_) | AuthError::MalformedHeader(_) => StatusCode::BAD_REQUEST,
            AuthError::StoreUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            AuthError::TooManyFailures(_) => StatusCode::TOO_MANY_REQUESTS,
            AuthError::InsufficientScope(_) | AuthError::Forbidden(_) => StatusCode::FORBIDDEN,
            _ => StatusCode::UNAUTHORIZED,
        }
    }

    /// The `WWW-Authenticate` value for a 401, given the protected resource metadata URL and
    /// the scopes to name (none for an empty slice), or for a 403 for want of a scope (which
    /// names that scope instead).
    pub fn challenge(&self, resource_metadata_url: &str, scopes: &[String]) -> Option<String> {
        let needed = match self {
            AuthError::InsufficientScope(scope) => Some(scope.clone()),
            AuthError::Forbidden(PermissionDenied::Scopes { missing, .. }) => Some(missing.join(" ")),
            _ => None,
        };
        if let Some(scope) = needed {
            return Some(format!(
                "Bearer resource_metadata=\"{}\", scope=\"{}\", error=\"insufficient_scope\", error_description=\"{}\"",
                quoted(resource_metadata_url),
                quoted(&scope),
                quoted(self.to_string().trim_end_matches('.'))
            ));
        }
        if self.status() != StatusCode::UNAUTHORIZED {
            return None;
        }
        let mut value = format!("Bearer resource_metadata=\"{}\"", quoted(resource_metadata_url));
        if !scopes.is_empty() {
            value.push_str(&format!(", scope=\"{}\"", quoted(&scopes.join(" "))));
        }
        if !matches!(self, AuthError::UnsupportedScheme | AuthError::Missing) {
            let description = match self {
                AuthError::InvalidToken(reason) => reason.to_string(),
                other => other.to_string(),
            };
            value.push_str(&format!(
                ", error=\"invalid_token\", error_description=\"{}\"",
                quoted(description.trim_end_matches('.'))
            ));
        }
        Some(value)
    }

    /// The JSON-RPC error code of the body: -32001 (unauthorized) for a 401 or 403, -32600
    /// (invalid request) for a 400, -32603 (internal error) for a 503.
    pub fn rpc_code(&self) -> i64 {
        match self.status() {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => -32001,
            StatusCode::BAD_REQUEST => -32600,
            // As the MCP endpoint's own 429s: a transport-level refusal.
            StatusCode::TOO_MANY_REQUESTS => -32000,
            _ => -32603,
        }
    }

    /// The whole refusal: status, `WWW-Authenticate` for a 401 or 403, `Cache-Control: no-store`,
    /// and a JSON-RPC error body `{"jsonrpc":"2.0","id":null,"error":{"code","message"}}`.
    pub fn into_response<B: From<String>>(&self, resource_metadata_url: &str, scopes: &[String]) -> Response<B> {
        let body = json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": self.rpc_code(), "message": self.to_string()},
        });
        let mut response = Response::new(B::from(body.to_string()));
        *response.status_mut() = self.status();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if let AuthError::TooManyFailures(wait) = self {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs(wait)));
        }
        if let Some(challenge) = self.challenge(resource_metadata_url, scopes)
            && let Ok(value) = HeaderValue::from_str(&challenge)
        {
            headers.insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

// Whole seconds, rounded up, at least one.
fn retry_after_secs(wait: &std::time::Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

// A quoted-string value: no quotes or backslashes inside, no control characters.
fn quoted(text: &str) -> String {
    text.chars().filter(|c| *c != '"' && *c != '\\' && !c.is_control()).collect()
}
