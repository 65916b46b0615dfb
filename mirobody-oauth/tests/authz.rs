//! The authorization server in process, over a real SQLite store: metadata, registration, the
//! authorization code flow with PKCE, refresh rotation, revocation, and the attacks on each.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{Request, StatusCode, header};
use mirobody_auth::{AuthConfig, JwtVerifier, McpEndpoint, RevokedGrants, TokenError};
use mirobody_oauth::{OAuthServer, OAuthSettings, OAuthStores, SigningKey};
use mirobody_ports::{Account, WebSession};
use mirobody_store::{BackendConfig, OpenedBackends};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tower::ServiceExt;

const BASE: &str = "http://127.0.0.1:8080";
const MCP_URL: &str = "http://127.0.0.1:8080/mcp";
const REDIRECT: &str = "https://app.example/callback";
const VERIFIER: &str = "a-verifier-of-forty-three-characters-or-more-0123456789";

struct Harness {
    app: Router,
    server: OAuthServer,
    backends: Arc<OpenedBackends>,
    revoked: RevokedGrants,
    cookie: String,
    _dir: TempDir,
}

struct TempDir(std::path::PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

async fn harness(settings: OAuthSettings) -> Harness {
    static COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("mirobody-oauth-authz-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = BackendConfig { data_dir: dir.clone(), ..BackendConfig::default() };
    let backends = Arc::new(mirobody_store::open(&config).await.unwrap());
    let stores = OAuthStores {
        accounts: backends.accounts(),
        sessions: backends.web_sessions(),
        oauth: backends.oauth(),
        secrets: Some(backends.secrets()),
        passkeys: None,
        identities: Some(backends.identities()),
        access_log: None,
    };
    let key = SigningKey::load_or_create(&dir.join("key.pem")).unwrap();
    let revoked = RevokedGrants::new(Duration::from_secs(900));
    let endpoint = McpEndpoint::new(BASE, "");
    let scopes = vec!["health:read".to_owned(), mirobody_auth::PERSONAL_URL_SCOPE.to_owned()];
    let server = OAuthServer::new(stores, endpoint, settings, key, scopes, revoked.clone());
    // A person, signed in: their session made straight in the store.
    let account = Account {
        id: "u-ana".into(),
        email: "ana@example.com".into(),
        display_name: Some("Ana".into()),
        password_hash: None,
        disabled: false,
        created_at_ms: 0,
    };
    assert!(backends.accounts().create_account(&account).await.unwrap());
    let token = "a-session-token-for-the-tests-0123456789abc";
    let session = WebSession { account_id: "u-ana".into(), created_at_ms: 0, expires_at_ms: i64::MAX / 2 };
    backends.web_sessions().create_web_session(&Sha256::digest(token).into(), &session).await.unwrap();
    Harness {
        app: server.router(),
        server,
        backends,
        revoked,
        cookie: format!("mirobody_session={token}"),
        _dir: TempDir(dir),
    }
}

struct Answer {
    status: StatusCode,
    headers: http::HeaderMap,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|_| panic!("not JSON: {}", self.body))
    }
    fn location(&self) -> url::Url {
        let location =
            self.headers.get(header::LOCATION).unwrap_or_else(|| panic!("no Location: {} {}", self.status, self.body));
        url::Url::parse(location.to_str().unwrap()).unwrap()
    }
    fn query(&self, name: &str) -> Option<String> {
        self.location().query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
    }
}

impl Harness {
    async fn send(&self, request: Request<Body>) -> Answer {
        let response = self.app.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
        Answer { status, headers, body: String::from_utf8_lossy(&bytes).into_owned() }
    }

    async fn get(&self, uri: &str, signed_in: bool) -> Answer {
        let mut request = Request::get(uri);
        if signed_in {
            request = request.header(header::COOKIE, &self.cookie);
        }
        self.send(request.body(Body::empty()).unwrap()).await
    }

    async fn post_form(&self, uri: &str, form: &[(&str, &str)], cookie: bool) -> Answer {
        let body: String = form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
        let mut request = Request::post(uri).header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        if cookie {
            request = request.header(header::COOKIE, &self.cookie);
        }
        self.send(request.body(Body::from(body)).unwrap()).await
    }

    async fn register(&self, metadata: Value) -> Answer {
        let request = Request::post("/register").header(header::CONTENT_TYPE, "application/json");
        self.send(request.body(Body::from(metadata.to_string())).unwrap()).await
    }

