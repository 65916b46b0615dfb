//! Sign-in through an OpenID provider, against the small provider of
//! `support/oidc_provider.rs` on a loopback port: who is signed in, who is linked or given an
//! account, and every answer that must not sign anyone in (a replayed or foreign state, a
//! spoiled ID token, a wrong nonce or audience, an expired token, a provider's error).

#[path = "support/oidc_provider.rs"]
mod oidc_provider;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use http::{Request, StatusCode, header};
use mirobody_auth::{McpEndpoint, RevokedGrants};
use mirobody_oauth::{OAuthServer, OAuthSettings, OAuthStores, SigningKey};
use mirobody_ports::{Account, AccountStore, IdentityStore};
use mirobody_store::{BackendConfig, open};
use oidc_provider::{Provider, Spoil};
use serde_json::json;
use tower::ServiceExt;

const CLIENT_ID: &str = "mirobody-test";

struct Harness {
    router: Router,
    provider: Provider,
    accounts: Arc<dyn AccountStore>,
    identities: Arc<dyn IdentityStore>,
    _dir: tempdir::Dir,
}

/// A temp folder removed when dropped.
mod tempdir {
    pub(crate) struct Dir(pub(crate) std::path::PathBuf);

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

struct Answer {
    status: StatusCode,
    headers: http::HeaderMap,
    body: String,
}

impl Answer {
    fn location(&self) -> String {
        self.headers.get(header::LOCATION).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
    }
}

#[derive(Default)]
struct Browser {
    cookies: HashMap<String, String>,
}

impl Browser {
    async fn get(&mut self, harness: &Harness, path: &str) -> Answer {
        self.send(harness, "GET", path, String::new()).await
    }

    async fn post(&mut self, harness: &Harness, path: &str, fields: &[(&str, &str)]) -> Answer {
        let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish();
        self.send(harness, "POST", path, body).await
    }

    async fn send(&mut self, harness: &Harness, method: &str, path: &str, body: String) -> Answer {
        let mut request = Request::builder().method(method).uri(path);
        if method == "POST" {
            request = request.header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        }
        if !self.cookies.is_empty() {
            let jar: Vec<String> = self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
            request = request.header(header::COOKIE, jar.join("; "));
        }
        let response = harness.router.clone().oneshot(request.body(Body::from(body)).unwrap()).await.unwrap();
        let (parts, body) = response.into_parts();
        let body = String::from_utf8(axum::body::to_bytes(body, 1 << 20).await.unwrap().to_vec()).unwrap();
        for cookie in parts.headers.get_all(header::SET_COOKIE) {
            let cookie = cookie.to_str().unwrap();
            let (pair, attributes) = cookie.split_once(';').unwrap_or((cookie, ""));
            let (name, value) = pair.split_once('=').unwrap();
            if attributes.contains("Max-Age=0") {
                self.cookies.remove(name);
            } else {
                self.cookies.insert(name.to_owned(), value.to_owned());
            }
        }
        Answer { status: parts.status, headers: parts.headers, body }
    }

    fn signed_in(&self) -> bool {
        self.cookies.contains_key("mirobody_session")
    }
}

/// A sign-in sent to the provider: the authorization request's parameters.
struct AtProvider {
    params: HashMap<String, String>,
}

impl AtProvider {
    fn get(&self, key: &str) -> &str {
        self.params.get(key).map(String::as_str).unwrap_or("")
    }

    /// The callback the provider sends the browser to with `code`, having issued it.
    fn issue(&self, harness: &Harness, code: &str, claims: serde_json::Value, spoil: Spoil) -> String {
        harness.provider.issue(code, claims, self.get("code_challenge"), spoil);
        format!("/signin/with/test/callback?code={code}&state={}", self.get("state"))
    }

