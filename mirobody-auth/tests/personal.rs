//! Personal MCP URLs end to end (create, 409, rotate, revoke, header form, agent binding), the
//! CLI admin functions, the protected resource metadata, and query-string credentials.

mod common;

use std::sync::Arc;

use axum::body::Body;
use common::*;
use std::time::Duration;

use mirobody_auth::{
    Authenticator, McpEndpoint, PERSONAL_URL_SCOPE, SecretAdminError, create_secret, generate_secret,
    looks_like_secret, revoke_secret, rotate_secret,
};
use mirobody_ports::SecretStore;
use serde_json::json;

async fn post_personal(app: &axum::Router, query: &str, authorization: Option<&str>) -> Reply {
    let mut builder = request("POST", &format!("/personal/mcp{query}"));
    if let Some(value) = authorization {
        builder = builder.header("authorization", value);
    }
    send(app, builder.body(Body::empty()).unwrap()).await
}

async fn via_path(app: &axum::Router, secret: &str) -> Reply {
    send(app, request("POST", &format!("/mcp/{secret}")).body(Body::empty()).unwrap()).await
}

#[tokio::test]
async fn create_conflict_rotate_revoke() {
    let store = Arc::new(MemorySecrets::default());
    let auth = authenticator(&config(), Some(Arc::clone(&store))).await;
    let app = app(&auth);
    let token = bearer(&hs256(&personal_claims("alice"), HS_KEY));

    // Create.
    let created = post_personal(&app, "", Some(&token)).await;
    assert_eq!(created.status, 200, "{}", created.text);
    assert_eq!(created.body["code"], 0);
    assert_eq!(created.body["msg"], "ok");
    assert_eq!(created.headers["cache-control"], "no-store");
    let url = created.body["data"]["url"].as_str().unwrap().to_owned();
    assert!(url.starts_with("http://mcp.test/mcp/"), "{url}");
    let first = secret_of(&url);
    assert!(looks_like_secret(&first), "{first}");
    assert_eq!(store.len(), 1);

    // The URL alone identifies alice, with no header.
    let reply = via_path(&app, &first).await;
    assert_eq!((reply.status, reply.body["user_id"].as_str()), (200, Some("alice")));
    assert_eq!(reply.body["method"], "Secret");

    // A second create cannot show the secret again: 409, pointing at rotation.
    let again = post_personal(&app, "", Some(&token)).await;
    assert_eq!(again.status, 409);
    assert_eq!(again.body["code"], 409);
    assert!(again.body["msg"].as_str().unwrap().contains("rotate=true"), "{}", again.text);
    assert!(again.body["data"].is_null());
    assert!(via_path(&app, &first).await.status == 200, "a refused create leaves the URL working");

    // Rotate: a new URL, and the old one stops working.
    let rotated = post_personal(&app, "?rotate=true", Some(&token)).await;
    assert_eq!(rotated.status, 200, "{}", rotated.text);
    let second = secret_of(rotated.body["data"]["url"].as_str().unwrap());
    assert_ne!(first, second);
    let old = via_path(&app, &first).await;
    assert_eq!(old.status, 401);
    assert!(old.challenge.unwrap().contains(r#"error="invalid_token""#));
    assert_eq!(via_path(&app, &second).await.body["user_id"], "alice");

    // The header form of the same secret.
    let reply = call_mcp(&app, None, Some(&second)).await;
    assert_eq!((reply.status, reply.body["user_id"].as_str()), (200, Some("alice")));

    // Revoke: 401 afterwards; revoking again reports there was nothing.
    let revoke = |auth: Option<String>| {
        let mut builder = request("DELETE", "/personal/mcp");
        if let Some(value) = auth {
            builder = builder.header("authorization", value);
        }
        builder.body(Body::empty()).unwrap()
    };
    let revoked = send(&app, revoke(Some(token.clone()))).await;
    assert_eq!(revoked.status, 200, "{}", revoked.text);
    assert_eq!(revoked.body["data"]["revoked"], true);
    assert_eq!(via_path(&app, &second).await.status, 401);
    assert_eq!(call_mcp(&app, None, Some(&second)).await.status, 401);
    assert_eq!(send(&app, revoke(Some(token.clone()))).await.body["data"]["revoked"], false);
    assert_eq!(send(&app, revoke(None)).await.status, 401);

    // After a revoke, a plain create works again.
    assert_eq!(post_personal(&app, "", Some(&token)).await.status, 200);
}

#[tokio::test]
async fn personal_urls_need_a_bearer_token() {
    let store = Arc::new(MemorySecrets::default());
    let auth = authenticator(&config(), Some(Arc::clone(&store))).await;
    let app = app(&auth);

    let none = post_personal(&app, "", None).await;
    assert_eq!(none.status, 401);
    assert_eq!(none.body["code"], 401);
    let challenge = none.challenge.unwrap();
    assert!(challenge.starts_with(&format!(r#"Bearer resource_metadata="{METADATA_URL}""#)), "{challenge}");
    assert!(!challenge.contains("error="), "no credentials, no error code: {challenge}");

    let expired = {
        let mut c = claims("alice");
        c["exp"] = json!(now() - 3600);
        hs256(&c, HS_KEY)
    };
    let reply = post_personal(&app, "", Some(&bearer(&expired))).await;
    assert_eq!(reply.status, 401);
    assert!(reply.challenge.unwrap().contains("expired"));

    // A personal secret is not enough to mint, rotate or revoke.
    let token = bearer(&hs256(&personal_claims("alice"), HS_KEY));
    let url = post_personal(&app, "", Some(&token)).await.body["data"]["url"].as_str().unwrap().to_owned();
    let secret = secret_of(&url);
    let reply = send(
        &app,
        request("POST", "/personal/mcp?rotate=true").header("x-mcp-secret", &secret).body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(reply.status, 401);
    assert_eq!(via_path(&app, &secret).await.status, 200, "the refused rotation changed nothing");

    let bad_flag = post_personal(&app, "?rotate=maybe", Some(&token)).await;
    assert_eq!(bad_flag.status, 400);
}

#[tokio::test]
async fn personal_urls_without_a_store_are_503() {
    let auth = authenticator(&config(), None).await;
    let reply = post_personal(&app(&auth), "", Some(&bearer(&hs256(&personal_claims("alice"), HS_KEY)))).await;
    assert_eq!(reply.status, 503);
    assert_eq!(reply.body["code"], 503);
}

#[tokio::test]
async fn a_secret_inherits_the_tokens_agent() {
    let store = Arc::new(MemorySecrets::default());
    let auth = authenticator(&config(), Some(Arc::clone(&store))).await;
    let app = app(&auth);
    let mut c = personal_claims("alice");
    c["agent"] = json!("baseline");
    let url = post_personal(&app, "", Some(&bearer(&hs256(&c, HS_KEY)))).await.body["data"]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(via_path(&app, &secret_of(&url)).await.body["agent"], "baseline");
}

#[tokio::test]
async fn the_uri_prefix_is_in_every_url_and_route() {
    let store = Arc::new(MemorySecrets::default());
    let config = config();
    let auth = Authenticator::new(&config, McpEndpoint::new(BASE, "/api"), Some(store.clone() as _)).await.unwrap();
    let app = app(&auth);
    let mut c = personal_claims("alice");
    c["aud"] = json!("http://mcp.test/api/mcp");
    let token = bearer(&hs256(&c, HS_KEY));
    let reply =
        send(&app, request("POST", "/api/personal/mcp").header("authorization", &token).body(Body::empty()).unwrap())
            .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let url = reply.body["data"]["url"].as_str().unwrap();
    assert!(url.starts_with("http://mcp.test/api/mcp/") && url.ends_with("/mcp"), "{url}");
    // The URL as minted (the secret before a last `/mcp`) and the older shape both work; the
    // handler sees the plain MCP path either way.
    let minted = url.trim_start_matches("http://mcp.test");
    for path in [minted.to_owned(), format!("/api/mcp/{}", secret_of(url))] {
        let reply = send(&app, request("POST", &path).body(Body::empty()).unwrap()).await;
        assert_eq!(reply.status, 200, "{path}: {}", reply.text);
        assert_eq!(reply.body["path"], "/api/mcp");
        assert_eq!(reply.body["user_id"], "alice");
    }
    // Anything else after the secret is no personal URL.
    let other = format!("/api/mcp/{}/other", secret_of(url));
    assert_ne!(send(&app, request("POST", &other).body(Body::empty()).unwrap()).await.status, 200);
}

#[tokio::test]
async fn admin_functions_for_the_cli() {
    let store = MemorySecrets::default();
    let endpoint = McpEndpoint::new("https://mcp.example.com", "");
    let url = create_secret(&store, &endpoint, "42", Some("baseline"), None).await.unwrap();
    assert!(url.expose().starts_with("https://mcp.example.com/mcp/"));
    let debug = format!("{url:?}");
    assert_eq!(debug, "PersonalUrl(https://mcp.example.com/mcp/[redacted]/mcp)");
    assert!(matches!(create_secret(&store, &endpoint, "42", None, None).await, Err(SecretAdminError::Exists(_))));
    let rotated = rotate_secret(&store, &endpoint, "42", None, None).await.unwrap();
    assert_ne!(rotated, url);
    assert!(revoke_secret(&store, "42").await.unwrap());
    assert!(!revoke_secret(&store, "42").await.unwrap());
    // Rotating with no secret creates one.
    assert!(rotate_secret(&store, &endpoint, "7", None, None).await.is_ok());
    assert!(matches!(create_secret(&store, &endpoint, "", None, None).await, Err(SecretAdminError::NoUser)));
    assert_eq!(store.len(), 1);
}

#[tokio::test]
async fn concurrent_creations_for_one_user_give_one_url() {
    let store = MemorySecrets::default();
    let endpoint = McpEndpoint::new("https://mcp.example.com", "");
    let attempts = (0..8).map(|_| create_secret(&store, &endpoint, "42", None, None));
    let results = futures::future::join_all(attempts).await;
    let created: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(created.len(), 1, "exactly one creation wins");
    assert_eq!(results.iter().filter(|r| matches!(r, Err(SecretAdminError::Exists(_)))).count(), 7);
    assert_eq!(store.len(), 1);
    // The URL handed out is the one stored.
    let auth = authenticator(&config(), Some(Arc::new(store))).await;
    let secret = secret_of(created[0].expose());
    assert_eq!(auth.user_for_secret(&secret).await.unwrap().user_id(), Some("42"));
}

#[tokio::test]
async fn protected_resource_metadata_at_both_paths() {
    let auth = authenticator(&config(), None).await;
    let app = app(&auth);
    let expected = json!({
        "resource": MCP_URL,
        "authorization_servers": [ISSUER],
        "scopes_supported": ["mcp:read", "mcp:write"],
        "bearer_methods_supported": ["header"],
    });
    for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"] {
        let reply = send(&app, request("GET", path).body(Body::empty()).unwrap()).await;
        assert_eq!(reply.status, 200, "{path}");
        assert_eq!(reply.body, expected, "{path}");
        assert_eq!(reply.headers["content-type"], "application/json");
        assert_eq!(reply.headers["access-control-allow-origin"], "*");
    }
    // Reachable with a stale token, since a client looks there precisely when its token fails.
    let reply = send(
        &app,
        request("GET", "/.well-known/oauth-protected-resource/mcp")
            .header("authorization", "Bearer expired.or.garbage")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(reply.status, 200);
    // The URL in 401 challenges is one of the served paths.
    assert_eq!(auth.resource_metadata_url(), METADATA_URL);

    // Under a prefix: the path-inserted form carries it, and the prefixed forms are served too.
    let prefixed = Authenticator::new(&config(), McpEndpoint::new(BASE, "/api"), None).await.unwrap();
    let app = common::app(&prefixed);
    assert_eq!(prefixed.resource_metadata_url(), "http://mcp.test/.well-known/oauth-protected-resource/api/mcp");
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/api/mcp",
        "/api/.well-known/oauth-protected-resource",
        "/api/.well-known/oauth-protected-resource/mcp",
    ] {
        let reply = send(&app, request("GET", path).body(Body::empty()).unwrap()).await;
        assert_eq!(reply.status, 200, "{path}");
        assert_eq!(reply.body["resource"], "http://mcp.test/api/mcp", "{path}");
    }
}

#[tokio::test]
async fn query_string_credentials_are_400_with_a_clear_message() {
    let store = Arc::new(MemorySecrets::default());
    let auth = authenticator(&config(), Some(store)).await;
    let app = app(&auth);
    let token = hs256(&claims("alice"), HS_KEY);
    for (uri, name) in [
        (format!("/mcp?token={token}"), "token"),
        (format!("/mcp?access_token={token}"), "access_token"),
        (format!("/mcp?x=1&Secret={token}"), "secret"),
        (format!("/personal/mcp?access_token={token}"), "access_token"),
        ("/healthz?token=".to_owned(), "token"),
    ] {
        let reply = send(&app, request("POST", &uri).body(Body::empty()).unwrap()).await;
        assert_eq!(reply.status, 400, "{uri}");
        let message = reply.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(&format!("'{name}'")) && message.contains("Authorization header"), "{message}");
        assert!(!reply.text.contains(&token), "the refusal echoes the token");
    }
    // Other query parameters pass.
    let reply = send(&app, request("POST", "/mcp?page=2").body(Body::empty()).unwrap()).await;
    assert_eq!(reply.status, 200);
}

async fn delete_personal(app: &axum::Router, authorization: &str) -> Reply {
    send(app, request("DELETE", "/personal/mcp").header("authorization", authorization).body(Body::empty()).unwrap())
        .await
}

#[tokio::test]
async fn a_token_without_the_personal_url_scope_gets_403_and_nothing_is_stored() {
    let store = Arc::new(MemorySecrets::default());
    let auth = authenticator(&config(), Some(Arc::clone(&store))).await;
    assert_eq!(auth.personal_url_scope(), PERSONAL_URL_SCOPE);
    let app = app(&auth);
    let mut other_scopes = claims("alice");
    other_scopes["scope"] = json!("mcp:read mcp:write");
    for token in [hs256(&claims("alice"), HS_KEY), hs256(&other_scopes, HS_KEY)] {
        for query in ["", "?rotate=true", "?expires_in=3600"] {
            let reply = post_personal(&app, query, Some(&bearer(&token))).await;
            assert_eq!(reply.status, 403, "{query}: {}", reply.text);
            assert_eq!(reply.body["code"], 403);
            assert!(reply.body["data"].is_null());
            let msg = reply.body["msg"].as_str().unwrap();
            assert!(msg.contains("'mcp:personal_url' scope"), "{msg}");
            let challenge = reply.challenge.unwrap();
            assert!(challenge.starts_with(&format!(r#"Bearer resource_metadata="{METADATA_URL}""#)), "{challenge}");
            assert!(challenge.contains(r#"scope="mcp:personal_url""#), "{challenge}");
            assert!(challenge.contains(r#"error="insufficient_scope""#), "{challenge}");
            assert_eq!(reply.headers["cache-control"], "no-store");
        }
        assert_eq!(store.len(), 0, "a refused mint stores nothing");
    }

    // With the scope: minted. Revoking needs the scope as well.
    let scoped = bearer(&hs256(&personal_claims("alice"), HS_KEY));
    let created = post_personal(&app, "", Some(&scoped)).await;
    assert_eq!(created.status, 200, "{}", created.text);
    let secret = secret_of(created.body["data"]["url"].as_str().unwrap());
    let refused = delete_personal(&app, &bearer(&hs256(&claims("alice"), HS_KEY))).await;
    assert_eq!(refused.status, 403);
    assert!(refused.challenge.unwrap().contains(r#"error="insufficient_scope""#));
    assert_eq!(via_path(&app, &secret).await.status, 200, "a refused revoke changed nothing");
    let revoked = delete_personal(&app, &scoped).await;
    assert_eq!((revoked.status, revoked.body["data"]["revoked"].as_bool()), (200, Some(true)));
}

#[tokio::test]
async fn a_personal_secret_caller_cannot_mint_rotate_or_revoke() {
    // Even when every secret caller is given the personal URL scope.
    let mut config = config();
    config.secret_scopes = vec![PERSONAL_URL_SCOPE.into(), "mcp:read".into()];
    let store = Arc::new(MemorySecrets::default());
    let auth = authenticator(&config, Some(Arc::clone(&store))).await;
    let app = app(&auth);
    let url = create_secret(store.as_ref(), auth.endpoint(), "alice", None, None).await.unwrap();
    let secret = secret_of(url.expose());
    assert_eq!(via_path(&app, &secret).await.body["scopes"], json!([PERSONAL_URL_SCOPE, "mcp:read"]));

    let with_header = |method: &str, uri: &str, name: &str, value: String| {
        request(method, uri).header(name, value).body(Body::empty()).unwrap()
    };
    for (method, uri) in [("POST", "/personal/mcp"), ("POST", "/personal/mcp?rotate=true"), ("DELETE", "/personal/mcp")]
    {
        let reply = send(&app, with_header(method, uri, "x-mcp-secret", secret.clone())).await;
        assert_eq!(reply.status, 401, "{method} {uri} with the secret header: {}", reply.text);
        // The secret passed off as a bearer token is not a token.
        let reply = send(&app, with_header(method, uri, "authorization", bearer(&secret))).await;
        assert_eq!(reply.status, 401, "{method} {uri} with the secret as a bearer token: {}", reply.text);
        assert!(!reply.text.contains(&secret));
        // Beside a token without the scope, the secret lends it none.
        let unscoped = send(
            &app,
            request(method, uri)
                .header("authorization", bearer(&hs256(&claims("alice"), HS_KEY)))
                .header("x-mcp-secret", &secret)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(unscoped.status, 403, "{method} {uri} with an unscoped token and the secret");
    }
    assert_eq!(store.len(), 1);
    assert_eq!(via_path(&app, &secret).await.status, 200, "the secret was neither rotated nor revoked");
}

#[tokio::test]
async fn the_personal_url_scope_is_configurable_but_never_empty() {
    let mut config = config();
    config.personal_url_scope = "urls:admin".into();
    let store = Arc::new(MemorySecrets::default());
    let auth = authenticator(&config, Some(Arc::clone(&store))).await;
    let app = app(&auth);
    let reply = post_personal(&app, "", Some(&bearer(&hs256(&personal_claims("alice"), HS_KEY)))).await;
    assert_eq!(reply.status, 403);
    assert!(reply.challenge.unwrap().contains(r#"scope="urls:admin""#));
    let mut c = claims("alice");
    c["scp"] = json!(["urls:admin"]);
    assert_eq!(post_personal(&app, "", Some(&bearer(&hs256(&c, HS_KEY)))).await.status, 200);

    for bad in ["", " ", "two scopes", "quo\"te"] {
        config.personal_url_scope = bad.into();
        let err = Authenticator::new(&config, endpoint(), None).await.unwrap_err().to_string();
        assert!(err.contains("personal_url_scope"), "{bad:?}: {err}");
    }
}

#[tokio::test]
async fn an_expired_secret_is_refused_like_a_revoked_one_and_can_be_replaced() {
    let store = Arc::new(MemorySecrets::default());
    let auth = authenticator(&config(), Some(Arc::clone(&store))).await;
    let app = app(&auth);
    // Stored directly with an expiry a second in the past.
    let expired = generate_secret().unwrap();
    store.put_secret("alice", &expired.hash(), None, Some(now_ms() - 1000)).await.unwrap();
    let unknown = generate_secret().unwrap();

    let by_expired = via_path(&app, expired.expose()).await;
    let by_unknown = via_path(&app, unknown.expose()).await;
    assert_eq!(by_expired.status, 401);
    assert_eq!((by_expired.body.clone(), by_expired.challenge.clone()), (by_unknown.body, by_unknown.challenge));
    assert!(by_expired.challenge.unwrap().contains(r#"error="invalid_token""#));
    assert_eq!(call_mcp(&app, None, Some(expired.expose())).await.status, 401, "the header form too");
    assert!(!store.has_secret("alice").await.unwrap());

    // A plain create (no rotate) works where only an expired secret is left.
    let token = bearer(&hs256(&personal_claims("alice"), HS_KEY));
    let created = post_personal(&app, "", Some(&token)).await;
    assert_eq!(created.status, 200, "{}", created.text);
    let fresh = secret_of(created.body["data"]["url"].as_str().unwrap());
    assert_eq!(via_path(&app, &fresh).await.body["user_id"], "alice");
    assert_eq!(via_path(&app, expired.expose()).await.status, 401);
    assert_eq!(store.expiry("alice"), Some(None), "no expires_in, no expiry");

    // The CLI's create likewise.
    store.put_secret("bob", &expired.hash(), None, Some(now_ms() - 1)).await.unwrap();
    let endpoint = McpEndpoint::new(BASE, "");
    assert!(create_secret(store.as_ref(), &endpoint, "bob", None, None).await.is_ok());
}

#[tokio::test]
async fn expires_in_sets_the_expiry_within_bounds() {
    let store = Arc::new(MemorySecrets::default());
    let auth = authenticator(&config(), Some(Arc::clone(&store))).await;
    let app = app(&auth);
    let token = bearer(&hs256(&personal_claims("alice"), HS_KEY));
    for bad in ["59", "0", "31536001", "-60", "3600.5", "1h", "", "99999999999999999999999"] {
        let reply = post_personal(&app, &format!("?expires_in={bad}"), Some(&token)).await;
        assert_eq!(reply.status, 400, "expires_in={bad}: {}", reply.text);
        assert_eq!(reply.body["code"], 400);
        let msg = reply.body["msg"].as_str().unwrap();
        assert!(msg.contains("'expires_in'") && msg.contains("60") && msg.contains("31536000"), "{msg}");
    }
    assert_eq!(store.len(), 0, "a refused expiry stores nothing");

    let before = now_ms();
    let created = post_personal(&app, "?expires_in=3600", Some(&token)).await;
    assert_eq!(created.status, 200, "{}", created.text);
    let at = store.expiry("alice").unwrap().expect("an expiry");
    assert!((before + 3_600_000..=now_ms() + 3_600_000).contains(&at), "{at}");
    let secret = secret_of(created.body["data"]["url"].as_str().unwrap());
    assert_eq!(via_path(&app, &secret).await.status, 200, "not yet expired");

    // Both ends of the range, with rotation; and rotation without it clears the expiry.
    let rotated = post_personal(&app, "?rotate=true&expires_in=60", Some(&token)).await;
    assert_eq!(rotated.status, 200, "{}", rotated.text);
    assert!(store.expiry("alice").unwrap().unwrap() <= now_ms() + 60_000);
    assert_eq!(post_personal(&app, "?expires_in=31536000&rotate=1", Some(&token)).await.status, 200);
    assert_eq!(post_personal(&app, "?rotate=true", Some(&token)).await.status, 200);
    assert_eq!(store.expiry("alice"), Some(None));

    // The admin functions hold the same bounds.
    let endpoint = McpEndpoint::new(BASE, "");
    let too_short = create_secret(store.as_ref(), &endpoint, "bob", None, Some(Duration::from_secs(30))).await;
    assert!(matches!(too_short, Err(SecretAdminError::Lifetime(30))), "{too_short:?}");
    let too_long = Duration::from_secs(366 * 24 * 3600);
    let too_long = rotate_secret(store.as_ref(), &endpoint, "bob", None, Some(too_long)).await;
    assert!(matches!(too_long, Err(SecretAdminError::Lifetime(31_622_400))), "{too_long:?}");
    assert_eq!(store.expiry("bob"), None);
    rotate_secret(store.as_ref(), &endpoint, "bob", None, Some(Duration::from_secs(60))).await.unwrap();
    assert!(store.expiry("bob").unwrap().is_some());
}