    async fn public_client(&self) -> String {
        let answer = self
            .register(
                json!({"redirect_uris": [REDIRECT], "client_name": "Test App", "token_endpoint_auth_method": "none"}),
            )
            .await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
        answer.json()["client_id"].as_str().unwrap().to_owned()
    }

    fn authorize_query(&self, client_id: &str, extra: &[(&str, &str)]) -> String {
        let challenge = challenge(VERIFIER);
        let mut pairs = vec![
            ("response_type", "code"),
            ("client_id", client_id),
            ("redirect_uri", REDIRECT),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("state", "st-1"),
            ("resource", MCP_URL),
        ];
        for (name, value) in extra {
            pairs.retain(|(k, _)| k != name);
            if !value.is_empty() {
                pairs.push((name, value));
            }
        }
        form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish()
    }

    /// The consent page's CSRF token.
    async fn csrf(&self, query: &str) -> String {
        let page = self.get(&format!("/authorize?{query}"), true).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        let at = page.body.find("name=\"csrf\" value=\"").expect("a csrf field") + 19;
        page.body[at..].split('"').next().unwrap().to_owned()
    }

    /// Consents and returns the redirect's answer.
    async fn consent(&self, query: &str) -> Answer {
        let csrf = self.csrf(query).await;
        self.post_form("/authorize", &[("request", query), ("csrf", &csrf), ("decision", "allow")], true).await
    }

    async fn code(&self, client_id: &str) -> String {
        let answer = self.consent(&self.authorize_query(client_id, &[])).await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER);
        answer.query("code").expect("a code")
    }

    async fn redeem(&self, client_id: &str, code: &str, verifier: &str) -> Answer {
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("code_verifier", verifier),
            ("redirect_uri", REDIRECT),
            ("client_id", client_id),
            ("resource", MCP_URL),
        ];
        self.post_form("/token", &form, false).await
    }

    async fn refresh(&self, client_id: &str, refresh_token: &str) -> Answer {
        self.post_form(
            "/token",
            &[("grant_type", "refresh_token"), ("refresh_token", refresh_token), ("client_id", client_id)],
            false,
        )
        .await
    }

    async fn verifier(&self) -> JwtVerifier {
        let config: AuthConfig = serde_json::from_value(json!({"issuer": BASE})).unwrap();
        JwtVerifier::load(&config, MCP_URL)
            .await
            .unwrap()
            .with_issuer_jwk(self.server.signing_key().public_jwk(), self.server.issuer())
            .unwrap()
            .with_revoked_grants(self.revoked.clone())
    }
}