    /// Good claims for this sign-in's nonce, `extra` added.
    fn claims(&self, harness: &Harness, extra: serde_json::Value) -> serde_json::Value {
        harness.provider.claims(CLIENT_ID, self.get("nonce"), extra)
    }
}

async fn harness(allow_signup: bool) -> Harness {
    static COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("mirobody-oauth-upstream-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let provider = Provider::start(&dir).await;
    let backends = open(&BackendConfig::embedded(dir.join("data"))).await.expect("SQLite opens");
    let stores = OAuthStores {
        accounts: backends.accounts(),
        sessions: backends.web_sessions(),
        oauth: backends.oauth(),
        secrets: None,
        passkeys: None,
        identities: Some(backends.identities()),
        access_log: None,
    };
    let settings: OAuthSettings = serde_json::from_value(json!({"providers": [{
        "id": "test", "name": "Test ID", "issuer": provider.issuer(), "client_id": CLIENT_ID,
        "client_secret": oidc_provider::CLIENT_SECRET, "allow_signup": allow_signup,
    }]}))
    .unwrap();
    settings.validate().unwrap();
    let key = SigningKey::load_or_create(&dir.join("key.pem")).unwrap();
    let endpoint = McpEndpoint::new("http://127.0.0.1:8080", "");
    let revoked = RevokedGrants::new(Duration::from_secs(900));
    let (accounts, identities) = (backends.accounts(), backends.identities());
    let server = OAuthServer::new(stores, endpoint, settings, key, vec![], revoked);
    for (id, email, disabled) in [("u_alice", "alice@example.com", false), ("u_dora", "dora@example.com", true)] {
        let account = Account {
            id: id.into(),
            email: email.into(),
            display_name: None,
            password_hash: None,
            disabled,
            created_at_ms: 0,
        };
        assert!(accounts.create_account(&account).await.unwrap());
    }
    Harness { router: server.router(), provider, accounts, identities, _dir: tempdir::Dir(dir) }
}

/// Starts a sign-in: the browser is sent to the provider.
async fn start(harness: &Harness, browser: &mut Browser, next: &str) -> AtProvider {
    let answer = browser.get(harness, &format!("/signin/with/test?next={next}")).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    let location = url::Url::parse(&answer.location()).unwrap();
    assert_eq!(
        format!("{}", location.as_str().split('?').next().unwrap()),
        format!("{}/authorize", harness.provider.issuer())
    );
    AtProvider { params: location.query_pairs().into_owned().collect() }
}

#[tokio::test]
async fn the_authorization_request_is_code_with_pkce_state_and_nonce() {
    let harness = harness(false).await;
    let mut browser = Browser::default();
    let page = browser.get(&harness, "/signin?next=/account/x").await;
    assert!(page.body.contains("href=\"/signin/with/test?next=%2Faccount%2Fx\""), "{}", page.body);
    assert!(page.body.contains("Sign in with Test ID"), "{}", page.body);
    let at = start(&harness, &mut browser, "/account").await;
    assert_eq!(at.get("response_type"), "code");
    assert_eq!(at.get("client_id"), CLIENT_ID);
    assert_eq!(at.get("redirect_uri"), "http://127.0.0.1:8080/signin/with/test/callback");
    assert_eq!(at.get("code_challenge_method"), "S256");
    assert_eq!(at.get("scope"), "openid email profile");
    assert!(at.get("state").len() >= 43 && at.get("nonce").len() >= 43);
    assert!(browser.cookies.contains_key("mirobody_oidc_state"), "the state is bound to the browser");
    // A second start has a state and nonce of its own.
    let again = start(&harness, &mut Browser::default(), "/account").await;
    assert_ne!(again.get("state"), at.get("state"));
    assert_ne!(again.get("nonce"), at.get("nonce"));
    // An unknown provider is no page.
    assert_eq!(browser.get(&harness, "/signin/with/nobody").await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_verified_email_links_its_account_and_the_link_signs_in_after() {
    let harness = harness(false).await;
    let mut browser = Browser::default();
    let at = start(&harness, &mut browser, "/account?tab=apps").await;
    let claims = at.claims(&harness, json!({"sub": "alice-sub", "email": "Alice@Example.com", "email_verified": true}));
    let answer = browser.get(&harness, &at.issue(&harness, "code-1", claims, Spoil::None)).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    assert_eq!(answer.location(), "/account?tab=apps");
    assert!(browser.signed_in());
    assert!(!browser.cookies.contains_key("mirobody_oidc_state"), "the state cookie is cleared");
    assert_eq!(harness.provider.pkce_ok(), 1, "the code was proved with the PKCE verifier");
    let page = browser.get(&harness, "/account").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("alice@example.com"), "{}", page.body);
    let links = harness.identities.identities_of("u_alice").await.unwrap();
    assert_eq!(links.len(), 1);
    assert_eq!((links[0].provider.as_str(), links[0].subject.as_str()), ("test", "alice-sub"));

    // Linked, the subject signs in whatever email the provider gives now.
    let mut other = Browser::default();
    let at = start(&harness, &mut other, "/account").await;
    let claims = at.claims(&harness, json!({"sub": "alice-sub", "email": "new@elsewhere.org"}));
    let answer = other.get(&harness, &at.issue(&harness, "code-2", claims, Spoil::None)).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    assert!(other.get(&harness, "/account").await.body.contains("alice@example.com"));
}

#[tokio::test]
async fn nobody_gets_in_without_an_account_or_a_verified_email() {
    let harness = harness(false).await;
    // An unknown person, verified email and all: no account is made.
    let mut browser = Browser::default();
    let at = start(&harness, &mut browser, "/account").await;
    let claims = at.claims(&harness, json!({"sub": "eve", "email": "eve@example.com", "email_verified": true}));
    let answer = browser.get(&harness, &at.issue(&harness, "c1", claims, Spoil::None)).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert!(answer.body.contains("no account for that address"), "{}", answer.body);
    assert!(!browser.signed_in());
    assert_eq!(harness.accounts.account_by_email("eve@example.com").await.unwrap(), None);
    assert_eq!(harness.identities.identity_account("test", "eve").await.unwrap(), None);

    // Alice's address, unverified (or vouched for as a string): not Alice.
    for verified in [json!(false), json!("true"), serde_json::Value::Null] {
        let mut browser = Browser::default();
        let at = start(&harness, &mut browser, "/account").await;
        let claims =
            at.claims(&harness, json!({"sub": "mallory", "email": "alice@example.com", "email_verified": verified}));
        let answer = browser.get(&harness, &at.issue(&harness, "c2", claims, Spoil::None)).await;
        assert!(!browser.signed_in(), "{verified}: {}", answer.body);
        assert_ne!(answer.status, StatusCode::SEE_OTHER);
        assert_eq!(harness.identities.identity_account("test", "mallory").await.unwrap(), None);
    }

    // A disabled account is refused, linked or not.
    let mut browser = Browser::default();
    let at = start(&harness, &mut browser, "/account").await;
    let claims = at.claims(&harness, json!({"sub": "dora", "email": "dora@example.com", "email_verified": true}));
    let answer = browser.get(&harness, &at.issue(&harness, "c3", claims, Spoil::None)).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert!(answer.body.contains("disabled"), "{}", answer.body);
    assert!(!browser.signed_in());
}

#[tokio::test]
async fn allow_signup_makes_an_account_from_a_verified_email() {
    let harness = harness(true).await;
    let mut browser = Browser::default();
    let at = start(&harness, &mut browser, "/account").await;
    let claims = at.claims(
        &harness,
        json!({"sub": "newcomer", "email": "New@Example.com", "email_verified": true, "name": "Nia New"}),
    );
    let answer = browser.get(&harness, &at.issue(&harness, "c1", claims, Spoil::None)).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    assert!(browser.signed_in());
    let account = harness.accounts.account_by_email("new@example.com").await.unwrap().expect("an account is made");
    assert_eq!(account.display_name.as_deref(), Some("Nia New"));
    assert_eq!(account.password_hash, None, "no password: it signs in through the provider");
    assert_eq!(harness.identities.identity_account("test", "newcomer").await.unwrap(), Some(account.id.clone()));
    // Still not from an unverified email.
    let mut browser = Browser::default();
    let at = start(&harness, &mut browser, "/account").await;
    let claims = at.claims(&harness, json!({"sub": "unsure", "email": "unsure@example.com"}));
    let answer = browser.get(&harness, &at.issue(&harness, "c2", claims, Spoil::None)).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN, "{}", answer.body);
    assert_eq!(harness.accounts.account_by_email("unsure@example.com").await.unwrap(), None);
}

#[tokio::test]
async fn a_state_works_once_and_only_in_its_browser() {
    let harness = harness(false).await;
    let mut browser = Browser::default();
    let at = start(&harness, &mut browser, "/account").await;
    let claims = at.claims(&harness, json!({"sub": "a", "email": "alice@example.com", "email_verified": true}));
    let callback = at.issue(&harness, "c1", claims.clone(), Spoil::None);

    // Another browser (an attacker's link sent to someone) cannot use it: no state cookie.
    let mut stranger = Browser::default();
    let answer = stranger.get(&harness, &callback).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert!(!stranger.signed_in());
    // A state the browser's cookie does not hold, or none.
    // (Each answer clears the browser's state cookie: it is put back after each.)
    let keep = browser.cookies.clone();
    let wrong = callback.replace(at.get("state"), "forged-state-value");
    assert_eq!(browser.get(&harness, &wrong).await.status, StatusCode::BAD_REQUEST);
    browser.cookies = keep.clone();
    let answer = browser.get(&harness, "/signin/with/test/callback?code=c1").await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    browser.cookies = keep;

    let answer = browser.get(&harness, &callback).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    // Replayed, with the cookie put back: taken already.
    let mut replay = Browser::default();
    replay.cookies.insert("mirobody_oidc_state".into(), at.get("state").into());
    harness.provider.issue("c1", claims, at.get("code_challenge"), Spoil::None);
    let answer = replay.get(&harness, &callback).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert!(answer.body.contains("expired or was used"), "{}", answer.body);
    assert!(!replay.signed_in());
    // A state of this provider does not finish at another's callback.
    let mut browser = Browser::default();
    let at = start(&harness, &mut browser, "/account").await;
    let answer = browser.get(&harness, &format!("/signin/with/other/callback?code=x&state={}", at.get("state"))).await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn spoiled_id_tokens_are_refused() {
    let harness = harness(true).await;
    let good = json!({"sub": "alice-sub", "email": "alice@example.com", "email_verified": true});
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    type Claims<'a> = Box<dyn Fn(&AtProvider) -> serde_json::Value + 'a>;
    let cases: Vec<(&str, Claims<'_>, Spoil)> = vec![
        ("a changed signature", Box::new(|at| at.claims(&harness, good.clone())), Spoil::Signature),
        ("another key", Box::new(|at| at.claims(&harness, good.clone())), Spoil::OtherKey),
        ("no ID token", Box::new(|at| at.claims(&harness, good.clone())), Spoil::NoIdToken),
        ("HS256 with the client secret", Box::new(|at| at.claims(&harness, good.clone())), Spoil::Hs256),
        ("alg none", Box::new(|at| at.claims(&harness, good.clone())), Spoil::Unsigned),
        ("a wrong nonce", Box::new(|_| harness.provider.claims(CLIENT_ID, "not-the-nonce", good.clone())), Spoil::None),
        (
            "another audience",
            Box::new(|at| harness.provider.claims("someone-else", at.get("nonce"), good.clone())),
            Spoil::None,
        ),
        (
            "another issuer",
            Box::new(|at| {
                let mut claims = at.claims(&harness, good.clone());
                claims["iss"] = json!("https://evil.example.com");
                claims
            }),
            Spoil::None,
        ),
        (
            "an expired token",
            Box::new(|at| {
                let mut claims = at.claims(&harness, good.clone());
                claims["exp"] = json!(now - 600);
                claims["iat"] = json!(now - 900);
                claims
            }),
            Spoil::None,
        ),
    ];
    for (n, (case, claims, spoil)) in cases.iter().enumerate() {
        let mut browser = Browser::default();
        let at = start(&harness, &mut browser, "/account").await;
        let callback = at.issue(&harness, &format!("code-{n}"), claims(&at), *spoil);
        let answer = browser.get(&harness, &callback).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{case}: {}", answer.body);
        assert!(answer.body.contains("could not be verified"), "{case}: {}", answer.body);
        assert!(!browser.signed_in(), "{case}");
    }
    assert_eq!(harness.identities.identity_account("test", "alice-sub").await.unwrap(), None, "nothing linked");
}

#[tokio::test]
async fn provider_errors_and_oversized_answers_are_shown_plainly() {
    let harness = harness(false).await;
    let mut browser = Browser::default();
    let at = start(&harness, &mut browser, "/account").await;
    let path = format!(
        "/signin/with/test/callback?error=access_denied&error_description=%3Cb%3EThe+user+said+no&state={}",
        at.get("state")
    );
    let answer = browser.get(&harness, &path).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert!(
        answer.body.contains("Test ID did not sign you in: access_denied (&lt;b&gt;The user said no)."),
        "{}",
        answer.body
    );

    // A token answer over the bound.
    let mut browser = Browser::default();
    let at = start(&harness, &mut browser, "/account").await;
    let claims = at.claims(&harness, json!({"sub": "a", "email": "alice@example.com", "email_verified": true}));
    let answer = browser.get(&harness, &at.issue(&harness, "huge", claims, Spoil::Huge)).await;
    assert_eq!(answer.status, StatusCode::BAD_GATEWAY, "{}", answer.body);
    assert!(!browser.signed_in());

    // An over-long parameter is refused before anything is looked up.
    let mut browser = Browser::default();
    let at = start(&harness, &mut browser, "/account").await;
    let long = format!("/signin/with/test/callback?code={}&state={}", "c".repeat(2049), at.get("state"));
    let answer = browser.get(&harness, &long).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert!(answer.body.contains("too long"), "{}", answer.body);
    let long = format!("/signin/with/test/callback?error=x&error_description={}&state=s", "d".repeat(2049));
    assert!(browser.get(&harness, &long).await.body.contains("too long"));
}

#[tokio::test]
async fn an_unreachable_provider_is_a_plain_error() {
    let dir = std::env::temp_dir().join(format!("mirobody-oauth-upstream-down-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _dir = tempdir::Dir(dir.clone());
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let backends = open(&BackendConfig::embedded(dir.join("data"))).await.unwrap();
    let stores = OAuthStores {
        accounts: backends.accounts(),
        sessions: backends.web_sessions(),
        oauth: backends.oauth(),
        secrets: None,
        passkeys: None,
        identities: Some(backends.identities()),
        access_log: None,
    };
    let settings: OAuthSettings = serde_json::from_value(json!({"providers": [{
        "id": "down", "name": "Down", "issuer": format!("http://127.0.0.1:{port}"), "client_id": "x",
    }]}))
    .unwrap();
    let key = SigningKey::load_or_create(&dir.join("key.pem")).unwrap();
    let endpoint = McpEndpoint::new("http://127.0.0.1:8080", "");
    let server = OAuthServer::new(stores, endpoint, settings, key, vec![], RevokedGrants::new(Duration::from_secs(60)));
    let request = Request::builder().uri("/signin/with/down").body(Body::empty()).unwrap();
    let response = server.router().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
}

#[tokio::test]
async fn the_access_page_lists_links_and_unlinks_with_its_csrf_token() {
    let harness = harness(false).await;
    let mut browser = Browser::default();
    let at = start(&harness, &mut browser, "/account").await;
    let claims = at.claims(&harness, json!({"sub": "alice-sub", "email": "alice@example.com", "email_verified": true}));
    assert_eq!(
        browser.get(&harness, &at.issue(&harness, "c1", claims, Spoil::None)).await.status,
        StatusCode::SEE_OTHER
    );
    // Someone else's link, which Alice's form must not remove.
    let bob = Account {
        id: "u_bob".into(),
        email: "bob@example.com".into(),
        display_name: None,
        password_hash: None,
        disabled: false,
        created_at_ms: 0,
    };
    assert!(harness.accounts.create_account(&bob).await.unwrap());
    let link = mirobody_ports::IdentityLink {
        provider: "test".into(),
        subject: "bob-sub".into(),
        account_id: "u_bob".into(),
        email: None,
        created_at_ms: 0,
    };
    assert!(harness.identities.link_identity(&link).await.unwrap());

    let page = browser.get(&harness, "/account").await;
    assert!(page.body.contains("<strong>Test ID</strong> as alice@example.com"), "{}", page.body);
    assert!(page.body.contains("name=\"subject\" value=\"alice-sub\""), "{}", page.body);
    let start = page.body.find("name=\"csrf\" value=\"").unwrap() + 19;
    let csrf = page.body[start..].split('"').next().unwrap().to_owned();
    let unlink = "/account/identities/unlink";
    let fields = |csrf: &str, subject: &str| {
        vec![("csrf", csrf.to_owned()), ("provider", "test".to_owned()), ("subject", subject.to_owned())]
    };
    let forged = browser.post(&harness, unlink, &pairs(&fields("forged", "alice-sub"))).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    browser.post(&harness, unlink, &pairs(&fields(&csrf, "bob-sub"))).await;
    assert_eq!(harness.identities.identity_account("test", "bob-sub").await.unwrap().as_deref(), Some("u_bob"));
    assert_eq!(harness.identities.identity_account("test", "alice-sub").await.unwrap().as_deref(), Some("u_alice"));
    let answer = browser.post(&harness, unlink, &pairs(&fields(&csrf, "alice-sub"))).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    assert_eq!(harness.identities.identity_account("test", "alice-sub").await.unwrap(), None);
    assert!(browser.get(&harness, "/account").await.body.contains("No identity provider is linked"));
}

fn pairs<'a>(fields: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    fields.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

#[tokio::test]
async fn one_address_starts_a_bounded_number_of_sign_ins() {
    let harness = harness(false).await;
    let from = |address: &str| {
        let mut request = Request::builder().uri("/signin/with/test").body(Body::empty()).unwrap();
        request.extensions_mut().insert(mirobody_ports::ClientAddr(address.parse().unwrap()));
        request
    };
    for n in 0..10 {
        let response = harness.router.clone().oneshot(from("198.51.100.7")).await.unwrap();
        assert_eq!(response.status(), StatusCode::SEE_OTHER, "start {n}");
    }
    let response = harness.router.clone().oneshot(from("198.51.100.7")).await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = response.headers()[header::RETRY_AFTER].to_str().unwrap().parse().unwrap();
    assert!((1..=6).contains(&wait), "{wait}");
    // Another address is not held back.
    let response = harness.router.clone().oneshot(from("203.0.113.9")).await.unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
}
