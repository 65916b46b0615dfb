//! The passkey routes, driven through `OAuthServer::router` over `SqlStore` on SQLite: what
//! they refuse (another origin, a missing or wrong CSRF header, no session, oversize bodies, a
//! replayed or expired ceremony, another person's passkey), the bound on ceremonies under
//! way, and where passkeys are off. A real authenticator signing in is
//! `mirobody-server/tests/passkeys_in_browser.rs`.

// The shared harness has more than these tests use.
#![allow(dead_code, unused_macros)]

#[path = "support/memory.rs"]
mod memory;

use mirobody_ports::{Passkey, PasskeyCeremony};
use serde_json::{Value, json};

include!("support/pages.rs");

const ORIGIN: &str = "http://localhost:8080";

async fn passkey_harness() -> Harness {
    harness_full(Backing::Sqlite, serde_json::json!({}), ORIGIN, true).await
}

fn passkeys(harness: &Harness) -> Arc<dyn PasskeyStore> {
    harness.passkeys.clone().expect("passkeys are on")
}

/// A JSON POST as the passkey script sends it: from `origin`, with `csrf` in the header.
async fn json_post(
    browser: &mut Browser,
    harness: &Harness,
    path: &str,
    origin: Option<&str>,
    csrf: Option<&str>,
    body: &str,
) -> (StatusCode, Value) {
    let mut request = browser.request("POST", path, Body::from(body.to_owned()), false);
    let headers = request.headers_mut();
    headers.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
    if let Some(origin) = origin {
        headers.insert(header::ORIGIN, origin.parse().unwrap());
    }
    if let Some(csrf) = csrf {
        headers.insert("x-csrf-token", csrf.parse().unwrap());
    }
    let answer = send(harness, request).await;
    browser.keep(&answer);
    let json = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    (answer.status, json)
}

/// The pre-session CSRF token of the sign-in page (in the passkey block's `data-csrf`).
async fn sign_in_csrf(browser: &mut Browser, harness: &Harness) -> String {
    let page = browser.get(harness, "/signin").await;
    let start = page.body.find("data-csrf=\"").expect("a passkey block") + 11;
    page.body[start..].split('"').next().unwrap().to_owned()
}

fn stored(id: &[u8], account: &str) -> Passkey {
    Passkey {
        credential_id: id.to_vec(),
        account_id: account.into(),
        credential: "{}".into(),
        name: "Bob's key".into(),
        created_at_ms: 1_700_000_000_000,
        last_used_at_ms: None,
    }
}

// A registration answer that parses but proves nothing.
fn junk_registration(ceremony: &str) -> String {
    json!({
        "ceremony": ceremony,
        "name": "Laptop",
        "credential": {"id": "AAAA", "rawId": "AAAA", "type": "public-key",
            "response": {"attestationObject": "AAAA", "clientDataJSON": "AAAA"}}
    })
    .to_string()
}

// A sign-in answer that parses but proves nothing.
fn junk_assertion(ceremony: &str) -> String {
    json!({
        "ceremony": ceremony,
        "credential": {"id": "AAAA", "rawId": "AAAA", "type": "public-key",
            "response": {"authenticatorData": "AAAA", "clientDataJSON": "AAAA", "signature": "AAAA",
                "userHandle": "AAAAAAAAAAAAAAAAAAAAAA"}}
    })
    .to_string()
}

#[tokio::test]
async fn pages_offer_passkeys_with_the_script_policy_and_its_script() {
    let harness = passkey_harness().await;
    let mut browser = Browser::from("192.0.2.1");
    let page = browser.get(&harness, "/signin").await;
    let policy = page.headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert!(policy.contains("script-src 'self'") && policy.contains("connect-src 'self'"), "{policy}");
    assert!(policy.contains("default-src 'none'") && policy.contains("frame-ancestors 'none'"), "{policy}");
    assert!(page.body.contains("Sign in with a passkey") && page.body.contains("src=\"/assets/passkey.js\""));
    assert!(!page.body.contains("<script>"), "no inline script");

    browser.sign_in(&harness, ALICE, ALICE_PASSWORD, "").await;
    let account = browser.get(&harness, "/account").await;
    assert!(account.body.contains("<h2>Passkeys</h2>") && account.body.contains("Add a passkey"));
    assert!(account.headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap().contains("script-src 'self'"));

    let script = browser.get(&harness, "/assets/passkey.js").await;
    assert_eq!(script.status, StatusCode::OK);
    assert!(script.headers[header::CONTENT_TYPE].to_str().unwrap().starts_with("text/javascript"));
    assert!(script.headers[header::CACHE_CONTROL].to_str().unwrap().contains("max-age"));
    assert!(script.body.contains("navigator.credentials.create") && script.body.contains("navigator.credentials.get"));
}

