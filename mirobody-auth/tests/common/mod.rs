//! Shared test helpers: an in-memory secret store, token minting, and a tiny app behind the
//! layer that echoes the caller it was given.

#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use axum::body::Body;
use axum::routing::post;
use axum::{Extension, Json, Router};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{Request, Response, Uri};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mirobody_auth::{AuthConfig, AuthMethod, Authenticator, McpEndpoint, personal_router, protected_resource_metadata};
use mirobody_core::backend::BackendResult;
use mirobody_core::{BackendError, UserInfo};
use mirobody_mcp::testing::TestClient;
use mirobody_ports::{SecretOwner, SecretStore};
use serde_json::{Value, json};
use subtle::ConstantTimeEq;

pub const BASE: &str = "http://mcp.test";
pub const MCP_URL: &str = "http://mcp.test/mcp";
pub const METADATA_URL: &str = "http://mcp.test/.well-known/oauth-protected-resource/mcp";
pub const ISSUER: &str = "https://auth.test";
pub const HS_KEY: &str = "hs256 test key: thirty-two bytes or more, test only";

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

pub fn fixture_bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).expect("fixture exists")
}

pub fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

/// Claims a token for this server would carry.
pub fn claims(sub: &str) -> Value {
    json!({"sub": sub, "iss": ISSUER, "aud": MCP_URL, "exp": now() + 600, "iat": now()})
}

/// Claims with the scope `POST`/`DELETE /personal/mcp` needs.
pub fn personal_claims(sub: &str) -> Value {
    let mut claims = claims(sub);
    claims["scope"] = json!(format!("mcp:read {}", mirobody_auth::PERSONAL_URL_SCOPE));
    claims
}

pub fn hs256(claims: &Value, key: &str) -> String {
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &EncodingKey::from_secret(key.as_bytes()).unwrap())
        .unwrap()
}

pub fn rs256(claims: &Value, private_pem: &str, kid: Option<&str>) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = kid.map(str::to_owned);
    let key = EncodingKey::from_rsa_pem(&fixture_bytes(private_pem)).unwrap();
    jsonwebtoken::encode(&header, claims, &key).unwrap()
}

pub fn es256(claims: &Value) -> String {
    let key = EncodingKey::from_ec_pem(&fixture_bytes("test-only-es256-private.pem")).unwrap();
    jsonwebtoken::encode(&Header::new(Algorithm::ES256), claims, &key).unwrap()
}

/// A token with any header, signed with HMAC-SHA256 under `key` whatever the header says (or
/// with an empty signature when `key` is `None`): for forgeries.
pub fn forged(header: &Value, claims: &Value, key: Option<&[u8]>) -> String {
    let message =
        format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
    let signature = match key {
        None => String::new(),
        Some(key) => {
            jsonwebtoken::crypto::sign(message.as_bytes(), &EncodingKey::from_secret(key).unwrap(), Algorithm::HS256)
                .unwrap()
        }
    };
    format!("{message}.{signature}")
}

/// Personal secrets in memory, compared in constant time (every entry is compared, whatever
/// matches), with their expiry (unix ms).
type Entry = (String, [u8; 32], Option<String>, Option<u64>);

pub fn now_ms() -> u64 {
    mirobody_core::clock::now_ms().unsigned_abs()
}

fn live(expires_at_ms: Option<u64>) -> bool {
    expires_at_ms.is_none_or(|at| at > now_ms())
}

#[derive(Default)]
pub struct MemorySecrets {
    entries: Mutex<Vec<Entry>>,
    pub fail: std::sync::atomic::AtomicBool,
}

impl MemorySecrets {
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap().len()
    }

    /// The stored expiry of `user`'s secret: `None` when there is no secret, `Some(None)` when it
    /// never expires.
    pub fn expiry(&self, user: &str) -> Option<Option<u64>> {
        self.entries.lock().unwrap().iter().find(|(u, ..)| u == user).map(|(.., at)| *at)
    }

    fn check(&self) -> BackendResult<()> {
        if self.fail.load(std::sync::atomic::Ordering::SeqCst) {
            Err(BackendError::new("database is down"))
        } else {
            Ok(())
        }
    }
}

#[async_trait]
impl SecretStore for MemorySecrets {
    async fn secret_owner(&self, secret_hash: &[u8; 32]) -> BackendResult<Option<SecretOwner>> {
        self.check()?;
        let entries = self.entries.lock().unwrap();
        let mut found = None;
        for (user, hash, agent, expires_at_ms) in entries.iter() {
            if bool::from(hash.ct_eq(secret_hash)) && live(*expires_at_ms) {
                found = Some(SecretOwner { user_id: user.clone(), agent: agent.clone() });
            }
        }
        Ok(found)
    }

