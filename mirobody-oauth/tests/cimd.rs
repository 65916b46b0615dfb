//! Clients named by their metadata document's URL, in process over a real SQLite store, with
//! the documents served by a local HTTP server that counts every request it gets: the flow
//! that works, and each fetch this server must refuse (and, where the point is that nothing
//! is fetched, proof that nothing was).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::Uri;
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{Request, StatusCode, header};
use mirobody_auth::{McpEndpoint, RevokedGrants};
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

// ---- The document server ----

/// A local server of client metadata documents, one behaviour per path, counting requests.
struct Documents {
    port: u16,
    hits: Arc<Mutex<HashMap<String, usize>>>,
    /// When each request arrived.
    arrivals: Arc<Mutex<Vec<Instant>>>,
}

impl Documents {
    async fn start() -> Documents {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(Mutex::new(HashMap::new()));
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let (counted, arrived) = (Arc::clone(&hits), Arc::clone(&arrivals));
        let app = Router::new().fallback(move |uri: Uri| {
            let (hits, arrivals) = (Arc::clone(&counted), Arc::clone(&arrived));
            async move {
                *hits.lock().unwrap().entry(uri.path().to_owned()).or_insert(0) += 1;
                arrivals.lock().unwrap().push(Instant::now());
                serve(port, uri.path()).await
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Documents { port, hits, arrivals }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }

    fn all_hits(&self) -> usize {
        self.hits.lock().unwrap().values().sum()
    }
}

fn document(client_id: &str, extra: Value) -> Value {
    let mut doc = json!({
        "client_id": client_id,
        "client_name": "Doc App",
        "client_uri": "https://app.example",
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
    });
    doc.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    doc
}

fn answer(status: StatusCode, content_type: &str, body: Body) -> Response {
    Response::builder().status(status).header(header::CONTENT_TYPE, content_type).body(body).unwrap()
}

fn json_answer(doc: &Value) -> Response {
    answer(StatusCode::OK, "application/json", Body::from(doc.to_string()))
}

async fn serve(port: u16, path: &str) -> Response {
    let own = format!("http://127.0.0.1:{port}{path}");
    match path {
        "/client.json" => json_answer(&document(&own, json!({}))),
        // Known by a host name, which this server resolves itself and then connects to.
        "/localhost.json" => json_answer(&document(&format!("http://localhost:{port}{path}"), json!({}))),
        "/other-id.json" => json_answer(&document(&format!("http://127.0.0.1:{port}/client.json"), json!({}))),
        "/secret.json" => json_answer(&document(&own, json!({"token_endpoint_auth_method": "client_secret_basic"}))),
        "/text.json" => answer(StatusCode::OK, "text/plain", Body::from(document(&own, json!({})).to_string())),
        "/fail.json" => answer(StatusCode::INTERNAL_SERVER_ERROR, "text/plain", Body::from("no")),
        "/big.json" => answer(StatusCode::OK, "application/json", Body::from(vec![b' '; 1 << 20])),
        "/big-stream.json" => {
            // No length announced: the cap must stop the reading itself.
            let chunks = (0..16).map(|_| Ok::<_, Infallible>(Bytes::from(vec![b' '; 64 * 1024])));
            answer(StatusCode::OK, "application/json", Body::from_stream(futures::stream::iter(chunks)))
        }
        "/stall.json" => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            json_answer(&document(&own, json!({})))
        }
        "/redirect.json" => Response::builder()
            .status(StatusCode::FOUND)
            .header(header::LOCATION, "/redirect-target.json")
            .body(Body::empty())
            .unwrap(),
        // What the redirect leads to: a document that would pass, had it been followed.
        "/redirect-target.json" => json_answer(&document(&format!("http://127.0.0.1:{port}/redirect.json"), json!({}))),
        _ => answer(StatusCode::NOT_FOUND, "text/plain", Body::empty()),
    }
}

// ---- The authorization server ----

struct Harness {
    app: Router,
    backends: Arc<OpenedBackends>,
    cookie: String,
    _dir: TempDir,
}

struct TempDir(std::path::PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
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
    fn query(&self, name: &str) -> Option<String> {
        let location = self.headers.get(header::LOCATION).expect("a Location").to_str().unwrap();
        let url = url::Url::parse(location).unwrap();
        url.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
    }
    /// A refusal shown on a page: never a redirect to the unchecked client's URIs.
    fn assert_page_refusal(&self, says: &str) {
        assert_eq!(self.status, StatusCode::BAD_REQUEST, "{}", self.body);
        assert!(self.headers.get(header::LOCATION).is_none(), "an unchecked client is never redirected to");
        assert!(self.body.contains(says), "expected '{says}' in {}", self.body);
    }
}

fn loopback() -> OAuthSettings {
    let mut settings = OAuthSettings::default();
    settings.cimd_allow_loopback_http = true;
    settings
}

async fn harness(settings: OAuthSettings) -> Harness {
    static COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("mirobody-oauth-cimd-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = BackendConfig { data_dir: dir.clone(), ..BackendConfig::default() };
    let backends = Arc::new(mirobody_store::open(&config).await.unwrap());
    let stores = OAuthStores {
        accounts: backends.accounts(),
        sessions: backends.web_sessions(),
        oauth: backends.oauth(),
        secrets: None,
        passkeys: None,
        identities: None,
        access_log: None,
    };
    let key = SigningKey::load_or_create(&dir.join("key.pem")).unwrap();
    let revoked = RevokedGrants::new(Duration::from_secs(900));
    let server =
        OAuthServer::new(stores, McpEndpoint::new(BASE, ""), settings, key, vec!["health:read".to_owned()], revoked);
    let account = Account {
        id: "u-ana".into(),
        email: "ana@example.com".into(),
        display_name: None,
        password_hash: None,
        disabled: false,
        created_at_ms: 0,
    };
    assert!(backends.accounts().create_account(&account).await.unwrap());
    let token = "a-session-token-for-the-tests-0123456789abc";
    let session = WebSession { account_id: "u-ana".into(), created_at_ms: 0, expires_at_ms: i64::MAX / 2 };
    backends.web_sessions().create_web_session(&Sha256::digest(token).into(), &session).await.unwrap();
    Harness { app: server.router(), backends, cookie: format!("mirobody_session={token}"), _dir: TempDir(dir) }
}

impl Harness {
    async fn send(&self, request: Request<Body>) -> Answer {
        let response = self.app.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
        Answer { status, headers, body: String::from_utf8_lossy(&bytes).into_owned() }
    }

    async fn post_form(&self, uri: &str, form: &[(&str, &str)]) -> Answer {
        let body: String = form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
        let request = Request::post(uri)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::COOKIE, &self.cookie);
        self.send(request.body(Body::from(body)).unwrap()).await
    }

    /// The authorization request's query for `client_id`, PKCE S256 of `VERIFIER`.
    fn query(client_id: &str) -> String {
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(VERIFIER.as_bytes()));
        form_urlencoded::Serializer::new(String::new())
            .extend_pairs([
                ("response_type", "code"),
                ("client_id", client_id),
                ("redirect_uri", REDIRECT),
                ("code_challenge", challenge.as_str()),
                ("code_challenge_method", "S256"),
                ("state", "st-1"),
                ("resource", MCP_URL),
            ])
            .finish()
    }

    /// GET /authorize for `client_id`, signed in.
    async fn authorize(&self, client_id: &str) -> Answer {
        let request =
            Request::get(format!("/authorize?{}", Self::query(client_id))).header(header::COOKIE, &self.cookie);
        self.send(request.body(Body::empty()).unwrap()).await
    }

    /// GET /authorize for `client_id`, which must be refused on a page saying `says`, within
    /// `within`.
    async fn refused(&self, client_id: &str, says: &str, within: Duration) {
        let started = Instant::now();
        let answer = self.authorize(client_id).await;
        let took = started.elapsed();
        answer.assert_page_refusal(says);
        assert!(took < within, "{client_id} took {took:?}");
    }
}

// ---- The flow ----

#[tokio::test]
async fn the_metadata_says_documents_are_supported() {
    let h = harness(OAuthSettings::default()).await;
    let answer = h.send(Request::get("/.well-known/oauth-authorization-server").body(Body::empty()).unwrap()).await;
    assert_eq!(answer.json()["client_id_metadata_document_supported"], true);
}

#[tokio::test]
async fn a_document_client_gets_consent_and_tokens_with_pkce() {
    let docs = Documents::start().await;
    let h = harness(loopback()).await;
    let client_id = docs.url("/client.json");
    // The consent page names the app, its redirect domain and the host that vouches for it.
    let page = h.authorize(&client_id).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains("Doc App") && page.body.contains("app.example"), "{}", page.body);
    assert!(page.body.contains("verified by <span class=\"domain\">127.0.0.1</span>"), "{}", page.body);
    let stored = h.backends.oauth().client(&client_id).await.unwrap().expect("the client is kept");
    assert_eq!(stored.registered_from, "metadata");
    assert_eq!(stored.redirect_uris, vec![REDIRECT.to_owned()]);
    assert!(stored.secret_hash.is_none());
    // Consent: a code, the state and the issuer go back.
    let at = page.body.find("name=\"csrf\" value=\"").expect("a csrf field") + 19;
    let csrf = page.body[at..].split('"').next().unwrap().to_owned();
    let query = Harness::query(&client_id);
    let answer = h.post_form("/authorize", &[("request", &query), ("csrf", &csrf), ("decision", "allow")]).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    assert_eq!(answer.query("state").as_deref(), Some("st-1"));
    let code = answer.query("code").expect("a code");
    // The token endpoint knows the client by its URL; the wrong verifier would not do.
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("code_verifier", VERIFIER),
        ("redirect_uri", REDIRECT),
        ("client_id", client_id.as_str()),
    ];
    let tokens = h.post_form("/token", &form).await;
    assert_eq!(tokens.status, StatusCode::OK, "{}", tokens.body);
    let tokens = tokens.json();
    let access = tokens["access_token"].as_str().unwrap();
    let claims: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(access.split('.').nth(1).unwrap()).unwrap()).unwrap();
    assert_eq!(claims["client_id"], client_id.as_str());
    assert_eq!(claims["aud"], MCP_URL);
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let refreshed = h
        .post_form("/token", &[("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", &client_id)])
        .await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.body);
    let new_refresh = refreshed.json()["refresh_token"].as_str().unwrap().to_owned();
    let revoked = h.post_form("/revoke", &[("token", &new_refresh), ("client_id", &client_id)]).await;
    assert_eq!(revoked.status, StatusCode::OK, "{}", revoked.body);
    // Consent page, consent, token, refresh and revoke: one fetch, the rest from the store.
    assert_eq!(docs.hits("/client.json"), 1);
}

