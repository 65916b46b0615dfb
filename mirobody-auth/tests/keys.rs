//! Keys: ES256, JWKS files and URLs (with the refresh limit), rotation, the default audience,
//! keys derived from private PEMs, and configurations that must not start.

mod common;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use common::*;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey};
use mirobody_auth::{AuthConfig, Authenticator, JwtVerifier, McpEndpoint, TokenError};
use serde_json::{Value, json};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mirobody-auth-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn jwk(private_pem: &str, alg: Algorithm, kid: &str) -> Jwk {
    let key = match alg {
        Algorithm::ES256 => EncodingKey::from_ec_pem(&fixture_bytes(private_pem)).unwrap(),
        _ => EncodingKey::from_rsa_pem(&fixture_bytes(private_pem)).unwrap(),
    };
    let mut jwk = Jwk::from_encoding_key(&key, alg).unwrap();
    jwk.common.key_id = Some(kid.to_owned());
    jwk
}

fn from(value: Value) -> AuthConfig {
    serde_json::from_value(value).unwrap()
}

async fn verifier(config: &AuthConfig) -> JwtVerifier {
    JwtVerifier::load(config, MCP_URL).await.expect("valid config")
}

#[tokio::test]
async fn es256_tokens_are_accepted() {
    let config = from(json!({"es256": {"public_key_file": fixture("test-only-es256-public.pem")}}));
    let v = verifier(&config).await;
    let user = v.verify(&es256(&claims("erin"))).await.unwrap();
    assert_eq!(user.user_id(), Some("erin"));
    // An RS256 token is not an ES256 token.
    let rs = rs256(&claims("erin"), "test-only-rs256-a-private.pem", None);
    assert_eq!(v.verify(&rs).await.unwrap_err(), TokenError::AlgorithmNotAccepted);
}

#[tokio::test]
async fn public_keys_are_derived_from_private_pems() {
    let config = from(json!({
        "rs256": {"private_key_file": fixture("test-only-rs256-a-private.pem")},
        "es256": {"private_key_file": fixture("test-only-es256-private.pem")},
    }));
    let v = verifier(&config).await;
    assert!(v.verify(&rs256(&claims("a"), "test-only-rs256-a-private.pem", None)).await.is_ok());
    assert!(v.verify(&es256(&claims("a"))).await.is_ok());
    assert_eq!(
        v.verify(&rs256(&claims("a"), "test-only-rs256-b-private.pem", None)).await.unwrap_err(),
        TokenError::BadSignature
    );
}

#[tokio::test]
async fn a_jwks_file_key_is_chosen_by_kid() {
    let dir = temp_dir("jwks-file");
    let path = dir.join("jwks.json");
    let set = JwkSet { keys: vec![jwk("test-only-rs256-b-private.pem", Algorithm::RS256, "key-b")] };
    std::fs::write(&path, serde_json::to_vec(&set).unwrap()).unwrap();
    let config = from(json!({"jwks": path}));
    let v = verifier(&config).await;

    let token = rs256(&claims("bob"), "test-only-rs256-b-private.pem", Some("key-b"));
    assert_eq!(v.verify(&token).await.unwrap().user_id(), Some("bob"));
    // The same key under a kid the document does not have: unknown.
    let token = rs256(&claims("bob"), "test-only-rs256-b-private.pem", Some("key-x"));
    assert_eq!(v.verify(&token).await.unwrap_err(), TokenError::UnknownKey);
    // Another key claiming the known kid: its signature fails.
    let token = rs256(&claims("bob"), "test-only-rs256-a-private.pem", Some("key-b"));
    assert_eq!(v.verify(&token).await.unwrap_err(), TokenError::BadSignature);
}