#[tokio::test]
async fn the_metadata_says_exactly_what_is_supported() {
    let h = harness(OAuthSettings::default()).await;
    let answer = h.get("/.well-known/oauth-authorization-server", false).await;
    assert_eq!(answer.status, StatusCode::OK);
    let metadata = answer.json();
    assert_eq!(metadata["issuer"], BASE);
    assert_eq!(metadata["authorization_endpoint"], format!("{BASE}/authorize"));
    assert_eq!(metadata["token_endpoint"], format!("{BASE}/token"));
    assert_eq!(metadata["registration_endpoint"], format!("{BASE}/register"));
    assert_eq!(metadata["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(metadata["authorization_response_iss_parameter_supported"], true);
    assert_eq!(metadata["response_types_supported"], json!(["code"]));
    assert_eq!(answer.headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
    let jwks = h.get("/oauth/jwks.json", false).await.json();
    assert_eq!(jwks["keys"][0]["kid"], h.server.signing_key().kid());
    assert!(jwks["keys"][0].get("d").is_none(), "no private part is published");
}

#[tokio::test]
async fn a_client_registers_signs_in_gets_tokens_and_refreshes() {
    let h = harness(OAuthSettings::default()).await;
    let client = h.public_client().await;
    // Signed out: to the sign-in page, which brings the person back here.
    let query = h.authorize_query(&client, &[]);
    let answer = h.get(&format!("/authorize?{query}"), false).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    let location = answer.headers[header::LOCATION].to_str().unwrap().to_owned();
    assert!(location.starts_with("/signin?next=%2Fauthorize%3F"), "{location}");
    // Signed in: the consent page names the app and its domain, and cannot be framed.
    let page = h.get(&format!("/authorize?{query}"), true).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.body.contains("Test App") && page.body.contains("app.example") && page.body.contains("ana@example.com")
    );
    let policy = page.headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert!(policy.contains("frame-ancestors 'none'") && !policy.contains("form-action"), "{policy}");
    assert_eq!(page.headers[header::X_FRAME_OPTIONS], "DENY");
    // Allowed: the code, the state and the issuer go back to the client.
    let answer = h.consent(&query).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    assert_eq!(answer.location().as_str().split('?').next(), Some(REDIRECT));
    assert_eq!(answer.query("state").as_deref(), Some("st-1"));
    assert_eq!(answer.query("iss").as_deref(), Some(BASE));
    let code = answer.query("code").unwrap();
    let tokens = h.redeem(&client, &code, VERIFIER).await;
    assert_eq!(tokens.status, StatusCode::OK, "{}", tokens.body);
    assert_eq!(tokens.headers[header::CACHE_CONTROL], "no-store");
    let tokens = tokens.json();
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["expires_in"], 900);
    // The access token is one the resource side takes: this person, for this MCP URL.
    let verifier = h.verifier().await;
    let user = verifier.verify(tokens["access_token"].as_str().unwrap()).await.unwrap();
    assert_eq!(user.user_id(), Some("u-ana"));
    assert_eq!(user.scopes(), ["health:read"], "the default scopes leave out the personal URL scope");
    // A refresh gives new tokens; the old refresh token is spent.
    let first_refresh = tokens["refresh_token"].as_str().unwrap();
    let refreshed = h.refresh(&client, first_refresh).await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.body);
    let refreshed = refreshed.json();
    assert_ne!(refreshed["refresh_token"], tokens["refresh_token"]);
    assert!(verifier.verify(refreshed["access_token"].as_str().unwrap()).await.is_ok());
    // The spent one again: someone holds a copy. The whole grant ends, the new tokens too.
    let reused = h.refresh(&client, first_refresh).await;
    assert_eq!((reused.status, reused.json()["error"].clone()), (StatusCode::BAD_REQUEST, json!("invalid_grant")));
    let newest = h.refresh(&client, refreshed["refresh_token"].as_str().unwrap()).await;
    assert_eq!(newest.status, StatusCode::BAD_REQUEST, "the family is revoked");
    assert_eq!(verifier.verify(refreshed["access_token"].as_str().unwrap()).await.unwrap_err(), TokenError::Revoked);
    assert!(h.backends.oauth().grants_of("u-ana").await.unwrap().is_empty());
}