#[tokio::test]
async fn a_stale_copy_is_fetched_again() {
    let docs = Documents::start().await;
    let h = harness(loopback()).await;
    let client_id = docs.url("/client.json");
    assert_eq!(h.authorize(&client_id).await.status, StatusCode::OK);
    assert_eq!(h.authorize(&client_id).await.status, StatusCode::OK);
    assert_eq!(docs.hits("/client.json"), 1, "a fresh copy is used");
    let store = h.backends.oauth();
    let mut old = store.client(&client_id).await.unwrap().unwrap();
    old.client_name = Some("Old Name".into());
    old.created_at_ms -= 2 * 3600 * 1000;
    store.put_client(&old).await.unwrap();
    let page = h.authorize(&client_id).await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(docs.hits("/client.json"), 2, "past the TTL it is fetched again");
    assert!(page.body.contains("Doc App") && !page.body.contains("Old Name"));
}

#[tokio::test]
async fn a_host_name_is_resolved_checked_and_connected_to() {
    let docs = Documents::start().await;
    let h = harness(loopback()).await;
    let client_id = format!("http://localhost:{}/localhost.json", docs.port);
    let page = h.authorize(&client_id).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains("verified by <span class=\"domain\">localhost</span>"), "{}", page.body);
    assert_eq!(docs.hits("/localhost.json"), 1);
}