#[tokio::test]
async fn symmetric_and_encryption_keys_in_a_jwks_are_ignored() {
    let dir = temp_dir("jwks-odd");
    let path = dir.join("jwks.json");
    let mut enc = jwk("test-only-rs256-b-private.pem", Algorithm::RS256, "enc");
    enc.common.public_key_use = Some(jsonwebtoken::jwk::PublicKeyUse::Encryption);
    let document = json!({"keys": [
        {"kty": "oct", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA", "kid": "hmac", "alg": "HS256"},
        enc,
        jwk("test-only-es256-private.pem", Algorithm::ES256, "ec"),
    ]});
    std::fs::write(&path, document.to_string()).unwrap();
    let v = verifier(&from(json!({"jwks": path}))).await;
    let forged =
        forged(&json!({"alg": "HS256", "kid": "hmac"}), &claims("x"), Some(b"secret-secret-secret-secret-secret"));
    assert_eq!(v.verify(&forged).await.unwrap_err(), TokenError::AlgorithmNotAccepted);
    let token = rs256(&claims("x"), "test-only-rs256-b-private.pem", Some("enc"));
    assert_eq!(v.verify(&token).await.unwrap_err(), TokenError::UnknownKey);
    let mut header = jsonwebtoken::Header::new(Algorithm::ES256);
    header.kid = Some("ec".into());
    let key = EncodingKey::from_ec_pem(&fixture_bytes("test-only-es256-private.pem")).unwrap();
    let token = jsonwebtoken::encode(&header, &claims("x"), &key).unwrap();
    assert!(v.verify(&token).await.is_ok());
}

struct JwksServer {
    url: String,
    document: Arc<Mutex<String>>,
    hits: Arc<AtomicUsize>,
}

async fn jwks_server(initial: &JwkSet) -> JwksServer {
    let document = Arc::new(Mutex::new(serde_json::to_string(initial).unwrap()));
    let hits = Arc::new(AtomicUsize::new(0));
    let (doc, count) = (Arc::clone(&document), Arc::clone(&hits));
    let router = Router::new().route(
        "/jwks.json",
        get(move || {
            count.fetch_add(1, Ordering::SeqCst);
            let body = doc.lock().unwrap().clone();
            async move { body }
        }),
    );
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    JwksServer { url: format!("http://{address}/jwks.json"), document, hits }
}

#[tokio::test]
async fn a_jwks_url_is_fetched_at_start_and_refreshed_at_most_once_a_minute() {
    let server = jwks_server(&JwkSet { keys: vec![jwk("test-only-rs256-a-private.pem", Algorithm::RS256, "a")] }).await;
    let v = verifier(&from(json!({"jwks": server.url}))).await;
    assert_eq!(server.hits.load(Ordering::SeqCst), 1, "fetched at start");

    let token_a = rs256(&claims("u"), "test-only-rs256-a-private.pem", Some("a"));
    assert!(v.verify(&token_a).await.is_ok());
    assert_eq!(server.hits.load(Ordering::SeqCst), 1, "a known kid needs no fetch");

    // The issuer rotates in key b: a token naming it makes the verifier fetch again.
    *server.document.lock().unwrap() = serde_json::to_string(&JwkSet {
        keys: vec![
            jwk("test-only-rs256-a-private.pem", Algorithm::RS256, "a"),
            jwk("test-only-rs256-b-private.pem", Algorithm::RS256, "b"),
        ],
    })
    .unwrap();
    let token_b = rs256(&claims("u"), "test-only-rs256-b-private.pem", Some("b"));
    assert_eq!(v.verify(&token_b).await.unwrap().user_id(), Some("u"));
    assert_eq!(server.hits.load(Ordering::SeqCst), 2, "an unknown kid triggers one refresh");

    // More unknown kids within the minute: refused without another fetch each.
    for kid in ["c", "d", "e"] {
        let token = rs256(&claims("u"), "test-only-rs256-b-private.pem", Some(kid));
        assert_eq!(v.verify(&token).await.unwrap_err(), TokenError::UnknownKey);
    }
    assert_eq!(server.hits.load(Ordering::SeqCst), 2, "refreshes are limited to one a minute");
    assert!(v.verify(&token_b).await.is_ok(), "the refreshed keys stay cached");
}

#[tokio::test]
async fn a_key_withdrawn_from_the_jwks_stops_working_once_the_cache_is_stale() {
    let server = jwks_server(&JwkSet { keys: vec![jwk("test-only-rs256-a-private.pem", Algorithm::RS256, "a")] }).await;
    // No minimum interval and no maximum age: every verification refetches.
    let v = verifier(&from(json!({"jwks": server.url, "jwks_refresh": 0, "jwks_max_age": "0s"}))).await;
    let token_a = rs256(&claims("u"), "test-only-rs256-a-private.pem", Some("a"));
    assert!(v.verify(&token_a).await.is_ok());
    *server.document.lock().unwrap() =
        serde_json::to_string(&JwkSet { keys: vec![jwk("test-only-rs256-b-private.pem", Algorithm::RS256, "b")] })
            .unwrap();
    assert_eq!(v.verify(&token_a).await.unwrap_err(), TokenError::UnknownKey);
    assert!(server.hits.load(Ordering::SeqCst) >= 3);
}

#[tokio::test]
async fn an_unreachable_jwks_url_does_not_stop_the_server() {
    // Nothing listens on port 9 of the loopback address.
    let v = verifier(&from(json!({"jwks": "http://127.0.0.1:9/jwks.json"}))).await;
    let token = rs256(&claims("u"), "test-only-rs256-a-private.pem", Some("a"));
    assert_eq!(v.verify(&token).await.unwrap_err(), TokenError::UnknownKey);
}

#[tokio::test]
async fn a_plain_http_jwks_url_is_refused_unless_its_host_is_loopback() {
    for url in [
        "http://keys.example.com/jwks.json",
        "http://10.0.0.1/jwks.json",
        "http://0.0.0.0:8080/jwks.json",
        "http://localhost.example.com/jwks.json",
        "HTTP://keys.example.com/jwks.json",
    ] {
        let err = JwtVerifier::new(&from(json!({"jwks": url})), MCP_URL).unwrap_err().to_string();
        assert!(err.starts_with("auth.jwks: ") && err.contains("https"), "{url}: {err}");
    }
    for url in [
        "https://keys.example.com/jwks.json",
        "http://localhost:1/jwks.json",
        "http://LOCALHOST:1/jwks.json",
        "http://127.0.0.1:1/jwks.json",
        "http://127.3.2.1:1/jwks.json",
        "http://[::1]:1/jwks.json",
    ] {
        assert!(JwtVerifier::new(&from(json!({"jwks": url})), MCP_URL).is_ok(), "{url}");
    }
    let err = JwtVerifier::new(&from(json!({"jwks": "https://keys.example.com/", "jwks_timeout": "500ms"})), MCP_URL)
        .unwrap_err()
        .to_string();
    assert!(err.contains("jwks_timeout"), "{err}");
}

/// A log writer for one test: what the verifier logs about a failed fetch.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Log {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Loads a verifier (fetching its JWKS URL) with this thread's log captured: the verifier, the
/// log, and how long the load took. Fails if it takes more than 20 seconds.
async fn load_logged(config: &AuthConfig) -> (JwtVerifier, String, Duration) {
    let log = Log::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let started = Instant::now();
    let verifier = tokio::time::timeout(Duration::from_secs(20), JwtVerifier::load(config, MCP_URL))
        .await
        .expect("the load returns")
        .expect("valid config");
    let elapsed = started.elapsed();
    let text = String::from_utf8_lossy(&log.0.lock().unwrap()).into_owned();
    (verifier, text, elapsed)
}

async fn serve(router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    address
}

#[tokio::test]
async fn an_endless_jwks_body_is_cut_off_at_the_cap() {
    // A body with no length that never ends, counting what the server managed to send.
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&sent);
    let router = Router::new().route(
        "/jwks.json",
        get(move || {
            let counter = Arc::clone(&counter);
            async move {
                let chunk = axum::body::Bytes::from(vec![b' '; 64 * 1024]);
                let stream = futures::stream::repeat_with(move || {
                    counter.fetch_add(chunk.len(), Ordering::SeqCst);
                    Ok::<_, std::io::Error>(chunk.clone())
                });
                axum::body::Body::from_stream(stream)
            }
        }),
    );
    let address = serve(router).await;
    // A long timeout: only the cap can end this fetch quickly.
    let config = from(json!({"jwks": format!("http://{address}/jwks.json"), "jwks_timeout": "1m"}));
    let (v, log, elapsed) = load_logged(&config).await;
    assert!(elapsed < Duration::from_secs(5), "the fetch took {elapsed:?}");
    assert!(log.contains("larger than 1048576 bytes"), "{log}");
    let sent = sent.load(Ordering::SeqCst);
    assert!(sent < 32 * 1024 * 1024, "the server got {sent} bytes out before the client hung up");
    let token = rs256(&claims("u"), "test-only-rs256-a-private.pem", Some("a"));
    assert_eq!(v.verify(&token).await.unwrap_err(), TokenError::UnknownKey);
}