#[tokio::test]
async fn a_code_works_once_and_its_replay_revokes_what_it_gave() {
    let h = harness(OAuthSettings::default()).await;
    let client = h.public_client().await;
    let code = h.code(&client).await;
    let first = h.redeem(&client, &code, VERIFIER).await.json();
    let access = first["access_token"].as_str().unwrap().to_owned();
    let verifier = h.verifier().await;
    assert!(verifier.verify(&access).await.is_ok());
    let second = h.redeem(&client, &code, VERIFIER).await;
    assert_eq!(second.json()["error"], "invalid_grant");
    assert_eq!(verifier.verify(&access).await.unwrap_err(), TokenError::Revoked);
    let refresh = h.refresh(&client, first["refresh_token"].as_str().unwrap()).await;
    assert_eq!(refresh.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn pkce_is_required_s256_only_and_a_wrong_verifier_spends_the_code() {
    let h = harness(OAuthSettings::default()).await;
    let client = h.public_client().await;
    for (extra, description) in [
        (vec![("code_challenge", "")], "PKCE is required"),
        (vec![("code_challenge_method", "plain")], "S256"),
        (vec![("code_challenge_method", "")], "S256"),
    ] {
        let answer = h.get(&format!("/authorize?{}", h.authorize_query(&client, &extra)), true).await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER);
        assert_eq!(answer.query("error").as_deref(), Some("invalid_request"));
        assert!(answer.query("error_description").unwrap().contains(description));
        assert_eq!(answer.query("state").as_deref(), Some("st-1"));
        assert_eq!(answer.query("iss").as_deref(), Some(BASE));
    }
    let code = h.code(&client).await;
    let wrong = h.redeem(&client, &code, "another-verifier-of-forty-three-characters-0123").await;
    assert_eq!(wrong.json()["error"], "invalid_grant");
    let missing = h
        .post_form("/token", &[("grant_type", "authorization_code"), ("code", &code), ("client_id", &client)], false)
        .await;
    assert_eq!(missing.json()["error"], "invalid_request");
    let right = h.redeem(&client, &code, VERIFIER).await;
    assert_eq!(right.json()["error"], "invalid_grant", "a code tried with a wrong verifier is spent");
}

#[tokio::test]
async fn errors_about_the_client_or_its_redirect_uri_are_shown_never_redirected() {
    let h = harness(OAuthSettings::default()).await;
    let client = h.public_client().await;
    for query in [
        h.authorize_query(&client, &[("redirect_uri", "https://evil.example/callback")]),
        h.authorize_query(&client, &[("redirect_uri", "https://app.example/callback/../evil")]),
        h.authorize_query("no-such-client", &[]),
        h.authorize_query(&client, &[("client_id", "")]),
    ] {
        let answer = h.get(&format!("/authorize?{query}"), true).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{query}");
        assert!(answer.headers.get(header::LOCATION).is_none(), "never redirected: {query}");
    }
    // The POST checks again: a tampered carried request is refused the same way.
    let query = h.authorize_query(&client, &[]);
    let csrf = h.csrf(&query).await;
    let tampered = h.authorize_query(&client, &[("redirect_uri", "https://evil.example/callback")]);
    let answer =
        h.post_form("/authorize", &[("request", &tampered), ("csrf", &csrf), ("decision", "allow")], true).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert!(answer.headers.get(header::LOCATION).is_none());
}

#[tokio::test]
async fn consent_needs_the_csrf_token_of_the_session() {
    let h = harness(OAuthSettings::default()).await;
    let client = h.public_client().await;
    let query = h.authorize_query(&client, &[]);
    for csrf in ["", "forged"] {
        let answer =
            h.post_form("/authorize", &[("request", &query), ("csrf", csrf), ("decision", "allow")], true).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN);
        assert!(answer.headers.get(header::LOCATION).is_none());
    }
    let csrf = h.csrf(&query).await;
    let signed_out =
        h.post_form("/authorize", &[("request", &query), ("csrf", &csrf), ("decision", "allow")], false).await;
    assert_eq!(signed_out.status, StatusCode::UNAUTHORIZED);
    assert!(h.backends.oauth().grants_of("u-ana").await.unwrap().is_empty(), "nothing was granted");
    // Deny sends the person back with access_denied.
    let denied = h.post_form("/authorize", &[("request", &query), ("csrf", &csrf), ("decision", "deny")], true).await;
    assert_eq!(denied.query("error").as_deref(), Some("access_denied"));
}

#[tokio::test]
async fn tokens_are_bound_to_this_resource() {
    let h = harness(OAuthSettings::default()).await;
    let client = h.public_client().await;
    let other = h
        .get(&format!("/authorize?{}", h.authorize_query(&client, &[("resource", "https://other.example/mcp")])), true)
        .await;
    assert_eq!(other.query("error").as_deref(), Some("invalid_target"));
    let code = h.code(&client).await;
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("code_verifier", VERIFIER),
        ("client_id", client.as_str()),
        ("resource", "https://other.example/mcp"),
    ];
    assert_eq!(h.post_form("/token", &form, false).await.json()["error"], "invalid_target");
    // A token this server issued, presented to a resource server with another URL, is refused.
    let code = h.code(&client).await;
    let token = h.redeem(&client, &code, VERIFIER).await.json()["access_token"].as_str().unwrap().to_owned();
    let elsewhere = JwtVerifier::load(&AuthConfig::default(), "https://other.example/mcp")
        .await
        .unwrap()
        .with_issuer_jwk(h.server.signing_key().public_jwk(), h.server.issuer())
        .unwrap();
    assert_eq!(elsewhere.verify(&token).await.unwrap_err(), TokenError::WrongAudience);
    // An unknown scope is refused.
    let scope = h.get(&format!("/authorize?{}", h.authorize_query(&client, &[("scope", "admin")])), true).await;
    assert_eq!(scope.query("error").as_deref(), Some("invalid_scope"));
}