// ---- Where it may fetch from ----

#[tokio::test]
async fn loopback_is_refused_without_the_setting_and_nothing_is_fetched() {
    let docs = Documents::start().await;
    let h = harness(OAuthSettings::default()).await;
    let port = docs.port;
    h.refused(&docs.url("/client.json"), "must use https", Duration::from_secs(1)).await;
    for url in [
        format!("https://127.0.0.1:{port}/client.json"),
        format!("https://localhost:{port}/client.json"),
        format!("https://[::1]:{port}/client.json"),
        format!("https://[::ffff:7f00:1]:{port}/client.json"),
    ] {
        h.refused(&url, "loopback address", Duration::from_secs(1)).await;
    }
    assert_eq!(docs.all_hits(), 0, "no request reached the server");
}

#[tokio::test]
async fn internal_addresses_are_refused_before_any_connection() {
    // Even with loopback open: it opens loopback, nothing else. A connection attempt to any
    // of these would take the whole fetch timeout, not a fraction of a second.
    for settings in [OAuthSettings::default(), loopback()] {
        let h = harness(settings).await;
        for (url, kind) in [
            ("https://169.254.169.254/latest/meta-data.json", "link-local"),
            ("https://10.0.0.1/client.json", "private"),
            ("https://192.168.1.1/client.json", "private"),
            ("https://100.64.0.1/client.json", "shared"),
            ("https://[fe80::1]/client.json", "link-local"),
            ("https://[fd00::1]/client.json", "unique-local"),
            ("https://[::ffff:a9fe:a9fe]/client.json", "link-local"),
            ("https://0.0.0.0/client.json", "unspecified"),
            ("https://192.0.2.1/client.json", "documentation"),
        ] {
            h.refused(url, kind, Duration::from_secs(1)).await;
        }
    }
}