#[tokio::test]
async fn a_jwks_server_that_never_answers_or_trickles_times_out() {
    // Accepts connections and never writes a byte.
    let silent = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
    let silent_address = silent.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
        }
    });
    // Answers at once, then sends a byte every 100 ms, forever.
    let router = Router::new().route(
        "/jwks.json",
        get(|| async {
            let stream = futures::stream::unfold((), |()| async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Some((Ok::<_, std::io::Error>(axum::body::Bytes::from_static(b" ")), ()))
            });
            axum::body::Body::from_stream(stream)
        }),
    );
    let trickle_address = serve(router).await;
    for address in [silent_address, trickle_address] {
        let config = from(json!({"jwks": format!("http://{address}/jwks.json"), "jwks_timeout": "1s"}));
        let (v, log, elapsed) = load_logged(&config).await;
        assert!(elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(5), "{address}: {elapsed:?}");
        assert!(log.contains("JWKS not loaded") && log.contains("timed out"), "{address}: {log}");
        assert!(
            !v.has_keys() || v.verify(&rs256(&claims("u"), "test-only-rs256-a-private.pem", Some("a"))).await.is_err()
        );
    }
}

#[tokio::test]
async fn a_redirect_to_plain_http_is_not_followed() {
    let document =
        serde_json::to_string(&JwkSet { keys: vec![jwk("test-only-rs256-a-private.pem", Algorithm::RS256, "a")] })
            .unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let port = Arc::new(Mutex::new(0u16));
    let (count, p1, p2) = (Arc::clone(&hits), Arc::clone(&port), Arc::clone(&port));
    let redirect = |location: String| (http::StatusCode::FOUND, [(http::header::LOCATION, location)]);
    let router = Router::new()
        .route(
            "/jwks.json",
            get(move || {
                count.fetch_add(1, Ordering::SeqCst);
                let body = document.clone();
                async move { body }
            }),
        )
        // Loopback http to loopback http: followed.
        .route(
            "/moved",
            get(move || {
                let port = *p1.lock().unwrap();
                async move { redirect(format!("http://127.0.0.1:{port}/jwks.json")) }
            }),
        )
        // To plain http on a host that is not loopback (on Linux, 0.0.0.0 reaches this very
        // server, so a followed redirect would show up as a hit).
        .route(
            "/to-http",
            get(move || {
                let port = *p2.lock().unwrap();
                async move { redirect(format!("http://0.0.0.0:{port}/jwks.json")) }
            }),
        );
    let address = serve(router).await;
    *port.lock().unwrap() = address.port();
    let token = rs256(&claims("u"), "test-only-rs256-a-private.pem", Some("a"));

    let (v, log, _) = load_logged(&from(json!({"jwks": format!("http://{address}/to-http")}))).await;
    assert!(log.contains("a redirect to http://0.0.0.0 is not followed"), "{log}");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the redirect was followed");
    assert_eq!(v.verify(&token).await.unwrap_err(), TokenError::UnknownKey);
    assert_eq!(hits.load(Ordering::SeqCst), 0, "nor on the refresh a token's kid asks for");

    let (v, log, _) = load_logged(&from(json!({"jwks": format!("http://{address}/moved")}))).await;
    assert!(!log.contains("JWKS not loaded"), "{log}");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    assert_eq!(v.verify(&token).await.unwrap().user_id(), Some("u"));
}

