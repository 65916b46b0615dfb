//! The attack table: every forged, stale, misdirected or misplaced credential is refused with
//! the right status and challenge, through the layer, and good credentials pass.

mod common;

use std::sync::Arc;

use axum::body::Body;
use common::*;
use mirobody_auth::{generate_secret, hash_secret};
use mirobody_ports::SecretStore;
use serde_json::{Value, json};

enum Challenge {
    /// 401 with `Bearer resource_metadata=...` and no error code.
    Bare,
    /// 401 with `error="invalid_token"` and a description containing this text.
    InvalidToken(&'static str),
    /// No `WWW-Authenticate` header.
    None,
}

struct Row {
    name: &'static str,
    method: &'static str,
    uri: String,
    headers: Vec<(&'static str, String)>,
    status: u16,
    challenge: Challenge,
    /// For accepted rows: the user the handler must see.
    user: Option<&'static str>,
}

fn row(name: &'static str, uri: &str, headers: Vec<(&'static str, String)>, status: u16, challenge: Challenge) -> Row {
    Row { name, method: "POST", uri: uri.to_owned(), headers, status, challenge, user: None }
}

fn auth_header(token: &str) -> Vec<(&'static str, String)> {
    vec![("authorization", bearer(token))]
}

#[tokio::test]
async fn attack_table() {
    let store = Arc::new(MemorySecrets::default());
    let auth = authenticator(&config(), Some(Arc::clone(&store))).await;
    let app = app(&auth);

    // Secrets: alice's live one, bob's live one, a revoked one, and one rotated away.
    let alice = generate_secret().unwrap();
    store.put_secret("alice", &alice.hash(), None, None).await.unwrap();
    let bob = generate_secret().unwrap();
    store.put_secret("bob", &bob.hash(), None, None).await.unwrap();
    let revoked = generate_secret().unwrap();
    store.put_secret("carol", &revoked.hash(), None, None).await.unwrap();
    store.revoke_secret("carol").await.unwrap();
    let rotated_away = generate_secret().unwrap();
    store.put_secret("dave", &rotated_away.hash(), None, None).await.unwrap();
    let dave_now = generate_secret().unwrap();
    store.put_secret("dave", &dave_now.hash(), None, None).await.unwrap();
    let (alice, bob, revoked, rotated_away, dave_now) = (
        alice.expose().to_owned(),
        bob.expose().to_owned(),
        revoked.expose().to_owned(),
        rotated_away.expose().to_owned(),
        dave_now.expose().to_owned(),
    );
    assert_ne!(hash_secret(&alice), hash_secret(&bob));

    let good = hs256(&claims("alice"), HS_KEY);
    let with = |changes: Value| {
        let mut c = claims("alice");
        for (k, v) in changes.as_object().unwrap() {
            if v.is_null() {
                c.as_object_mut().unwrap().remove(k);
            } else {
                c[k] = v.clone();
            }
        }
        c
    };
    let rs_public_pem = fixture_bytes("test-only-rs256-a-public.pem");
    let guessed = generate_secret().unwrap().expose().to_owned();

    let mut rows = vec![
        // No credentials: the layer lets an anonymous caller through, and an endpoint that needs
        // identity answers 401 with a bare challenge.
        Row { user: Some(""), ..row("no token, anonymous endpoint", "/mcp", vec![], 200, Challenge::None) },
        row("no token, endpoint that needs identity", "/personal/mcp", vec![], 401, Challenge::Bare),
        row("malformed token", "/mcp", auth_header("not-a-jwt"), 401, Challenge::InvalidToken("malformed")),
        row(
            "malformed token, three garbage segments",
            "/mcp",
            auth_header("a.b.c"),
            401,
            Challenge::InvalidToken("malformed"),
        ),
        row(
            "empty bearer",
            "/mcp",
            vec![("authorization", "Bearer ".into())],
            401,
            Challenge::InvalidToken("malformed"),
        ),
        row(
            "oversized token",
            "/mcp",
            auth_header(&format!("{}.{}.x", "e".repeat(5000), "e".repeat(5000))),
            401,
            Challenge::InvalidToken("malformed"),
        ),
        row(
            "bad signature",
            "/mcp",
            auth_header(&hs256(&claims("alice"), "another key, also thirty-two bytes long")),
            401,
            Challenge::InvalidToken("signature is invalid"),
        ),
        row(
            "signature of another token spliced on",
            "/mcp",
            auth_header(&{
                let other = hs256(&claims("mallory"), HS_KEY);
                let (message, _) = good.rsplit_once('.').unwrap();
                let (_, signature) = other.rsplit_once('.').unwrap();
                format!("{message}.{signature}")
            }),
            401,
            Challenge::InvalidToken("signature is invalid"),
        ),
        row(
            "alg: none",
            "/mcp",
            auth_header(&forged(&json!({"alg": "none", "typ": "JWT"}), &claims("alice"), None)),
            401,
            Challenge::InvalidToken("algorithm is not accepted"),
        ),
        row(
            "alg: None (case variant)",
            "/mcp",
            auth_header(&forged(&json!({"alg": "None"}), &claims("alice"), None)),
            401,
            Challenge::InvalidToken("algorithm is not accepted"),
        ),
        row(
            "HS256 signed with the RS256 public key",
            "/mcp",
            auth_header(&forged(&json!({"alg": "HS256", "typ": "JWT"}), &claims("alice"), Some(&rs_public_pem))),
            401,
            Challenge::InvalidToken("signature is invalid"),
        ),
        row(
            "critical header extension",
            "/mcp",
            auth_header(&forged(
                &json!({"alg": "HS256", "crit": ["b64"], "b64": false}),
                &claims("alice"),
                Some(HS_KEY.as_bytes()),
            )),
            401,
            Challenge::InvalidToken("malformed"),
        ),
        row(
            "key embedded in the header (jwk)",
            "/mcp",
            auth_header(&forged(
                &json!({"alg": "HS256", "jwk": {"kty": "oct", "k": "YXR0YWNrZXIta2V5LWF0dGFja2VyLWtleS1hdHRhY2tlcg"}}),
                &claims("alice"),
                Some(b"attacker-key-attacker-key-attacker"),
            )),
            401,
            Challenge::InvalidToken("signature is invalid"),
        ),
        row(
            "HS512 (an algorithm no key has)",
            "/mcp",
            auth_header(&forged(&json!({"alg": "HS512"}), &claims("alice"), Some(HS_KEY.as_bytes()))),
            401,
            Challenge::InvalidToken("algorithm is not accepted"),
        ),
        row(
            "expired",
            "/mcp",
            auth_header(&hs256(&with(json!({"exp": now() - 3600})), HS_KEY)),
            401,
            Challenge::InvalidToken("expired"),
        ),
        row(
            "missing exp",
            "/mcp",
            auth_header(&hs256(&with(json!({"exp": null})), HS_KEY)),
            401,
            Challenge::InvalidToken("'exp'"),
        ),
        row(
            "exp not a number",
            "/mcp",
            auth_header(&hs256(&with(json!({"exp": "tomorrow"})), HS_KEY)),
            401,
            Challenge::InvalidToken("'exp'"),
        ),
        row(
            "not yet valid",
            "/mcp",
            auth_header(&hs256(&with(json!({"nbf": now() + 3600})), HS_KEY)),
            401,
            Challenge::InvalidToken("not yet valid"),
        ),
        row(
            "wrong issuer",
            "/mcp",
            auth_header(&hs256(&with(json!({"iss": "https://evil.test"})), HS_KEY)),
            401,
            Challenge::InvalidToken("issuer"),
        ),
        row(
            "missing issuer",
            "/mcp",
            auth_header(&hs256(&with(json!({"iss": null})), HS_KEY)),
            401,
            Challenge::InvalidToken("'iss'"),
        ),
        row(
            "wrong audience",
            "/mcp",
            auth_header(&hs256(&with(json!({"aud": "https://other.test/mcp"})), HS_KEY)),
            401,
            Challenge::InvalidToken("audience"),
        ),
        row(
            "missing audience",
            "/mcp",
            auth_header(&hs256(&with(json!({"aud": null})), HS_KEY)),
            401,
            Challenge::InvalidToken("'aud'"),
        ),
        row(
            "refresh token",
            "/mcp",
            auth_header(&hs256(&with(json!({"token_type": "oauth_refresh_token"})), HS_KEY)),
            401,
            Challenge::InvalidToken("refresh"),
        ),
        row(
            "token_type that is not a string",
            "/mcp",
            auth_header(&hs256(&with(json!({"token_type": 1})), HS_KEY)),
            401,
            Challenge::InvalidToken("refresh"),
        ),
        row(
            "missing sub",
            "/mcp",
            auth_header(&hs256(&with(json!({"sub": null})), HS_KEY)),
            401,
            Challenge::InvalidToken("'sub'"),
        ),
        row(
            "empty sub",
            "/mcp",
            auth_header(&hs256(&with(json!({"sub": ""})), HS_KEY)),
            401,
            Challenge::InvalidToken("'sub'"),
        ),
        row(
            "unsupported scheme",
            "/mcp",
            vec![("authorization", "Basic YWxpY2U6cGFzc3dvcmQ=".into())],
            401,
            Challenge::Bare,
        ),
        row(
            "two Authorization headers",
            "/mcp",
            vec![("authorization", bearer(&good)), ("authorization", bearer(&good))],
            400,
            Challenge::None,
        ),
        row("revoked secret", &format!("/mcp/{revoked}"), vec![], 401, Challenge::InvalidToken("personal MCP secret")),
        row(
            "rotated-away secret",
            &format!("/mcp/{rotated_away}"),
            vec![],
            401,
            Challenge::InvalidToken("personal MCP secret"),
        ),
        row("guessed secret", &format!("/mcp/{guessed}"), vec![], 401, Challenge::InvalidToken("personal MCP secret")),
        row(
            "another user's secret, truncated",
            &format!("/mcp/{}", &bob[..bob.len() - 1]),
            vec![],
            401,
            Challenge::InvalidToken("personal MCP secret"),
        ),
        row(
            "another user's secret, extended",
            &format!("/mcp/{bob}A"),
            vec![],
            401,
            Challenge::InvalidToken("personal MCP secret"),
        ),
        row(
            "another user's secret, one character changed",
            &format!("/mcp/{}{}", &bob[..42], if bob.ends_with('A') { 'B' } else { 'A' }),
            vec![],
            401,
            Challenge::InvalidToken("personal MCP secret"),
        ),
        row(
            "guessed secret as header",
            "/mcp",
            vec![("x-mcp-secret", guessed.clone())],
            401,
            Challenge::InvalidToken("personal MCP secret"),
        ),
        row(
            "token of one user with the secret of another",
            &format!("/mcp/{bob}"),
            auth_header(&good),
            401,
            Challenge::InvalidToken("different users"),
        ),
        row(
            "path secret and header secret disagree",
            &format!("/mcp/{alice}"),
            vec![("x-mcp-secret", bob.clone())],
            401,
            Challenge::InvalidToken("different users"),
        ),
        row("secret in the query string", &format!("/mcp?secret={alice}"), vec![], 400, Challenge::None),
        row("token in the query string", &format!("/mcp?token={good}"), vec![], 400, Challenge::None),
        row("access_token in the query string", &format!("/mcp?access_token={good}"), vec![], 400, Challenge::None),
        row("percent-encoded query key", &format!("/mcp?%74oken={good}"), vec![], 400, Challenge::None),
        row(
            "query credential beside a valid path secret",
            &format!("/mcp/{alice}?access_token=x"),
            vec![],
            400,
            Challenge::None,
        ),
        // What must pass.
        Row { user: Some("alice"), ..row("valid HS256 token", "/mcp", auth_header(&good), 200, Challenge::None) },
        Row {
            user: Some("alice"),
            ..row(
                "valid token, scheme in lower case",
                "/mcp",
                vec![("authorization", format!("bearer {good}"))],
                200,
                Challenge::None,
            )
        },
        Row {
            user: Some("alice"),
            ..row(
                "expired within the leeway",
                "/mcp",
                auth_header(&hs256(&with(json!({"exp": now() - 10})), HS_KEY)),
                200,
                Challenge::None,
            )
        },
        Row {
            user: Some("alice"),
            ..row(
                "valid RS256 token",
                "/mcp",
                auth_header(&rs256(&claims("alice"), "test-only-rs256-a-private.pem", None)),
                200,
                Challenge::None,
            )
        },
        Row {
            user: Some("alice"),
            ..row("alice's secret in the path", &format!("/mcp/{alice}"), vec![], 200, Challenge::None)
        },
        Row {
            user: Some("alice"),
            ..row("alice's secret as a header", "/mcp", vec![("x-mcp-secret", alice.clone())], 200, Challenge::None)
        },
        Row {
            user: Some("alice"),
            ..row(
                "token and secret of the same user",
                &format!("/mcp/{alice}"),
                auth_header(&good),
                200,
                Challenge::None,
            )
        },
        Row {
            user: Some("dave"),
            ..row("dave's current secret", &format!("/mcp/{dave_now}"), vec![], 200, Challenge::None)
        },
    ];
    // An RS256-only server: the HS256-with-public-key forgery has no HS256 key to even try.
    let rs_only = {
        let mut c = config();
        c.hs256_secret = None;
        authenticator(&c, None).await
    };
    let rs_only_app = common::app(&rs_only);
    let confusion = forged(&json!({"alg": "HS256"}), &claims("alice"), Some(&rs_public_pem));
    let reply = send(
        &rs_only_app,
        request("POST", "/mcp").header("authorization", bearer(&confusion)).body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(reply.status, 401, "HS/RS confusion on an RS256-only server");
    assert!(reply.challenge.as_deref().unwrap().contains("algorithm is not accepted"), "{:?}", reply.challenge);

    let sensitive = [&good, &alice, &bob, &revoked, &rotated_away, &dave_now, &guessed];
    let mut failures = Vec::new();
    for row in rows.drain(..) {
        let mut builder = request(row.method, &row.uri);
        for (name, value) in &row.headers {
            builder = builder.header(*name, value);
        }
        let reply = send(&app, builder.body(Body::empty()).unwrap()).await;
        let mut problems = Vec::new();
        if reply.status != row.status {
            problems.push(format!("status {} (want {})", reply.status, row.status));
        }
        match (&row.challenge, reply.challenge.as_deref()) {
            (Challenge::None, None) => {}
            (Challenge::Bare, Some(c))
                if c == format!(r#"Bearer resource_metadata="{METADATA_URL}", scope="mcp:read mcp:write""#) => {}
            (Challenge::InvalidToken(text), Some(c))
                if c.starts_with(&format!(r#"Bearer resource_metadata="{METADATA_URL}""#))
                    && c.contains(r#"error="invalid_token""#)
                    && c.contains("error_description=\"")
                    && c.contains(text) => {}
            (_, got) => problems.push(format!("challenge {got:?}")),
        }
        // A refusal never echoes a credential, whether it came in a header or the URI.
        if reply.status != 200 {
            let header_credentials = row
                .headers
                .iter()
                .map(|(_, v)| v.trim_start_matches("Bearer ").trim_start_matches("bearer ").to_owned())
                .filter(|c| c.len() > 8);
            for credential in header_credentials.chain(sensitive.iter().map(|s| s.to_string())) {
                let everything = format!("{} {:?} {:?}", reply.text, reply.challenge, reply.headers);
                if everything.contains(&credential) || everything.contains(&credential[..credential.len() - 1]) {
                    problems.push("the refusal echoes a credential".into());
                }
            }
        }
        if row.status == 401 || row.status == 400 {
            let code = if row.status == 401 { -32001 } else { -32600 };
            if row.uri.starts_with("/personal") {
                if reply.body["code"] != 401 {
                    problems.push(format!("envelope {}", reply.text));
                }
            } else if reply.body["jsonrpc"] != "2.0"
                || reply.body["id"] != Value::Null
                || reply.body["error"]["code"] != code
            {
                problems.push(format!("body {}", reply.text));
            }
        }
        if let Some(user) = row.user {
            let want = if user.is_empty() { Value::Null } else { json!(user) };
            if reply.body["user_id"] != want {
                problems.push(format!("user {} (want {want})", reply.body["user_id"]));
            }
            // The handler never sees the secret in the path.
            if reply.body["path"] != "/mcp" {
                problems.push(format!("handler saw path {}", reply.body["path"]));
            }
        }
        if !problems.is_empty() {
            failures.push(format!("{}: {}", row.name, problems.join("; ")));
        }
    }
    assert!(failures.is_empty(), "rows that failed:\n{}", failures.join("\n"));
}

#[tokio::test]
async fn the_token_becomes_the_caller() {
    let auth = authenticator(&config(), None).await;
    let app = app(&auth);
    let mut c = claims("42");
    c["sid"] = json!("chat-7");
    c["subject_user_id"] = json!(99);
    c["agent"] = json!("baseline");
    c["scope"] = json!("mcp:read mcp:write");
    c["token_type"] = json!("oauth_access_token");
    let reply = call_mcp(&app, Some(&bearer(&hs256(&c, HS_KEY))), None).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.body["user_id"], "42");
    assert_eq!(reply.body["session_id"], "chat-7");
    assert_eq!(reply.body["subject_user_id"], "99");
    assert_eq!(reply.body["agent"], "baseline");
    assert_eq!(reply.body["scopes"], json!(["mcp:read", "mcp:write"]));
    assert_eq!(reply.body["method"], "Bearer");

    // `scp` as an array works too.
    let mut c = claims("42");
    c["scp"] = json!(["files:read"]);
    let reply = call_mcp(&app, Some(&bearer(&hs256(&c, HS_KEY))), None).await;
    assert_eq!(reply.body["scopes"], json!(["files:read"]));
}

#[tokio::test]
async fn a_failing_store_is_503_not_401() {
    let store = Arc::new(MemorySecrets::default());
    let auth = authenticator(&config(), Some(Arc::clone(&store))).await;
    let app = app(&auth);
    store.fail.store(true, std::sync::atomic::Ordering::SeqCst);
    let secret = generate_secret().unwrap();
    let reply = send(&app, request("POST", &format!("/mcp/{}", secret.expose())).body(Body::empty()).unwrap()).await;
    assert_eq!(reply.status, 503);
    assert!(reply.challenge.is_none());
    assert!(!reply.text.contains("database is down"), "store errors stay in the log: {}", reply.text);
}

#[tokio::test]
async fn secrets_without_a_store_are_refused() {
    let auth = authenticator(&config(), None).await;
    let app = app(&auth);
    let secret = generate_secret().unwrap();
    let reply = call_mcp(&app, None, Some(secret.expose())).await;
    assert_eq!(reply.status, 401);
    assert!(reply.challenge.unwrap().contains("not enabled"));
}

#[tokio::test]
async fn the_path_secret_is_taken_out_of_the_uri_and_the_query_kept() {
    let store = Arc::new(MemorySecrets::default());
    let auth = authenticator(&config(), Some(Arc::clone(&store))).await;
    let app = app(&auth);
    let secret = generate_secret().unwrap();
    store.put_secret("alice", &secret.hash(), Some("baseline"), None).await.unwrap();
    let uri = format!("/mcp/{}?page=2", secret.expose());
    let reply = send(&app, request("GET", &uri).body(Body::empty()).unwrap()).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.body["path"], "/mcp");
    assert_eq!(reply.body["query"], "page=2");
    assert_eq!(reply.body["method"], "Secret");
    assert_eq!(reply.body["agent"], "baseline", "the secret's agent binding reaches the caller");
    // Deeper paths are not secrets: they fall through to routing (404 here).
    let reply = send(&app, request("POST", &format!("/mcp/{}/x", secret.expose())).body(Body::empty()).unwrap()).await;
    assert_eq!(reply.status, 404);
}

#[tokio::test]
async fn secret_scopes_are_granted_to_secret_callers() {
    let store = Arc::new(MemorySecrets::default());
    let mut c = config();
    c.secret_scopes = vec!["mcp:read".into()];
    let auth = authenticator(&c, Some(Arc::clone(&store))).await;
    let secret = generate_secret().unwrap();
    store.put_secret("alice", &secret.hash(), None, None).await.unwrap();
    let reply = call_mcp(&app(&auth), None, Some(secret.expose())).await;
    assert_eq!(reply.body["scopes"], json!(["mcp:read"]));
}

#[tokio::test]
async fn only_requests_with_no_credential_anywhere_skip_the_lookup() {
    let auth = authenticator(&config(), Some(Arc::new(MemorySecrets::default()))).await;
    let anonymous = |method: &str, uri: &str, headers: &[(&str, &str)]| {
        let mut request = request(method, uri);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        auth.is_anonymous(&request.body(()).unwrap())
    };
    assert!(anonymous("POST", "/mcp", &[]));
    assert!(anonymous("GET", "/healthz", &[("accept", "text/event-stream")]));
    // Anywhere a credential could be, the full check runs (and refuses or verifies it).
    assert!(!anonymous("POST", "/mcp", &[("authorization", "Bearer x")]));
    assert!(!anonymous("POST", "/mcp", &[("x-mcp-secret", "x")]));
    // Wherever it comes among the headers, in any case.
    assert!(!anonymous("POST", "/mcp", &[("accept", "x"), ("host", "h"), ("X-MCP-Secret", "x"), ("origin", "o")]));
    assert!(!anonymous("POST", "/mcp", &[("content-type", "x"), ("AUTHORIZATION", "Bearer x")]));
    assert!(!anonymous("POST", "/mcp/some-secret", &[]));
    assert!(!anonymous("POST", "/mcp?token=x", &[]));
    assert!(!anonymous("POST", "/mcp?page=2", &[]));
    // The protected resource metadata is public whatever the request carries.
    assert!(anonymous("GET", "/.well-known/oauth-protected-resource", &[("authorization", "Bearer x")]));
}

#[tokio::test]
async fn an_unmarked_path_gets_anonymous_callers_without_extensions_and_the_rest_as_always() {
    use axum::routing::post;
    use axum::{Json, Router};
    use mirobody_auth::AuthMethod;
    use mirobody_core::UserInfo;

    async fn report(request: http::Request<Body>) -> Json<Value> {
        let extensions = request.extensions();
        let user = extensions.get::<UserInfo>();
        Json(json!({
            "has_user": user.is_some(),
            "user": user.and_then(UserInfo::user_id),
            "method": extensions.get::<AuthMethod>().map(|m| format!("{m:?}")),
        }))
    }
    let store = Arc::new(MemorySecrets::default());
    let auth = authenticator(&config(), Some(Arc::clone(&store))).await;
    let secret = generate_secret().unwrap();
    store.put_secret("carol", &secret.hash(), None, None).await.unwrap();
    let routes = Router::new().route("/mcp", post(report)).route("/other", post(report));
    let app = Router::new().fallback_service(auth.wrap(routes).unmarked_anonymous_at("/mcp"));
    let post_to = |uri: &str, authorization: Option<String>| {
        let mut builder = request("POST", uri);
        if let Some(value) = authorization {
            builder = builder.header("authorization", value);
        }
        builder.body(Body::empty()).unwrap()
    };

    let anonymous_mcp = send(&app, post_to("/mcp", None)).await;
    assert_eq!(anonymous_mcp.body, json!({"has_user": false, "user": null, "method": null}));
    let anonymous_other = send(&app, post_to("/other", None)).await;
    assert_eq!(anonymous_other.body, json!({"has_user": true, "user": null, "method": "Anonymous"}));
    let token = hs256(&claims("alice"), HS_KEY);
    let with_token = send(&app, post_to("/mcp", Some(bearer(&token)))).await;
    assert_eq!(with_token.body["user"], "alice");
    assert_eq!(with_token.body["method"], "Bearer");
    let with_secret = send(&app, post_to(&format!("/mcp/{}", secret.expose()), None)).await;
    assert_eq!(with_secret.body["user"], "carol");
    assert_eq!(with_secret.body["method"], "Secret");
    // A bad credential at the unmarked path is still refused.
    assert_eq!(send(&app, post_to("/mcp", Some(bearer("not-a-token")))).await.status, 401);
}

/// POST `/mcp` from `address` with an optional bearer token and secret header.
async fn from_address(app: &axum::Router, address: &str, token: Option<&str>, secret: Option<&str>) -> Reply {
    let mut builder = request("POST", "/mcp");
    if let Some(token) = token {
        builder = builder.header("authorization", bearer(token));
    }
    if let Some(secret) = secret {
        builder = builder.header("x-mcp-secret", secret);
    }
    let mut request = builder.body(Body::empty()).unwrap();
    request.extensions_mut().insert(mirobody_ports::ClientAddr(address.parse().unwrap()));
    send(app, request).await
}

#[tokio::test]
async fn an_address_forging_credentials_is_held_back_before_any_check() {
    let store = Arc::new(MemorySecrets::default());
    let mut config = config();
    config.failed_credentials_burst = 3;
    config.failed_credentials_interval = std::time::Duration::from_secs(3600);
    let auth = authenticator(&config, Some(Arc::clone(&store))).await;
    let app = app(&auth);
    let secret = generate_secret().unwrap();
    store.put_secret("bob", &secret.hash(), None, None).await.unwrap();
    let secret = secret.expose().to_owned();

    // Alice's token is verified once from the address she shares with the forger.
    let known = hs256(&claims("alice"), HS_KEY);
    assert_eq!(from_address(&app, "203.0.113.7", Some(&known), None).await.status, 200);
    let forged = hs256(&claims("alice"), "not the key, but long enough to be taken as one");
    for _ in 0..3 {
        let reply = from_address(&app, "203.0.113.7", Some(&forged), None).await;
        assert_eq!(reply.status, 401, "{}", reply.text);
    }
    // Past the burst: refused unchecked, with a time to come back.
    let held = from_address(&app, "203.0.113.7", Some(&forged), None).await;
    assert_eq!(held.status, 429, "{}", held.text);
    let retry: u64 = held.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=3600).contains(&retry), "{retry}");
    assert_eq!(held.body["error"]["code"], -32000);
    // A token checked before still works; a new one, even valid, waits, as does a secret.
    let reply = from_address(&app, "203.0.113.7", Some(&known), None).await;
    assert_eq!((reply.status, reply.body["user_id"].as_str()), (200, Some("alice")));
    let fresh = hs256(&claims("carol"), HS_KEY);
    assert_eq!(from_address(&app, "203.0.113.7", Some(&fresh), None).await.status, 429);
    assert_eq!(from_address(&app, "203.0.113.7", None, Some(&secret)).await.status, 429);
    // An IPv4-mapped form of the address is the same caller; another address is not held back.
    assert_eq!(from_address(&app, "::ffff:203.0.113.7", Some(&forged), None).await.status, 429);
    assert_eq!(from_address(&app, "198.51.100.1", Some(&forged), None).await.status, 401);
    assert_eq!(from_address(&app, "198.51.100.1", Some(&fresh), None).await.status, 200);
    assert_eq!(from_address(&app, "198.51.100.1", None, Some(&secret)).await.status, 200);
    // Anonymous requests never touch the bound.
    assert_eq!(from_address(&app, "203.0.113.7", None, None).await.status, 200);
}

#[tokio::test]
async fn guessed_secrets_count_as_failures_too() {
    let store = Arc::new(MemorySecrets::default());
    let mut config = config();
    config.failed_credentials_burst = 2;
    config.failed_credentials_interval = std::time::Duration::from_secs(3600);
    let auth = authenticator(&config, Some(Arc::clone(&store))).await;
    let app = app(&auth);
    for _ in 0..2 {
        let guess = generate_secret().unwrap();
        assert_eq!(from_address(&app, "2001:db8:1:2::10", None, Some(guess.expose())).await.status, 401);
    }
    // The same /64 is held back; the next /64 is not.
    let guess = generate_secret().unwrap();
    assert_eq!(from_address(&app, "2001:db8:1:2::99", None, Some(guess.expose())).await.status, 429);
    assert_eq!(from_address(&app, "2001:db8:1:3::10", None, Some(guess.expose())).await.status, 401);
}