#[tokio::test]
async fn plain_http_to_a_public_host_is_refused_even_with_loopback_open() {
    let h = harness(loopback()).await;
    h.refused("http://app.example/client.json", "must use https", Duration::from_secs(1)).await;
    h.refused("http://8.8.8.8/client.json", "must use https", Duration::from_secs(1)).await;
}

#[tokio::test]
async fn malformed_client_id_urls_are_refused() {
    let h = harness(loopback()).await;
    h.refused("https://app.example/", "must have a host and a path", Duration::from_secs(1)).await;
    h.refused("https://u:p@app.example/c.json", "user name", Duration::from_secs(1)).await;
    h.refused("https://app.example/c.json#f", "fragment", Duration::from_secs(1)).await;
    let long = format!("https://app.example/{}", "a".repeat(2000));
    h.refused(&long, "longer than 2000 bytes", Duration::from_secs(1)).await;
}

// ---- What it fetches ----

#[tokio::test]
async fn documents_that_do_not_describe_a_public_client_at_their_url_are_refused() {
    let docs = Documents::start().await;
    let h = harness(loopback()).await;
    h.refused(&docs.url("/other-id.json"), "client_id is not its URL", Duration::from_secs(2)).await;
    h.refused(&docs.url("/secret.json"), "shared secret", Duration::from_secs(2)).await;
    h.refused(&docs.url("/text.json"), "application/json", Duration::from_secs(2)).await;
    h.refused(&docs.url("/missing.json"), "answered 404", Duration::from_secs(2)).await;
    for path in ["/other-id.json", "/secret.json", "/text.json"] {
        assert!(h.backends.oauth().client(&docs.url(path)).await.unwrap().is_none(), "{path} is not kept");
    }
}

#[tokio::test]
async fn documents_over_the_size_cap_are_refused() {
    let docs = Documents::start().await;
    let h = harness(loopback()).await;
    h.refused(&docs.url("/big.json"), "larger than 64 KiB", Duration::from_secs(3)).await;
    h.refused(&docs.url("/big-stream.json"), "larger than 64 KiB", Duration::from_secs(3)).await;
}

#[tokio::test]
async fn a_server_that_stalls_is_given_up_on_within_the_time_cap() {
    let docs = Documents::start().await;
    let h = harness(loopback()).await;
    let started = Instant::now();
    h.refused(&docs.url("/stall.json"), "did not arrive within 5 s", Duration::from_secs(6)).await;
    assert!(started.elapsed() >= Duration::from_millis(4900), "the cap is 5 s, not less");
    assert_eq!(docs.hits("/stall.json"), 1);
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let docs = Documents::start().await;
    let h = harness(loopback()).await;
    h.refused(&docs.url("/redirect.json"), "redirect, which is not followed", Duration::from_secs(2)).await;
    assert_eq!(docs.hits("/redirect.json"), 1);
    assert_eq!(docs.hits("/redirect-target.json"), 0);
}

// ---- What a failure costs ----

#[tokio::test]
async fn at_most_eight_documents_are_fetched_at_once() {
    let docs = Documents::start().await;
    let mut settings = loopback();
    settings.cimd_fetch_timeout = Duration::from_secs(2);
    let h = harness(settings).await;
    // Twelve stalling documents asked for at once: eight fetches start, the rest wait for one
    // to end (here, at the 2 s cap) or give up.
    let started = Instant::now();
    let urls: Vec<String> = (0..12).map(|n| docs.url(&format!("/stall.json?n={n}"))).collect();
    let answers = futures::future::join_all(urls.iter().map(|url| h.authorize(url))).await;
    for answer in &answers {
        assert!(answer.status.is_client_error() || answer.status.is_server_error(), "{}", answer.status);
        assert!(answer.headers.get(header::LOCATION).is_none());
    }
    let arrivals = docs.arrivals.lock().unwrap().clone();
    let early = arrivals.iter().filter(|at| at.duration_since(started) < Duration::from_millis(1500)).count();
    assert_eq!(early, 8, "eight fetches at once, no more: {arrivals:?}");
}