#[tokio::test]
async fn previous_keys_verify_and_unknown_keys_do_not() {
    const OLD: &str = "the previous HS256 key, thirty-two bytes+";
    let config = from(json!({
        "hs256_secret": HS_KEY,
        "rs256": {"public_key_file": fixture("test-only-rs256-a-public.pem")},
        "previous_keys": [
            {"alg": "HS256", "secret": OLD},
            {"alg": "RS256", "public_key_file": fixture("test-only-rs256-b-public.pem"), "kid": "2024"},
        ],
    }));
    let v = verifier(&config).await;
    assert!(v.verify(&hs256(&claims("u"), HS_KEY)).await.is_ok(), "current HS256 key");
    assert!(v.verify(&hs256(&claims("u"), OLD)).await.is_ok(), "previous HS256 key");
    assert!(v.verify(&rs256(&claims("u"), "test-only-rs256-a-private.pem", None)).await.is_ok(), "current RS256");
    assert!(
        v.verify(&rs256(&claims("u"), "test-only-rs256-b-private.pem", Some("2024"))).await.is_ok(),
        "previous RS256"
    );
    assert_eq!(
        v.verify(&hs256(&claims("u"), "a key nobody configured, 32 bytes+")).await.unwrap_err(),
        TokenError::BadSignature
    );

    // Once b is dropped from the configuration, its tokens stop working.
    let config = from(json!({"rs256": {"public_key_file": fixture("test-only-rs256-a-public.pem")}}));
    let v = verifier(&config).await;
    assert_eq!(
        v.verify(&rs256(&claims("u"), "test-only-rs256-b-private.pem", None)).await.unwrap_err(),
        TokenError::BadSignature
    );
}