    async fn put_secret(
        &self,
        user_id: &str,
        secret_hash: &[u8; 32],
        agent: Option<&str>,
        expires_at_ms: Option<u64>,
    ) -> BackendResult<()> {
        self.check()?;
        let mut entries = self.entries.lock().unwrap();
        entries.retain(|(user, ..)| user != user_id);
        entries.push((user_id.to_owned(), *secret_hash, agent.map(str::to_owned), expires_at_ms));
        Ok(())
    }

    async fn add_secret(
        &self,
        user_id: &str,
        secret_hash: &[u8; 32],
        agent: Option<&str>,
        expires_at_ms: Option<u64>,
    ) -> BackendResult<bool> {
        self.check()?;
        let mut entries = self.entries.lock().unwrap();
        if entries.iter().any(|(user, _, _, at)| user == user_id && live(*at)) {
            return Ok(false);
        }
        entries.retain(|(user, ..)| user != user_id);
        entries.push((user_id.to_owned(), *secret_hash, agent.map(str::to_owned), expires_at_ms));
        Ok(true)
    }

    async fn has_secret(&self, user_id: &str) -> BackendResult<bool> {
        self.check()?;
        Ok(self.entries.lock().unwrap().iter().any(|(user, _, _, at)| user == user_id && live(*at)))
    }

    async fn revoke_secret(&self, user_id: &str) -> BackendResult<bool> {
        self.check()?;
        let mut entries = self.entries.lock().unwrap();
        let before = entries.len();
        entries.retain(|(user, ..)| user != user_id);
        Ok(entries.len() != before)
    }
}

/// The configuration most tests use: HS256 and RS256 keys, an issuer, scopes.
pub fn config() -> AuthConfig {
    serde_json::from_value(json!({
        "hs256_secret": HS_KEY,
        "rs256": {"public_key_file": fixture("test-only-rs256-a-public.pem")},
        "issuer": ISSUER,
        "authorization_servers": [ISSUER],
        "scopes_supported": ["mcp:read", "mcp:write"],
    }))
    .unwrap()
}

pub fn endpoint() -> McpEndpoint {
    McpEndpoint::new(BASE, "")
}

pub async fn authenticator(config: &AuthConfig, store: Option<Arc<MemorySecrets>>) -> Authenticator {
    let store = store.map(|s| s as Arc<dyn SecretStore>);
    Authenticator::new(config, endpoint(), store).await.expect("valid config")
}

/// The app: `/mcp` echoes the caller, the path the handler saw and how the caller was
/// identified; the metadata and personal routes are merged in; the layer wraps it all.
pub fn app(auth: &Authenticator) -> Router {
    async fn echo(
        Extension(user): Extension<UserInfo>,
        Extension(method): Extension<AuthMethod>,
        uri: Uri,
    ) -> Json<Value> {
        Json(user_json(&user, method, &uri))
    }
    let routes = Router::new()
        .route("/mcp", post(echo).get(echo))
        .route("/api/mcp", post(echo))
        .route("/healthz", axum::routing::get(|| async { "ok" }))
        .merge(protected_resource_metadata(auth))
        .merge(personal_router(auth));
    Router::new().fallback_service(auth.wrap(routes))
}

pub fn user_json(user: &UserInfo, method: AuthMethod, uri: &Uri) -> Value {
    json!({
        "user_id": user.user_id(),
        "session_id": user.session_id(),
        "subject_user_id": user.subject_user_id(),
        "scopes": user.scopes(),
        "agent": user.agent(),
        "method": format!("{method:?}"),
        "path": uri.path(),
        "query": uri.query(),
    })
}

/// A request builder with `Host` set.
pub fn request(method: &str, uri: &str) -> http::request::Builder {
    Request::builder().method(method).uri(uri).header("host", "mcp.test")
}

pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

pub struct Reply {
    pub status: u16,
    pub challenge: Option<String>,
    pub headers: http::HeaderMap,
    pub body: Value,
    pub text: String,
}

/// Sends `request` as built (its Host and headers untouched) through mirobody-mcp's in-process
/// test client, and reads the whole reply, JSON or not.
pub async fn send(app: &Router, request: Request<Body>) -> Reply {
    let client = TestClient::new(app.clone());
    let response: Response<Body> = client.send(request).await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let challenge = headers.get("www-authenticate").map(|v| v.to_str().unwrap().to_owned());
    let bytes = client.read_body(response).await.unwrap();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Reply { status, challenge, headers, body, text }
}

/// POST `/mcp` with optional Authorization and secret headers.
pub async fn call_mcp(app: &Router, authorization: Option<&str>, secret_header: Option<&str>) -> Reply {
    let mut builder = request("POST", "/mcp");
    if let Some(value) = authorization {
        builder = builder.header("authorization", value);
    }
    if let Some(value) = secret_header {
        builder = builder.header("x-mcp-secret", value);
    }
    send(app, builder.body(Body::empty()).unwrap()).await
}

/// The secret at the end of a personal URL.
pub fn secret_of(url: &str) -> String {
    mirobody_auth::PersonalUrl::secret_of(url).unwrap().to_owned()
}
