//! A small OpenID provider for the tests of sign-in through a provider: discovery, keys and a
//! token endpoint on a loopback port, its ID tokens signed with a P-256 key. A test decides
//! what each code's ID token says (or how it is spoiled) before the browser returns with it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Form, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::StatusCode;
use mirobody_oauth::SigningKey;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The client secret the tests configure (an HS256 token would be keyed with it).
pub(crate) const CLIENT_SECRET: &str = "the client secret";

/// How a code's ID token is spoiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Spoil {
    None,
    /// One byte of the signature changed.
    Signature,
    /// Signed by a key the provider does not publish.
    OtherKey,
    /// MACed with the client secret (HS256), which discovery lists.
    Hs256,
    /// `alg: none`, which discovery lists too.
    Unsigned,
    /// Sent with no ID token.
    NoIdToken,
    /// A token answer larger than the server reads.
    Huge,
}

/// What the provider answers for one code.
struct Issue {
    claims: Value,
    challenge: String,
    spoil: Spoil,
}

struct Inner {
    issuer: String,
    key: SigningKey,
    other_key: SigningKey,
    codes: Mutex<HashMap<String, Issue>>,
    /// Token requests whose PKCE verifier matched the challenge.
    pkce_ok: Mutex<u32>,
}

/// The running provider.
#[derive(Clone)]
pub(crate) struct Provider {
    inner: Arc<Inner>,
}

impl Provider {
    /// Starts it on a loopback port; keys are made in `dir`.
    pub(crate) async fn start(dir: &std::path::Path) -> Provider {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let inner = Arc::new(Inner {
            issuer,
            key: SigningKey::load_or_create(&dir.join("provider.pem")).unwrap(),
            other_key: SigningKey::load_or_create(&dir.join("other.pem")).unwrap(),
            codes: Mutex::new(HashMap::new()),
            pkce_ok: Mutex::new(0),
        });
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/jwks", get(jwks))
            .route("/token", post(token))
            .with_state(inner.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Provider { inner }
    }

    pub(crate) fn issuer(&self) -> &str {
        &self.inner.issuer
    }

    /// How many token requests proved their code with the right PKCE verifier.
    pub(crate) fn pkce_ok(&self) -> u32 {
        *self.inner.pkce_ok.lock().unwrap()
    }

    /// The claims of a good ID token for `client_id` with this nonce, `extra` added.
    pub(crate) fn claims(&self, client_id: &str, nonce: &str, extra: Value) -> Value {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        let mut claims = json!({
            "iss": self.inner.issuer, "aud": client_id, "iat": now, "exp": now + 300, "nonce": nonce,
        });
        claims.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        claims
    }

    /// Makes `code` answer with these claims, for the PKCE `challenge`.
    pub(crate) fn issue(&self, code: &str, claims: Value, challenge: &str, spoil: Spoil) {
        let issue = Issue { claims, challenge: challenge.to_owned(), spoil };
        self.inner.codes.lock().unwrap().insert(code.to_owned(), issue);
    }
}

async fn discovery(State(inner): State<Arc<Inner>>) -> Json<Value> {
    let issuer = &inner.issuer;
    Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "jwks_uri": format!("{issuer}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        // `none` and HS256 are listed to show the server refuses them whatever is listed.
        "id_token_signing_alg_values_supported": ["ES256", "HS256", "none"],
    }))
}

async fn jwks(State(inner): State<Arc<Inner>>) -> Json<Value> {
    Json(json!({"keys": [inner.key.public_jwk()]}))
}

async fn token(State(inner): State<Arc<Inner>>, Form(form): Form<HashMap<String, String>>) -> Response {
    let refuse = |error: &str| (StatusCode::BAD_REQUEST, Json(json!({"error": error}))).into_response();
    let code = form.get("code").cloned().unwrap_or_default();
    let Some(issue) = inner.codes.lock().unwrap().remove(&code) else { return refuse("invalid_grant") };
    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
    if URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) != issue.challenge {
        return refuse("invalid_grant");
    }
    *inner.pkce_ok.lock().unwrap() += 1;
    let mut id_token = match issue.spoil {
        Spoil::OtherKey => inner.other_key.sign(&issue.claims).unwrap(),
        Spoil::Hs256 => {
            let key = jsonwebtoken::EncodingKey::from_secret(CLIENT_SECRET.as_bytes()).unwrap();
            jsonwebtoken::encode(&jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256), &issue.claims, &key)
                .unwrap()
        }
        Spoil::Unsigned => {
            let part = |value: &Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(value).unwrap());
            format!("{}.{}.", part(&json!({"alg": "none", "typ": "JWT"})), part(&issue.claims))
        }
        _ => inner.key.sign(&issue.claims).unwrap(),
    };
    if issue.spoil == Spoil::Signature {
        // A change inside the signature's first byte, not only its unused trailing bits.
        let at = id_token.rfind('.').unwrap() + 1;
        let flipped = if &id_token[at..=at] == "A" { "B" } else { "A" };
        id_token.replace_range(at..=at, flipped);
    }
    let mut answer = json!({"access_token": "at", "token_type": "Bearer", "expires_in": 300, "id_token": id_token});
    match issue.spoil {
        Spoil::NoIdToken => {
            answer.as_object_mut().unwrap().remove("id_token");
        }
        Spoil::Huge => answer["padding"] = json!("x".repeat(300 * 1024)),
        _ => {}
    }
    Json(answer).into_response()
}