#[tokio::test]
async fn without_passkeys_pages_keep_the_strict_policy_and_the_routes_are_gone() {
    // Passkeys on, but the public URL is an IP address, which WebAuthn refuses; and off.
    for harness in [
        harness_full(Backing::Sqlite, serde_json::json!({}), "http://127.0.0.1:8080", true).await,
        harness(Backing::Sqlite, serde_json::json!({})).await,
    ] {
        let mut browser = Browser::default();
        let page = browser.get(&harness, "/signin").await;
        let policy = page.headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(!policy.contains("script-src") && !page.body.contains("passkey"), "{policy}");
        assert_eq!(browser.get(&harness, "/assets/passkey.js").await.status, StatusCode::NOT_FOUND);
        let (status, _) = json_post(&mut browser, &harness, "/signin/passkey/begin", None, None, "{}").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
}

#[tokio::test]
async fn adding_needs_this_origin_the_session_and_its_csrf_header() {
    let harness = passkey_harness().await;
    let mut alice = Browser::from("192.0.2.1");
    alice.sign_in(&harness, ALICE, ALICE_PASSWORD, "").await;
    let csrf = alice.account_csrf(&harness).await;
    let begin = "/account/passkeys/begin";
    for (origin, token, refused) in [
        (None, Some(csrf.as_str()), StatusCode::FORBIDDEN),
        (Some("https://evil.example"), Some(csrf.as_str()), StatusCode::FORBIDDEN),
        (Some(ORIGIN), None, StatusCode::FORBIDDEN),
        (Some(ORIGIN), Some("forged"), StatusCode::FORBIDDEN),
    ] {
        let (status, answer) = json_post(&mut alice, &harness, begin, origin, token, "{}").await;
        assert_eq!(status, refused, "{origin:?} {token:?}: {answer}");
        assert!(answer["error"].is_string());
    }
    // A browser that is not signed in, even with a session's token, is refused.
    let mut stranger = Browser::from("192.0.2.2");
    let (status, _) = json_post(&mut stranger, &harness, begin, Some(ORIGIN), Some(&csrf), "{}").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // The real request gets creation options for a discoverable passkey, under a hashed id.
    let (status, begun) = json_post(&mut alice, &harness, begin, Some(ORIGIN), Some(&csrf), "{}").await;
    assert_eq!(status, StatusCode::OK, "{begun}");
    let options = &begun["options"]["publicKey"];
    assert_eq!(options["rp"]["id"], "localhost");
    assert_eq!(options["authenticatorSelection"]["residentKey"], "required");
    assert_eq!(options["user"]["name"], ALICE);
    assert_ne!(options["user"]["id"], json!("u_alice"), "the user handle is not the account id");
    let ceremony = begun["ceremony"].as_str().unwrap();

    // Bob's session cannot finish Alice's ceremony, and spends it trying.
    let mut bob = Browser::from("192.0.2.3");
    bob.sign_in(&harness, BOB, BOB_PASSWORD, "").await;
    let bob_csrf = bob.account_csrf(&harness).await;
    let finish = "/account/passkeys/finish";
    let (status, answer) =
        json_post(&mut bob, &harness, finish, Some(ORIGIN), Some(&bob_csrf), &junk_registration(ceremony)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("expired"), "{answer}");
    let (status, answer) =
        json_post(&mut alice, &harness, finish, Some(ORIGIN), Some(&csrf), &junk_registration(ceremony)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(answer["error"].as_str().unwrap().contains("expired"), "taken once: {answer}");

    // A fresh ceremony with an answer that does not verify stores nothing; a replay is expired.
    let (_, begun) = json_post(&mut alice, &harness, begin, Some(ORIGIN), Some(&csrf), "{}").await;
    let body = junk_registration(begun["ceremony"].as_str().unwrap());
    let (status, answer) = json_post(&mut alice, &harness, finish, Some(ORIGIN), Some(&csrf), &body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(answer["error"].as_str().unwrap().contains("could not be verified"), "{answer}");
    let (_, answer) = json_post(&mut alice, &harness, finish, Some(ORIGIN), Some(&csrf), &body).await;
    assert!(answer["error"].as_str().unwrap().contains("expired"), "a replay: {answer}");
    assert!(passkeys(&harness).passkeys_of("u_alice", 100).await.unwrap().is_empty());

    // A name over 64 characters is refused before the ceremony is spent.
    let (_, begun) = json_post(&mut alice, &harness, begin, Some(ORIGIN), Some(&csrf), "{}").await;
    let mut long: Value = serde_json::from_str(&junk_registration(begun["ceremony"].as_str().unwrap())).unwrap();
    long["name"] = json!("n".repeat(65));
    let (status, answer) = json_post(&mut alice, &harness, finish, Some(ORIGIN), Some(&csrf), &long.to_string()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(answer["error"].as_str().unwrap().contains("64"), "{answer}");
}

#[tokio::test]
async fn oversize_and_unreadable_bodies_are_refused() {
    let harness = passkey_harness().await;
    let mut alice = Browser::from("192.0.2.1");
    let pre = sign_in_csrf(&mut alice, &harness).await;
    let huge = format!("{{\"ceremony\": \"{}\"}}", "x".repeat(64 * 1024));
    let (status, _) = json_post(&mut alice, &harness, "/signin/passkey/finish", Some(ORIGIN), Some(&pre), &huge).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let (status, answer) =
        json_post(&mut alice, &harness, "/signin/passkey/finish", Some(ORIGIN), Some(&pre), "{\"no\": 1}").await;
    assert!(status.is_client_error() && answer["error"].is_string(), "{status} {answer}");

    alice.sign_in(&harness, ALICE, ALICE_PASSWORD, "").await;
    let csrf = alice.account_csrf(&harness).await;
    let (status, _) =
        json_post(&mut alice, &harness, "/account/passkeys/finish", Some(ORIGIN), Some(&csrf), &huge).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn signing_in_needs_the_pre_session_token_and_a_live_ceremony() {
    let harness = passkey_harness().await;
    let mut browser = Browser::from("192.0.2.1");
    let pre = sign_in_csrf(&mut browser, &harness).await;
    let begin = "/signin/passkey/begin";
    for (origin, token) in [(Some(ORIGIN), None), (Some(ORIGIN), Some("forged")), (Some("http://evil"), Some(&*pre))] {
        let (status, _) = json_post(&mut browser, &harness, begin, origin, token, "{}").await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{origin:?} {token:?}");
    }
    let (status, begun) = json_post(&mut browser, &harness, begin, Some(ORIGIN), Some(&pre), "{}").await;
    assert_eq!(status, StatusCode::OK, "{begun}");
    assert_eq!(begun["options"]["publicKey"]["allowCredentials"], json!([]), "usernameless");
    assert!(begun["options"].get("mediation").is_none());

    // An answer that proves nothing, then its replay: not verified, then expired.
    let finish = "/signin/passkey/finish";
    let body = junk_assertion(begun["ceremony"].as_str().unwrap());
    let (status, answer) = json_post(&mut browser, &harness, finish, Some(ORIGIN), Some(&pre), &body).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{answer}");
    let (status, answer) = json_post(&mut browser, &harness, finish, Some(ORIGIN), Some(&pre), &body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("expired"), "{answer}");

    // An expired ceremony is refused like a replay.
    let id = "an-expired-ceremony-id";
    let hash = mirobody_auth::hash_secret(id);
    let now = mirobody_core::clock::now_ms();
    let old = PasskeyCeremony {
        purpose: "authenticate".into(),
        owner: "x".into(),
        state: "{}".into(),
        created_at_ms: now - 600_000,
        expires_at_ms: now - 300_000,
    };
    assert!(passkeys(&harness).put_ceremony(&hash, &old, 10).await.unwrap());
    let (status, answer) =
        json_post(&mut browser, &harness, finish, Some(ORIGIN), Some(&pre), &junk_assertion(id)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(!browser.signed_in());
}

#[tokio::test]
async fn failures_count_in_the_throttle_and_ceremonies_are_bounded_per_address() {
    let harness = passkey_harness().await;
    let mut browser = Browser::from("192.0.2.9");
    let pre = sign_in_csrf(&mut browser, &harness).await;
    let (begin, finish) = ("/signin/passkey/begin", "/signin/passkey/finish");
    // The default burst is 5 failures per address.
    for _ in 0..5 {
        let (_, begun) = json_post(&mut browser, &harness, begin, Some(ORIGIN), Some(&pre), "{}").await;
        let body = junk_assertion(begun["ceremony"].as_str().unwrap());
        let (status, _) = json_post(&mut browser, &harness, finish, Some(ORIGIN), Some(&pre), &body).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let (status, _) = json_post(&mut browser, &harness, begin, Some(ORIGIN), Some(&pre), "{}").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "the address is held back");

    // Begun and never finished: at most 10 under way per address.
    let mut other = Browser::from("198.51.100.7");
    let pre = sign_in_csrf(&mut other, &harness).await;
    for _ in 0..10 {
        let (status, _) = json_post(&mut other, &harness, begin, Some(ORIGIN), Some(&pre), "{}").await;
        assert_eq!(status, StatusCode::OK);
    }
    let (status, answer) = json_post(&mut other, &harness, begin, Some(ORIGIN), Some(&pre), "{}").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{answer}");
}

#[tokio::test]
async fn an_account_has_at_most_ten_registrations_under_way() {
    let harness = passkey_harness().await;
    let mut alice = Browser::from("192.0.2.1");
    alice.sign_in(&harness, ALICE, ALICE_PASSWORD, "").await;
    let csrf = alice.account_csrf(&harness).await;
    let begin = "/account/passkeys/begin";
    for _ in 0..10 {
        let (status, _) = json_post(&mut alice, &harness, begin, Some(ORIGIN), Some(&csrf), "{}").await;
        assert_eq!(status, StatusCode::OK);
    }
    let (status, answer) = json_post(&mut alice, &harness, begin, Some(ORIGIN), Some(&csrf), "{}").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{answer}");
    // Bob's are his own.
    let mut bob = Browser::from("192.0.2.1");
    bob.sign_in(&harness, BOB, BOB_PASSWORD, "").await;
    let csrf = bob.account_csrf(&harness).await;
    let (status, _) = json_post(&mut bob, &harness, begin, Some(ORIGIN), Some(&csrf), "{}").await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_passkey_is_removed_by_its_owner_only() {
    let harness = passkey_harness().await;
    let store = passkeys(&harness);
    assert!(store.add_passkey(&stored(b"bob-credential", "u_bob"), 20).await.unwrap());
    assert!(store.add_passkey(&stored(b"alice-credential", "u_alice"), 20).await.unwrap());
    let encoded = |id: &[u8]| {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id)
    };
    let mut alice = Browser::from("192.0.2.1");
    alice.sign_in(&harness, ALICE, ALICE_PASSWORD, "").await;
    let page = alice.get(&harness, "/account").await;
    assert!(page.body.contains("Bob&#39;s key") && page.body.contains(&encoded(b"alice-credential")));
    assert!(!page.body.contains(&encoded(b"bob-credential")), "only her own are listed");
    let csrf = page.csrf_field();

    // Bob's credential id in Alice's form removes nothing; a wrong CSRF token neither.
    let bob_id = encoded(b"bob-credential");
    let answer = alice.post(&harness, "/account/passkeys/remove", &[("csrf", &csrf), ("credential", &bob_id)]).await;
    assert_eq!(answer.location(), "/account");
    assert!(store.passkey(b"bob-credential").await.unwrap().is_some());
    let alice_id = encoded(b"alice-credential");
    let answer =
        alice.post(&harness, "/account/passkeys/remove", &[("csrf", "forged"), ("credential", &alice_id)]).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    let answer = alice.post(&harness, "/account/passkeys/remove", &[("csrf", &csrf), ("credential", "%%%")]).await;
    assert_eq!(answer.location(), "/account", "an unreadable id removes nothing");

    let answer = alice.post(&harness, "/account/passkeys/remove", &[("csrf", &csrf), ("credential", &alice_id)]).await;
    assert_eq!(answer.location(), "/account?done=passkey-removed");
    assert!(store.passkey(b"alice-credential").await.unwrap().is_none());
    let page = alice.get(&harness, "/account?done=passkey-removed").await;
    assert!(page.body.contains("no longer signs you in") && page.body.contains("You have no passkey"));
}

/// A software authenticator: one ES256 passkey, made and used as a platform authenticator
/// would (no attestation, user verified), so a whole ceremony runs without a browser.
struct SoftKey {
    key: p256::ecdsa::SigningKey,
    id: Vec<u8>,
    handle: String,
    counter: u32,
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn sha256(bytes: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).to_vec()
}

fn client_data(kind: &str, challenge: &Value) -> Vec<u8> {
    json!({"type": kind, "challenge": challenge, "origin": ORIGIN, "crossOrigin": false}).to_string().into_bytes()
}

/// CBOR's head of a byte string of `len` (< 65536) bytes.
fn cbor_bytes(len: usize) -> Vec<u8> {
    match len {
        0..24 => vec![0x40 | len as u8],
        24..256 => vec![0x58, len as u8],
        _ => vec![0x59, (len >> 8) as u8, len as u8],
    }
}

impl SoftKey {
    fn new(seed: u8) -> SoftKey {
        let key = p256::ecdsa::SigningKey::from_slice(&[seed; 32]).unwrap();
        SoftKey { key, id: format!("soft credential {seed}").into_bytes(), handle: String::new(), counter: 0 }
    }

    /// The answer to creation options: the key, its id and an empty ("none") attestation.
    fn create(&mut self, ceremony: &Value, name: &str) -> String {
        let options = &ceremony["options"]["publicKey"];
        self.handle = options["user"]["id"].as_str().unwrap().to_owned();
        let point = self.key.verifying_key().to_sec1_point(false);
        let (x, y) = (&point.as_bytes()[1..33], &point.as_bytes()[33..65]);
        // COSE_Key {1: 2 (EC2), 3: -7 (ES256), -1: 1 (P-256), -2: x, -3: y}.
        let mut cose = vec![0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20];
        cose.extend_from_slice(x);
        cose.extend_from_slice(&[0x22, 0x58, 0x20]);
        cose.extend_from_slice(y);
        let mut auth_data = sha256(b"localhost");
        auth_data.push(0x45); // user present, user verified, attested credential data
        auth_data.extend_from_slice(&0u32.to_be_bytes());
        auth_data.extend_from_slice(&[0; 16]);
        auth_data.extend_from_slice(&(self.id.len() as u16).to_be_bytes());
        auth_data.extend_from_slice(&self.id);
        auth_data.extend_from_slice(&cose);
        // {"fmt": "none", "attStmt": {}, "authData": auth_data}
        let mut attestation = vec![0xa3, 0x63, b'f', b'm', b't', 0x64, b'n', b'o', b'n', b'e'];
        attestation.extend_from_slice(&[0x67, b'a', b't', b't', b'S', b't', b'm', b't', 0xa0]);
        attestation.extend_from_slice(&[0x68, b'a', b'u', b't', b'h', b'D', b'a', b't', b'a']);
        attestation.extend_from_slice(&cbor_bytes(auth_data.len()));
        attestation.extend_from_slice(&auth_data);
        json!({
            "ceremony": ceremony["ceremony"],
            "name": name,
            "credential": {"id": b64(&self.id), "rawId": b64(&self.id), "type": "public-key",
                "response": {"attestationObject": b64(&attestation),
                    "clientDataJSON": b64(&client_data("webauthn.create", &options["challenge"]))}}
        })
        .to_string()
    }

    /// The answer to request options, signed, with the counter moved on, and `handle` as the
    /// user handle instead of its own when given.
    fn get(&mut self, ceremony: &Value, next: &str, handle: Option<&str>) -> String {
        use p256::ecdsa::signature::Signer;
        self.counter += 1;
        let mut auth_data = sha256(b"localhost");
        auth_data.push(0x05); // user present, user verified
        auth_data.extend_from_slice(&self.counter.to_be_bytes());
        let client = client_data("webauthn.get", &ceremony["options"]["publicKey"]["challenge"]);
        let mut signed = auth_data.clone();
        signed.extend_from_slice(&sha256(&client));
        let signature: p256::ecdsa::Signature = self.key.sign(&signed);
        json!({
            "ceremony": ceremony["ceremony"],
            "next": next,
            "credential": {"id": b64(&self.id), "rawId": b64(&self.id), "type": "public-key",
                "response": {"authenticatorData": b64(&auth_data), "clientDataJSON": b64(&client),
                    "signature": b64(signature.to_der().as_bytes()),
                    "userHandle": handle.unwrap_or(&self.handle)}}
        })
        .to_string()
    }
}

/// Alice, signed in, adds `key` as "Soft key"; the finish answer.
async fn add_soft_key(harness: &Harness, key: &mut SoftKey) -> (StatusCode, Value) {
    let mut alice = Browser::from("192.0.2.1");
    alice.sign_in(harness, ALICE, ALICE_PASSWORD, "").await;
    let csrf = alice.account_csrf(harness).await;
    let (_, begun) = json_post(&mut alice, harness, "/account/passkeys/begin", Some(ORIGIN), Some(&csrf), "{}").await;
    let body = key.create(&begun, "Soft key");
    json_post(&mut alice, harness, "/account/passkeys/finish", Some(ORIGIN), Some(&csrf), &body).await
}

/// A fresh browser signs in with `key`; the finish answer, and whether it holds a session.
async fn sign_in_with(
    harness: &Harness,
    key: &mut SoftKey,
    next: &str,
    handle: Option<&str>,
) -> (StatusCode, Value, bool) {
    let mut browser = Browser::from("203.0.113.5");
    let pre = sign_in_csrf(&mut browser, harness).await;
    let (_, begun) = json_post(&mut browser, harness, "/signin/passkey/begin", Some(ORIGIN), Some(&pre), "{}").await;
    let body = key.get(&begun, next, handle);
    let (status, answer) =
        json_post(&mut browser, harness, "/signin/passkey/finish", Some(ORIGIN), Some(&pre), &body).await;
    (status, answer, browser.signed_in())
}

#[tokio::test]
async fn a_passkey_added_signs_its_owner_in_and_no_one_else() {
    let harness = passkey_harness().await;
    let mut key = SoftKey::new(7);
    let (status, answer) = add_soft_key(&harness, &mut key).await;
    assert_eq!((status, &answer["next"]), (StatusCode::OK, &json!("/account?done=passkey-added")), "{answer}");
    let stored = passkeys(&harness).passkeys_of("u_alice", 100).await.unwrap();
    assert_eq!((stored.len(), stored[0].name.as_str(), stored[0].last_used_at_ms), (1, "Soft key", None));
    // The same credential again (excluded in the options, which a real authenticator obeys)
    // is refused: one passkey, not two.
    let (status, answer) = add_soft_key(&harness, &mut key).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(passkeys(&harness).passkeys_of("u_alice", 100).await.unwrap().len(), 1);

    // Signed in, to a local next only, and the use is noted.
    let (status, answer, signed_in) = sign_in_with(&harness, &mut key, "/account?x=1", None).await;
    assert_eq!((status, &answer["next"], signed_in), (StatusCode::OK, &json!("/account?x=1"), true), "{answer}");
    let (_, answer, _) = sign_in_with(&harness, &mut key, "//evil.example/", None).await;
    assert_eq!(answer["next"], "/account");
    assert!(passkeys(&harness).passkey(&key.id).await.unwrap().unwrap().last_used_at_ms.is_some());

    // A counter that did not move is a cloned authenticator: refused, with the usual answer.
    key.counter -= 1;
    let (status, answer, signed_in) = sign_in_with(&harness, &mut key, "", None).await;
    assert_eq!((status, answer["error"].as_str(), signed_in), (StatusCode::UNAUTHORIZED, Some(NOT_VERIFIED), false));

    // Another account's user handle with this credential proves nothing.
    let bob = b64(&sha256(b"not alice's handle")[..16]);
    let (status, answer, _) = sign_in_with(&harness, &mut key, "", Some(&bob)).await;
    assert_eq!((status, answer["error"].as_str()), (StatusCode::UNAUTHORIZED, Some(NOT_VERIFIED)));

    // A disabled account is not signed in, whatever its passkey proves.
    harness.accounts.set_account_disabled("u_alice", true).await.unwrap();
    let (status, answer, signed_in) = sign_in_with(&harness, &mut key, "", None).await;
    assert_eq!((status, answer["error"].as_str(), signed_in), (StatusCode::UNAUTHORIZED, Some(NOT_VERIFIED), false));
    harness.accounts.set_account_disabled("u_alice", false).await.unwrap();
    let (status, _, signed_in) = sign_in_with(&harness, &mut key, "", None).await;
    assert_eq!((status, signed_in), (StatusCode::OK, true));
}

#[tokio::test]
async fn a_signed_assertion_is_good_for_one_ceremony_only() {
    let harness = passkey_harness().await;
    let mut key = SoftKey::new(9);
    assert_eq!(add_soft_key(&harness, &mut key).await.0, StatusCode::OK);
    let mut browser = Browser::from("203.0.113.6");
    let pre = sign_in_csrf(&mut browser, &harness).await;
    let (_, begun) = json_post(&mut browser, &harness, "/signin/passkey/begin", Some(ORIGIN), Some(&pre), "{}").await;
    let body = key.get(&begun, "", None);
    let finish = "/signin/passkey/finish";
    let (status, _) = json_post(&mut browser, &harness, finish, Some(ORIGIN), Some(&pre), &body).await;
    assert_eq!(status, StatusCode::OK);
    // Replayed by someone else holding the pre-session token: the ceremony is spent.
    let mut thief = Browser::from("203.0.113.7");
    thief.cookies = browser.cookies.clone();
    thief.cookies.remove("mirobody_session");
    thief.cookies.insert("mirobody_csrf".into(), pre.clone());
    let (status, answer) = json_post(&mut thief, &harness, finish, Some(ORIGIN), Some(&pre), &body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(!thief.signed_in());
    // Signed for one challenge, it does not answer another.
    let (_, other) = json_post(&mut thief, &harness, "/signin/passkey/begin", Some(ORIGIN), Some(&pre), "{}").await;
    let mut moved: Value = serde_json::from_str(&body).unwrap();
    moved["ceremony"] = other["ceremony"].clone();
    let (status, _) = json_post(&mut thief, &harness, finish, Some(ORIGIN), Some(&pre), &moved.to_string()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(!thief.signed_in());
}

/// A second instance over the same stores as `harness` (its own key and process state).
fn second_instance(harness: &Harness) -> Harness {
    let dir = harness.dir.with_extension("second");
    std::fs::create_dir_all(&dir).unwrap();
    let key = SigningKey::load_or_create(&dir.join("key.pem")).unwrap();
    let stores = OAuthStores {
        accounts: harness.accounts.clone(),
        sessions: harness.sessions.clone(),
        oauth: harness.oauth.clone(),
        secrets: Some(harness.secrets.clone()),
        passkeys: harness.passkeys.clone(),
        identities: None,
        access_log: None,
    };
    let revoked = RevokedGrants::new(Duration::from_secs(900));
    let settings: OAuthSettings = serde_json::from_value(json!({})).unwrap();
    let server = OAuthServer::new(stores, McpEndpoint::new(ORIGIN, ""), settings, key, vec![], revoked.clone());
    Harness {
        router: server.router(),
        server,
        accounts: harness.accounts.clone(),
        sessions: harness.sessions.clone(),
        oauth: harness.oauth.clone(),
        secrets: harness.secrets.clone(),
        passkeys: harness.passkeys.clone(),
        revoked,
        access_log: None,
        dir,
    }
}

#[tokio::test]
async fn a_ceremony_begun_on_one_instance_finishes_on_another() {
    let first = passkey_harness().await;
    let second = second_instance(&first);
    let mut key = SoftKey::new(11);
    // Added: begun on the first, finished on the second.
    let mut alice = Browser::from("192.0.2.1");
    alice.sign_in(&first, ALICE, ALICE_PASSWORD, "").await;
    let csrf = alice.account_csrf(&first).await;
    let (_, begun) = json_post(&mut alice, &first, "/account/passkeys/begin", Some(ORIGIN), Some(&csrf), "{}").await;
    let body = key.create(&begun, "Soft key");
    let (status, answer) =
        json_post(&mut alice, &second, "/account/passkeys/finish", Some(ORIGIN), Some(&csrf), &body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    // Signed in the same way, and the session works on both.
    let mut browser = Browser::from("203.0.113.8");
    let pre = sign_in_csrf(&mut browser, &second).await;
    let (_, begun) = json_post(&mut browser, &second, "/signin/passkey/begin", Some(ORIGIN), Some(&pre), "{}").await;
    let body = key.get(&begun, "", None);
    let (status, answer) =
        json_post(&mut browser, &first, "/signin/passkey/finish", Some(ORIGIN), Some(&pre), &body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    for instance in [&first, &second] {
        let page = browser.get(instance, "/account").await;
        assert!(page.body.contains(ALICE) && page.body.contains("Soft key"), "{}", page.body);
    }
}

const NOT_VERIFIED: &str = "That passkey could not be verified here.";