#[tokio::test]
async fn registration_is_bounded_and_checks_what_it_keeps() {
    let mut settings = OAuthSettings::default();
    settings.registrations_per_hour = 3;
    let h = harness(settings).await;
    for bad in [
        json!({"redirect_uris": ["javascript:alert(1)"]}),
        json!({"redirect_uris": ["http://example.com/cb"]}),
        json!({"redirect_uris": []}),
        json!({"redirect_uris": ["https://a.example/cb"], "grant_types": ["client_credentials"]}),
        json!({"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "private_key_jwt"}),
    ] {
        let answer = h.register(bad.clone()).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{bad}");
    }
    let big = json!({"redirect_uris": ["https://a.example/cb"], "client_name": "x".repeat(20_000)});
    assert_eq!(h.register(big).await.status, StatusCode::PAYLOAD_TOO_LARGE);
    // A confidential client gets a secret, shown once, and must use it.
    let answer = h.register(json!({"redirect_uris": [REDIRECT], "client_name": "Secret App"})).await;
    assert_eq!(answer.status, StatusCode::CREATED);
    let registered = answer.json();
    let (id, secret) = (registered["client_id"].as_str().unwrap(), registered["client_secret"].as_str().unwrap());
    assert_eq!(registered["token_endpoint_auth_method"], "client_secret_basic");
    let without = h.refresh(id, "whatever").await;
    assert_eq!((without.status, without.json()["error"].clone()), (StatusCode::UNAUTHORIZED, json!("invalid_client")));
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"));
    let request = Request::post("/token")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::AUTHORIZATION, format!("Basic {basic}"))
        .body(Body::from("grant_type=refresh_token&refresh_token=unknown"))
        .unwrap();
    assert_eq!(h.send(request).await.json()["error"], "invalid_grant", "authenticated, then the token is unknown");
    // The flood: the bound is 3 an hour from one address; 1 is used.
    for _ in 0..2 {
        assert_eq!(h.register(json!({"redirect_uris": [REDIRECT]})).await.status, StatusCode::CREATED);
    }
    let refused = h.register(json!({"redirect_uris": [REDIRECT]})).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(refused.headers.contains_key(header::RETRY_AFTER));
}

#[tokio::test]
async fn revocation_ends_a_grant_only_for_its_own_client() {
    let h = harness(OAuthSettings::default()).await;
    let (client, intruder) = (h.public_client().await, h.public_client().await);
    let code = h.code(&client).await;
    let tokens = h.redeem(&client, &code, VERIFIER).await.json();
    let (access, refresh) = (tokens["access_token"].as_str().unwrap(), tokens["refresh_token"].as_str().unwrap());
    let verifier = h.verifier().await;
    // Another client's revocation is answered 200 and does nothing.
    let answer = h.post_form("/revoke", &[("token", refresh), ("client_id", &intruder)], false).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(verifier.verify(access).await.is_ok());
    // The client's own, by its access token: the grant ends.
    let answer = h.post_form("/revoke", &[("token", access), ("client_id", &client)], false).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(verifier.verify(access).await.unwrap_err(), TokenError::Revoked);
    assert_eq!(h.refresh(&client, refresh).await.status, StatusCode::BAD_REQUEST);
    // A disabled account's grants give no more tokens.
    let code = h.code(&client).await;
    let refresh = h.redeem(&client, &code, VERIFIER).await.json()["refresh_token"].as_str().unwrap().to_owned();
    assert!(h.backends.accounts().set_account_disabled("u-ana", true).await.unwrap());
    assert_eq!(h.refresh(&client, &refresh).await.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn oversized_requests_are_refused_before_they_are_read() {
    let h = harness(OAuthSettings::default()).await;
    let client = h.public_client().await;
    let padding = "x".repeat(20 * 1024);
    for path in ["/token", "/revoke"] {
        let form = [("grant_type", "refresh_token"), ("refresh_token", padding.as_str()), ("client_id", &client)];
        assert_eq!(h.post_form(path, &form, false).await.status, StatusCode::PAYLOAD_TOO_LARGE, "{path}");
    }
    // An authorization request over 8 KiB is shown as refused, never redirected.
    let query = h.authorize_query(&client, &[("state", &"s".repeat(9 * 1024))]);
    let answer = h.get(&format!("/authorize?{query}"), true).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert!(answer.headers.get(header::LOCATION).is_none());
    let consent = h.post_form("/authorize", &[("request", padding.as_str()), ("csrf", "x")], true).await;
    assert_eq!(consent.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(h.backends.oauth().grants_of("u-ana").await.unwrap().is_empty(), "nothing was granted");
}