#[tokio::test]
async fn the_audience_defaults_to_the_canonical_mcp_url() {
    let config = from(json!({"hs256_secret": HS_KEY}));
    let endpoint = McpEndpoint::new("https://mcp.example.com/", "/api");
    let auth = Authenticator::new(&config, endpoint, None).await.unwrap();
    let token = |aud: Value| {
        let mut c = claims("u");
        c["aud"] = aud;
        hs256(&c, HS_KEY)
    };
    assert!(auth.verify_bearer(&token(json!("https://mcp.example.com/api/mcp"))).await.is_ok());
    assert!(
        auth.verify_bearer(&token(json!(["https://other.example", "https://mcp.example.com/api/mcp"]))).await.is_ok()
    );
    for wrong in
        [json!("https://mcp.example.com/mcp"), json!("https://mcp.example.com"), json!(["https://other.example"])]
    {
        assert_eq!(auth.verify_bearer(&token(wrong.clone())).await.unwrap_err(), TokenError::WrongAudience, "{wrong}");
    }

    // A configured audience replaces the default; an empty list turns the check off.
    let config = from(json!({"hs256_secret": HS_KEY, "audience": ["api://mirobody"]}));
    let v = verifier(&config).await;
    assert!(v.verify(&token(json!("api://mirobody"))).await.is_ok());
    assert_eq!(v.verify(&token(json!(MCP_URL))).await.unwrap_err(), TokenError::WrongAudience);
    let config = from(json!({"hs256_secret": HS_KEY, "audience": []}));
    let mut no_aud = claims("u");
    no_aud.as_object_mut().unwrap().remove("aud");
    assert!(verifier(&config).await.verify(&hs256(&no_aud, HS_KEY)).await.is_ok());
}

#[tokio::test]
async fn without_keys_every_token_is_refused() {
    let v = verifier(&AuthConfig::default()).await;
    assert!(!v.has_keys());
    assert_eq!(v.verify(&hs256(&claims("u"), HS_KEY)).await.unwrap_err(), TokenError::NoKeys);
}

#[tokio::test]
async fn configurations_that_cannot_work_stop_the_server_with_the_key_named() {
    let cases = [
        (json!({"hs256_secret": "short"}), "hs256_secret"),
        (json!({"rs256": {}}), "auth.rs256: needs"),
        (json!({"rs256": {"public_key_file": "/nonexistent/key.pem"}}), "/nonexistent/key.pem"),
        (json!({"rs256": {"public_key_file": fixture("test-only-es256-public.pem")}}), "auth.rs256"),
        (
            json!({"rs256": {
                "public_key_file": fixture("test-only-rs256-a-public.pem"),
                "private_key_file": fixture("test-only-rs256-b-private.pem"),
            }}),
            "does not belong",
        ),
        (json!({"es256": {"public_key_file": fixture("test-only-rs256-a-public.pem")}}), "auth.es256"),
        (json!({"previous_keys": [{"alg": "HS256"}]}), "previous_keys[0]"),
        (json!({"previous_keys": [{"alg": "RS256", "secret": HS_KEY}]}), "previous_keys[0]"),
        (json!({"jwks": "/nonexistent/jwks.json"}), "auth.jwks"),
        (json!({"audience": [""]}), "audience"),
    ];
    for (value, expected) in cases {
        let config = from(value.clone());
        let err = JwtVerifier::new(&config, MCP_URL).unwrap_err().to_string();
        assert!(err.contains(expected), "{value}: {err}");
        assert!(!err.contains(HS_KEY), "the error shows a secret: {err}");
    }
    let unknown = serde_json::from_value::<AuthConfig>(json!({"hs256_secrett": HS_KEY})).unwrap_err().to_string();
    assert!(unknown.contains("hs256_secrett"), "{unknown}");
}

#[tokio::test]
async fn debug_output_hides_keys() {
    let config = config();
    let v = verifier(&config).await;
    let auth = authenticator(&config, None).await;
    for text in [format!("{config:?}"), format!("{v:?}"), format!("{auth:?}")] {
        assert!(!text.contains(HS_KEY), "{text}");
        assert!(!text.contains("thirty-two"), "{text}");
    }
    assert!(format!("{config:?}").contains("[REDACTED]"));
}