#[tokio::test]
async fn a_failing_url_is_fetched_once_not_per_request() {
    let docs = Documents::start().await;
    let h = harness(loopback()).await;
    let url = docs.url("/fail.json");
    h.refused(&url, "answered 500", Duration::from_secs(2)).await;
    h.refused(&url, "answered 500", Duration::from_secs(2)).await;
    // The token endpoint: the same client, the same remembered failure, as invalid_client.
    let answer = h
        .post_form(
            "/token",
            &[("grant_type", "authorization_code"), ("code", "x"), ("code_verifier", VERIFIER), ("client_id", &url)],
        )
        .await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{}", answer.body);
    assert_eq!(answer.json()["error"], "invalid_client");
    assert_eq!(docs.hits("/fail.json"), 1);
}

#[tokio::test]
async fn the_token_endpoint_answers_invalid_client_for_an_unusable_document() {
    let docs = Documents::start().await;
    let h = harness(loopback()).await;
    let url = docs.url("/other-id.json");
    let answer =
        h.post_form("/token", &[("grant_type", "refresh_token"), ("refresh_token", "x"), ("client_id", &url)]).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{}", answer.body);
    assert_eq!(answer.json()["error"], "invalid_client");
    let answer = h.post_form("/revoke", &[("token", "x"), ("client_id", "https://10.0.0.1/c.json")]).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{}", answer.body);
    assert_eq!(answer.json()["error"], "invalid_client");
}

/// Stores, for the document at `url`, a copy of the good client's made `age` ago, named
/// "Old Name".
async fn stale_copy(h: &Harness, docs: &Documents, url: &str, age: Duration) {
    assert_eq!(h.authorize(&docs.url("/client.json")).await.status, StatusCode::OK);
    let store = h.backends.oauth();
    let mut old = store.client(&docs.url("/client.json")).await.unwrap().unwrap();
    old.client_id = url.to_owned();
    old.client_name = Some("Old Name".into());
    old.created_at_ms -= i64::try_from(age.as_millis()).unwrap();
    store.put_client(&old).await.unwrap();
}

#[tokio::test]
async fn a_recent_copy_is_used_while_its_host_is_down() {
    let docs = Documents::start().await;
    let h = harness(loopback()).await;
    // Two hours old: past the one-hour cache, within the day of grace; its host answers 500.
    let url = docs.url("/fail.json");
    stale_copy(&h, &docs, &url, Duration::from_secs(2 * 3600)).await;
    for _ in 0..2 {
        let page = h.authorize(&url).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        assert!(page.body.contains("Old Name"), "{}", page.body);
    }
    assert_eq!(docs.hits("/fail.json"), 1, "the failure is remembered: one fetch");

    // Older than the grace: refused.
    let h = harness(loopback()).await;
    stale_copy(&h, &docs, &url, Duration::from_secs(26 * 3600)).await;
    h.refused(&url, "answered 500", Duration::from_secs(2)).await;
}

#[tokio::test]
async fn a_document_gone_or_wrong_is_not_covered_by_its_old_copy() {
    let docs = Documents::start().await;
    let h = harness(loopback()).await;
    // 404: the client withdrew it. Served as text: fetched and found wrong.
    for (path, says) in [("/gone.json", "answered 404"), ("/text.json", "not served as application/json")] {
        let url = docs.url(path);
        stale_copy(&h, &docs, &url, Duration::from_secs(2 * 3600)).await;
        h.refused(&url, says, Duration::from_secs(2)).await;
    }
    // No grace: the host being down refuses too.
    let mut settings = loopback();
    settings.cimd_stale_grace = Duration::ZERO;
    let h = harness(settings).await;
    let url = docs.url("/fail.json");
    stale_copy(&h, &docs, &url, Duration::from_secs(2 * 3600)).await;
    h.refused(&url, "answered 500", Duration::from_secs(2)).await;
}
